//! Reading a perf.data capture: one sequential walker finds record boundaries, collects the
//! side-band records and decompresses zstd streams; worker threads decode the SAMPLE records of
//! each shard into their own sink. File-mode captures are memory-mapped and sharded zero-copy;
//! pipe-mode captures (stdin) are read in blocks.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use formats::bytes::{Bytes, Endian};
use formats::perf::attr::sample_type;
use formats::perf::header::{self, AttrEntry, Features};
use formats::perf::stream::compressed_payload;
use formats::perf::{
    kind, next_record, Comm, EventAttr, EventSet, Mmap, Next, Offset, RecordRef, Records, Sample,
    Task, ZstdStream,
};

use crate::error::{io_error, Error, Result};
use crate::io::input::release_pages;
use crate::io::progress::{NoProgress, Progress};

/// Shards are cut at the first record boundary past this many bytes.
const SHARD_BYTES: usize = 8 << 20;
/// The largest record (with hidden payload) a pipe may carry; larger sizes are corruption.
const MAX_RECORD_BYTES: u64 = 1 << 32;
/// Pipe-mode read size.
const PIPE_BLOCK: usize = 8 << 20;

/// Where a capture comes from.
pub enum Input {
    /// A perf.data file, file-mode (memory-mapped and indexed) or pipe-mode (streamed).
    File(PathBuf),
    /// A pipe-mode capture read once, in blocks, from a stream (the command line passes its
    /// standard input; the library never opens it itself).
    Stream {
        /// The name errors give it (`<stdin>`).
        name: PathBuf,
        /// The bytes.
        reader: Mutex<Box<dyn Read + Send>>,
    },
}

impl Input {
    /// A capture read from `reader`, called `name` in messages.
    pub fn stream(name: impl Into<PathBuf>, reader: impl Read + Send + 'static) -> Input {
        Input::Stream {
            name: name.into(),
            reader: Mutex::new(Box::new(reader)),
        }
    }

    /// The name errors give the capture.
    pub fn name(&self) -> PathBuf {
        match self {
            Input::File(p) => p.clone(),
            Input::Stream { name, .. } => name.clone(),
        }
    }

    /// Whether the capture can be read only once.
    pub fn is_stream(&self) -> bool {
        matches!(self, Input::Stream { .. })
    }
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Input::File(p) => f.debug_tuple("File").field(p).finish(),
            Input::Stream { name, .. } => f.debug_struct("Stream").field("name", name).finish(),
        }
    }
}

/// An mmap event, owned (side-band records are few).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MmapEvent {
    pub(crate) pid: u32,
    pub(crate) addr: u64,
    pub(crate) len: u64,
    pub(crate) pgoff: u64,
    pub(crate) filename: Vec<u8>,
    pub(crate) is_mmap2: bool,
    pub(crate) build_id: Option<Vec<u8>>,
    /// Mapped with `PROT_EXEC` (MMAP2's `prot`; MMAP's misc bit for data mappings).
    pub(crate) executable: bool,
}

/// Whether an mmap event maps code: MMAP2 records the protection, MMAP only marks data.
fn mapped_executable(m: &formats::perf::record::Mmap<'_>, misc: u16) -> bool {
    use formats::perf::record::Mmap2Extra;
    const PROT_EXEC: u32 = 4;
    match &m.mmap2 {
        Some(Mmap2Extra::BuildId { prot, .. } | Mmap2Extra::Inode { prot, .. }) => {
            prot & PROT_EXEC != 0
        }
        None => misc & formats::perf::record::misc::MMAP_DATA == 0,
    }
}

/// Process lifetime events, in stream order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TaskEvent {
    Fork { pid: u32, ppid: u32, time: u64 },
    Exec { pid: u32 },
}

/// Everything but the samples: the records a sequential walk of the capture collects.
#[derive(Clone, Debug, Default)]
pub struct SideBand {
    pub(crate) mmaps: Vec<MmapEvent>,
    pub(crate) tasks: Vec<TaskEvent>,
    pub(crate) features: Features,
    pub(crate) events: EventSet,
    /// Bytes of the capture read (for a compressed capture, as stored, not inflated).
    pub bytes: u64,
    /// Records walked, of every kind.
    pub records: u64,
    /// With [`ReadOptions::render_mmap_events`]: every MMAP/MMAP2 as `perf script` prints it.
    pub mmap_lines: Vec<u8>,
}

impl SideBand {
    /// The capturing host's name (perf's `HEADER_HOSTNAME` feature), when recorded.
    pub fn hostname(&self) -> Option<&str> {
        self.features.hostname.as_deref()
    }
}

/// How to read a capture: decoding threads and optional work for the sequential walker.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOptions {
    /// Decoding threads, hence sinks (0 is taken as 1).
    pub threads: usize,
    /// Fill [`SideBand::mmap_lines`] (what `perf script --show-mmap-events` prints).
    pub render_mmap_events: bool,
    /// Read a file-mode capture as a stream (one pass, pid-keyed tables) even when it could
    /// be indexed; both paths must give the same result, and tests check that they do.
    pub stream: bool,
}

