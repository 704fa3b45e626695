//! Writing outputs atomically: into a temporary file beside the target, put in its place on
//! success, so a failed or killed run never leaves a partial output, nor a moment without a
//! complete one; the temporary files of killed runs are removed by the next run on the output.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::{io_error, Result};

/// Runs `write` against a buffered temporary file and renames it to `path` if it succeeds. A
/// symlink is followed, so the file it names is replaced and the link stays. A `path` that is
/// not a regular file (`/dev/null`, `/dev/stdout`, a pipe) is written in place instead:
/// renaming over it would replace the device. `-` is standard output, as in LLVM's tools.
/// The output is `Send`, so that threads may write it in turn (the store merge does).
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut (dyn Write + Send)) -> std::io::Result<()>,
) -> Result<()> {
    if path.as_os_str() == "-" {
        let mut out = BufWriter::with_capacity(OUTPUT_BUFFER, std::io::stdout());
        return write(&mut out)
            .and_then(|()| out.flush())
            .map_err(io_error(Path::new("<stdout>")));
    }
    let target = link_target(path);
    let special = std::fs::metadata(&target).is_ok_and(|m| !m.is_file());
    let result = match special {
        true => write_in_place(path, write),
        false => write_and_rename(&target, write),
    };
    result.map_err(io_error(path))
}

/// The file `path` names: a symlink's target (followed through further links), even one that
/// does not exist yet, so that the link stays and the file it names is written.
fn link_target(path: &Path) -> std::path::PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    // A dangling link (or a missing file): follow the links by hand, as the kernel would when
    // creating the file through them (a bound keeps a loop from running forever).
    let mut target = path.to_path_buf();
    for _ in 0..40 {
        let Ok(next) = std::fs::read_link(&target) else {
            break;
        };
        target = match target.parent() {
            Some(dir) => dir.join(next),
            None => next,
        };
    }
    target
}

