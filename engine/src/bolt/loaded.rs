//! A binary loaded for symbolization, and one binary's profile written as fdata from it.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::bolt::bat::Translation;
use crate::bolt::functions::Functions;
use crate::bolt::{
    memory, symbolize_as, symbolize_bolted, symbolize_keeping, BatIndex, Dialect, TraceStats,
};
use crate::error::{io_error, Result};
use crate::io::output::write_atomically;
use crate::io::progress::Progress;
use crate::io::InputBytes;
use crate::perf::aggregate::BinaryProfile;

/// A binary's bytes and the functions BOLT would find in it.
pub struct LoadedBinary {
    path: PathBuf,
    /// Mapped when large: a copy costs fresh pages (the kernel clearing them), and symbolizing
    /// reads only the functions the profile touches.
    data: Arc<InputBytes>,
    functions: Functions,
    /// A BOLTed binary's address translation tables (`llvm-bolt --enable-bat`).
    bat: Option<Translation>,
    /// Seconds the loading took.
    seconds: f64,
}

impl LoadedBinary {
    /// Reads `binary` and finds its functions as BOLT does.
    pub fn load(binary: &Path) -> Result<LoadedBinary> {
        Self::load_with(binary, false)
    }

    /// [`LoadedBinary::load`], accepting a binary without a symbol table when `allow_stripped`
    /// (see [`Functions::from_elf_with`]).
    pub fn load_with(binary: &Path, allow_stripped: bool) -> Result<LoadedBinary> {
        let started = Instant::now();
        let data = Arc::new(InputBytes::open(binary).map_err(io_error(binary))?);
        let functions = Functions::from_shared_elf(binary, &data, allow_stripped)?;
        let bat = Translation::from_elf(binary, &data)?;
        Ok(LoadedBinary {
            path: binary.to_path_buf(),
            data,
            functions,
            bat,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// The binary's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The functions BOLT finds in the binary.
    pub fn functions(&self) -> &Functions {
        &self.functions
    }

    /// The binary's address translation tables, if `llvm-bolt --enable-bat` wrote it: its
    /// profiles are then written for the input binary, as perf2bolt writes them.
    pub fn bat(&self) -> Option<&Translation> {
        self.bat.as_ref()
    }
}

/// Symbolizes one binary's profile and writes it to `path` as BOLT's YAML profile, as
/// `perf2bolt --profile-format=yaml` (LLVM 22) writes it (see [`crate::bolt::yaml`]).
pub fn write_yaml(
    loaded: &LoadedBinary,
    profile: Cow<'_, BinaryProfile>,
    basic: bool,
    use_dfs: bool,
    dialect: Dialect,
    path: &Path,
) -> Result<FdataReport> {
    write_yaml_with_intra(loaded, profile, None, basic, use_dfs, dialect, path)
}

/// [`write_yaml`], the functions' inner branches taken from `intra` when given (see
/// [`crate::bolt::yaml::profile_with_intra`]). An owned `profile` is dropped once symbolized:
/// the lines and records then reuse its memory (the traces of a large capture are about a
/// hundred megabytes) instead of fresh pages.
pub fn write_yaml_with_intra(
    loaded: &LoadedBinary,
    profile: Cow<'_, BinaryProfile>,
    intra: Option<&BinaryProfile>,
    basic: bool,
    use_dfs: bool,
    dialect: Dialect,
    path: &Path,
) -> Result<FdataReport> {
    let started = Instant::now();
    let functions = &loaded.functions;
    let options = crate::bolt::yaml::Options {
        binary_name: loaded.path.to_string_lossy().into_owned(),
        build_id: build_id_hex(&loaded.data),
        use_dfs,
    };
    let (traces, out_of_range_samples, symbolize_seconds) = match &loaded.bat {
        // A BOLTed binary's profile is the input binary's (perf2bolt 22's `writeBATYAML`);
        // perf2bolt has no LLVM 19 dialect for it.
        Some(t) => {
            let bat = BatIndex::new(t, functions);
            let fdata = symbolize_bolted(&profile, functions, basic, Some(&bat));
            let intra = intra.map(|p| symbolize_bolted(p, functions, basic, Some(&bat)));
            let yaml = crate::bolt::yaml::bat_profile(
                &fdata,
                intra.as_ref(),
                &loaded.data,
                &bat,
                &options,
            )
            .map_err(|e| crate::error::Error::Binary {
                path: loaded.path.clone(),
                message: e.to_string(),
            })?;
            let symbolize_seconds = started.elapsed().as_secs_f64();
            write_atomically(path, |out| crate::bolt::yaml::write_profile(out, &yaml))?;
            (fdata.stats, fdata.out_of_range_samples, symbolize_seconds)
        }
        None => {
            let mut fdata = symbolize_keeping(&profile, functions, basic, None, dialect, true);
            drop(profile);
            let touched = fdata.take_touched();
            let intra = intra.map(|p| symbolize_as(p, functions, basic, None, dialect));
            let symbolize_seconds = started.elapsed().as_secs_f64();
            // The records are made while the file is written.
            write_atomically(path, |out| {
                crate::bolt::yaml::write_reusing(
                    out,
                    &mut fdata,
                    touched,
                    intra.as_ref(),
                    &loaded.data,
                    &options,
                )
            })?;
            (fdata.stats, fdata.out_of_range_samples, symbolize_seconds)
        }
    };
    Ok(FdataReport {
        load_seconds: loaded.seconds,
        symbolize_seconds,
        write_seconds: started.elapsed().as_secs_f64() - symbolize_seconds,
        traces,
        out_of_range_samples,
    })
}

/// The GNU build id of the ELF file `data`, in lowercase hex.
fn build_id_hex(data: &[u8]) -> Option<String> {
    use object::Object;
    let file = object::File::parse(data).ok()?;
    let id = file.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// What writing one binary's fdata found and how long its phases took.
#[derive(Clone, Copy, Debug, Default)]
pub struct FdataReport {
    /// Seconds spent finding the binary's functions (when it was loaded).
    pub load_seconds: f64,
    /// Seconds spent disassembling and symbolizing.
    pub symbolize_seconds: f64,
    /// Seconds spent writing.
    pub write_seconds: f64,
    /// perf2bolt's fall-through diagnostics (branch mode).
    pub traces: TraceStats,
    /// Basic samples outside every function (basic mode).
    pub out_of_range_samples: u64,
}

/// Symbolizes one binary's profile (disassembling the functions it touches) and writes it to
/// `path` as fdata, memory-event lines after the branch lines as perf2bolt writes them (branch
/// mode only). `progress` hears of the two phases, symbolizing and writing; its caller
/// finishes it. A profile given owned is dropped once symbolized, before the lines are gathered
/// and sorted for writing: its traces were a third of the peak memory.
pub fn write_fdata(
    loaded: &LoadedBinary,
    profile: Cow<'_, BinaryProfile>,
    basic: bool,
    path: &Path,
    progress: &dyn Progress,
) -> Result<FdataReport> {
    progress.phase("symbolizing");
    let started = Instant::now();
    let functions = &loaded.functions;
    let bat = loaded.bat.as_ref().map(|t| BatIndex::new(t, functions));
    let fdata = symbolize_bolted(&profile, functions, basic, bat.as_ref());
    let mem = if basic || profile.mem.is_empty() {
        Vec::new()
    } else {
        let objects = memory::DataObjects::from_elf(&loaded.data, functions);
        memory::symbolize(&profile.mem, functions, &objects)
    };
    drop(profile);
    let symbolize_seconds = started.elapsed().as_secs_f64();
    progress.phase("writing");
    write_atomically(path, |out| {
        fdata.write(out)?;
        memory::write(&mem, out)
    })?;
    Ok(FdataReport {
        load_seconds: loaded.seconds,
        symbolize_seconds,
        write_seconds: started.elapsed().as_secs_f64() - symbolize_seconds,
        traces: fdata.stats,
        out_of_range_samples: fdata.out_of_range_samples,
    })
}