/// Receives decoded samples; [`read_capture`] makes one per worker thread, so a sink needs no
/// locking, and returns them all at the end for the caller to combine.
pub trait Sink: Send {
    /// One SAMPLE record; `event` indexes the capture's event attributes. Samples reach a
    /// sink in capture order within a shard, but shards are spread over the sinks.
    fn sample(&mut self, event: usize, sample: &Sample<'_>);
}

/// A shard of complete records handed to a worker.
enum Shard<'a> {
    Mapped { data: &'a [u8], base: u64 },
    Owned { data: Vec<u8>, origin: Origin },
}

#[derive(Clone, Copy)]
enum Origin {
    /// A block of a pipe: stream offset of its first byte.
    Stream(u64),
    /// Decompressed bytes; errors name the COMPRESSED record and the decompressed offset.
    Decompressed { record: u64, base: u64 },
}

struct Work<'a> {
    shard: Shard<'a>,
    events: Arc<EventSet>,
    endian: Endian,
    /// The mapping a `Mapped` shard lies in, to drop its pages once decoded.
    map: Option<&'a memmap2::Mmap>,
}

impl Work<'_> {
    /// Unmaps a decoded shard's pages so resident memory stays flat however large the capture.
    fn release(&self) {
        if let (Some(map), Shard::Mapped { data, base }) = (self.map, &self.shard) {
            release_pages(map, *base as usize, data.len());
        }
    }
}

/// The result of the index pass over an uncompressed file-mode capture.
struct Indexed<'a> {
    side: SideBand,
    shards: Vec<Shard<'a>>,
    events: Arc<EventSet>,
    endian: Endian,
}

/// The first phase: side-band and shard boundaries, or `None` if the capture holds COMPRESSED
/// records (which can only be read as a stream).
fn index_file<'a>(
    map: &'a memmap2::Mmap,
    options: ReadOptions,
    progress: &dyn Progress,
) -> std::result::Result<Option<Indexed<'a>>, PipeError> {
    let split = |walker: &Walker<'_, '_>, data: &[u8]| {
        let wanted = options.threads >= 2 && !options.render_mmap_events;
        split_point(walker.endian, data, SPLIT_INDEX_BYTES).filter(|_| wanted)
    };
    index_split(map, options, progress, split)
}

