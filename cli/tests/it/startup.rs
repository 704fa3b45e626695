//! What the `profmill` executable costs to start (cli/build.rs).

use object::read::elf::{Dyn, ElfFile64, FileHeader};
use object::{elf, Endianness};

/// On Linux the executable is linked at a fixed address: the dynamic loader has no relative
/// relocations to apply (a PIE build has ~129,000 and copies 2.2 MB of data at every start).
#[test]
#[cfg(target_os = "linux")]
fn the_executable_starts_without_relative_relocations() {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_profmill")).unwrap();
    let file = ElfFile64::<Endianness>::parse(&bytes[..]).unwrap();
    let (header, e) = (file.elf_header(), file.endian());
    assert_eq!(header.e_type(e), elf::ET_EXEC, "linked as a PIE");
    let dynamic = header
        .sections(e, &bytes[..])
        .unwrap()
        .dynamic(e, &bytes[..])
        .unwrap()
        .map(|(entries, _)| entries)
        .unwrap_or_default();
    let relative = dynamic
        .iter()
        .find(|d| d.d_tag(e) == u64::from(elf::DT_RELACOUNT))
        .map_or(0, |d| d.d_val(e));
    assert_eq!(relative, 0, "relative relocations to apply at start-up");
}
