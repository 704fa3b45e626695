//! Plumbing every domain shares: input files as bytes, atomic outputs, progress reporting.

pub mod input;
pub mod inputs;
mod ordered;
pub mod output;
pub mod progress;
pub mod remap;
pub mod report;

pub use input::InputBytes;
pub use output::{write_atomically, write_formatted};
pub use progress::{NoProgress, Progress};

/// Drops `value` on a thread of its own, so that freeing it does not hold up the caller: a
/// profile's CFGs and filed lines are millions of small allocations (0.12–0.21 s to free for
/// the 40,000 functions of the YAML benchmark, PERF.md), and a command that exits right after
/// never waits for them. If no thread can be started, `value` is dropped here.
pub fn drop_in_background<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("drop".into())
        .spawn(move || drop(value));
}
