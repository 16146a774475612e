//! Reading a log into time order, for every command that replays one: a
//! reader thread parses rows into batches; this thread learns each batch's
//! keys, re-sorts rows within the reorder window and hands them on in
//! chunks, in time order. A row older than the window allows is an error
//! naming its file and line, with the fix.
//!
//! With `--merge` the files are logs of one period from several servers:
//! each file has a reader thread of its own, its rows are re-sorted within
//! the window on their own, and a k-way merge takes the earliest head
//! across files (ties: file order, then line order) into batches numbered
//! in merged order. Memory is a window of rows and a few batches per file.

use super::batch::{BATCH, Batch, Event, InputSummary, MAX_KEYS};
use super::input::InputSpec;
use super::keys::Interner;
use super::open::file_name;
use super::order::{Reorder, Scan};
use super::reader::{self, Said};
use super::window::{Refusal, Window, refused, scan_after, scannable};
use crate::ingest::log::InputFormat;
use crate::time::Nanos;
use anyhow::{Context, Result, anyhow, bail};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// Rows handed on at a time, in time order.
pub const CHUNK: usize = 4096;

/// What reading found, besides the rows.
pub struct Read {
    pub summary: InputSummary,
    /// Rows that arrived before a newer row and were moved.
    pub reordered: u64,
    /// The input's display names, in order (`<stdin>` for standard input).
    pub names: Vec<String>,
}

/// Where reading tells how far it got: the bytes read of the input and the
/// rows seen, after every batch, and once when reading ends (well or not).
/// The command line draws a progress bar; `()` ignores it.
pub trait Progress {
    /// `bytes` of the input read and `rows` seen so far.
    fn read(&self, bytes: u64, rows: u64);
    /// Reading ended (the rows were all taken, or it failed).
    fn finish(&self) {}
}

impl Progress for () {
    fn read(&self, _bytes: u64, _rows: u64) {}
}

/// Where the rows go.
pub trait Sink {
    /// Sees each batch as read, before re-sorting (to intern its keys
    /// unless the reader did, and learn the values first seen in it).
    fn learn(&mut self, batch: &mut Batch);
    /// Takes rows in time order, a chunk at a time.
    fn take(&mut self, rows: &[Event]) -> Result<()>;
}

/// Reads the whole input in time order into `sink`. `reorder_window`: as
/// given, else the default of the log's format. `reader_interns`: key
/// interners for the reader thread (else the sink interns each batch).
pub fn read_ordered(
    spec: &InputSpec,
    reorder_window: Option<Nanos>,
    reader_interns: Option<Vec<Interner>>,
    progress: &dyn Progress,
    sink: &mut impl Sink,
) -> Result<Read> {
    let reorder_window = Window {
        given: reorder_window,
        ..Window::default()
    };
    let ordered = super::rotated::in_time_order(spec);
    let spec = ordered.as_ref().unwrap_or(spec);
    let bytes = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::sync_channel::<Batch>(8);
    // Batches go back to the reader empty, to be filled again: at most as
    // many as can be on their way here (any more are dropped).
    let (back, recycled) = mpsc::sync_channel::<Batch>(8);
    let names = display_names(&spec.files);
    let merge = spec.merge && spec.files.len() > 1;
    let reader = spawn_reader(
        spec,
        reorder_window.clone(),
        reader_interns,
        &names,
        &bytes,
        tx,
        recycled,
    )?;
    let shown = Shown {
        progress,
        bytes: &bytes,
    };
    let mut sorter = Sorter::new(spec, reorder_window.clone(), merge);
    if let Err(e) = sorter.feed(&rx, &back, &names, &shown, sink) {
        // Fail now: the reader may be blocked reading an input that is
        // still open (a pipe); it stops at its next batch, or with the
        // process.
        drop(rx);
        progress.finish();
        return Err(e);
    }
    let read = reader
        .join()
        .map_err(|_| anyhow!("the reader thread failed"))?;
    progress.finish();
    conclude(spec, read?, &sorter, names)
}

/// The input's display names, in order (`<stdin>` for standard input).
fn display_names(files: &[std::path::PathBuf]) -> Vec<String> {
    if files.is_empty() {
        vec!["<stdin>".into()]
    } else {
        files.iter().map(|f| file_name(f)).collect()
    }
}

