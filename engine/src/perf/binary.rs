//! What we need to know about an ELF binary to attribute samples to it: name, build-id,
//! whether it loads at a fixed address, and its executable segments.

use std::path::{Path, PathBuf};

use object::Object;

use crate::error::{Error, Result};

/// A `PT_LOAD` segment, in the binary's own (link-time) addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) address: u64,
    pub(crate) size: u64,
    pub(crate) file_offset: u64,
    pub(crate) align: u64,
    pub(crate) executable: bool,
}

/// An ELF binary as the perf domain needs it to attribute samples: its path, the file name and
/// build-id perf's mmap events are matched against, whether it loads at a fixed address, and
/// its loaded segments. Build one with [`BinaryInfo::load`] and put it in a
/// [`Request`](crate::perf::Request).
#[derive(Clone, Debug)]
pub struct BinaryInfo {
    /// Where the binary was read from (also used in error messages).
    pub path: PathBuf,
    /// The file name perf records in its mmap events are matched against.
    pub(crate) file_name: Vec<u8>,
    pub(crate) build_id: Option<Vec<u8>>,
    /// `ET_EXEC`: addresses in samples are already the binary's addresses.
    pub(crate) fixed_load_address: bool,
    pub(crate) segments: Vec<Segment>,
    /// `[lowest segment start, highest segment end)`: a quick rejection test for `contains`.
    span: (u64, u64),
    /// The binary has BOLT address translation tables (`llvm-bolt --enable-bat`).
    pub(crate) has_bat: bool,
    /// For a binary known only from the capture ([`BinaryInfo::mapped`]): the full path its
    /// mmap events name, which they are matched by (executable mappings only).
    pub(crate) mapped_path: Option<Vec<u8>>,
}

impl BinaryInfo {
    /// Reads the ELF headers of the binary at `path` (the file is mapped, and only its headers
    /// are read). Fails with [`Error::Binary`] if it is not an ELF file this tool can read.
    pub fn load(path: &Path) -> Result<BinaryInfo> {
        // Mapped, not read: only the headers are looked at, and copying a large binary into
        // fresh memory cost more than the whole rest of this.
        let file = crate::io::input::open_regular(path, "an ELF binary")
            .map_err(crate::error::io_error(path))?;
        // SAFETY: a read-only private mapping; another process truncating the binary while we
        // read its headers is undefined, as for every mmap reader.
        let data = unsafe { memmap2::Mmap::map(&file) }.map_err(crate::error::io_error(path))?;
        Self::parse(path, &data)
    }

