//! One function's profile: `InstrProfRecord` without its name.

/// Value kinds: indirect-call targets, memop sizes, vtable targets (`IPVK_*`).
pub const NUM_VALUE_KINDS: usize = 3;
/// `IPVK_IndirectCallTarget`: values are callee function MD5s.
pub const IPVK_INDIRECT_CALL_TARGET: usize = 0;
/// `IPVK_MemOPSize`: values are memcpy/memset sizes in bytes.
pub const IPVK_MEMOP_SIZE: usize = 1;
/// `IPVK_VTableTarget`: values are vtable address MD5s.
pub const IPVK_VTABLE_TARGET: usize = 2;

/// At most this many values are kept per site (`INSTR_PROF_MAX_NUM_VAL_PER_SITE`).
pub const MAX_VALUES_PER_SITE: usize = 255;

/// Bit 60 of a function hash marks a context-sensitive record.
pub const CS_FLAG_IN_FUNC_HASH: u32 = 60;

/// One observed value and how often it was seen (LLVM `InstrProfValueData`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueData {
    /// The value: a function or vtable MD5, or a size, per value kind.
    pub value: u64,
    /// Times it was observed.
    pub count: u64,
}

/// The values observed at one instrumented site.
pub type ValueSite = Vec<ValueData>;

/// The counters and value profile of one function version (`NamedInstrProfRecord` minus the name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// The function's structural hash (`FuncHash`); bit 60 marks context-sensitive records.
    pub hash: u64,
    /// The counters, in instrumentation order (`Counts`).
    pub counts: Vec<u64>,
    /// MC/DC bitmap bytes.
    pub bitmap: Vec<u8>,
    /// Sites per value kind; a kind with no sites has an empty vector.
    pub values: [Vec<ValueSite>; NUM_VALUE_KINDS],
}

impl Record {
    /// Kinds with at least one site (`getNumValueKinds`).
    pub(crate) fn num_value_kinds(&self) -> usize {
        self.values.iter().filter(|s| !s.is_empty()).count()
    }

    /// Whether the hash carries the context-sensitive flag (bit [`CS_FLAG_IN_FUNC_HASH`]).
    pub fn is_context_sensitive(&self) -> bool {
        (self.hash >> CS_FLAG_IN_FUNC_HASH) & 1 == 1
    }
}