/// [`index_file`] with the second thread's starting point chosen by `split`.
fn index_split<'a>(
    map: &'a memmap2::Mmap,
    options: ReadOptions,
    progress: &dyn Progress,
    split: impl Fn(&Walker<'_, '_>, &[u8]) -> Option<usize>,
) -> std::result::Result<Option<Indexed<'a>>, PipeError> {
    let (tx, _rx) = crossbeam_channel::bounded(1);
    let failed = AtomicBool::new(false);
    let indexer = || {
        let mut walker = Walker::new(tx.clone(), &failed, options);
        walker.collect = Some(Vec::new());
        walker.release = Some(map);
        walker
    };
    progress.phase("indexing");
    let mut first = indexer();
    let result = (|| {
        let (start, data) = first.file_header(map)?;
        progress.set_total(data.len() as u64);
        let resume = match split(&first, data) {
            Some(split) => {
                let mut second = indexer();
                second.endian = first.endian;
                second.events = first.events.clone();
                let hidden = NoProgress;
                let (reached, rest) = std::thread::scope(|scope| {
                    let rest = scope.spawn(|| {
                        let end = second.walk_data(data, start, split, None, &hidden);
                        end.map(|_| second)
                    });
                    let reached = first.walk_data(data, start, 0, Some(split), progress);
                    (reached, rest.join().expect("indexing thread panicked"))
                });
                let reached = reached?;
                // The first half ends exactly where the second was guessed to start: the guess
                // was a record boundary and the second half's walk is the real one.
                match (rest, reached == split) {
                    (Ok(second), true) => {
                        first.append(second);
                        None
                    }
                    (Err(PipeError::NeedsStreaming), true) => {
                        return Err(PipeError::NeedsStreaming)
                    }
                    _ => Some(reached),
                }
            }
            None => Some(0),
        };
        if let Some(from) = resume {
            first.walk_data(data, start, from, None, progress)?;
        }
        first.side.bytes = map.len() as u64;
        progress.finish();
        Ok(())
    })();
    match result {
        Ok(()) => Ok(Some(Indexed {
            shards: first.collect.take().unwrap_or_default(),
            side: first.side,
            events: first.events,
            endian: first.endian,
        })),
        Err(PipeError::NeedsStreaming) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Captures smaller than this are indexed by one thread.
const SPLIT_INDEX_BYTES: usize = 64 << 20;
/// Consecutive well-formed record headers that make a position a likely record boundary.
const SYNC_RECORDS: usize = 64;

/// A likely record boundary near the middle of the data section, where a second thread can
/// start indexing. It is only a guess (records carry no sync marker): the first thread's walk
/// must end exactly on it for the second half to be used.
fn split_point(endian: Endian, data: &[u8], min_bytes: usize) -> Option<usize> {
    if data.len() < min_bytes.max(16) {
        return None;
    }
    let buf = Bytes::new(data, endian);
    // perf pads every record to 8 bytes.
    let middle = data.len() / 2 / 8 * 8;
    (middle..middle + (1 << 20))
        .step_by(8)
        .find(|&p| plausible_records(buf, p))
}

/// Whether `SYNC_RECORDS` well-formed records (or the end of the data) follow `pos`.
fn plausible_records(buf: Bytes<'_>, mut pos: usize) -> bool {
    for _ in 0..SYNC_RECORDS {
        match next_record(buf, pos, 0) {
            Ok(Next::Record(r, next)) => {
                // The kernel's record types, then perf's own (user) types.
                let known = matches!(r.header.kind, 1..=21 | 64..=83);
                if !known || r.header.size % 8 != 0 {
                    return false;
                }
                pos = next;
            }
            Ok(Next::End) => return true,
            _ => return false,
        }
    }
    true
}

/// Decodes the whole capture, feeding samples to `threads` sinks made by `make_sink`.
///
/// Uncompressed file-mode captures are read in two phases: a sequential pass over the record
/// headers collects the side-band and the shard boundaries, then the shards are decoded in
/// parallel by sinks made with the complete side-band (`make_sink(Some(side))`), so they can
/// place samples in binaries as they go. Streams (pipes, zstd) are decoded while they are read,
/// by sinks made with `make_sink(None)`.
pub fn read_capture<S: Sink, F: Fn(Option<&SideBand>) -> S + Sync>(
    input: &Input,
    options: ReadOptions,
    make_sink: F,
    progress: &dyn Progress,
) -> Result<(SideBand, Vec<S>)> {
    let path = input.name();
    let fmt_err = |source| Error::Format {
        path: path.clone(),
        source,
    };
    match input {
        Input::File(p) => {
            let file =
                crate::io::input::open_regular(p, "a perf.data capture").map_err(io_error(p))?;
            // SAFETY: the mapping is read-only and private; we accept that another process
            // truncating the capture while we read it is undefined, as every mmap reader does.
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_error(p))?;
            // Where the capture is not cached yet, readahead then fills the page cache with
            // 2 MiB folios, which this and every later run map in one step each: the index
            // pass over a 629 MB capture took 50 ms on a cache filled through 4 KiB pages and
            // 8 ms on one filled through this mapping (PERF.md).
            #[cfg(target_os = "linux")]
            let _ = map.advise(memmap2::Advice::HugePage);
            #[cfg(unix)]
            let _ = map.advise(memmap2::Advice::Sequential);
            let (_, mode) = header::detect(&map).map_err(fmt_err)?;
            match mode {
                header::Mode::File if options.stream => run(options, None, &make_sink, |walker| {
                    walker.file(&map, progress)
                }),
                header::Mode::File => match index_file(&map, options, progress) {
                    Ok(Some(indexed)) => {
                        let side = indexed.side.clone();
                        run(options, Some(&side), &make_sink, |walker| {
                            walker.dispatch(indexed, &map, progress)
                        })
                    }
                    Ok(None) => run(options, None, &make_sink, |walker| {
                        walker.file(&map, progress)
                    }),
                    Err(e) => Err(e),
                },
                header::Mode::Pipe => run(options, None, &make_sink, |walker| {
                    walker.pipe(&mut &map[..], progress)
                }),
            }
            .map_err(|e| e.into_engine(&path))
        }
        Input::Stream { reader, .. } => {
            let mut reader = reader
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            run(options, None, &make_sink, |walker| {
                walker.pipe(&mut *reader, progress)
            })
            .map_err(|e| e.into_engine(&path))
        }
    }
}

/// Errors inside the pipeline, before the file name is attached.
enum PipeError {
    Format(formats::perf::Error),
    Io(std::io::Error),
    /// The index pass met a COMPRESSED record: the capture must be read as a stream.
    NeedsStreaming,
}

impl PipeError {
    fn into_engine(self, path: &Path) -> Error {
        match self {
            PipeError::Format(source) => Error::Format {
                path: path.to_path_buf(),
                source,
            },
            PipeError::Io(source) => Error::Io {
                path: path.to_path_buf(),
                source,
            },
            PipeError::NeedsStreaming => unreachable!("handled by read_capture"),
        }
    }
}

impl From<formats::perf::Error> for PipeError {
    fn from(e: formats::perf::Error) -> Self {
        PipeError::Format(e)
    }
}

