//! BOLT profile formats.
pub mod fdata;
pub mod preagg;
