//! A byte-count progress bar on stderr, shown only when stderr is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

pub fn bytes_bar(total: Option<u64>, label: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = match total {
        Some(t) => ProgressBar::new(t),
        None => ProgressBar::new_spinner(),
    };
    let template = if total.is_some() {
        "{msg} [{bar:30}] {bytes}/{total_bytes} ({binary_bytes_per_sec}, {eta})"
    } else {
        "{msg} {spinner} {bytes} ({binary_bytes_per_sec})"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(label.to_string());
    bar
}