fn run<'a, S: Sink, F: Fn(Option<&SideBand>) -> S + Sync>(
    options: ReadOptions,
    sink_side: Option<&SideBand>,
    make_sink: &F,
    produce: impl FnOnce(&mut Walker<'_, 'a>) -> std::result::Result<(), PipeError>,
) -> std::result::Result<(SideBand, Vec<S>), PipeError> {
    let threads = options.threads.max(1);
    let (tx, rx) = crossbeam_channel::bounded::<Work<'a>>(threads * 2);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<formats::perf::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let rx = rx.clone();
                let (failed, first_error) = (&failed, &first_error);
                scope.spawn(move || {
                    let mut sink = make_sink(sink_side);
                    for work in rx.iter() {
                        if failed.load(Ordering::Relaxed) {
                            continue;
                        }
                        if let Err(e) = decode_shard(&work, &mut sink) {
                            failed.store(true, Ordering::Relaxed);
                            first_error.lock().unwrap().get_or_insert(e);
                        }
                        work.release();
                    }
                    sink
                })
            })
            .collect();
        drop(rx);
        let mut walker = Walker::new(tx, &failed, options);
        let produced = produce(&mut walker);
        let Walker { side, tx, .. } = walker;
        drop(tx);
        let sinks: Vec<S> = workers
            .into_iter()
            .map(|w| w.join().expect("worker panicked"))
            .collect();
        if let Some(e) = first_error.lock().unwrap().take() {
            return Err(PipeError::Format(e));
        }
        produced?;
        Ok((side, sinks))
    })
}

/// Decodes every SAMPLE of a shard of complete records.
fn decode_shard<S: Sink>(work: &Work<'_>, sink: &mut S) -> formats::perf::Result<()> {
    let (data, base, origin) = match &work.shard {
        Shard::Mapped { data, base } => (*data, *base, None),
        Shard::Owned { data, origin } => (&data[..], 0, Some(*origin)),
    };
    let events = &work.events;
    for record in Records::new(Bytes::new(data, work.endian), base) {
        let record = record.map_err(|e| relocate(e, origin))?;
        prefetch_ahead(record.body.data);
        if record.header.kind != kind::SAMPLE {
            continue;
        }
        let located = |kind| relocate(formats::perf::Error::at(record.offset, kind), origin);
        let event = events.sample_event(record.body).map_err(located)?;
        let sample = events.layouts[event].parse(record.body).map_err(|field| {
            located(formats::perf::ErrorKind::SampleTooShort {
                field,
                record_size: record.header.size as usize,
            })
        })?;
        sink.sample(event, &sample);
    }
    Ok(())
}

/// How far ahead of the record being decoded its successors are prefetched: a few records.
const PREFETCH_AHEAD: usize = 2048;

/// Prefetches as many bytes as the record holds, `PREFETCH_AHEAD` bytes past its start: one
/// record's worth of the records a few ahead. Mapped captures lie in page-cache pages scattered
/// in physical memory, where the hardware prefetcher stops at every 4 KiB boundary; the loads
/// of each new page's lines stalled the decode loop (a tenth of its samples on the 2 GB
/// benchmark capture).
#[inline(always)]
fn prefetch_ahead(body: &[u8]) {
    let ahead = body.as_ptr().wrapping_add(PREFETCH_AHEAD);
    for line in (0..body.len()).step_by(64) {
        crate::perf::hint::prefetch(ahead.wrapping_add(line));
    }
}

/// Rewrites an offset within an owned shard into a stream or decompressed offset.
fn relocate(mut e: formats::perf::Error, origin: Option<Origin>) -> formats::perf::Error {
    let Offset::File(off) = e.offset else {
        return e;
    };
    e.offset = match origin {
        None => Offset::File(off),
        Some(Origin::Stream(base)) => Offset::File(base + off),
        Some(Origin::Decompressed { record, base }) => Offset::Compressed {
            record,
            decompressed: base + off,
        },
    };
    e
}

/// The sequential part: record boundaries, side-band, decompression, shard hand-off.
struct Walker<'f, 'a> {
    side: SideBand,
    tx: crossbeam_channel::Sender<Work<'a>>,
    failed: &'f AtomicBool,
    endian: Endian,
    events: Arc<EventSet>,
    render_mmaps: bool,
    /// Index pass: shards are kept here instead of being sent.
    collect: Option<Vec<Shard<'a>>>,
    /// Index pass: the mapping whose pages are dropped behind the walk.
    release: Option<&'a memmap2::Mmap>,
    /// Shards sent for decoding carry the mapping so workers can drop their pages.
    dispatch_map: Option<&'a memmap2::Mmap>,
}

/// The decompressed side of a zstd stream: bytes not yet handed out, and how far they were walked.
struct Inflated {
    stream: ZstdStream,
    buf: Vec<u8>,
    walked: usize,
    /// Decompressed offset of `buf[0]` in the whole stream.
    base: u64,
    last_record: u64,
}

