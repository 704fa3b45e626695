//! Writing outputs atomically: into a temporary file beside the target, renamed on success, so
//! a failed run never leaves a partial output.

use std::io::{BufWriter, Write};
use std::path::Path;

use formats::bolt::preagg::PreaggWriter;

use crate::aggregate::BinaryProfile;
use crate::error::{io_error, Result};

/// Runs `write` against a buffered temporary file and renames it to `path` if it succeeds.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.profmill-{}.tmp", std::process::id()));
    let result = (|| {
        let file = std::fs::File::create(&tmp)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        write(&mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io_error(path))
}

/// Writes one binary's profile as BOLT pre-aggregated text.
pub fn write_preagg(out: &mut dyn Write, p: &BinaryProfile) -> std::io::Result<()> {
    let mut w = PreaggWriter::new(out);
    for e in &p.events {
        w.event(e)?;
    }
    for &(addr, count) in &p.ips {
        w.sample(addr, count)?;
    }
    for &((branch, from, to), c) in &p.traces {
        w.trace(branch, from, to, c.taken)?;
    }
    // `T` has no misprediction field: carry them in zero-count `B` records of the same branch.
    let mut mispreds: Vec<((u64, u64), u64)> = Vec::new();
    for &((branch, from, _), c) in &p.traces {
        if c.mispred == 0 {
            continue;
        }
        match mispreds.last_mut() {
            Some((k, m)) if *k == (branch, from) => *m += c.mispred,
            _ => mispreds.push(((branch, from), c.mispred)),
        }
    }
    for ((branch, from), m) in mispreds {
        w.branch(branch, from, 0, m)?;
    }
    Ok(())
}
