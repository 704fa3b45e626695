//! The rows of the store's tables and their block encoding: rows sorted by key, each column
//! written as a LEB128 delta against the previous row of the block (a block starts from an
//! all-zero row, so every block decodes alone). All arithmetic wraps, so every `u64` value
//! round-trips, markers such as `u64::MAX` included.

use crate::bytes::{write_uleb128, ReadError, Reader};

use super::SectionKind;

/// A table row: a key (the columns before the counts) and counts that add up.
pub trait Row: Copy + Default + std::fmt::Debug + PartialEq + Eq {
    /// The section kind of this table's blocks.
    const KIND: SectionKind;
    /// The key's ordering; rows of a table are strictly increasing by it.
    fn key_cmp(&self, other: &Self) -> std::cmp::Ordering;
    /// The two leading key columns (the table of contents keeps a block's first, for seeking).
    fn leading_key(&self) -> [u64; 2];
    /// The whole key as three columns (unused ones 0), ordered as [`Row::key_cmp`] orders
    /// rows: for comparing, hashing and sorting keys without the counts.
    fn packed_key(&self) -> [u64; 3];
    /// Appends this row's encoding after `prev`.
    fn encode(&self, prev: &Self, out: &mut Vec<u8>);
    /// Reads the row that follows `prev`.
    fn decode(prev: &Self, r: &mut Reader<'_>) -> Result<Self, ReadError>;
    /// The row's counts (unused ones are 0).
    fn counts(&self) -> [u64; 2];
    /// Replaces the row's counts.
    fn set_counts(&mut self, counts: [u64; 2]);

    /// Adds `other`'s counts (same key) to this row's, saturating; returns false if a count
    /// saturated.
    fn add_counts(&mut self, other: &Self) -> bool {
        let (a, b) = (self.counts(), other.counts());
        let sums = [a[0].checked_add(b[0]), a[1].checked_add(b[1])];
        self.set_counts(sums.map(|s| s.unwrap_or(u64::MAX)));
        sums.iter().all(Option::is_some)
    }

    /// Multiplies the counts by `weight`, saturating; returns false if a count saturated.
    fn scale_counts(&mut self, weight: u64) -> bool {
        let products = self.counts().map(|c| c.checked_mul(weight));
        self.set_counts(products.map(|p| p.unwrap_or(u64::MAX)));
        products.iter().all(Option::is_some)
    }
}

#[inline(always)]
fn zigzag(v: u64) -> u64 {
    let v = v as i64;
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline(always)]
fn unzigzag(v: u64) -> u64 {
    ((v >> 1) as i64 ^ -((v & 1) as i64)) as u64
}

/// Two leading key columns of a sorted table: the first as a delta from the previous row's;
/// the second as a delta too when the first repeats, else relative to the first (zigzag),
/// since a branch's target is usually near its source.
#[inline(always)]
fn encode_pair(out: &mut Vec<u8>, (a, b): (u64, u64), (prev_a, prev_b): (u64, u64)) {
    write_uleb128(out, a.wrapping_sub(prev_a));
    if a == prev_a {
        write_uleb128(out, b.wrapping_sub(prev_b));
    } else {
        write_uleb128(out, zigzag(b.wrapping_sub(a)));
    }
}

/// Reads what [`encode_pair`] wrote.
#[inline(always)]
fn decode_pair(r: &mut Reader<'_>, (prev_a, prev_b): (u64, u64)) -> Result<(u64, u64), ReadError> {
    let a = prev_a.wrapping_add(r.uleb128()?);
    let b = if a == prev_a {
        prev_b.wrapping_add(r.uleb128()?)
    } else {
        a.wrapping_add(unzigzag(r.uleb128()?))
    };
    Ok((a, b))
}

/// The taken and mispredicted counts.
#[inline(always)]
fn encode_counts(out: &mut Vec<u8>, [count, mispreds]: [u64; 2]) {
    write_uleb128(out, count);
    write_uleb128(out, mispreds);
}

/// Reads what [`encode_counts`] wrote.
#[inline(always)]
fn decode_counts(r: &mut Reader<'_>) -> Result<[u64; 2], ReadError> {
    Ok([r.uleb128()?, r.uleb128()?])
}

/// An LBR trace: the branch `branch → from`, then the fall-through `from → to`, in the
/// binary's file-offset space (`0`: outside the binary; `to == u64::MAX`: no fall-through).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TraceRow {
    /// The branch's source.
    pub branch: u64,
    /// The branch's target, where the fall-through starts.
    pub from: u64,
    /// Where the fall-through ends (the next branch's source).
    pub to: u64,
    /// Times taken.
    pub count: u64,
    /// Times mispredicted.
    pub mispreds: u64,
}