impl<'f, 'a> Walker<'f, 'a> {
    fn new(
        tx: crossbeam_channel::Sender<Work<'a>>,
        failed: &'f AtomicBool,
        options: ReadOptions,
    ) -> Self {
        Walker {
            side: SideBand::default(),
            tx,
            failed,
            endian: Endian::Little,
            events: Arc::default(),
            render_mmaps: options.render_mmap_events,
            collect: None,
            release: None,
            dispatch_map: None,
        }
    }

    /// Second phase of an indexed capture: hand the shards found by the index pass out.
    fn dispatch(
        &mut self,
        indexed: Indexed<'a>,
        map: &'a memmap2::Mmap,
        progress: &dyn Progress,
    ) -> std::result::Result<(), PipeError> {
        self.side = indexed.side;
        self.events = indexed.events;
        self.endian = indexed.endian;
        self.dispatch_map = Some(map);
        progress.phase("decoding");
        progress.set_position(0);
        for shard in indexed.shards {
            if self.stop_requested() {
                break;
            }
            if let Shard::Mapped { data, .. } = &shard {
                progress.advance(data.len() as u64);
            }
            self.send(shard);
        }
        progress.finish();
        Ok(())
    }

    fn send(&mut self, shard: Shard<'a>) {
        if let Some(collected) = &mut self.collect {
            if let (Some(map), Shard::Mapped { data, base }) = (self.release, &shard) {
                release_pages(map, *base as usize, data.len());
            }
            collected.push(shard);
            return;
        }
        let work = Work {
            shard,
            events: self.events.clone(),
            endian: self.endian,
            map: self.dispatch_map,
        };
        // A send only fails once every worker is gone, which happens only after an error.
        let _ = self.tx.send(work);
    }

