//! Formatting a list of items in parallel and writing the text in order, with no barrier
//! between batches: the rayon pool formats chunks of items as they are claimed, in order,
//! while the calling thread writes each chunk's text as soon as it and every chunk before it
//! are done. At most [`WINDOW`] chunks' text exist at a time, in buffers that circle between
//! the formatters and the writer.
//!
//! Formatting in batches joined one after another left a core idle at the end of every batch
//! while the last, largest chunk finished (YAML records differ in cost by orders of magnitude).

use std::io::Write;
use std::ops::Range;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Chunks formatted or being formatted ahead of the writer; also the number of text buffers.
const WINDOW: usize = 32;
/// Items in each of the first chunks, before the bytes per item are known.
const FIRST_CHUNK_ITEMS: usize = 64;
/// The text a chunk aims at (two windows of it stay far below the output's memory).
const CHUNK_BYTES: usize = 128 << 10;
/// The most items in a chunk. An fdata line can take 200 bytes (long C++ names), and buffers
/// that grow are fresh pages: with 2^16 lines per batch they were 16 % of an export's CPU
/// (PERF.md, the fleet path).
const MAX_CHUNK_ITEMS: usize = 1024;

/// Writes `items` as `format` prints them (chunk by chunk), in order, to `out`. The first
/// error of `format` or of `out` ends the work and is returned.
pub(crate) fn write_in_order<T: Sync>(
    out: &mut dyn Write,
    items: &[T],
    format: impl Fn(&[T], &mut Vec<u8>) -> std::io::Result<()> + Sync,
) -> std::io::Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let shared = Shared::new(items.len());
    let format = &format;
    rayon::in_place_scope(|scope| {
        for _ in 0..rayon::current_num_threads() {
            let shared = &shared;
            scope.spawn(move |_| format_chunks(shared, items, format));
        }
        let written = write_chunks(&shared, items, format, out);
        if written.is_err() {
            // Stop the formatters; the scope then waits for the chunks they hold.
            shared.fail(None);
        }
        written
    })
}

/// A chunk claimed for formatting: its index, its items and the buffer for its text.
struct Claim {
    index: usize,
    items: Range<usize>,
    text: Vec<u8>,
}

struct State {
    /// The first item not claimed yet.
    next_item: usize,
    /// The index the next claimed chunk gets.
    next_chunk: usize,
    /// Formatted chunks not written yet, at `index % WINDOW`: text and item count.
    ready: Vec<Option<(Vec<u8>, usize)>>,
    /// Buffers free for the next claims.
    spare: Vec<Vec<u8>>,
    /// Items and bytes of the chunks written so far, for the size of the next chunks.
    items_written: usize,
    bytes_written: usize,
    /// Set by the first error (or a formatter's panic): no chunk is claimed after it.
    failed: bool,
    /// The first error of `format`, for the writer to return.
    error: Option<std::io::Error>,
}

struct Shared {
    items: usize,
    state: Mutex<State>,
    /// Signalled when a chunk is ready or the work failed (the writer waits on it).
    chunk_ready: Condvar,
    /// Signalled when a buffer is spare or the work failed (formatters wait on it).
    buffer_spare: Condvar,
}

impl Shared {
    fn new(items: usize) -> Self {
        Shared {
            items,
            state: Mutex::new(State {
                next_item: 0,
                next_chunk: 0,
                ready: (0..WINDOW).map(|_| None).collect(),
                spare: (0..WINDOW).map(|_| Vec::new()).collect(),
                items_written: 0,
                bytes_written: 0,
                failed: false,
                error: None,
            }),
            chunk_ready: Condvar::new(),
            buffer_spare: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A formatter that panicked holds no lock while formatting: the state stays sound.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Claims the next chunk with a spare buffer in `state`, or `None` when every item is
    /// claimed, the work failed, or no buffer is spare.
    fn try_claim(&self, state: &mut State) -> Option<Claim> {
        if state.failed || state.next_item == self.items {
            return None;
        }
        let text = state.spare.pop()?;
        let per_chunk = match state.items_written {
            0 => FIRST_CHUNK_ITEMS,
            n => CHUNK_BYTES / state.bytes_written.div_ceil(n).max(1),
        };
        let start = state.next_item;
        let end = start + per_chunk.clamp(1, MAX_CHUNK_ITEMS).min(self.items - start);
        state.next_item = end;
        state.next_chunk += 1;
        if end == self.items {
            // Formatters waiting for a buffer have nothing left to claim: let them all go.
            self.buffer_spare.notify_all();
        }
        Some(Claim {
            index: state.next_chunk - 1,
            items: start..end,
            text,
        })
    }

    /// Waits for a chunk to claim; `None` when there is none left or the work failed.
    fn claim(&self) -> Option<Claim> {
        let mut state = self.lock();
        loop {
            if let Some(claim) = self.try_claim(&mut state) {
                return Some(claim);
            }
            if state.failed || state.next_item == self.items {
                return None;
            }
            state = self
                .buffer_spare
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Hands in a formatted chunk, or fails the work with its error.
    fn finish(&self, claim: Claim, formatted: std::io::Result<()>) {
        let mut state = self.lock();
        match formatted {
            Ok(()) => {
                let items = claim.items.len();
                state.ready[claim.index % WINDOW] = Some((claim.text, items));
            }
            Err(e) => {
                state.failed = true;
                state.error.get_or_insert(e);
                self.buffer_spare.notify_all();
            }
        }
        self.chunk_ready.notify_one();
    }

    /// Stops the work (after an error of the writer, or a formatter's panic).
    fn fail(&self, error: Option<std::io::Error>) {
        let mut state = self.lock();
        state.failed = true;
        if let Some(e) = error {
            state.error.get_or_insert(e);
        }
        self.buffer_spare.notify_all();
        self.chunk_ready.notify_all();
    }
}

/// Formats `claim`'s items into its buffer and hands it in.
fn format_claim<T>(
    shared: &Shared,
    items: &[T],
    format: &(impl Fn(&[T], &mut Vec<u8>) -> std::io::Result<()> + Sync),
    mut claim: Claim,
) {
    /// Fails the work if formatting unwinds, so that the writer does not wait for a chunk
    /// that will never come (the scope then resumes the panic).
    struct FailOnUnwind<'s>(&'s Shared);
    impl Drop for FailOnUnwind<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.fail(None);
            }
        }
    }
    let _guard = FailOnUnwind(shared);
    claim.text.clear();
    let formatted = format(&items[claim.items.clone()], &mut claim.text);
    shared.finish(claim, formatted);
}

