//! The perf domain: perf.data captures decoded in parallel shards into per-thread aggregation
//! tables, mapped to each binary's addresses, and written as BOLT pre-aggregated profiles.

pub mod aggregate;
pub mod binary;
pub mod capture;
mod hint;
pub mod mapping;
pub mod preagg;
pub mod store;
pub mod table;
