//! BOLT profile formats: `.fdata` ([`fdata`]), pre-aggregated text ([`preagg`]), and the
//! address translation tables of BOLTed binaries ([`bat`]), and the YAML profile
//! ([`yaml`], writer only so far).
//!
//! The readers, writers and error types are re-exported here.
pub mod bat;
pub mod fdata;
pub mod preagg;
pub mod yaml;

pub use fdata::{FdataError, FdataErrorKind, FdataReader, FdataWriter};
pub use preagg::{ParseError, PreaggWriter};
