//! Benchmarks live in the [[bench]] targets.