impl Row for TraceRow {
    const KIND: SectionKind = SectionKind::Traces;
    fn key_cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.branch, self.from, self.to).cmp(&(o.branch, o.from, o.to))
    }
    fn leading_key(&self) -> [u64; 2] {
        [self.branch, self.from]
    }
    #[inline(always)]
    fn packed_key(&self) -> [u64; 3] {
        [self.branch, self.from, self.to]
    }
    fn encode(&self, prev: &Self, out: &mut Vec<u8>) {
        encode_pair(out, (self.branch, self.from), (prev.branch, prev.from));
        write_uleb128(out, zigzag(self.to.wrapping_sub(self.from)));
        encode_counts(out, self.counts());
    }
    fn decode(prev: &Self, r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let (branch, from) = decode_pair(r, (prev.branch, prev.from))?;
        let to = from.wrapping_add(unzigzag(r.uleb128()?));
        let [count, mispreds] = decode_counts(r)?;
        Ok(TraceRow {
            branch,
            from,
            to,
            count,
            mispreds,
        })
    }
    fn counts(&self) -> [u64; 2] {
        [self.count, self.mispreds]
    }
    fn set_counts(&mut self, [count, mispreds]: [u64; 2]) {
        (self.count, self.mispreds) = (count, mispreds);
    }
}

/// A branch known without its fall-through (pre-aggregated `B` records), in file offsets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BranchRow {
    /// The branch's source (`0`: outside the binary).
    pub from: u64,
    /// The branch's target (`0`: outside the binary).
    pub to: u64,
    /// Times taken.
    pub count: u64,
    /// Times mispredicted.
    pub mispreds: u64,
}

impl Row for BranchRow {
    const KIND: SectionKind = SectionKind::Branches;
    fn key_cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.from, self.to).cmp(&(o.from, o.to))
    }
    fn leading_key(&self) -> [u64; 2] {
        [self.from, self.to]
    }
    #[inline(always)]
    fn packed_key(&self) -> [u64; 3] {
        [self.from, self.to, 0]
    }
    fn encode(&self, prev: &Self, out: &mut Vec<u8>) {
        encode_pair(out, (self.from, self.to), (prev.from, prev.to));
        encode_counts(out, self.counts());
    }
    fn decode(prev: &Self, r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let (from, to) = decode_pair(r, (prev.from, prev.to))?;
        let [count, mispreds] = decode_counts(r)?;
        Ok(BranchRow {
            from,
            to,
            count,
            mispreds,
        })
    }
    fn counts(&self) -> [u64; 2] {
        [self.count, self.mispreds]
    }
    fn set_counts(&mut self, [count, mispreds]: [u64; 2]) {
        (self.count, self.mispreds) = (count, mispreds);
    }
}

/// IP samples at one file offset (basic, non-LBR profiles), of the events the binary's
/// metadata lists, summed as perf2bolt sums them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IpRow {
    /// The sampled instruction's file offset.
    pub ip: u64,
    /// Samples.
    pub count: u64,
}

impl Row for IpRow {
    const KIND: SectionKind = SectionKind::Ips;
    fn key_cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.ip.cmp(&o.ip)
    }
    fn leading_key(&self) -> [u64; 2] {
        [self.ip, 0]
    }
    #[inline(always)]
    fn packed_key(&self) -> [u64; 3] {
        [self.ip, 0, 0]
    }
    fn encode(&self, prev: &Self, out: &mut Vec<u8>) {
        write_uleb128(out, self.ip.wrapping_sub(prev.ip));
        write_uleb128(out, self.count);
    }
    fn decode(prev: &Self, r: &mut Reader<'_>) -> Result<Self, ReadError> {
        Ok(IpRow {
            ip: prev.ip.wrapping_add(r.uleb128()?),
            count: r.uleb128()?,
        })
    }
    fn counts(&self) -> [u64; 2] {
        [self.count, 0]
    }
    fn set_counts(&mut self, [count, _]: [u64; 2]) {
        self.count = count;
    }
}

/// Memory samples: an instruction and the data address it touched, as perf2bolt reads them
/// (see `docs/store.md` for which address space each is in).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemRow {
    /// The sampled instruction.
    pub pc: u64,
    /// The data address: a file offset of the binary when `in_binary`, else as recorded.
    pub addr: u64,
    /// Whether the data address lay in the process's mapping of the binary (and `addr` is
    /// therefore a file offset).
    pub in_binary: bool,
    /// Samples.
    pub count: u64,
}

