//! On-disk profile formats: zero-copy readers over `&[u8]` and streaming writers over
//! `io::Write`. This crate knows nothing about aggregation (`engine`) or the command line (`cli`).
//!
//! | module | formats |
//! |---|---|
//! | [`perf`] | `perf.data` (file and pipe mode, zstd-compressed records), `perf script` text |
//! | [`bolt`] | BOLT's `.fdata`, pre-aggregated profiles |
//! | [`instrprof`] | LLVM instrumentation profiles: raw, indexed, text |
//! | [`sampleprof`] | sample profiles: LLVM text, binary, ExtBinary; GCC gcov; AutoFDO GCOV v4 |
//! | [`thrift`] | the Thrift compact protocol, checked for shape (Parquet footers) |
//!
//! Binary layouts are read with [`bytes`]: [`bytes::Bytes`] for random access at offsets and
//! [`bytes::Reader`] for field-by-field reading (fixed-width integers in either byte order,
//! LEB128 with LLVM's rules). Neither panics on malformed input.
//!
//! # Errors
//!
//! Every format family has one error type, exported at the family's root: [`perf::Error`],
//! [`bolt::fdata::FdataError`], [`bolt::preagg::ParseError`], [`instrprof::Error`],
//! [`sampleprof::Error`]; reading a [`bytes::Reader`] fails with [`bytes::ReadError`], which
//! each family wraps with the name of the field it was reading.
//!
//! - **Typed.** What went wrong is an enum whose variants carry the details, never a bare
//!   string: either the error is a location plus a `kind` enum (`perf`, `instrprof`, `fdata`),
//!   or an enum whose variants carry their own location (`sampleprof`, whose messages place
//!   it differently per variant, as llvm-profdata does). The enums are `#[non_exhaustive]`.
//! - **Located.** `Display` names where decoding stopped when that is known: `byte offset N`
//!   in binary inputs (the absolute file offset, or the place inside a decompressed stream),
//!   the line (and column) in text inputs. The caller adds the file name.
//! - **Worded for the tools.** Where a message stands for an LLVM tool's message, its wording
//!   is LLVM's, so that output compared with the real tools matches.
//! - **Chained.** An error built from an underlying one (io, zstd, zlib) keeps it as an
//!   [`error::Cause`] and hands it out through `std::error::Error::source`.
//! - **Comparable.** Errors are `Clone + PartialEq`, so tests can match them exactly.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bolt;
pub mod bytes;
pub mod error;
pub mod instrprof;
pub mod perf;
pub mod sampleprof;
pub mod store;
mod summary;
pub mod thrift;

/// LLVM's `MD5Hash(StringRef)`, the GUID of a function name in both profile families: the
/// first 8 bytes of the MD5 digest read little-endian (instrprof `NameRef` and indexed keys,
/// sample profile MD5 name tables).
pub fn md5_guid(name: &[u8]) -> u64 {
    use md5::{Digest, Md5};
    let digest = Md5::digest(name);
    let mut low = [0u8; 8];
    low.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(low)
}
