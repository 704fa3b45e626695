//! On-disk profile formats: zero-copy readers over `&[u8]` and streaming writers over
//! `io::Write`. This crate knows nothing about aggregation (`engine`) or the command line (`cli`).

pub mod bolt;
pub mod bytes;
pub mod instrprof;
pub mod perf;
pub mod sampleprof;
mod summary;

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
