//! Sample (AutoFDO / SPGO) profiles: one in-memory model and the formats that carry it —
//! LLVM text, LLVM raw binary and ExtBinary, GCC AutoFDO gcov, AutoFDO GCOV v4.

pub mod binary;
pub mod error;
pub mod gcov;
pub mod gcov_v4;
pub mod model;
pub mod summary;
pub mod text;

pub use error::{Error, Result};

/// Inlining deeper than this is refused by every reader (and so never reaches a writer),
/// rather than recursed into: LLVM has no limit, and a crafted file could otherwise exhaust
/// the stack of the readers, writers and printers that recurse (a release build overflowed
/// the main thread's 8 MiB at 14,000 levels; worker threads have 2 MiB). Real profiles nest
/// a few dozen levels.
pub const MAX_NESTING: usize = 1000;
pub use model::{
    Context, ContextFrame, FunctionId, FunctionSamples, LineLocation, Profile, ProfileKind,
    SampleRecord,
};

/// The encodings of a sample profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// LLVM text format (`SPF_Text`).
    Text,
    /// LLVM raw binary (`SPF_Binary`).
    Binary,
    /// LLVM extensible binary (`SPF_Ext_Binary`).
    ExtBinary,
    /// GCC AutoFDO gcov of the given version.
    Gcov(gcov::Version),
    /// AutoFDO GCOV v4 in one of its encodings.
    GcovV4(gcov_v4::Encoding),
}

/// LLVM's `SPMagic(format)`: "SPROF42" followed by the format byte.
pub(crate) const fn llvm_magic(format_byte: u8) -> u64 {
    0x5350_524F_4634_3200 | format_byte as u64
}

/// Decides the encoding from the content, in the order LLVM's reader factory tries them.
pub fn detect(data: &[u8]) -> Option<Format> {
    let mut r = crate::bytes::Reader::new(data, crate::bytes::Endian::Little);
    match r.uleb128() {
        Ok(m) if m == llvm_magic(0x04) => return Some(Format::ExtBinary),
        Ok(m) if m == llvm_magic(0xFF) => return Some(Format::Binary),
        _ => {}
    }
    if let Some(v) = gcov::detect(data) {
        return Some(Format::Gcov(v));
    }
    if let Some(e) = gcov_v4::detect(data) {
        return Some(Format::GcovV4(e));
    }
    text::is_text(data).then_some(Format::Text)
}

/// Reads a sample profile in any LLVM encoding.
pub fn read(data: &[u8]) -> Result<Profile> {
    match detect(data) {
        Some(Format::ExtBinary) => binary::read_ext(data),
        Some(Format::Binary) => binary::read_raw(data),
        Some(Format::Text) => text::read(data),
        Some(Format::Gcov(_)) => gcov::read(data),
        Some(Format::GcovV4(_)) => gcov_v4::read(data),
        None => Err(Error::UnrecognizedFormat),
    }
}
