//! Test support for end-to-end tests: the mock model server and helpers.
