//! The profmill engine: sharded decoding, per-thread aggregation tables, address mapping and
//! the conversions between profile formats. Readers and writers live in `formats`.

pub mod aggregate;
pub mod binary;
pub mod bolt;
pub mod capture;
pub mod error;
pub mod fdata_merge;
mod hint;
pub mod instrprof;
pub mod mapping;
pub mod output;
pub mod progress;
pub mod sampleprof;
pub mod table;
