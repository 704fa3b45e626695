//! Writing outputs atomically: into a temporary file beside the target, renamed on success, so
//! a failed run never leaves a partial output.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::{io_error, Result};

/// Runs `write` against a buffered temporary file and renames it to `path` if it succeeds. A
/// symlink is followed, so the file it names is replaced and the link stays. A `path` that is
/// not a regular file (`/dev/null`, `/dev/stdout`, a pipe) is written in place instead:
/// renaming over it would replace the device.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let special = std::fs::metadata(&target).is_ok_and(|m| !m.is_file());
    let result = match special {
        true => write_in_place(path, write),
        false => write_and_rename(&target, write),
    };
    result.map_err(io_error(path))
}

/// Small enough that the formatted batches of [`write_formatted`] bypass it uncopied.
const OUTPUT_BUFFER: usize = 64 << 10;

fn write_in_place(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?;
    let mut out = BufWriter::with_capacity(OUTPUT_BUFFER, file);
    write(&mut out)?;
    out.flush()
}

fn write_and_rename(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
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
        let mut out = BufWriter::with_capacity(OUTPUT_BUFFER, file);
        write(&mut out)?;
        out.into_inner().map_err(|e| e.into_error())?;
        // The old output goes first: renaming over an existing file makes ext4 allocate and
        // start writing back the new one inside rename() (its `auto_da_alloc` guard for
        // programs that skip fsync), 0.2 s for a 245 MB fdata. We do not fsync either, so
        // that guard buys nothing here; a failed removal is left for the rename to report.
        let _ = std::fs::remove_file(path);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// How many items [`write_formatted`] formats at once, in `CHUNKS_PER_BATCH` parallel chunks.
const ITEMS_PER_BATCH: usize = 1 << 16;
const CHUNKS_PER_BATCH: usize = 16;

/// Writes `items` as `format` prints them, formatting in parallel a batch at a time (so the
/// text in memory stays bounded) while this thread writes the previous batch. The two sets of
/// buffers are reused: fresh ones would cost page faults for every batch.
pub fn write_formatted<T: Sync>(
    out: &mut dyn Write,
    items: &[T],
    format: impl Fn(&[T], &mut Vec<u8>) -> std::io::Result<()> + Sync,
) -> std::io::Result<()> {
    use rayon::prelude::*;
    let per_chunk = ITEMS_PER_BATCH / CHUNKS_PER_BATCH;
    let mut formatting: Vec<Vec<u8>> = vec![Vec::new(); CHUNKS_PER_BATCH];
    let mut formatted: Vec<Vec<u8>> = vec![Vec::new(); CHUNKS_PER_BATCH];
    let mut ready = 0;
    let format_batch = |batch: &[T], texts: &mut [Vec<u8>]| {
        batch
            .par_chunks(per_chunk)
            .zip(texts.par_iter_mut())
            .try_for_each(|(chunk, text)| {
                text.clear();
                format(chunk, text)
            })
            .map(|()| batch.len().div_ceil(per_chunk))
    };
    for batch in items.chunks(ITEMS_PER_BATCH) {
        let (written, chunks) = std::thread::scope(|scope| {
            let formatter = scope.spawn(|| format_batch(batch, &mut formatting));
            let written = formatted[..ready].iter().try_for_each(|t| out.write_all(t));
            let chunks = formatter
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p));
            (written, chunks)
        });
        written?;
        ready = chunks?;
        std::mem::swap(&mut formatting, &mut formatted);
    }
    formatted[..ready].iter().try_for_each(|t| out.write_all(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_text(path: &Path, text: &str) -> Result<()> {
        write_atomically(path, |out| out.write_all(text.as_bytes()))
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        let names = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name());
        names
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| n.contains("profmill-"))
            .collect()
    }

    #[test]
    fn replaces_an_existing_output_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        write_text(&path, "old, and longer than the new text").unwrap();
        write_text(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn a_failed_write_keeps_the_old_output() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        write_text(&path, "old").unwrap();
        let failed = write_atomically(&path, |out| {
            out.write_all(b"partial")?;
            Err(std::io::Error::other("formatting failed"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_written_in_place_and_links_followed() {
        write_text(Path::new("/dev/null"), "discarded").unwrap();
        let null = std::fs::symlink_metadata("/dev/null").unwrap();
        assert!(!null.is_file(), "/dev/null was replaced by a regular file");

        let dir = tempfile::tempdir().unwrap();
        let (target, link) = (dir.path().join("target.txt"), dir.path().join("link.txt"));
        std::fs::write(&target, "old, and longer than the new text").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_text(&link, "new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        // Through the link too, a failed write leaves the old output whole.
        let failed = write_atomically(&link, |out| {
            out.write_all(b"partial")?;
            Err(std::io::Error::other("formatting failed"))
        });
        assert!(failed.is_err());
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }
}
