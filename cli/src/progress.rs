//! The engine's progress reports drawn on stderr, when stderr is a terminal: a byte-count bar,
//! or a spinner naming the phase. A bar clears itself when dropped.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressFinish, ProgressStyle};

/// A bar of bytes or a spinner of phases that shows the engine's progress.
pub struct Bar(ProgressBar);

impl Bar {
    /// A bar over `total` bytes (a spinner until a total is known), labelled `label`; hidden
    /// unless stderr is a terminal.
    pub fn bytes(total: Option<u64>, label: &str) -> Bar {
        if !std::io::stderr().is_terminal() {
            return Bar(ProgressBar::hidden());
        }
        let bar = match total {
            Some(t) => ProgressBar::new(t),
            None => ProgressBar::new_spinner(),
        };
        set_style(&bar, total.is_some());
        bar.set_message(label.to_string());
        Bar(bar.with_finish(ProgressFinish::AndClear))
    }

    /// A spinner for work measured in phases, not bytes: the phase's name and the time spent,
    /// drawn on its own while the work runs; hidden unless stderr is a terminal.
    pub fn phases(label: &str) -> Bar {
        if !std::io::stderr().is_terminal() {
            return Bar(ProgressBar::hidden());
        }
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{msg} {spinner} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_message(label.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
        Bar(bar.with_finish(ProgressFinish::AndClear))
    }
}

/// Draws `bar` as a bar towards its total, or as a spinner when it has none.
fn set_style(bar: &ProgressBar, has_total: bool) {
    let template = if has_total {
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({binary_bytes_per_sec}, {eta})"
    } else {
        "{msg} {spinner} {bytes} ({binary_bytes_per_sec})"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
}

impl engine::io::progress::Progress for Bar {
    fn phase(&self, name: &str) {
        self.0.set_message(name.to_string());
    }
    fn set_total(&self, bytes: u64) {
        self.0.set_length(bytes);
        // A spinner, started before the total was known, becomes a bar.
        set_style(&self.0, true);
    }
    fn set_position(&self, bytes: u64) {
        self.0.set_position(bytes);
    }
    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}
