//! Sample profiles: reading any supported encoding from a file, merging with weights as
//! `llvm-profdata merge --sample` does, and writing in any encoding.
//!
//! Entry points for the command line and the `llvm-profdata` drop-in: [`read`], [`merge`],
//! [`write()`], [`convert`]; [`show`] and [`overlap`] print what `llvm-profdata show` and
//! `overlap --sample` print.
//!
//! ```
//! use engine::sampleprof::{self, Input, MergeOptions, OutputFormat};
//! use formats::sampleprof::binary::ExtBinaryOptions;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let text = dir.path().join("a.prof");
//! std::fs::write(&text, "main:300:10\n 1: 10\n 2: 290\n")?;
//!
//! // Text → ExtBinary, and read back: the same profile.
//! let ext = dir.path().join("a.extbinary");
//! sampleprof::convert(&text, OutputFormat::ExtBinary(ExtBinaryOptions::default()), &ext)?;
//! let from_text = sampleprof::read(&text)?;
//! assert_eq!(sampleprof::read(&ext)?.functions, from_text.functions);
//!
//! // Merging the profile with itself at weight 2 triples its counts.
//! let inputs = [
//!     Input { path: text.clone(), weight: 1 },
//!     Input { path: ext, weight: 2 },
//! ];
//! let merged = sampleprof::merge(&inputs, &MergeOptions::default())?;
//! let main = merged.profile.functions.values().next().unwrap();
//! assert_eq!((main.total, main.head), (900, 30));
//! assert!(merged.warnings.is_empty());
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use formats::sampleprof::binary::{self, ExtBinaryOptions};
use formats::sampleprof::gcov::{self, Version};
use formats::sampleprof::gcov_v4;
use formats::sampleprof::{self as sp, text, Context, FunctionId, FunctionSamples, Profile};

use crate::io::output::write_atomically;
pub use crate::io::InputBytes;

pub(crate) mod fast;

pub mod overlap;
pub mod show;
pub mod transform;

/// A failure of the sample-profile domain (see [`crate::error`] for the convention).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Decoding `path` failed; the message reads like llvm-profdata's.
    Format {
        /// The profile.
        path: PathBuf,
        /// What the reader expected, and where.
        source: sp::Error,
    },
    /// Opening, reading or writing `path` failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Inputs that cannot be merged (context-sensitive with flat, probe with line-based).
    Incompatible(String),
    /// The profile cannot be written in the requested format.
    Write {
        /// The output.
        path: PathBuf,
        /// Why the writer refused.
        source: sp::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Format { path, source } => {
                f.write_str(&source.located(&path.display().to_string()))
            }
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Incompatible(m) => f.write_str(m),
            Error::Write { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Format { source, .. } | Error::Write { source, .. } => Some(source),
            Error::Io { source, .. } => Some(source),
            Error::Incompatible(_) => None,
        }
    }
}

/// The sample-profile domain's result.
pub type Result<T> = std::result::Result<T, Error>;

