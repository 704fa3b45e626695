//! The profile kind (LLVM's `InstrProfKind`) and its encoding in the version word's variant bits.

/// A set of `InstrProfKind` bits. `UNKNOWN` (no bit) is what raw front-end profiles report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ProfileKind(pub u32);

/// Variant flags in the high 32 bits of a raw or indexed version word.
pub mod variant {
    pub const IR_PROF: u64 = 1 << 56;
    pub const CSIR_PROF: u64 = 1 << 57;
    pub const INSTR_ENTRY: u64 = 1 << 58;
    pub const DBG_CORRELATE: u64 = 1 << 59;
    pub const BYTE_COVERAGE: u64 = 1 << 60;
    pub const FUNCTION_ENTRY_ONLY: u64 = 1 << 61;
    pub const MEMPROF: u64 = 1 << 62;
    pub const TEMPORAL_PROF: u64 = 1 << 63;
    pub const MASK_ALL: u64 = 0xffff_ffff_0000_0000;
}

impl ProfileKind {
    pub const UNKNOWN: ProfileKind = ProfileKind(0);
    pub const FRONTEND: ProfileKind = ProfileKind(0x1);
    pub const IR: ProfileKind = ProfileKind(0x2);
    pub const ENTRY_FIRST: ProfileKind = ProfileKind(0x4);
    pub const CONTEXT_SENSITIVE: ProfileKind = ProfileKind(0x8);
    pub const SINGLE_BYTE_COVERAGE: ProfileKind = ProfileKind(0x10);
    pub const FUNCTION_ENTRY_ONLY: ProfileKind = ProfileKind(0x20);
    pub const MEMPROF: ProfileKind = ProfileKind(0x40);
    pub const TEMPORAL: ProfileKind = ProfileKind(0x80);

    pub fn has(self, other: ProfileKind) -> bool {
        self.0 & other.0 != 0
    }

    pub fn insert(&mut self, other: ProfileKind) {
        self.0 |= other.0;
    }

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
