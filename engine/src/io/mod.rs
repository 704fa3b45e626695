//! Plumbing every domain shares: input files as bytes, atomic outputs, progress reporting.

pub mod input;
pub mod inputs;
pub mod output;
pub mod progress;
pub mod remap;
pub mod report;

pub use input::InputBytes;
pub use output::{write_atomically, write_formatted};
pub use progress::{NoProgress, Progress};
