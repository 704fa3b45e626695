//! Captures without branch stacks (`perf record -e cpu-clock`): the samples of an
//! [`LbrCaptureSpec`]'s capture, each reduced to one instruction address of its stack.

use std::io::{self, Seek, SeekFrom, Write};

use crate::perf_writer::{self, DataSink, FileHeader};
use crate::rng::mix64;
use crate::walk::KERNEL_TEXT_START;
use crate::{prepare_capture, BranchEntry, CaptureStats, LbrCaptureSpec, PreparedCapture};

/// Writes a capture of IP samples only: the processes, mappings and sample schedule of
/// `spec`'s LBR capture (`spec.lbr_depth` shapes the stacks the IPs are drawn from), one
/// `cpu-clock` sample per LBR sample, its IP a branch source or target of the stack (an
/// instruction start; kernel addresses for some samples of the kernel stacks). Captures
/// with `mem_loads` are refused.
pub fn write_ip_capture<W: Write + Seek>(
    spec: &LbrCaptureSpec,
    out: &mut W,
) -> io::Result<CaptureStats> {
    prepare_capture(spec)?.write_ip_samples(out)
}

/// The IP sample drawn for stack `i` of a pool: one of its entries, by a fixed hash, its
/// source for two stacks in three and its target for the third.
fn ip_of(i: usize, stack: &[BranchEntry]) -> (u16, u64) {
    let h = mix64(i as u64 ^ 0x1b_5a4d);
    let e = &stack[(h % stack.len() as u64) as usize];
    let ip = if (h >> 32).is_multiple_of(3) {
        e.to
    } else {
        e.from
    };
    let misc = if ip >= KERNEL_TEXT_START {
        perf_writer::MISC_KERNEL
    } else {
        perf_writer::MISC_USER
    };
    (misc, ip)
}

impl PreparedCapture {
    /// Writes the capture as IP samples only; see [`write_ip_capture`].
    pub fn write_ip_samples<W: Write + Seek>(&self, out: &mut W) -> io::Result<CaptureStats> {
        if self.spec.mem_loads.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "write_ip_samples: captures with mem_loads are not supported",
            ));
        }
        let start = out.stream_position()?;
        let attr_size = self.spec.attr_size;
        let mut header = FileHeader {
            attr_size,
            data_size: 0,
            features: Vec::new(),
            events: 1,
        };
        out.write_all(&header.encode())?;
        out.write_all(&perf_writer::ip_attr_entry(attr_size))?;
        let data_offset = perf_writer::data_offset(attr_size);
        let mut sink = DataSink::new(out, self.spec.compress)?;
        self.write_side_band(&mut sink)?;
        let relocated: Vec<Vec<Vec<BranchEntry>>> = (0..self.process_shifts.len())
            .map(|p| self.stacks_of(p))
            .collect();
        let pools: Vec<&[Vec<BranchEntry>]> = match relocated.is_empty() {
            true => vec![&self.stacks],
            false => relocated.iter().map(Vec::as_slice).collect(),
        };
        let heads: Vec<Vec<(u16, u64)>> = pools
            .iter()
            .map(|pool| pool.iter().enumerate().map(|(i, s)| ip_of(i, s)).collect())
            .collect();
        let mut samples = 0;
        let mut schedule = self.schedule();
        while sink.data_len() < self.spec.target_bytes {
            let draw = schedule.next().expect("schedule is endless");
            let p = (draw.pid - crate::FIRST_PID) as usize % pools.len();
            let (misc, ip) = heads[p][draw.stack];
            let head = perf_writer::sample_head(misc, ip, draw.pid, draw.time, 0);
            sink.sample(&head, &[])?;
            samples += 1;
        }
        let (data_size, ratio) = sink.finish()?;
        header.data_size = data_size;
        let mut features = self.feature_sections(ratio, &[]);
        features.retain(|(bit, _)| *bit != perf_writer::FEAT_BRANCH_STACK);
        header.features = features.iter().map(|(bit, _)| *bit).collect();
        let table_at = start + data_offset + data_size;
        let features_len = crate::write_features(out, table_at, &features)?;
        let end = out.stream_position()?;
        out.seek(SeekFrom::Start(start))?;
        out.write_all(&header.encode())?;
        out.seek(SeekFrom::Start(end))?;
        debug_assert_eq!(end - start, data_offset + data_size + features_len);
        Ok(CaptureStats {
            samples,
            bytes: end - start,
            branch_entries: 0,
            mem_samples: 0,
        })
    }
}
