//! The profile kind (LLVM's `InstrProfKind`) and its encoding in the version word's variant bits.

/// A set of `InstrProfKind` bits. `UNKNOWN` (no bit) is what raw front-end profiles report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ProfileKind(pub u32);

/// Variant flags in the high 32 bits of a raw or indexed version word.
pub mod variant {
    /// `VARIANT_MASK_IR_PROF` (InstrProfData.inc): an IR-level (not front-end) profile.
    pub const IR_PROF: u64 = 1 << 56;
    /// `VARIANT_MASK_CSIR_PROF`: a context-sensitive IR profile.
    pub const CSIR_PROF: u64 = 1 << 57;
    /// `VARIANT_MASK_INSTR_ENTRY`: instrumented at function entry (`-pgo-instrument-entry`).
    pub const INSTR_ENTRY: u64 = 1 << 58;
    /// `VARIANT_MASK_DBG_CORRELATE`: names and data come from debug info (`-debug-info-correlate`).
    pub const DBG_CORRELATE: u64 = 1 << 59;
    /// `VARIANT_MASK_BYTE_COVERAGE`: single-byte coverage counters (0 = covered).
    pub const BYTE_COVERAGE: u64 = 1 << 60;
    /// `VARIANT_MASK_FUNCTION_ENTRY_ONLY`: only the entry counter of each function.
    pub const FUNCTION_ENTRY_ONLY: u64 = 1 << 61;
    /// `VARIANT_MASK_MEMPROF`: carries a memory profile.
    pub const MEMPROF: u64 = 1 << 62;
    /// `VARIANT_MASK_TEMPORAL_PROF`: carries temporal traces.
    pub const TEMPORAL_PROF: u64 = 1 << 63;
    /// `VARIANT_MASKS_ALL`: every variant bit; the low 32 bits are the version number.
    pub const MASK_ALL: u64 = 0xffff_ffff_0000_0000;
}

impl ProfileKind {
    /// No kind bit: what a raw reader reports for front-end profiles.
    pub const UNKNOWN: ProfileKind = ProfileKind(0);
    /// `InstrProfKind::FrontendInstrumentation`: clang front-end counters.
    pub const FRONTEND: ProfileKind = ProfileKind(0x1);
    /// `InstrProfKind::IRInstrumentation`: IR-level counters.
    pub const IR: ProfileKind = ProfileKind(0x2);
    /// `InstrProfKind::FunctionEntryInstrumentation`: the entry block's counter comes first.
    pub const ENTRY_FIRST: ProfileKind = ProfileKind(0x4);
    /// `InstrProfKind::ContextSensitive`: context-sensitive IR profile.
    pub const CONTEXT_SENSITIVE: ProfileKind = ProfileKind(0x8);
    /// `InstrProfKind::SingleByteCoverage`: one byte per counter, coverage only.
    pub const SINGLE_BYTE_COVERAGE: ProfileKind = ProfileKind(0x10);
    /// `InstrProfKind::FunctionEntryOnly`: only function entry counts.
    pub const FUNCTION_ENTRY_ONLY: ProfileKind = ProfileKind(0x20);
    /// `InstrProfKind::MemProf`: a memory profile is present.
    pub const MEMPROF: ProfileKind = ProfileKind(0x40);
    /// `InstrProfKind::TemporalProfile`: temporal traces are present.
    pub const TEMPORAL: ProfileKind = ProfileKind(0x80);

    /// Whether any bit of `other` is set.
    pub fn has(self, other: ProfileKind) -> bool {
        self.0 & other.0 != 0
    }

    /// Sets the bits of `other`.
    pub fn insert(&mut self, other: ProfileKind) {
        self.0 |= other.0;
    }

    /// Clears the bits of `other`.
    pub fn remove(&mut self, other: ProfileKind) {
        self.0 &= !other.0;
    }

    /// The kind a raw reader reports: no front-end bit even for clang front-end profiles.
    pub(crate) fn from_raw_version(version: u64) -> ProfileKind {
        Self::from_common_flags(version)
    }

    /// The kind an indexed reader reports (`getProfileKindFromVersion`): like raw, no
    /// front-end bit either, so only a text `:fe` header ever conflicts with IR profiles.
    pub(crate) fn from_indexed_version(version: u64) -> ProfileKind {
        let mut kind = Self::from_common_flags(version);
        if version & variant::MEMPROF != 0 {
            kind.insert(Self::MEMPROF);
        }
        kind
    }

    fn from_common_flags(version: u64) -> ProfileKind {
        let pairs = [
            (variant::IR_PROF, Self::IR),
            (variant::CSIR_PROF, Self::CONTEXT_SENSITIVE),
            (variant::INSTR_ENTRY, Self::ENTRY_FIRST),
            (variant::BYTE_COVERAGE, Self::SINGLE_BYTE_COVERAGE),
            (variant::FUNCTION_ENTRY_ONLY, Self::FUNCTION_ENTRY_ONLY),
            (variant::TEMPORAL_PROF, Self::TEMPORAL),
        ];
        let mut kind = ProfileKind::UNKNOWN;
        for (bit, k) in pairs {
            if version & bit != 0 {
                kind.insert(k);
            }
        }
        kind
    }

    /// The variant bits `InstrProfWriter` puts into an indexed header.
    pub(crate) fn indexed_variant_bits(self) -> u64 {
        let pairs = [
            (Self::IR, variant::IR_PROF),
            (Self::CONTEXT_SENSITIVE, variant::CSIR_PROF),
            (Self::ENTRY_FIRST, variant::INSTR_ENTRY),
            (Self::SINGLE_BYTE_COVERAGE, variant::BYTE_COVERAGE),
            (Self::FUNCTION_ENTRY_ONLY, variant::FUNCTION_ENTRY_ONLY),
            (Self::MEMPROF, variant::MEMPROF),
            (Self::TEMPORAL, variant::TEMPORAL_PROF),
        ];
        pairs
            .iter()
            .filter(|(k, _)| self.has(*k))
            .fold(0, |bits, (_, bit)| bits | bit)
    }
}
