//! The binaries a capture maps, found without their ELF files: what aggregation profiles when
//! no binary is named, so that a host can write a profile store with no binaries at hand.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::perf::binary::{base_name, hex, BinaryInfo};
use crate::perf::capture::SideBand;
use crate::perf::mapping::mapped_file_name;

/// Every file the capture maps executable in a user process (kernel, anonymous and deleted
/// mappings excluded, as perf2bolt excludes them), as [`BinaryInfo::mapped`] binaries sorted
/// by path; with `only` non-empty, those whose full path, file name or build-id (hex, a prefix
/// is enough) one of its entries names. Fails when `only` names nothing the capture maps.
pub(crate) fn mapped_binaries(side: &SideBand, only: &[String]) -> Result<Vec<BinaryInfo>> {
    // perf2bolt reads MMAP2 events when there are any (see `mapping::binary_maps`).
    let use_mmap2 = side.mmaps.iter().any(|m| m.is_mmap2);
    let mut files: BTreeMap<&[u8], (u64, Option<&[u8]>)> = BTreeMap::new();
    for m in &side.mmaps {
        let user_code = m.is_mmap2 == use_mmap2 && m.pid != u32::MAX && m.executable;
        if !user_code || m.len == 0 || mapped_file_name(&m.filename).is_none() {
            continue;
        }
        let entry = files.entry(&m.filename).or_insert((0, None));
        entry.0 = entry.0.max(m.pgoff.saturating_add(m.len));
        if entry.1.is_none() {
            entry.1 = m.build_id.as_deref().filter(|id| !id.is_empty());
        }
    }
    let recorded_id = |path: &[u8]| {
        side.features
            .build_ids
            .iter()
            .find(|e| e.filename == path && !e.build_id.is_empty())
            .map(|e| e.build_id.clone())
    };
    let all: Vec<BinaryInfo> = files
        .into_iter()
        .map(|(path, (extent, id))| {
            let id = id.map(<[u8]>::to_vec).or_else(|| recorded_id(path));
            BinaryInfo::mapped(path, extent, id)
        })
        .collect();
    if only.is_empty() {
        return Ok(all);
    }
    let chosen: Vec<BinaryInfo> = all
        .iter()
        .filter(|b| only.iter().any(|o| names(b, o)))
        .cloned()
        .collect();
    if chosen.is_empty() {
        return Err(Error::Mismatch(format!(
            "--only {}: the capture maps no such binary (it maps: {})",
            only.join(", "),
            describe(&all)
        )));
    }
    Ok(chosen)
}

/// Whether `wanted` names `binary`: its full path, its file name, or its build-id in hex (a
/// prefix of at least 8 digits is enough, as with git's abbreviated hashes).
fn names(binary: &BinaryInfo, wanted: &str) -> bool {
    let path = binary.mapped_path.as_deref().unwrap_or_default();
    let id = binary.build_id.as_deref().map(hex).unwrap_or_default();
    let wanted_id = wanted.to_ascii_lowercase();
    path == wanted.as_bytes()
        || base_name(path) == wanted.as_bytes()
        || (!id.is_empty() && wanted.len() >= 8 && id.starts_with(&wanted_id))
}

/// The binaries, as a list for a message: path and build-id.
pub(crate) fn describe(binaries: &[BinaryInfo]) -> String {
    if binaries.is_empty() {
        return "nothing".into();
    }
    binaries
        .iter()
        .map(|b| {
            let id = b.build_id.as_deref().map(hex);
            format!(
                "{} ({})",
                b.path.display(),
                id.as_deref().unwrap_or("no build-id")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