/// Starts the reader thread: every file in order, or (merging) each file
/// on a thread of its own, merged by time.
fn spawn_reader(
    spec: &InputSpec,
    reorder_window: Window,
    reader_interns: Option<Vec<Interner>>,
    names: &[String],
    bytes: &Arc<AtomicU64>,
    tx: mpsc::SyncSender<Batch>,
    recycled: mpsc::Receiver<Batch>,
) -> Result<JoinHandle<Result<Merged>>> {
    let merge = spec.merge && spec.files.len() > 1;
    let bytes = bytes.clone();
    let spec = spec.clone();
    let names = names.to_vec();
    std::thread::Builder::new()
        .name("drip-reader".into())
        .spawn(move || {
            if merge {
                merge_files(&spec, reorder_window, &bytes, reader_interns, &names, tx)
            } else {
                let detected = Some(reorder_window.detected.clone());
                reader::read_all(&spec, &bytes, reader_interns, recycled, detected, |b| {
                    tx.send(b).is_ok()
                })
                .map(|summary| Merged {
                    summary,
                    reordered: 0,
                    max_behind: Nanos::ZERO,
                })
            }
        })
        .context("cannot start the reader thread")
}

/// Where progress goes, and the bytes the reader thread has read.
struct Shown<'a> {
    progress: &'a dyn Progress,
    bytes: &'a AtomicU64,
}

/// Rows re-sorted within the window on this thread, handed on in chunks.
struct Sorter {
    order: Reorder<Event>,
    chunk: Vec<Event>,
    rows_seen: u64,
    /// Far-future rows taken back with --skip-bad.
    out_of_place: u64,
    /// Rows come merged, in time order already.
    merge: bool,
    window: Window,
    input_format: InputFormat,
    skip_bad: bool,
    /// `--merge` was given (with one file or more).
    merging: bool,
    files: Vec<PathBuf>,
    /// The first row too late for the window, and the rest of the log
    /// read for what it needs.
    late: Option<(Box<Refusal>, Scan)>,
}

impl Sorter {
    fn new(spec: &InputSpec, window: Window, merge: bool) -> Sorter {
        Sorter {
            order: Reorder::new(Nanos::ZERO),
            chunk: Vec::with_capacity(CHUNK),
            rows_seen: 0,
            out_of_place: 0,
            merge,
            window,
            input_format: spec.input_format,
            skip_bad: spec.tolerance.skip_bad,
            merging: spec.merge,
            files: spec.files.clone(),
            late: None,
        }
    }

    /// Takes every batch the reader sends, then the rows still held.
    fn feed(
        &mut self,
        rx: &mpsc::Receiver<Batch>,
        back: &mpsc::SyncSender<Batch>,
        names: &[String],
        shown: &Shown,
        sink: &mut impl Sink,
    ) -> Result<()> {
        for mut batch in rx.iter() {
            if self.rows_seen == 0 {
                // The reader knows the format by its first batch.
                self.order
                    .set_window(self.window.resolve(self.input_format));
            }
            sink.learn(&mut batch);
            self.rows_seen += batch.events.len() as u64;
            match self.late.as_mut() {
                Some((_, scan)) => batch.events.iter().for_each(|ev| scan.see(ev)),
                None => self.take(&batch.events, names, sink)?,
            }
            if !self.merge {
                batch.recycle();
                // The reader takes one back per batch it sends; when it is
                // done (or none is wanted), the batch is simply dropped.
                let _ = back.try_send(batch);
            }
            let done = shown.bytes.load(Ordering::Relaxed);
            shown.progress.read(done, self.rows_seen);
        }
        if let Some((r, scan)) = &self.late {
            let window = self.window.shown(self.input_format);
            return Err(refused(r, Some(scan), &window, names, self.merging));
        }
        self.chunk
            .extend(std::iter::from_fn(|| self.order.pop_any()));
        sink.take(&self.chunk)?;
        self.chunk.clear();
        Ok(())
    }