    fn stop_requested(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// File mode: header, attrs and features, then the data section, zero-copy.
    fn file(
        &mut self,
        map: &'a [u8],
        progress: &dyn Progress,
    ) -> std::result::Result<(), PipeError> {
        let (start, data) = self.file_header(map)?;
        progress.set_total(data.len() as u64);
        self.walk_data(data, start, 0, None, progress)?;
        self.side.bytes = map.len() as u64;
        progress.finish();
        Ok(())
    }

    /// Reads the file header into the walker; returns the data section and its file offset.
    fn file_header(&mut self, map: &'a [u8]) -> formats::perf::Result<(usize, &'a [u8])> {
        let head = header::FileHeader::parse(map)?;
        self.endian = head.endian;
        self.side.features = head.features;
        // An attr that does not fit the others is reported at its own offset.
        let mut events = EventSet::default();
        for (i, attr) in head.attrs.into_iter().enumerate() {
            let at = head.attrs_offset + i as u64 * head.attr_size;
            events
                .push(attr)
                .map_err(|k| formats::perf::Error::at(at, k))?;
        }
        self.set_events(events);
        let start = head.data_offset as usize;
        Ok((start, &map[start..start + head.data_size as usize]))
    }

    /// Walks the records of `data` (the data section, at file offset `start`) from `from`: to
    /// the end, or with `stop` only to the first record boundary at or past it. Returns where
    /// it stopped.
    fn walk_data(
        &mut self,
        data: &'a [u8],
        start: usize,
        from: usize,
        stop: Option<usize>,
        progress: &dyn Progress,
    ) -> std::result::Result<usize, PipeError> {
        let buf = Bytes::new(data, self.endian);
        let (mut pos, mut shard_start) = (from, from);
        let mut inflated: Option<Inflated> = None;
        while stop.is_none_or(|stop| pos < stop) {
            match next_record(buf, pos, start as u64)? {
                Next::Record(r, next) => {
                    if is_compressed(r.header.kind) {
                        self.flush_mapped(data, shard_start, pos, start);
                        self.inflate(&r, &mut inflated)?;
                        shard_start = next;
                    } else {
                        self.side_band(&r)?;
                    }
                    pos = next;
                    if pos - shard_start >= SHARD_BYTES {
                        self.flush_mapped(data, shard_start, pos, start);
                        shard_start = pos;
                        progress.set_position(pos as u64);
                        if self.stop_requested() {
                            return Ok(pos);
                        }
                    }
                }
                Next::Incomplete { need } => {
                    let have = (data.len() - pos) as u64;
                    return Err(formats::perf::Error::at(
                        start as u64 + pos as u64,
                        formats::perf::ErrorKind::PartialRecord { have, need },
                    )
                    .into());
                }
                Next::End => break,
            }
        }
        self.flush_mapped(data, shard_start, pos, start);
        self.finish_inflated(inflated)?;
        Ok(pos)
    }

    /// Takes the side-band and shards of a walker that indexed the records after this one's.
    fn append(&mut self, later: Walker<'_, 'a>) {
        self.side.mmaps.extend(later.side.mmaps);
        self.side.tasks.extend(later.side.tasks);
        self.side.records += later.side.records;
        if let (Some(shards), Some(more)) = (&mut self.collect, later.collect) {
            shards.extend(more);
        }
    }

    fn flush_mapped(&mut self, data: &'a [u8], from: usize, to: usize, base: usize) {
        if to > from {
            self.send(Shard::Mapped {
                data: &data[from..to],
                base: (base + from) as u64,
            });
        }
    }

    /// Pipe mode: a 16-byte header, then records (attrs and features among them) until EOF.
    fn pipe(
        &mut self,
        input: &mut dyn Read,
        progress: &dyn Progress,
    ) -> std::result::Result<(), PipeError> {
        let mut head = [0u8; 16];
        let mut got = 0;
        while got < head.len() {
            match input.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(PipeError::Io(e)),
            }
        }
        if got == 0 {
            return Err(PipeError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the input is empty: expected a pipe-mode perf.data capture (`perf record -o -`)",
            )));
        }
        let (endian, mode) = header::detect(&head[..got])?;
        if mode != header::Mode::Pipe {
            return Err(PipeError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a file-mode perf.data capture cannot be read from a stream: give its path (only a pipe-mode capture, from `perf record -o -`, can come on standard input)",
            )));
        }
        self.endian = endian;
        let mut block: Vec<u8> = Vec::with_capacity(PIPE_BLOCK);
        let mut block_base = 16u64;
        let mut inflated: Option<Inflated> = None;
        let mut pending_events = EventSet::default();
        loop {
            let eof = fill(input, &mut block, PIPE_BLOCK).map_err(PipeError::Io)?;
            let buf = Bytes::new(&block, endian);
            let mut pos = 0usize;
            let mut need_more = false;
            loop {
                match next_record(buf, pos, block_base)? {
                    Next::Record(r, next) => {
                        match r.header.kind {
                            kind::HEADER_ATTR => {
                                pending_events
                                    .push(pipe_attr(&r)?)
                                    .map_err(|k| formats::perf::Error::at(r.offset, k))?;
                                self.set_events(pending_events.clone());
                            }
                            kind::HEADER_FEATURE => self.pipe_feature(&r)?,
                            kind::HEADER_BUILD_ID => {
                                let full =
                                    Bytes::new(&block[pos..pos + r.header.size as usize], endian);
                                self.side
                                    .features
                                    .build_ids
                                    .push(header::build_id_entry(full, r.header.misc));
                            }
                            k if is_compressed(k) => self.inflate(&r, &mut inflated)?,
                            _ => self.side_band(&r)?,
                        }
                        pos = next;
                    }
                    Next::Incomplete { need } => {
                        if eof {
                            let have = (block.len() - pos) as u64;
                            return Err(formats::perf::Error::at(
                                block_base + pos as u64,
                                formats::perf::ErrorKind::PartialRecord { have, need },
                            )
                            .into());
                        }
                        if need > MAX_RECORD_BYTES {
                            let kind = formats::perf::ErrorKind::Truncated {
                                what: "record (implausible payload size)",
                                needed: need,
                                available: (block.len() - pos) as u64,
                            };
                            return Err(
                                formats::perf::Error::at(block_base + pos as u64, kind).into()
                            );
                        }
                        need_more = true;
                        // A record larger than a block (AUXTRACE payloads) needs a larger block.
                        block.reserve(need as usize);
                        break;
                    }
                    Next::End => break,
                }
            }
            let rest = block.split_off(pos);
            progress.advance(block.len() as u64);
            if !block.is_empty() {
                self.send(Shard::Owned {
                    data: std::mem::take(&mut block),
                    origin: Origin::Stream(block_base),
                });
            }
            block_base += pos as u64;
            block = rest;
            block.reserve(PIPE_BLOCK);
            if (eof && !need_more) || self.stop_requested() {
                break;
            }
        }
        self.finish_inflated(inflated)?;
        self.side.bytes = block_base;
        progress.finish();
        Ok(())
    }

    fn set_events(&mut self, events: EventSet) {
        self.side.events = events.clone();
        self.events = Arc::new(events);
    }

    fn pipe_feature(&mut self, r: &RecordRef<'_>) -> formats::perf::Result<()> {
        let Some(bit) = r.body.u64(0) else {
            return Ok(());
        };
        let payload = r.body.tail(8).unwrap_or(r.body);
        let mut attrs = std::mem::take(&mut self.side.events.attrs);
        let result = header::apply_feature(
            &mut self.side.features,
            &mut attrs,
            bit as u32,
            payload,
            r.offset + 16,
        );
        self.side.events.attrs = attrs;
        result
    }

    /// Decompresses a COMPRESSED record and hands out the complete records it finishes.
    fn inflate(
        &mut self,
        r: &RecordRef<'_>,
        state: &mut Option<Inflated>,
    ) -> std::result::Result<(), PipeError> {
        if self.collect.is_some() {
            return Err(PipeError::NeedsStreaming);
        }
        if state.is_none() {
            *state = Some(Inflated {
                stream: ZstdStream::new()?,
                buf: Vec::new(),
                walked: 0,
                base: 0,
                last_record: r.offset,
            });
        }
        let st = state.as_mut().expect("just set");
        st.last_record = r.offset;
        st.stream
            .decompress(compressed_payload(r)?, &mut st.buf, r.offset)?;
        let origin = Origin::Decompressed {
            record: r.offset,
            base: st.base,
        };
        let buf = Bytes::new(&st.buf, self.endian);
        while let Next::Record(inner, next) =
            next_record(buf, st.walked, 0).map_err(|e| relocate(e, Some(origin)))?
        {
            self.side_band(&inner)
                .map_err(|e| relocate(e, Some(origin)))?;
            st.walked = next;
        }
        if st.walked >= SHARD_BYTES {
            self.hand_out(st);
        }
        Ok(())
    }

    fn hand_out(&mut self, st: &mut Inflated) {
        let rest = st.buf.split_off(st.walked);
        let data = std::mem::replace(&mut st.buf, rest);
        let origin = Origin::Decompressed {
            record: st.last_record,
            base: st.base,
        };
        st.base += st.walked as u64;
        st.walked = 0;
        self.send(Shard::Owned { data, origin });
    }

    fn finish_inflated(&mut self, state: Option<Inflated>) -> formats::perf::Result<()> {
        let Some(mut st) = state else { return Ok(()) };
        if st.walked > 0 {
            self.hand_out(&mut st);
        }
        if !st.buf.is_empty() {
            // What the record says it needs (more than is left), or a header's 8 bytes.
            let need = match next_record(Bytes::new(&st.buf, self.endian), 0, 0) {
                Ok(Next::Incomplete { need }) => need,
                _ => 8,
            };
            let kind = formats::perf::ErrorKind::PartialRecord {
                have: st.buf.len() as u64,
                need,
            };
            return Err(formats::perf::Error {
                offset: Offset::Compressed {
                    record: st.last_record,
                    decompressed: st.base,
                },
                kind,
            });
        }
        Ok(())
    }

    /// Collects MMAP, MMAP2, COMM and FORK records.
    fn side_band(&mut self, r: &RecordRef<'_>) -> formats::perf::Result<()> {
        self.side.records += 1;
        let k = r.header.kind;
        if !matches!(k, kind::MMAP | kind::MMAP2 | kind::COMM | kind::FORK) {
            return Ok(());
        }
        let fallback = formats::perf::SampleLayout::new(&EventAttr::default());
        let layout = self
            .events
            .layouts
            .get(self.events.other_event(r.body))
            .unwrap_or(&fallback);
        let trailer = layout.trailer_size;
        let short = || {
            formats::perf::Error::at(
                r.offset,
                formats::perf::ErrorKind::RecordBodyTooShort {
                    record_type: k,
                    size: r.header.size as usize,
                },
            )
        };
        match k {
            kind::MMAP | kind::MMAP2 => {
                let m = if k == kind::MMAP {
                    Mmap::parse_mmap(r.body, r.header.misc, trailer)
                } else {
                    Mmap::parse_mmap2(r.body, r.header.misc, trailer)
                };
                let m = m.ok_or_else(short)?;
                if self.render_mmaps {
                    let pid =
                        formats::perf::record::parse_sample_id(r.body, layout.sample_type, trailer)
                            .pid
                            .unwrap_or(0);
                    let _ = formats::perf::script::write_mmap(
                        &mut self.side.mmap_lines,
                        pid,
                        &m,
                        r.header.misc,
                    );
                }
                let build_id = match &m.mmap2 {
                    Some(formats::perf::record::Mmap2Extra::BuildId { build_id, .. }) => {
                        Some(build_id.to_vec())
                    }
                    _ => None,
                };
                self.side.mmaps.push(MmapEvent {
                    pid: m.pid,
                    addr: m.addr,
                    len: m.len,
                    pgoff: m.pgoff,
                    filename: m.filename.to_vec(),
                    is_mmap2: k == kind::MMAP2,
                    build_id,
                    executable: mapped_executable(&m, r.header.misc),
                });
            }
            kind::COMM => {
                let c = Comm::parse(r.body, r.header.misc, trailer).ok_or_else(short)?;
                if c.exec {
                    self.side.tasks.push(TaskEvent::Exec { pid: c.pid });
                }
            }
            _ => {
                let t = Task::parse(r.body).ok_or_else(short)?;
                // perf2bolt reads the time perf script prints: the sample_id_all one.
                let time = if layout.sample_type & sample_type::TIME != 0 && layout.sample_id_all {
                    formats::perf::record::parse_sample_id(r.body, layout.sample_type, trailer)
                        .time
                        .unwrap_or(t.time)
                } else {
                    t.time
                };
                self.side.tasks.push(TaskEvent::Fork {
                    pid: t.pid,
                    ppid: t.ppid,
                    time,
                });
            }
        }
        Ok(())
    }
}

