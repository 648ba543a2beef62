//! Eval discovery, runner, assertions and reports.
