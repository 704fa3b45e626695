//! On-disk profile formats: zero-copy readers over `&[u8]` and streaming writers over
//! `io::Write`. This crate knows nothing about aggregation (`engine`) or the command line (`cli`).

pub mod bolt;
pub mod bytes;
pub mod instrprof;
pub mod perf;
pub mod sampleprof;
pub mod store;