impl Row for MemRow {
    const KIND: SectionKind = SectionKind::Mem;
    fn key_cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.pc, self.addr, self.in_binary).cmp(&(o.pc, o.addr, o.in_binary))
    }
    fn leading_key(&self) -> [u64; 2] {
        [self.pc, self.addr]
    }
    #[inline(always)]
    fn packed_key(&self) -> [u64; 3] {
        [self.pc, self.addr, u64::from(self.in_binary)]
    }
    fn encode(&self, prev: &Self, out: &mut Vec<u8>) {
        write_uleb128(out, self.pc.wrapping_sub(prev.pc));
        let base = if self.pc == prev.pc { prev.addr } else { 0 };
        write_uleb128(out, self.addr.wrapping_sub(base));
        write_uleb128(out, u64::from(self.in_binary));
        write_uleb128(out, self.count);
    }
    fn decode(prev: &Self, r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let pc = prev.pc.wrapping_add(r.uleb128()?);
        let base = if pc == prev.pc { prev.addr } else { 0 };
        Ok(MemRow {
            pc,
            addr: base.wrapping_add(r.uleb128()?),
            in_binary: r.uleb128()? != 0,
            count: r.uleb128()?,
        })
    }
    fn counts(&self) -> [u64; 2] {
        [self.count, 0]
    }
    fn set_counts(&mut self, [count, _]: [u64; 2]) {
        self.count = count;
    }
}

/// A branch source known to be a return (pre-aggregated `R` records); a set, no count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReturnRow {
    /// The return instruction's file offset.
    pub addr: u64,
}

impl Row for ReturnRow {
    const KIND: SectionKind = SectionKind::Returns;
    fn key_cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.addr.cmp(&o.addr)
    }
    fn leading_key(&self) -> [u64; 2] {
        [self.addr, 0]
    }
    #[inline(always)]
    fn packed_key(&self) -> [u64; 3] {
        [self.addr, 0, 0]
    }
    fn encode(&self, prev: &Self, out: &mut Vec<u8>) {
        write_uleb128(out, self.addr.wrapping_sub(prev.addr));
    }
    fn decode(prev: &Self, r: &mut Reader<'_>) -> Result<Self, ReadError> {
        Ok(ReturnRow {
            addr: prev.addr.wrapping_add(r.uleb128()?),
        })
    }
    fn counts(&self) -> [u64; 2] {
        [0, 0]
    }
    fn set_counts(&mut self, _: [u64; 2]) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::Endian;

    fn round_trip<R: Row>(rows: &[R]) {
        let mut out = Vec::new();
        let mut prev = R::default();
        for r in rows {
            r.encode(&prev, &mut out);
            prev = *r;
        }
        let mut reader = Reader::new(&out, Endian::Little);
        let mut prev = R::default();
        for r in rows {
            let got = R::decode(&prev, &mut reader).unwrap();
            assert_eq!(&got, r);
            prev = got;
        }
        assert!(reader.is_empty());
    }

    #[test]
    fn extreme_values_round_trip() {
        let m = u64::MAX;
        let mut traces = vec![
            TraceRow {
                branch: 0,
                from: 0,
                to: m,
                count: 1,
                mispreds: 0,
            },
            TraceRow {
                branch: 0,
                from: 5,
                to: 0,
                count: m,
                mispreds: m,
            },
            TraceRow {
                branch: 7,
                from: 1 << 63,
                to: 0,
                count: 3,
                mispreds: 1,
            },
            TraceRow {
                branch: m,
                from: m,
                to: m,
                count: 0,
                mispreds: 0,
            },
        ];
        traces.sort_by(|a, b| a.key_cmp(b));
        round_trip(&traces);
        round_trip(&[IpRow { ip: 0, count: m }, IpRow { ip: m, count: 1 }]);
        round_trip(&[
            MemRow {
                pc: 1,
                addr: m,
                in_binary: false,
                count: 2,
            },
            MemRow {
                pc: 1,
                addr: m,
                in_binary: true,
                count: 2,
            },
        ]);
        round_trip(&[BranchRow {
            from: 0,
            to: m,
            count: 1,
            mispreds: 1,
        }]);
        round_trip(&[ReturnRow { addr: 4 }, ReturnRow { addr: m }]);
    }

    #[test]
    fn zigzag_is_a_bijection_at_the_edges() {
        for v in [0u64, 1, 2, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }
}
