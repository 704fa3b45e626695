//! How long work reports its progress. The library never draws anything itself: a command line
//! implements [`Progress`] (profmill's draws an `indicatif` bar on a terminal), a library user
//! passes [`NoProgress`] or its own.

/// Receives a byte count's progress through the phases of a long job (indexing, decoding, …).
/// Every method has a default that ignores the report.
pub trait Progress: Sync {
    /// A new phase begins, named for display.
    fn phase(&self, _name: &str) {}
    /// The phase's work is `bytes` in total.
    fn set_total(&self, _bytes: u64) {}
    /// `bytes` of the phase are done.
    fn set_position(&self, _bytes: u64) {}
    /// `bytes` more of the phase are done.
    fn advance(&self, _bytes: u64) {}
    /// The job is over: a display should clear itself.
    fn finish(&self) {}
}

/// Ignores every report.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}