/// A formatter: claims and formats chunks until none is left.
fn format_chunks<T>(
    shared: &Shared,
    items: &[T],
    format: &(impl Fn(&[T], &mut Vec<u8>) -> std::io::Result<()> + Sync),
) {
    while let Some(claim) = shared.claim() {
        format_claim(shared, items, format, claim);
    }
}

/// The writer: writes the chunks in order as they become ready. A chunk that no formatter has
/// claimed when its turn comes is formatted here, so the writing never waits for a pool that
/// is busy elsewhere (or that this thread is part of).
fn write_chunks<T>(
    shared: &Shared,
    items: &[T],
    format: &(impl Fn(&[T], &mut Vec<u8>) -> std::io::Result<()> + Sync),
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut next = 0;
    loop {
        let mut state = shared.lock();
        let (text, count) = loop {
            if state.failed {
                let e = state.error.take();
                return Err(e.unwrap_or_else(|| std::io::Error::other("formatting failed")));
            }
            if let Some(done) = state.ready[next % WINDOW].take() {
                break done;
            }
            if next == state.next_chunk {
                if state.next_item == shared.items {
                    return Ok(());
                }
                if let Some(claim) = shared.try_claim(&mut state) {
                    drop(state);
                    format_claim(shared, items, format, claim);
                    state = shared.lock();
                    continue;
                }
            }
            state = shared
                .chunk_ready
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        };
        drop(state);
        out.write_all(&text)?;
        let mut state = shared.lock();
        state.items_written += count;
        state.bytes_written += text.len();
        state.spare.push(text);
        shared.buffer_spare.notify_one();
        next += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(chunk: &[u32], text: &mut Vec<u8>) -> std::io::Result<()> {
        for n in chunk {
            text.extend_from_slice(format!("{n}\n").as_bytes());
        }
        Ok(())
    }

    fn expected(items: &[u32]) -> Vec<u8> {
        let mut text = Vec::new();
        numbers(items, &mut text).unwrap();
        text
    }

    /// The writer formats the chunks the pool does not take: inside a one-thread pool the
    /// calling thread is the pool's only worker, and the output is still complete.
    #[test]
    fn a_pool_without_a_free_thread_still_writes_everything() {
        let items: Vec<u32> = (0..200_000).collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let mut written = Vec::new();
        pool.install(|| write_in_order(&mut written, &items, numbers))
            .unwrap();
        assert!(written == expected(&items));
    }

    #[test]
    fn a_formatting_error_is_returned_and_stops_the_work() {
        let items: Vec<u32> = (0..100_000).collect();
        let format = |chunk: &[u32], text: &mut Vec<u8>| match chunk.contains(&50_000) {
            true => Err(std::io::Error::other("item 50000")),
            false => numbers(chunk, text),
        };
        let mut written = Vec::new();
        let e = write_in_order(&mut written, &items, format).unwrap_err();
        assert_eq!(e.to_string(), "item 50000");
        // Nothing from the failed chunk on was written.
        assert!(written.len() < expected(&items[..50_000]).len());
    }

    /// A writer that fails after `left` bytes.
    struct FailingWriter {
        left: usize,
    }

    impl Write for FailingWriter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if buf.len() > self.left {
                return Err(std::io::Error::other("disk full"));
            }
            self.left -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_error_is_returned_and_stops_the_formatters() {
        let items: Vec<u32> = (0..1_000_000).collect();
        let formatted = std::sync::atomic::AtomicUsize::new(0);
        let format = |chunk: &[u32], text: &mut Vec<u8>| {
            formatted.fetch_add(chunk.len(), std::sync::atomic::Ordering::Relaxed);
            numbers(chunk, text)
        };
        let mut out = FailingWriter { left: 10_000 };
        let e = write_in_order(&mut out, &items, format).unwrap_err();
        assert_eq!(e.to_string(), "disk full");
        // The formatters stopped within a window of chunks of the failure.
        let most = 10_000 + WINDOW * MAX_CHUNK_ITEMS + 2 * MAX_CHUNK_ITEMS;
        assert!(formatted.into_inner() < most);
    }

    #[test]
    fn a_formatter_panic_reaches_the_caller() {
        let items: Vec<u32> = (0..100_000).collect();
        let format = |chunk: &[u32], text: &mut Vec<u8>| {
            assert!(!chunk.contains(&77_777), "formatter panicked");
            numbers(chunk, text)
        };
        let outcome = std::panic::catch_unwind(|| {
            let mut written = Vec::new();
            let _ = write_in_order(&mut written, &items, format);
        });
        assert!(outcome.is_err());
    }
}
