//! BOLT profile formats: `.fdata` ([`fdata`]), pre-aggregated text ([`preagg`]), and the
//! address translation tables of BOLTed binaries ([`bat`]).
//!
//! The readers, writers and error types are re-exported here.
pub mod bat;
pub mod fdata;
pub mod preagg;

pub use fdata::{FdataError, FdataErrorKind, FdataReader, FdataWriter};
pub use preagg::{ParseError, PreaggWriter};
