//! Input files as bytes: mapped when large (no copy), read when small or not a regular file.

use std::path::Path;

/// An input's bytes, mapped or read; either way a `&[u8]` through `Deref`.
pub enum InputBytes {
    /// A read-only private mapping of a large regular file.
    Mapped(memmap2::Mmap),
    /// The whole contents, read.
    Read(Vec<u8>),
}

impl std::ops::Deref for InputBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            InputBytes::Mapped(m) => m,
            InputBytes::Read(v) => v,
        }
    }
}

/// Files below this size are read: mapping costs a system call and a page fault per page
/// either way, and reading a small file is as fast and leaves nothing mapped.
const MAP_AT_LEAST: u64 = 256 << 10;

/// Opens `path`, which is to be `what` (e.g. "an ELF binary") and mapped: a directory, a
/// device, a pipe or a socket cannot be, and is refused with an error that says what the path
/// is instead.
pub fn open_regular(path: &Path, what: &str) -> std::io::Result<std::fs::File> {
    open_if(
        path,
        |kind| kind.is_file(),
        |kind| match kind.is_dir() {
            true => format!("is a directory, not {what}"),
            false => format!(
                "is {}, not a regular file: expected {what}",
                special_kind(kind)
            ),
        },
    )
}

/// Opens `path` if its kind is `wanted`; else an error that `refusal` words from the kind.
fn open_if(
    path: &Path,
    wanted: impl Fn(std::fs::FileType) -> bool,
    refusal: impl Fn(std::fs::FileType) -> String,
) -> std::io::Result<std::fs::File> {
    let file = std::fs::File::open(path)?;
    let kind = file.metadata()?.file_type();
    match wanted(kind) {
        true => Ok(file),
        false => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            refusal(kind),
        )),
    }
}

/// The whole contents of the input `path`, a regular file or a pipe (read to its end). A
/// directory, a device or a socket is refused with an error that says what the path is: a
/// device like `/dev/zero` never ends, and reading one whole would exhaust memory.
pub fn read(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    let file = open_readable(path.as_ref())?;
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut &file, &mut data)?;
    Ok(data)
}

/// [`read`], or all of standard input for `-` (LLVM's `MemoryBuffer::getFileOrSTDIN`).
pub fn read_or_stdin(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    let path = path.as_ref();
    if path.as_os_str() != "-" {
        return read(path);
    }
    let mut data = Vec::new();
    std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut data)?;
    Ok(data)
}

/// Opens `path` to be read whole: a regular file or a pipe.
fn open_readable(path: &Path) -> std::io::Result<std::fs::File> {
    let wanted = |kind: std::fs::FileType| kind.is_file() || is_fifo(kind);
    open_if(path, wanted, |kind| match kind.is_dir() {
        true => "is a directory, not a file".to_owned(),
        false => format!("is {}, not a regular file or a pipe", special_kind(kind)),
    })
}

#[cfg(unix)]
fn is_fifo(kind: std::fs::FileType) -> bool {
    std::os::unix::fs::FileTypeExt::is_fifo(&kind)
}

#[cfg(not(unix))]
fn is_fifo(_: std::fs::FileType) -> bool {
    false
}

/// What a path that is neither a file nor a directory is: "a pipe", "a character device"…
#[cfg(unix)]
pub fn special_kind(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a pipe"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
pub fn special_kind(_: std::fs::FileType) -> &'static str {
    "a special file"
}

impl InputBytes {
    /// Drops the pages of `self[range]` from this process's memory when they are mapped (the
    /// page cache keeps them; a later read faults them in again): for bytes decoded once and
    /// not read again.
    pub fn release(&self, range: std::ops::Range<usize>) {
        if let InputBytes::Mapped(map) = self {
            let end = range.end.min(map.len());
            if range.start < end {
                release_pages(map, range.start, end - range.start);
            }
        }
    }

    /// The bytes of `path`: a large regular file is mapped (and advised sequential), a small
    /// one or a pipe is read whole; a directory or a device is refused (see [`read`]).
    pub fn open(path: &Path) -> std::io::Result<InputBytes> {
        let file = open_readable(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() || meta.len() < MAP_AT_LEAST {
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut &file, &mut data)?;
            return Ok(InputBytes::Read(data));
        }
        // SAFETY: the mapping is read-only and private; as with every mmap reader (and as
        // llvm-profdata and perf2bolt map theirs), another process truncating the file while
        // we read it is undefined.
        let map = unsafe { memmap2::Mmap::map(&file) }?;
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Sequential);
        Ok(InputBytes::Mapped(map))
    }
}

/// Drops the pages of `map[offset..offset + len]` from this process (the page cache keeps them).
pub(crate) fn release_pages(map: &memmap2::Mmap, offset: usize, len: usize) {
    // SAFETY: the mapping is a read-only, never-written file mapping: dropping its pages only
    // makes a later access fault them in again from the file, it cannot change what is read.
    let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len) };
}