/// Reads a sample profile, with the order LLVM's reader lists its functions in (its hash
/// map's order; see [`overlap::load_order`]).
pub fn read_in_llvm_order(path: &Path) -> Result<(Profile, Vec<Context>)> {
    let data = load(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let profile = sp::read(&data).map_err(|source| Error::Format {
        path: path.to_path_buf(),
        source,
    })?;
    let order = overlap::load_order(&profile, &overlap::insertion_order(&data, &profile))
        .into_iter()
        .cloned()
        .collect();
    Ok((profile, order))
}

/// The iteration order of a fresh LLVM `SampleProfileMap` into which contexts are inserted
/// in the order given (repeats ignored), as llvm-profdata's merge fills its output map.
pub fn map_order_after_inserting(contexts: &[Context]) -> Vec<Context> {
    let mut order = crate::hash_order::UnorderedMapOrder::new();
    let mut by_hash: hashbrown::HashMap<u64, &Context> = Default::default();
    for c in contexts {
        let h = overlap::context_hash(c);
        by_hash.entry(h).or_insert(c);
        order.insert(h);
    }
    order.order().iter().map(|h| by_hash[h].clone()).collect()
}

/// Reads a sample profile in any encoding (detected from the content).
pub fn read(path: &Path) -> Result<Profile> {
    let data = crate::io::input::read_or_stdin(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    sp::read(&data).map_err(|source| Error::Format {
        path: path.to_path_buf(),
        source,
    })
}

/// One merge input and its weight (`--weighted-input=W,FILE`; 1 for plain inputs).
#[derive(Clone, Debug)]
pub struct Input {
    /// The profile, in any encoding.
    pub path: PathBuf,
    /// Every count is multiplied by this (saturating).
    pub weight: u64,
}

/// How to merge: `llvm-profdata merge --sample` options. The default merges everything,
/// failing on the first unreadable input.
#[derive(Clone, Debug, Default)]
pub struct MergeOptions {
    /// `--failure-mode=all|warn`: an unreadable input is reported and skipped instead of
    /// failing the merge.
    pub skip_unreadable: bool,
    /// `--remapping-file`: names rewritten before merging.
    pub remapper: Option<transform::Remapper>,
    /// `--drop-profile-symbol-list`.
    pub drop_symbol_list: bool,
}

/// A merged profile, the warnings llvm-profdata would print (dropped profiles), the
/// inputs skipped as unreadable (with `skip_unreadable`), and the order llvm-profdata's
/// output map lists the functions in (it writes function metadata in that order).
pub struct Merged {
    /// The merged profile.
    pub profile: Profile,
    /// Warnings llvm-profdata would print (one per profile dropped on a checksum mismatch).
    pub warnings: Vec<String>,
    /// The inputs skipped as unreadable, with why (only with `skip_unreadable`).
    pub skipped: Vec<Error>,
    /// The merged functions in the order llvm-profdata's output map lists them; pass it to
    /// an ExtBinary writer to write function metadata in llvm-profdata's order.
    pub map_order: Vec<Context>,
}

/// Merges `inputs` like `llvm-profdata merge --sample`: every top-level profile is added
/// (counts × weight, saturating) into the profile of the same context; a CFG checksum
/// mismatch drops the later profile with a warning.
pub fn merge(inputs: &[Input], options: &MergeOptions) -> Result<Merged> {
    let mut out = Profile::default();
    let mut warnings = Vec::new();
    let mut skipped = Vec::new();
    let mut merged_any = false;
    let mut inserted: Vec<Context> = Vec::new();
    let mut keys = MergeKeys::default();
    for input in inputs {
        let (mut p, order) = match read_in_llvm_order(&input.path) {
            Ok(p) => p,
            Err(e) if options.skip_unreadable => {
                skipped.push(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        if options.drop_symbol_list {
            p.symbol_list.clear();
        }
        let start = inserted.len();
        match &options.remapper {
            Some(r) => {
                inserted.extend(order.iter().map(|c| r.remap_context(c)));
                p = r.remap_profile(p);
            }
            None => inserted.extend(order),
        }
        let first = !merged_any;
        merged_any = true;
        if !first && p.kind.probe != out.kind.probe {
            return Err(incompatible(
                &input.path,
                "probe-based",
                "non-probe-based",
                p.kind.probe,
            ));
        }
        if !first && p.kind.cs != out.kind.cs {
            return Err(incompatible(&input.path, "CS", "non-CS", p.kind.cs));
        }
        merge_into(
            &mut out,
            p,
            &inserted[start..],
            input,
            &mut keys,
            &mut warnings,
        );
    }
    Ok(Merged {
        profile: out,
        warnings,
        skipped,
        map_order: map_order_after_inserting(&inserted),
    })
}

/// LLVM's "cannot merge CS profile with non-CS profile", naming the input that differs from
/// the ones before it and how.
fn incompatible(path: &Path, kind: &str, other: &str, this_is_kind: bool) -> Error {
    let (this, before) = match this_is_kind {
        true => (kind, other),
        false => (other, kind),
    };
    Error::Incompatible(format!(
        "{}: cannot merge {kind} profile with {other} profile (this input is {this}, the inputs before it {before})",
        path.display()
    ))
}

/// The keys merged profiles are filed under. llvm-profdata's `SampleProfileMap` is keyed by
/// the MD5 of the context (`SampleContext::getHashCode`), so a function named in one input and
/// known only by its MD5 in another (an `--use-md5` profile) is one profile, under the first
/// input's spelling. Inlinees and call targets are keyed by `FunctionId`,
/// where a name and an MD5 differ, and stay apart, as in LLVM.
#[derive(Default)]
struct MergeKeys {
    /// Each profile's key by its contexts' MD5s; built when the first MD5 context comes (a
    /// merge of named profiles never hashes a name).
    by_md5: Option<hashbrown::HashMap<Context, Context>>,
}

impl MergeKeys {
    /// The key of `out`'s profile that `ctx` is merged into (`ctx` itself when it is new).
    fn resolve(&mut self, out: &Profile, ctx: Context) -> Context {
        if self.by_md5.is_none() {
            if !has_md5(&ctx) {
                return ctx;
            }
            let existing = out.functions.keys().map(|k| (md5_context(k), k.clone()));
            self.by_md5 = Some(existing.collect());
        }
        let by_md5 = self.by_md5.as_mut().expect("built above");
        by_md5.entry(md5_context(&ctx)).or_insert(ctx).clone()
    }
}

fn has_md5(ctx: &Context) -> bool {
    match ctx {
        Context::Plain(f) => f.as_name().is_none(),
        Context::Cs(frames) => frames.iter().any(|f| f.func.as_name().is_none()),
    }
}

/// `ctx` with every function known by its MD5.
fn md5_context(ctx: &Context) -> Context {
    let md5 = |f: &FunctionId| FunctionId::Hash(f.guid());
    match ctx {
        Context::Plain(f) => Context::Plain(md5(f)),
        Context::Cs(frames) => Context::Cs(
            frames
                .iter()
                .map(|f| sp::ContextFrame {
                    func: md5(&f.func),
                    loc: f.loc,
                })
                .collect(),
        ),
    }
}

/// Merges `p` into `out`, its functions in `order` (LLVM's iteration order of the input's
/// map, which orders the warnings).
fn merge_into(
    out: &mut Profile,
    mut p: Profile,
    order: &[Context],
    input: &Input,
    keys: &mut MergeKeys,
    warnings: &mut Vec<String>,
) {
    out.kind.cs |= p.kind.cs;
    out.kind.probe |= p.kind.probe;
    out.kind.preinlined |= p.kind.preinlined;
    out.kind.fs |= p.kind.fs;
    out.partial |= p.partial;
    out.symbol_list.extend(p.symbol_list);
    out.source_files.extend(p.source_files);
    for (name, t) in p.timestamps {
        let e = out.timestamps.entry(name).or_insert(t);
        *e = (*e).min(t);
    }
    let mut in_order: Vec<(Context, FunctionSamples)> = order
        .iter()
        .filter_map(|c| p.functions.remove_entry(c))
        .collect();
    // Any the order missed (none expected), in context order.
    in_order.extend(std::mem::take(&mut p.functions));
    for (ctx, fs) in in_order {
        let ctx = keys.resolve(out, ctx);
        match out.functions.get_mut(&ctx) {
            None if input.weight == 1 => {
                out.functions.insert(ctx, fs);
            }
            existing => {
                let target =
                    match existing {
                        Some(t) => t,
                        None => out.functions.entry(ctx.clone()).or_insert_with(|| {
                            sp::FunctionSamples {
                                attributes: fs.attributes,
                                ..Default::default()
                            }
                        }),
                    };
                if let Err(e) = target.merge(&fs, input.weight) {
                    warnings.push(format!("{}: {ctx}: {e}", input.path.display()));
                }
            }
        }
    }
}

/// The encodings `profmill convert --to` and `merge --sample` write.
#[derive(Clone, Copy, Debug)]
pub enum OutputFormat {
    /// LLVM's text format.
    Text,
    /// LLVM's raw binary format (`--binary`, without sections).
    Binary,
    /// LLVM's extensible binary format, with the given section options.
    ExtBinary(ExtBinaryOptions),
    /// GCC's `.afdo` (gcov) format, in the given version.
    Gcov(Version),
    /// AutoFDO GCOV v4: binary, compact or text.
    GcovV4(gcov_v4::Encoding),
}

/// Writes `profile` to `out` in `format`.
pub fn write_to(
    profile: &Profile,
    format: OutputFormat,
    out: &mut dyn std::io::Write,
) -> std::result::Result<(), sp::Error> {
    let mut w = out;
    match format {
        OutputFormat::Text => text::write(profile, &mut w).map_err(sp::Error::from),
        OutputFormat::Binary => binary::write_raw(profile, &mut w),
        OutputFormat::ExtBinary(o) => binary::write_ext(profile, &o, &mut w),
        OutputFormat::Gcov(v) => gcov::write(profile, v, &mut w),
        OutputFormat::GcovV4(e) => gcov_v4::write(profile, e, &mut w),
    }
}

/// Converts the profile in `input` to `format` in `output`. A GCOV v4 input written as v4
/// goes through the v4 document, so symbol IDs, the stored summary and extension records
/// (binary to binary) are kept; everything else goes through the common model.
pub fn convert(input: &Path, format: OutputFormat, output: &Path) -> Result<()> {
    let data = load(input).map_err(|source| Error::Io {
        path: input.to_path_buf(),
        source,
    })?;
    let data: &[u8] = &data;
    let format_error = |source| Error::Format {
        path: input.to_path_buf(),
        source,
    };
    if let (OutputFormat::GcovV4(e), Some(_)) = (format, gcov_v4::detect(data)) {
        let doc = gcov_v4::read_document(data).map_err(format_error)?;
        let mut buf = Vec::new();
        gcov_v4::write_document(&doc, e, &mut buf).map_err(|source| Error::Write {
            path: output.to_path_buf(),
            source,
        })?;
        return write_bytes(&buf, output);
    }
    if let Some(pieces) = fast_convert(data, format) {
        return write_output(output, |w| pieces.iter().try_for_each(|p| w.write_all(p)));
    }
    let profile = sp::read(data).map_err(format_error)?;
    match format {
        // As `llvm-profdata merge` of this one input writes it: function metadata in the
        // order of its output map (context-sensitive keys are not modelled).
        OutputFormat::ExtBinary(o) if !profile.kind.cs => {
            let read_order: Vec<Context> =
                overlap::load_order(&profile, &overlap::insertion_order(data, &profile))
                    .into_iter()
                    .cloned()
                    .collect();
            let map_order = map_order_after_inserting(&read_order);
            let mut buf = Vec::new();
            binary::write_ext_in_order(&profile, &o, Some(&map_order), &mut buf).map_err(
                |source| Error::Write {
                    path: output.to_path_buf(),
                    source,
                },
            )?;
            write_bytes(&buf, output)
        }
        _ => write(&profile, format, output),
    }
}

/// An input file's bytes (the fast path parses them in place, so a large file is mapped);
/// `-` is standard input, as in llvm-profdata.
pub fn load(path: &Path) -> std::io::Result<InputBytes> {
    match path.as_os_str() == "-" {
        true => crate::io::input::read_or_stdin(path).map(InputBytes::Read),
        false => InputBytes::open(path),
    }
}

/// The conversion of `data` to `format` on the fast path, when both allow it: the output in
/// pieces to be written in order.
pub fn fast_convert(data: &[u8], format: OutputFormat) -> Option<Vec<Vec<u8>>> {
    let out = match format {
        OutputFormat::Text => fast::FastOutput::Text,
        OutputFormat::ExtBinary(o) => fast::FastOutput::ExtBinary(o),
        _ => return None,
    };
    fast::convert(data, out)
}

/// Writes `profile` to `path` atomically (no partial file on failure).
pub fn write(profile: &Profile, format: OutputFormat, path: &Path) -> Result<()> {
    // Text cannot fail but in writing: it streams (a large profile's text is not held).
    if let OutputFormat::Text = format {
        return write_output(path, |mut w| text::write(profile, &mut w));
    }
    // Encode first so that a format error is reported as such, not as an I/O failure.
    let mut buf = Vec::new();
    write_to(profile, format, &mut buf).map_err(|source| Error::Write {
        path: path.to_path_buf(),
        source,
    })?;
    write_bytes(&buf, path)
}

/// Writes as text, atomically, a context-less profile whose `n` top-level profiles, in the
/// order the writers sort them, are made by `function(i)`: they are made and formatted in
/// parallel, a batch at a time, and written in order, so the profile never exists whole.
pub fn write_text_functions(
    n: usize,
    function: impl Fn(usize) -> (Context, FunctionSamples) + Sync,
    path: &Path,
) -> Result<()> {
    use rayon::prelude::*;
    // The first functions are the largest (most samples): small batches keep them apart.
    const BATCH: usize = 256;
    write_output(path, |out| {
        for start in (0..n).step_by(BATCH) {
            let texts: Vec<Vec<u8>> = (start..n.min(start + BATCH))
                .into_par_iter()
                .map(|i| {
                    let mut text = Vec::new();
                    text::write_functions([function(i)], &mut text).expect("writes to memory");
                    text
                })
                .collect();
            texts.iter().try_for_each(|t| out.write_all(t))?;
        }
        Ok(())
    })
}

fn write_bytes(buf: &[u8], path: &Path) -> Result<()> {
    write_output(path, |w| w.write_all(buf))
}

/// [`write_atomically`] with this domain's errors.
fn write_output(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<()> {
    write_atomically(path, |out| write(out)).map_err(|e| match e {
        crate::error::Error::Io { path, source } => Error::Io { path, source },
        other => Error::Incompatible(other.to_string()),
    })
}