    /// [`BinaryInfo::load`] of a binary already in memory.
    pub(crate) fn parse(path: &Path, data: &[u8]) -> Result<BinaryInfo> {
        let bad = |message: String| Error::Binary {
            path: path.to_path_buf(),
            message,
        };
        let file = object::File::parse(data)
            .map_err(|e| bad(format!("not an ELF file this tool can read: {e}")))?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(bad(format!(
                "expected an ELF file, found {:?}",
                file.format()
            )));
        }
        let segments =
            elf_load_segments(data).ok_or_else(|| bad("malformed program headers".into()))?;
        let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
        let mut info = BinaryInfo::from_segments(
            path,
            file.kind() == object::ObjectKind::Executable,
            segments,
        );
        info.build_id = build_id;
        info.has_bat = file.section_by_name(".note.bolt_bat").is_some();
        Ok(info)
    }

    /// A binary known only by its loaded segments (no build-id).
    pub(crate) fn from_segments(
        path: &Path,
        fixed_load_address: bool,
        segments: Vec<Segment>,
    ) -> Self {
        let span = (
            segments.iter().map(|s| s.address).min().unwrap_or(0),
            segments
                .iter()
                .map(|s| s.address.saturating_add(s.size))
                .max()
                .unwrap_or(0),
        );
        BinaryInfo {
            path: path.to_path_buf(),
            file_name: path
                .file_name()
                .map(|n| n.as_encoded_bytes().to_vec())
                .unwrap_or_default(),
            build_id: None,
            fixed_load_address,
            segments,
            span,
            has_bat: false,
            mapped_path: None,
        }
    }

    /// A binary known only from the capture's executable mappings of `mapped_path`, without its
    /// ELF: one segment that maps file offsets to themselves over `[0, extent)`, so that
    /// perf2bolt's address rules give each runtime address its offset in the file (`addr −
    /// mmap_addr + pgoff`), which is what the profile store keeps. The segment's huge alignment
    /// puts every mapping in its page, so every executable mapping of the file counts.
    pub(crate) fn mapped(mapped_path: &[u8], extent: u64, build_id: Option<Vec<u8>>) -> Self {
        let path = PathBuf::from(String::from_utf8_lossy(mapped_path).into_owned());
        let identity = Segment {
            address: 0,
            size: extent,
            file_offset: 0,
            align: 1 << 62,
            executable: true,
        };
        let mut info = BinaryInfo::from_segments(&path, false, vec![identity]);
        info.build_id = build_id;
        // The name exactly as mapped (the path above is only for messages).
        info.file_name = base_name(mapped_path).to_vec();
        info.mapped_path = Some(mapped_path.to_vec());
        info
    }

    /// perf2bolt's `getBaseAddressForMapping`: the load bias of a mapping of file offset `pgoff`
    /// at `mmap_address`, from the first executable segment in the same aligned page.
    pub(crate) fn base_address_for_mapping(&self, mmap_address: u64, pgoff: u64) -> Option<u64> {
        self.segments.iter().filter(|s| s.executable).find_map(|s| {
            let align = s.align.max(1);
            (align_down(s.file_offset, align) == align_down(pgoff, align)).then(|| {
                mmap_address.wrapping_sub(s.address.wrapping_sub(s.file_offset).wrapping_add(pgoff))
            })
        })
    }

    /// For fixed-address binaries: does a mapping at `mmap_address` cover an executable segment?
    pub(crate) fn mapping_matches_segment(&self, mmap_address: u64) -> bool {
        self.segments.iter().any(|s| {
            s.executable && s.address >= mmap_address && s.address - mmap_address < s.align.max(1)
        })
    }

    /// `[lowest segment start, highest segment end)`.
    pub(crate) fn span(&self) -> (u64, u64) {
        self.span
    }

    /// True if `addr` (a link-time address) lies in one of the loaded segments.
    #[inline]
    pub(crate) fn contains(&self, addr: u64) -> bool {
        if addr < self.span.0 || addr >= self.span.1 {
            return false;
        }
        self.segments
            .iter()
            .any(|s| addr >= s.address && addr - s.address < s.size)
    }
}

/// The last `/`-separated component of a path.
pub(crate) fn base_name(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

fn align_down(v: u64, align: u64) -> u64 {
    v - v % align
}

/// PT_LOAD segments with their alignment and flags (`object`'s generic segment API hides both).
fn elf_load_segments(data: &[u8]) -> Option<Vec<Segment>> {
    match data.get(4) {
        Some(&2) => load_segments::<object::elf::FileHeader64<object::Endianness>>(data),
        _ => load_segments::<object::elf::FileHeader32<object::Endianness>>(data),
    }
}

/// [`elf_load_segments`] for one ELF class.
fn load_segments<H: object::read::elf::FileHeader<Endian = object::Endianness>>(
    data: &[u8],
) -> Option<Vec<Segment>> {
    use object::read::elf::ProgramHeader;
    let header = H::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let phdrs = header.program_headers(endian, data).ok()?;
    Some(
        phdrs
            .iter()
            .filter(|p| p.p_type(endian) == object::elf::PT_LOAD)
            .map(|p| Segment {
                address: p.p_vaddr(endian).into(),
                size: p.p_memsz(endian).into(),
                file_offset: p.p_offset(endian).into(),
                align: p.p_align(endian).into(),
                executable: p.p_flags(endian) & object::elf::PF_X != 0,
            })
            .collect(),
    )
}

/// Lowercase hex of a build-id, as perf and BOLT print it.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