fn is_compressed(k: u32) -> bool {
    k == kind::COMPRESSED || k == kind::COMPRESSED2
}

/// HEADER_ATTR: the attr (its own `size` bytes), then the event ids up to the record's end.
fn pipe_attr(r: &RecordRef<'_>) -> formats::perf::Result<AttrEntry> {
    let attr = EventAttr::parse(r.body, r.offset + 8)?;
    let ids = (attr.size as usize..r.body.len())
        .step_by(8)
        .filter_map(|off| r.body.u64(off))
        .collect();
    Ok(AttrEntry {
        attr,
        ids,
        name: None,
    })
}

/// Appends up to `want` more bytes; returns true at end of input.
fn fill(input: &mut dyn Read, block: &mut Vec<u8>, want: usize) -> std::io::Result<bool> {
    let target = block.len() + want;
    while block.len() < target {
        let n = Read::take(&mut *input, (target - block.len()) as u64).read_to_end(block)?;
        if n == 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generated 3 MB capture of one of the shared corpus binaries.
    fn capture(dir: &Path) -> PathBuf {
        let path = dir.join("split.data");
        let spec = corpus::LbrCaptureSpec {
            binaries: vec![corpus::LbrBinary {
                path: testsupport::shared_perf("autofdo-test.binary"),
                load_base: None,
            }],
            processes: 3,
            target_bytes: 3 << 20,
            lbr_depth: 32,
            distinct_stacks: 500,
            kernel_fraction_percent: 10,
            compress: false,
            attr_size: corpus::ATTR_SIZE,
            seed: 11,
            mem_loads: None,
        };
        corpus::write_lbr_capture(&spec, &mut std::fs::File::create(&path).unwrap()).unwrap();
        path
    }

    /// What an index pass found, in comparable form: the side-band and the byte ranges of
    /// the shards, merged where they touch (shards may be cut at different records).
    fn summary(indexed: Indexed<'_>) -> (String, Vec<(u64, u64)>) {
        let mut covered: Vec<(u64, u64)> = Vec::new();
        for shard in &indexed.shards {
            let Shard::Mapped { data, base } = shard else {
                panic!("an owned shard from a file");
            };
            match covered.last_mut() {
                Some((_, end)) if *end == *base => *end += data.len() as u64,
                _ => covered.push((*base, *base + data.len() as u64)),
            }
        }
        let side = &indexed.side;
        let side = format!(
            "{:?} {:?} {} {}",
            side.mmaps, side.tasks, side.records, side.bytes
        );
        (side, covered)
    }

    fn index_at(
        map: &memmap2::Mmap,
        split: impl Fn(&Walker<'_, '_>, &[u8]) -> Option<usize>,
    ) -> std::result::Result<Option<Indexed<'_>>, PipeError> {
        let options = ReadOptions {
            threads: 2,
            ..Default::default()
        };
        index_split(map, options, &NoProgress, split)
    }

    fn error_text(e: PipeError) -> String {
        e.into_engine(Path::new("capture")).to_string()
    }

    /// Indexing in two halves finds what one pass finds, whether the guessed boundary is
    /// right or wrong, and a truncated capture fails with the same error either way.
    #[test]
    fn split_index_equals_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let path = capture(dir.path());
        let file = std::fs::File::open(&path).unwrap();
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let whole = summary(index_at(&map, |_, _| None).ok().unwrap().unwrap());
        let boundary = |w: &Walker<'_, '_>, data: &[u8]| split_point(w.endian, data, 0);
        let found = index_at(&map, |w, data| boundary(w, data)).ok().unwrap();
        assert_eq!(summary(found.unwrap()), whole);
        let inside_a_record = |w: &Walker<'_, '_>, data: &[u8]| boundary(w, data).map(|p| p + 8);
        let wrong = index_at(&map, inside_a_record).ok().unwrap();
        assert_eq!(summary(wrong.unwrap()), whole);
        assert!(whole.1.len() == 1 && whole.1[0].1 - whole.1[0].0 > 2 << 20);

        let cut = dir.path().join("cut.data");
        std::fs::write(&cut, &std::fs::read(&path).unwrap()[..(3 << 20) - 100]).unwrap();
        let file = std::fs::File::open(&cut).unwrap();
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let one_pass = index_at(&map, |_, _| None).err().map(error_text);
        let split = index_at(&map, boundary).err().map(error_text);
        assert!(one_pass.is_some());
        assert_eq!(split, one_pass);
    }
}
