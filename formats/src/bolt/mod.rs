//! BOLT profile formats: `.fdata` ([`fdata`]) and pre-aggregated text ([`preagg`]).
//!
//! The readers, writers and error types are re-exported here.
pub mod fdata;
pub mod preagg;

pub use fdata::{FdataError, FdataErrorKind, FdataReader, FdataWriter};
pub use preagg::{ParseError, PreaggWriter};