    /// Takes one batch's rows, handing on each chunk that fills.
    fn take(&mut self, mut rest: &[Event], names: &[String], sink: &mut impl Sink) -> Result<()> {
        let chunk = &mut self.chunk;
        while !rest.is_empty() {
            if self.merge {
                // Merged rows come in time order.
                let n = rest.len().min(CHUNK - chunk.len());
                chunk.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
            } else {
                // Rows in time order are held in bulk; any other row
                // one at a time.
                let order = &mut self.order;
                let n = order.push_in_order(rest);
                rest = &rest[n..];
                if n == 0 {
                    match hold(order, rest[0], self.skip_bad) {
                        Ok(n) => self.out_of_place += n,
                        Err(r) => {
                            let files = self.files.get(r.row.file as usize..).unwrap_or(&[]);
                            if !scans(&r, files, self.merging) {
                                let window = self.window.shown(self.input_format);
                                return Err(refused(&r, None, &window, names, self.merging));
                            }
                            let mut scan = scan_after(&r, order.max_behind);
                            rest[1..].iter().for_each(|ev| scan.see(ev));
                            self.late = Some((r, scan));
                            return Ok(());
                        }
                    }
                    rest = &rest[1..];
                }
                // Ready rows, a chunk at a time: short of a full
                // chunk, none is left ready.
                loop {
                    let room = CHUNK - chunk.len();
                    if order.pop_ready_into(chunk, room) < room {
                        break;
                    }
                    sink.take(chunk)?;
                    chunk.clear();
                }
            }
            if chunk.len() == CHUNK {
                sink.take(chunk)?;
                chunk.clear();
            }
        }
        Ok(())
    }
}

/// What reading found, the rows re-sorted on both threads counted, and
/// said: no rows but bad ones is an error, rows re-sorted a note.
fn conclude(spec: &InputSpec, read: Merged, sorter: &Sorter, names: Vec<String>) -> Result<Read> {
    let Merged {
        mut summary,
        reordered,
        max_behind,
    } = read;
    let reordered = sorter.order.reordered + reordered;
    let max_behind = sorter.order.max_behind.max(max_behind);
    summary.rows -= sorter.out_of_place;
    summary.bad_rows += sorter.out_of_place;
    if summary.rows == 0 && summary.bad_rows > 0 {
        bail!(
            "all {} rows were bad and skipped, nothing was replayed; check --time-column and --time-format (drop --skip-bad to see the first bad row)",
            summary.bad_rows
        );
    }
    if reordered > 0 {
        let within = if spec.merge && spec.files.len() > 1 {
            " within their files"
        } else {
            ""
        };
        spec.notes.say(format_args!(
            "{reordered} rows were out of time order{within}, by at most {max_behind}; re-sorted (--reorder-window {})",
            sorter.window.shown(spec.input_format)
        ));
    }
    Ok(Read {
        summary,
        reordered,
        names,
    })
}

/// Whether the rest of the log is read for the window it needs after the
/// refused row `r`: not when the row is older than a row of a file before
/// it (the files overlap: that is said at once), nor when `files` (its own
/// and those after it) are not all regular files.
fn scans(r: &Refusal, files: &[PathBuf], merging: bool) -> bool {
    (r.row.file == r.newest_file || merging) && scannable(files, 0)
}

/// Holds `row` in `order`; a row older than the window allows is refused,
/// or, with `skip_bad`, when the row before it jumped far ahead and this
/// one goes back to where the log was, that row is taken back (1: one row
/// out of place).
fn hold<T: AsRef<Event> + Clone>(
    order: &mut Reorder<T>,
    row: T,
    skip_bad: bool,
) -> std::result::Result<u64, Box<Refusal>> {
    let Err(late) = order.push(row) else {
        return Ok(0);
    };
    let ev = *late.row.as_ref();
    let window = order.window();
    let jumped = late
        .jumped
        .filter(|&(_, before)| ev.at.saturating_add(window) >= before);
    if jumped.is_some() && skip_bad && order.drop_jump().is_some() && order.push(late.row).is_ok() {
        return Ok(1);
    }
    Err(Box::new(Refusal {
        row: ev,
        newest: late.newest,
        newest_file: late.newest_file,
        jumped,
    }))
}

/// What the reader thread found: the input's summary and the rows it
/// re-sorted itself (each file's, when merging).
struct Merged {
    summary: InputSummary,
    reordered: u64,
    max_behind: Nanos,
}

/// A row of one file waiting for its turn, with the batch that holds its
/// key values (shared by the rows of that batch still waiting).
#[derive(Clone)]
struct Waiting {
    ev: Event,
    /// Its place in `batch.events`.
    at: u32,
    batch: Rc<Batch>,
}

