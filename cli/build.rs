//! Links the `profmill` executable at a fixed address (not as a position-independent
//! executable) on Linux. A PIE of this size carries ~129,000 relative relocations, which the
//! dynamic loader applies at every start, copying the 2.2 MB of relocated read-only data
//! page by page: 7.0 ms and 732 page faults for `profmill --version`, against 4.3 ms and 146
//! faults linked at a fixed address. A fleet runs the binary once per capture (PERF.md,
//! issue 17), so start-up is part of its cost. The code stays position-independent; only
//! the final link changes (the address space layout of the executable is then not
//! randomized, as for any non-PIE program).
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
