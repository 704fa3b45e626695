//! Temporal profile traces: the reservoir sampling of LLVM 19's `InstrProfWriter`
//! (`addTemporalProfileTrace` / `addTemporalProfileTraces`), bit-exact. Each writer owns a
//! default-seeded `std::mt19937`; a random index is drawn with libstdc++'s
//! `std::uniform_int_distribution<uint64_t>` (Lemire's nearly-divisionless method on the 32-bit
//! engine output) and traces are shuffled with `llvm::shuffle` (`g() % size`).

use formats::instrprof::{TemporalTrace, TemporalTraces};

/// `--temporal-profile-trace-reservoir-size` and `--temporal-profile-max-trace-length`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TemporalLimits {
    /// Traces each writer keeps at most (reservoir sampling beyond that); default 100.
    pub reservoir_size: u64,
    /// Functions a trace keeps at most (longer traces are truncated); default 10 000.
    pub max_trace_length: u64,
}

impl Default for TemporalLimits {
    fn default() -> Self {
        TemporalLimits {
            reservoir_size: 100,
            max_trace_length: 10_000,
        }
    }
}

/// `std::mt19937` (32-bit Mersenne Twister, MT19937 parameters).
#[derive(Clone, Debug)]
pub(crate) struct Mt19937 {
    state: Box<[u32; 624]>,
    index: usize,
}

impl Default for Mt19937 {
    /// The default seed of `std::mt19937` (5489).
    fn default() -> Self {
        Mt19937::new(5489)
    }
}

impl Mt19937 {
    pub fn new(seed: u32) -> Mt19937 {
        let mut state = Box::new([0u32; 624]);
        state[0] = seed;
        for i in 1..624 {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { state, index: 624 }
    }

    fn twist(&mut self) {
        for i in 0..624 {
            let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % 624] & 0x7fff_ffff);
            let mut v = self.state[(i + 397) % 624] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.state[i] = v;
        }
        self.index = 0;
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `std::uniform_int_distribution<uint64_t>(0, max)(*this)` as libstdc++ computes it.
    pub fn uniform_up_to(&mut self, max: u64) -> u64 {
        match max {
            u64::MAX => self.upscaled(max),
            m if m < u64::from(u32::MAX) => u64::from(self.lemire(m as u32 + 1)),
            m if m == u64::from(u32::MAX) => u64::from(self.next_u32()),
            m => self.upscaled(m),
        }
    }

    /// `_S_nd<uint64_t>`: a value below `range` from the top half of `g() * range`.
    fn lemire(&mut self, range: u32) -> u32 {
        let mut product = u64::from(self.next_u32()) * u64::from(range);
        let mut low = product as u32;
        if low < range {
            let threshold = range.wrapping_neg() % range;
            while low < threshold {
                product = u64::from(self.next_u32()) * u64::from(range);
                low = product as u32;
            }
        }
        (product >> 32) as u32
    }

    /// libstdc++'s upscaling branch, for ranges wider than the engine's 32 bits.
    fn upscaled(&mut self, max: u64) -> u64 {
        const ENGINE_RANGE: u64 = 1 << 32;
        loop {
            let high = ENGINE_RANGE.wrapping_mul(self.uniform_up_to(max / ENGINE_RANGE));
            let value = high.wrapping_add(u64::from(self.next_u32()));
            if value <= max && value >= high {
                return value;
            }
        }
    }

    /// `llvm::shuffle`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        let mut first = 0;
        let mut size = items.len();
        while size > 1 {
            let offset = (u64::from(self.next_u32()) % size as u64) as usize;
            if offset != 0 {
                items.swap(first, first + offset);
            }
            first += 1;
            size -= 1;
        }
    }
}

/// A writer's traces with its sampling state.
#[derive(Clone, Debug, Default)]
pub(crate) struct TraceReservoir {
    pub(crate) traces: TemporalTraces,
    pub(crate) limits: TemporalLimits,
    rng: Option<Mt19937>,
}

impl TraceReservoir {
    pub fn new(limits: TemporalLimits) -> TraceReservoir {
        TraceReservoir {
            limits,
            ..TraceReservoir::default()
        }
    }

    fn rng(&mut self) -> &mut Mt19937 {
        self.rng.get_or_insert_with(Mt19937::default)
    }

    /// `addTemporalProfileTrace`: kept while the reservoir has room, else it replaces a random
    /// trace (or none).
    fn add_one(&mut self, trace: TemporalTrace) {
        let stream_size = self.traces.stream_size;
        if stream_size < self.limits.reservoir_size {
            self.traces.traces.push(trace);
        } else {
            let index = self.rng().uniform_up_to(stream_size);
            if let Some(slot) = usize::try_from(index)
                .ok()
                .and_then(|i| self.traces.traces.get_mut(i))
            {
                *slot = trace;
            }
        }
        self.traces.stream_size += 1;
    }

    /// `addTemporalProfileTraces`: `src` is another reader's or writer's traces and stream size.
    pub fn add(&mut self, mut src: TemporalTraces) {
        let max_length = usize::try_from(self.limits.max_trace_length).unwrap_or(usize::MAX);
        for trace in &mut src.traces {
            trace.names.truncate(max_length);
        }
        src.traces.retain(|t| !t.names.is_empty());
        let reservoir = self.limits.reservoir_size;
        let dest_sampled = self.traces.stream_size > reservoir;
        let mut src_sampled = src.stream_size > reservoir;
        if !dest_sampled && src_sampled {
            // The sampled side becomes the destination.
            std::mem::swap(&mut self.traces, &mut src);
            src_sampled = false;
        }
        if !src_sampled {
            for trace in src.traces {
                self.add_one(trace);
            }
            return;
        }
        // The indices the source stream's traces would have replaced, first-seen order.
        let mut indices: Vec<usize> = Vec::new();
        let mut seen = hashbrown::HashSet::new();
        let kept = self.traces.traces.len() as u64;
        for _ in 0..src.stream_size {
            let stream_size = self.traces.stream_size;
            let index = self.rng().uniform_up_to(stream_size);
            if index < kept && seen.insert(index) {
                indices.push(index as usize);
            }
            self.traces.stream_size += 1;
        }
        let mut traces = src.traces;
        self.rng().shuffle(&mut traces);
        for (index, trace) in indices.into_iter().zip(traces) {
            self.traces.traces[index] = trace;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mt19937_matches_the_standard() {
        // C++11 [rand.predef]: the 10000th output of a default-constructed mt19937.
        let mut rng = Mt19937::default();
        let mut last = 0;
        for _ in 0..10_000 {
            last = rng.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
    }

    #[test]
    fn uniform_stays_in_range() {
        let mut rng = Mt19937::default();
        for max in [0u64, 1, 5, 100, 1 << 40] {
            for _ in 0..100 {
                assert!(rng.uniform_up_to(max) <= max);
            }
        }
    }
}
