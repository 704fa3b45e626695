//! BOLT profile formats.
pub mod preagg;