impl AsRef<Event> for Waiting {
    fn as_ref(&self) -> &Event {
        &self.ev
    }
}

/// Appends row `n` of `from`, its key values with it, to `to`.
fn copy_row(ev: Event, from: &Batch, n: usize, cols: usize, to: &mut Batch) {
    let first = n * cols;
    // Values are stored back to back: a row's first starts where the row
    // before it ended.
    let mut start = match first {
        0 => 0,
        i => from.key_ends[i - 1] as usize,
    };
    for &end in &from.key_ends[first..first + cols] {
        to.key_bytes
            .extend_from_slice(&from.key_bytes[start..end as usize]);
        to.key_ends.push(to.key_bytes.len() as u32);
        start = end as usize;
    }
    to.events.push(ev);
}

/// Reads file `idx` alone (on its own thread) and sends its rows re-sorted
/// within the window, in batches, for the merge.
fn sort_file(
    spec: &InputSpec,
    idx: usize,
    window: &Window,
    bytes: &Arc<AtomicU64>,
    said: Said,
    names: &[String],
    tx: mpsc::SyncSender<Batch>,
) -> Result<Merged> {
    let cols = spec.key_cols.len();
    let mut order: Reorder<Waiting> = Reorder::new(Nanos::ZERO);
    let mut out = Batch::default();
    let mut failed = None;
    let mut late: Option<(Box<Refusal>, Scan)> = None;
    let mut out_of_place = 0;
    let mut started = false;
    let put = |row: Waiting, out: &mut Batch| {
        copy_row(row.ev, &row.batch, row.at as usize, cols, out);
        out.events.len() < BATCH || tx.send(std::mem::take(out)).is_ok()
    };
    let shown = || window.shown(spec.input_format);
    let detected = Some(window.detected.clone());
    let read = reader::read_one(spec, idx, bytes, said, detected, |batch| {
        if !std::mem::replace(&mut started, true) {
            order.set_window(window.resolve(spec.input_format));
        }
        let batch = Rc::new(batch);
        for (at, ev) in batch.events.iter().enumerate() {
            if let Some((_, scan)) = late.as_mut() {
                scan.see(ev);
                continue;
            }
            let row = Waiting {
                ev: *ev,
                at: at as u32,
                batch: batch.clone(),
            };
            match hold(&mut order, row, spec.tolerance.skip_bad) {
                Ok(n) => out_of_place += n,
                Err(r) if scans(&r, &spec.files[idx..=idx], true) => {
                    let scan = scan_after(&r, order.max_behind);
                    late = Some((r, scan));
                }
                Err(r) => {
                    failed = Some(refused(&r, None, &shown(), names, true));
                    return false;
                }
            }
            while let Some(row) = order.pop_ready() {
                if !put(row, &mut out) {
                    return false; // the merge has stopped
                }
            }
        }
        true
    });
    if let Some((r, scan)) = &late {
        return Err(refused(r, Some(scan), &shown(), names, true));
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let mut summary = read?;
    while let Some(row) = order.pop_any() {
        if !put(row, &mut out) {
            break;
        }
    }
    if !out.events.is_empty() {
        let _ = tx.send(out);
    }
    summary.rows -= out_of_place;
    summary.bad_rows += out_of_place;
    Ok(Merged {
        summary,
        reordered: order.reordered,
        max_behind: order.max_behind,
    })
}

/// One file being merged: its rows in time order, a batch at a time.
struct Source {
    rx: mpsc::Receiver<Batch>,
    reader: Option<JoinHandle<Result<Merged>>>,
    batch: Batch,
    /// The next row in `batch.events`.
    next: usize,
    read: Option<Merged>,
}

impl Source {
    /// The time of the file's next row, receiving its next batch when
    /// needed; `None` at its end (or an error of its reader).
    fn head(&mut self) -> Result<Option<Nanos>> {
        while self.next >= self.batch.events.len() {
            match self.rx.recv() {
                Ok(batch) => {
                    self.batch = batch;
                    self.next = 0;
                }
                Err(_) => {
                    let Some(reader) = self.reader.take() else {
                        return Ok(None);
                    };
                    let read = reader
                        .join()
                        .map_err(|_| anyhow!("a reader thread failed"))??;
                    self.read = Some(read);
                    return Ok(None);
                }
            }
        }
        Ok(Some(self.batch.events[self.next].at))
    }
}

/// Reads every file on a thread of its own, each re-sorted within the
/// window, and merges their rows by time into batches sent on `tx`,
/// numbered in merged order (key values interned here with `interners`,
/// else left to the receiver).
fn merge_files(
    spec: &InputSpec,
    window: Window,
    bytes: &Arc<AtomicU64>,
    mut interners: Option<Vec<Interner>>,
    names: &[String],
    tx: mpsc::SyncSender<Batch>,
) -> Result<Merged> {
    let said = Said::default();
    let mut sources = Vec::with_capacity(spec.files.len());
    for idx in 0..spec.files.len() {
        let (file_tx, rx) = mpsc::sync_channel::<Batch>(4);
        let (spec, bytes, said, window) =
            (spec.clone(), bytes.clone(), said.clone(), window.clone());
        let names = names.to_vec();
        let reader = std::thread::Builder::new()
            .name(format!("drip-reader-{idx}"))
            .spawn(move || sort_file(&spec, idx, &window, &bytes, said, &names, file_tx))
            .context("cannot start a reader thread")?;
        sources.push(Source {
            rx,
            reader: Some(reader),
            batch: Batch::default(),
            next: 0,
            read: None,
        });
    }
    let cols = spec.key_cols.len();
    // Each file's next row, earliest first: (time, file) is unique, and
    // ties go to the earlier file.
    let mut heads = BinaryHeap::new();
    for (i, s) in sources.iter_mut().enumerate() {
        if let Some(at) = s.head()? {
            heads.push(Reverse((at, i)));
        }
    }
    let mut out = Batch::default();
    let mut row = 0u64;
    let mut send = |out: &mut Batch| {
        let mut full = std::mem::take(out);
        if let Some(i) = interners.as_mut() {
            assert!(
                i.len() <= MAX_KEYS,
                "spilled ids are interned by the receiver"
            );
            full.intern(i, &mut Default::default());
        }
        tx.send(full).is_ok()
    };
    'merge: while let Some(Reverse((_, i))) = heads.pop() {
        let s = &mut sources[i];
        // Rows of this file go out until another file's head comes first.
        loop {
            let mut ev = s.batch.events[s.next];
            row += 1;
            ev.row = row;
            copy_row(ev, &s.batch, s.next, cols, &mut out);
            s.next += 1;
            if out.events.len() >= BATCH && !send(&mut out) {
                break 'merge; // the replay has failed
            }
            let Some(at) = s.head()? else {
                break;
            };
            if heads.peek().is_some_and(|Reverse(other)| *other < (at, i)) {
                heads.push(Reverse((at, i)));
                break;
            }
        }
    }
    if !out.events.is_empty() {
        send(&mut out);
    }
    Ok(merged(sources))
}

