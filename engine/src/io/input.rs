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

impl InputBytes {
    /// The bytes of `path`: a large regular file is mapped (and advised sequential), anything
    /// else — a small file, a pipe, a device — is read whole.
    pub fn open(path: &Path) -> std::io::Result<InputBytes> {
        let file = std::fs::File::open(path)?;
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
