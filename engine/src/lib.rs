#![warn(missing_docs)]

//! The profmill engine: sharded decoding, per-thread aggregation tables, address mapping and
//! the conversions between profile formats. Readers and writers live in `formats`.

pub mod error;
pub mod io;

#[cfg(feature = "bolt")]
pub mod bolt;
#[cfg(feature = "instrprof")]
pub mod instrprof;
#[cfg(feature = "perf")]
pub mod perf;
#[cfg(feature = "sampleprof")]
pub mod sampleprof;
