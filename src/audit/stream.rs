//! Reading a log into time order, for every command that replays one: a
//! reader thread parses rows into batches; this thread learns each batch's
//! keys, re-sorts rows within the reorder window and hands them on in
//! chunks, in time order. A row older than the window allows is an error
//! naming its file and line, with the fix.

use super::input::{self, Batch, Event, InputSpec, InputSummary, file_name};
use super::keys::Interner;
use super::order::Reorder;
use crate::time::Nanos;
use anyhow::{Context, Result, anyhow, bail};
use indicatif::ProgressBar;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

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

/// Where the rows go.
pub trait Sink {
    /// Sees each batch as read, before re-sorting (to intern its keys
    /// unless the reader did, and learn the values first seen in it).
    fn learn(&mut self, batch: &mut Batch);
    /// Takes rows in time order, a chunk at a time.
    fn take(&mut self, rows: &[Event]) -> Result<()>;
}

/// Reads the whole input in time order into `sink`. `reader_interns`: key
/// interners for the reader thread (else the sink interns each batch).
pub fn read_ordered(
    spec: &InputSpec,
    reorder_window: Nanos,
    reader_interns: Option<Vec<Interner>>,
    bar: &ProgressBar,
    sink: &mut impl Sink,
) -> Result<Read> {
    let files = &spec.files;
    let bytes = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::sync_channel::<Batch>(8);
    let reader = {
        let bytes = bytes.clone();
        let spec = spec.clone();
        std::thread::Builder::new()
            .name("drip-reader".into())
            .spawn(move || input::read_all(&spec, &bytes, reader_interns, |b| tx.send(b).is_ok()))
            .context("cannot start the reader thread")?
    };
    let started = std::time::Instant::now();
    let mut order = Reorder::new(reorder_window);
    let mut chunk: Vec<Event> = Vec::with_capacity(CHUNK);
    let mut rows_seen = 0u64;
    // Far-future rows taken back with --skip-bad.
    let mut out_of_place = 0u64;
    let names: Vec<String> = if files.is_empty() {
        vec!["<stdin>".into()]
    } else {
        files.iter().map(|f| file_name(f)).collect()
    };
    let replayed: Result<()> = (|| {
        for mut batch in rx.iter() {
            sink.learn(&mut batch);
            rows_seen += batch.events.len() as u64;
            for ev in batch.events {
                if let Err(late) = order.push(ev) {
                    if let Some((jumped, before)) = late.jumped
                        && ev.at.saturating_add(reorder_window) >= before
                    {
                        // The row before jumped far ahead and this one goes
                        // back to where the log was: that row is the one
                        // out of place.
                        if spec.skip_bad && order.drop_jump().is_some() && order.push(ev).is_ok() {
                            out_of_place += 1;
                            continue;
                        }
                        bail!(
                            "{}:{}: this row's time {} is {} after the rows before it ({}), and the next row goes back to {}: the row is out of place; fix or remove it, or pass --skip-bad to skip and count such rows",
                            names[jumped.file as usize],
                            jumped.line,
                            crate::report::instant(jumped.at.0),
                            Nanos(jumped.at.0 - before.0),
                            crate::report::instant(before.0),
                            crate::report::instant(ev.at.0),
                        );
                    }
                    let behind = Nanos(late.newest.0 - ev.at.0);
                    bail!(
                        "{}:{}: this row's time {} is {} older than an earlier row's {}, beyond the reorder window of {}; raise --reorder-window above {} or sort the log by time",
                        names[ev.file as usize],
                        ev.line,
                        crate::report::instant(ev.at.0),
                        behind,
                        crate::report::instant(late.newest.0),
                        reorder_window,
                        behind
                    );
                }
                while let Some(ready) = order.pop_ready() {
                    chunk.push(ready);
                    if chunk.len() >= CHUNK {
                        sink.take(&chunk)?;
                        chunk.clear();
                    }
                }
            }
            let done = bytes.load(Ordering::Relaxed);
            bar.set_position(done);
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            bar.set_message(format!("{:.0} rows/s", rows_seen as f64 / secs));
        }
        chunk.extend(std::iter::from_fn(|| order.pop_any()));
        sink.take(&chunk)?;
        chunk.clear();
        Ok(())
    })();
    if let Err(e) = replayed {
        // Fail now: the reader may be blocked reading an input that is
        // still open (a pipe); it stops at its next batch, or with the
        // process.
        drop(rx);
        bar.finish_and_clear();
        return Err(e);
    }
    let read = reader
        .join()
        .map_err(|_| anyhow!("the reader thread failed"))?;
    bar.finish_and_clear();
    let mut summary = read?;
    summary.rows -= out_of_place;
    summary.bad_rows += out_of_place;
    if summary.rows == 0 && summary.bad_rows > 0 {
        bail!(
            "all {} rows were bad and skipped, nothing was replayed; check --time-column and --time-format (drop --skip-bad to see the first bad row)",
            summary.bad_rows
        );
    }
    if order.reordered > 0 && !spec.quiet {
        crate::say!(
            "drip: {} rows were out of time order, by at most {}; re-sorted (--reorder-window {})",
            order.reordered,
            order.max_behind,
            reorder_window
        );
    }
    Ok(Read {
        summary,
        reordered: order.reordered,
        names,
    })
}
