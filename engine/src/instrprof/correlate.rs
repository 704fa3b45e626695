//! `llvm-profdata merge --binary-file=BIN`: the data records and names of raw profiles made with
//! `-mllvm -profile-correlate=binary`, read from the binary's sections (ELF or COFF), as LLVM
//! 19's `InstrProfCorrelator::Context::get` finds them.

use object::{Object, ObjectSection};

use formats::bytes::Endian;
use formats::instrprof::raw::{BinarySections, Correlation, LLVM19_VERSION};

/// Section names in ELF (COFF names carry a `$M` suffix that the linker drops).
const COUNTERS: &str = "__llvm_prf_cnts";
const DATA: &str = "__llvm_covdata";
const NAMES: &str = "__llvm_covnames";

fn contents<'d>(s: &object::Section<'d, '_>) -> Result<&'d [u8], String> {
    s.data()
        .map_err(|e| format!("unable to correlate profile: {e}"))
}

/// Reads `binary`; `warn` gets LLVM's out-of-range counter warnings.
pub fn correlation_from_binary(
    binary: &[u8],
    warn: &mut dyn FnMut(String),
) -> Result<Correlation, String> {
    let file = object::File::parse(binary)
        .map_err(|_| "The file was not recognized as a valid object file".to_string())?;
    if !matches!(
        file.format(),
        object::BinaryFormat::Elf | object::BinaryFormat::Coff
    ) {
        return Err(
            "unable to correlate profile: unsupported binary format (only ELF and COFF are supported)"
                .into(),
        );
    }
    let section = |name: &str| {
        file.sections()
            .find(|s| s.name().is_ok_and(|n| n.split('$').next() == Some(name)))
            .ok_or_else(|| format!("unable to correlate profile: could not find section ({name})"))
    };
    let counters = section(COUNTERS)?;
    let data = section(DATA)?;
    let names = section(NAMES)?;
    let mut counters_start = counters.address();
    // COFF counter sections start with a null byte the raw profile does not have.
    if file.format() == object::BinaryFormat::Coff {
        counters_start += 1;
    }
    let sections = BinarySections {
        covdata: contents(&data)?,
        covnames: contents(&names)?,
        counters_start,
        counters_end: counters.address() + counters.size(),
        endian: if file.is_little_endian() {
            Endian::Little
        } else {
            Endian::Big
        },
        ptr64: file.is_64(),
    };
    Correlation::from_sections(&sections, LLVM19_VERSION, warn)
}