/// The files' summaries as one.
fn merged(sources: Vec<Source>) -> Merged {
    let mut all = Merged {
        summary: InputSummary::default(),
        reordered: 0,
        max_behind: Nanos::ZERO,
    };
    let mut columns: Vec<String> = Vec::new();
    let mut formats: Vec<String> = Vec::new();
    let add = |list: &mut Vec<String>, v: String| {
        if !v.is_empty() && !list.contains(&v) {
            list.push(v);
        }
    };
    let reads: Vec<Merged> = sources.into_iter().filter_map(|s| s.read).collect();
    // What files with rows were read by; else what the first file says.
    let with_rows = reads
        .iter()
        .any(|r| r.summary.rows + r.summary.bad_rows > 0);
    for read in reads {
        let s = read.summary;
        if s.rows + s.bad_rows > 0 || !with_rows && columns.is_empty() {
            add(&mut columns, s.time_column);
            add(&mut formats, s.time_format);
        }
        all.summary.rows += s.rows;
        all.summary.bad_rows += s.bad_rows;
        all.summary.truncated += s.truncated;
        all.summary.notices += s.notices;
        for (variant, n) in s.read_as {
            *all.summary.read_as.entry(variant).or_default() += n;
        }
        all.reordered += read.reordered;
        all.max_behind = all.max_behind.max(read.max_behind);
    }
    all.summary.time_column = columns.join(", ");
    all.summary.time_format = formats.join(", ");
    all
}
