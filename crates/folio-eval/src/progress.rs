//! Live progress: one bar per running case on a terminal, one plain line per finished case
//! otherwise. Both write to stderr, so stdout keeps only the report.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use folio_protocol::Attempt;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report::attempt_line;
use crate::runner::Observer;

/// One line per finished attempt on stderr (output that is not a terminal).
#[derive(Debug, Default)]
pub struct LineObserver;

impl Observer for LineObserver {
    fn attempt_started(&self, _label: &str, _steps: usize) {}

    fn step_started(&self, _label: &str, _step: usize) {}

    fn attempt_finished(&self, label: &str, attempt: &Attempt) {
        eprintln!("{}", attempt_line(label, attempt));
    }
}

/// A progress bar per running attempt (`indicatif`), replaced by its result line when it ends.
pub struct ProgressObserver {
    bars: MultiProgress,
    running: Mutex<HashMap<String, ProgressBar>>,
}

impl Default for ProgressObserver {
    fn default() -> Self {
        ProgressObserver {
            bars: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            running: Mutex::new(HashMap::new()),
        }
    }
}

impl ProgressObserver {
    fn bar(&self, label: &str) -> Option<ProgressBar> {
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(label)
            .cloned()
    }
}

impl Observer for ProgressObserver {
    fn attempt_started(&self, label: &str, steps: usize) {
        let bar = self.bars.add(ProgressBar::new(steps as u64));
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} {prefix} [{bar:20}] step {pos}/{len} {elapsed}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(100));
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(label.to_string(), bar);
    }

    fn step_started(&self, label: &str, step: usize) {
        if let Some(bar) = self.bar(label) {
            bar.set_position(step.saturating_sub(1) as u64);
        }
    }

    fn attempt_finished(&self, label: &str, attempt: &Attempt) {
        let bar = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(label);
        if let Some(bar) = bar {
            bar.finish_and_clear();
            self.bars.remove(&bar);
        }
        let _ = self.bars.println(attempt_line(label, attempt));
    }
}