/// Paths that name the same file as one of `inputs`, among `outputs` (that exist): an
/// output there would replace an input the command reads, e.g. `-o` given the capture or the
/// binary. `Err` names the first such output and its input.
pub fn refuse_overwriting_inputs<'a>(
    outputs: impl IntoIterator<Item = &'a Path>,
    inputs: impl IntoIterator<Item = &'a Path> + Clone,
) -> std::result::Result<(), String> {
    for output in outputs {
        let Ok(out) = std::fs::metadata(output) else {
            continue;
        };
        if !out.is_file() {
            continue;
        }
        for input in inputs.clone() {
            if std::fs::metadata(input).is_ok_and(|i| same_file(&i, &out)) {
                let also = match input == output {
                    true => String::new(),
                    false => format!(" ({})", input.display()),
                };
                return Err(format!(
                    "{}: is also an input{also}: writing the output there would replace it; choose another output path",
                    output.display(),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    false
}

/// Small enough that the formatted batches of [`write_formatted`] bypass it uncopied.
const OUTPUT_BUFFER: usize = 64 << 10;

fn write_in_place(
    path: &Path,
    write: impl FnOnce(&mut (dyn Write + Send)) -> std::io::Result<()>,
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
    write: impl FnOnce(&mut (dyn Write + Send)) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    remove_stale_temporaries(dir, &file_name);
    let tmp = dir.join(temporary_name(&file_name, std::process::id()));
    let result = (|| {
        let file = std::fs::File::create(&tmp)?;
        let mut out = BufWriter::with_capacity(OUTPUT_BUFFER, file);
        write(&mut out)?;
        out.into_inner().map_err(|e| e.into_error())?;
        replace(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The temporary file of the run with process id `pid` writing the output named `file_name`.
fn temporary_name(file_name: &str, pid: u32) -> String {
    format!(".{file_name}.profmill-{pid}.tmp")
}

/// Removes the temporary files that runs killed while writing the output `file_name` left in
/// `dir`: those of processes that no longer exist. A live process's file (another run writing
/// the same output) is left alone; a reused process id only delays the clean-up.
fn remove_stale_temporaries(dir: &Path, file_name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{file_name}.profmill-");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !process_exists(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(unix)]
fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    alive || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn process_exists(_pid: u32) -> bool {
    true
}

/// Puts the complete temporary file `tmp` in place of `path` with no moment at which `path`
/// is missing or partial.
///
/// A plain rename over an existing file is atomic, but makes ext4 allocate and start writing
/// back the new file inside rename() (its `auto_da_alloc` guard for programs that skip fsync):
/// 305–328 ms for a 245 MB output, against 155–160 ms for exchanging the two files with
/// `renameat2(RENAME_EXCHANGE)` and unlinking the old output, now under the temporary name
/// (PERF.md). We do not fsync either, so the guard buys nothing here. Where the exchange is
/// not possible (no target yet, or a file system or kernel without it), a plain rename.
fn replace(tmp: &Path, path: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    if exchange(tmp, path).is_ok() {
        // The old output, now at `tmp`; a failure leaves it for the next run to remove.
        let _ = std::fs::remove_file(tmp);
        return Ok(());
    }
    std::fs::rename(tmp, path)
}

#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (a, b) = (c(a)?, c(b)?);
    // The raw system call: C libraries other than glibc may lack the wrapper.
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let done = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    match done {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Writes `items` as `format` prints them, formatting chunks of items on the rayon pool
/// while this thread writes the chunks done, in order (see `io::ordered`): the text in
/// memory stays bounded, and its buffers are reused (fresh ones would cost page faults).
pub fn write_formatted<T: Sync>(
    out: &mut dyn Write,
    items: &[T],
    format: impl Fn(&[T], &mut Vec<u8>) -> std::io::Result<()> + Sync,
) -> std::io::Result<()> {
    super::ordered::write_in_order(out, items, format)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_text(path: &Path, text: &str) -> Result<()> {
        write_atomically(path, |out| out.write_all(text.as_bytes()))
    }

    proptest::proptest! {
        // Each case formats a few MB in several batches: a few dozen cases suffice.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        /// Whatever the items' sizes (the batches follow the bytes per item), the text is
        /// every item formatted in order.
        #[test]
        fn formatted_batches_write_the_items_in_order(
            sizes in proptest::collection::vec(0usize..3000, 0..2500),
            seed in 0u8..255,
        ) {
            let items: Vec<(usize, u8)> =
                sizes.iter().enumerate().map(|(i, &n)| (n, seed ^ i as u8)).collect();
            let format = |chunk: &[(usize, u8)], text: &mut Vec<u8>| {
                for &(n, b) in chunk {
                    text.extend(std::iter::repeat_n(b, n));
                    text.push(b'\n');
                }
                Ok(())
            };
            let mut written = Vec::new();
            write_formatted(&mut written, &items, format).unwrap();
            let mut expected = Vec::new();
            format(&items, &mut expected).unwrap();
            proptest::prop_assert!(written == expected);
        }
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

    /// The temporary files of killed runs (processes that no longer exist) are removed by the
    /// next run on the same output; a live process's, and other outputs', are left alone.
    #[cfg(unix)]
    #[test]
    fn temporaries_of_killed_runs_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        // A process that has exited (and been reaped): its id names no process now.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = dir.path().join(temporary_name("out.txt", dead));
        std::fs::write(&stale, "half an output").unwrap();
        let live = dir.path().join(temporary_name("out.txt", 1));
        std::fs::write(&live, "init's").unwrap();
        let other = dir.path().join(temporary_name("other.txt", dead));
        std::fs::write(&other, "another output's").unwrap();
        write_text(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert!(
            !stale.exists(),
            "the killed run's temporary file is still there"
        );
        assert!(live.exists() && other.exists());
    }

    /// While outputs replace one another, a reader always finds a complete output at the
    /// path: never a missing file (as when the old output was removed before the rename) and
    /// never a partial one.
    #[test]
    fn the_output_is_never_missing_while_it_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let texts = ["first output\n".repeat(300), "second\n".repeat(700)];
        write_text(&path, &texts[0]).unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        let (looked, missing) = std::thread::scope(|scope| {
            let watcher = scope.spawn(|| {
                let (mut looked, mut missing) = (0u32, Vec::new());
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    looked += 1;
                    match std::fs::read_to_string(&path) {
                        Ok(text) if texts.contains(&text) => {}
                        Ok(text) => missing.push(format!("{} bytes", text.len())),
                        Err(e) => missing.push(e.to_string()),
                    }
                }
                (looked, missing)
            });
            for i in 0..400 {
                write_text(&path, &texts[i % 2]).unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            watcher.join().unwrap()
        });
        assert!(looked > 0);
        assert_eq!(missing, Vec::<String>::new(), "in {looked} looks");
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
        // A link to a file not yet written (through a relative link to a link): the file is
        // created where the links lead, and the links stay.
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let (dangling, via) = (dir.path().join("dangling"), sub.join("via"));
        std::os::unix::fs::symlink("sub/new.txt", &dangling).unwrap();
        std::os::unix::fs::symlink("../dangling", &via).unwrap();
        write_text(&via, "created").unwrap();
        assert!(std::fs::symlink_metadata(&via).unwrap().is_symlink());
        assert!(std::fs::symlink_metadata(&dangling).unwrap().is_symlink());
        assert_eq!(
            std::fs::read_to_string(sub.join("new.txt")).unwrap(),
            "created"
        );
    }

    #[cfg(unix)]
    #[test]
    fn an_output_that_is_an_input_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (input, other, link) = (
            dir.path().join("input"),
            dir.path().join("other"),
            dir.path().join("link"),
        );
        std::fs::write(&input, "x").unwrap();
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let missing = dir.path().join("missing");
        let inputs = [input.as_path()];
        assert!(refuse_overwriting_inputs([other.as_path(), missing.as_path()], inputs).is_ok());
        let err = refuse_overwriting_inputs([link.as_path()], inputs).unwrap_err();
        assert!(
            err.starts_with(&format!("{}: is also an input", link.display())),
            "{err}"
        );
        // The devices written in place are no inputs' files.
        assert!(
            refuse_overwriting_inputs([Path::new("/dev/null")], [Path::new("/dev/null")]).is_ok()
        );
    }
}
