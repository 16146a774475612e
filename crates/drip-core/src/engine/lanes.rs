//! Replay threads: each lane decides its share of every chunk (its keys of
//! the runs split by key, every row of the others), fed by the main thread.

use super::exec::Exec;
use super::run::Run;
use super::tally::{AUTO_BINS, AUTO_STEPS, Share};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::policy::Decision;
use crate::policy::records::Records;
use crate::time::Nanos;
use anyhow::{Context, Result, anyhow};
use std::sync::{Arc, mpsc};

/// Runs decided on one thread. A lane takes part in every chunk: a run
/// split by key decides only the lane's share of the keys (see [`Share`]),
/// dealt out to it; any other run every row of the chunk.
pub(super) struct Lane {
    pub(super) runs: Vec<Run>,
    pub(super) share: Option<Share>,
    pub(super) timeline: Option<(Nanos, u64)>,
    /// The timeline's interval follows the log's span (see `auto_timeline`).
    pub(super) auto: bool,
    pub(super) started: bool,
    /// This lane's rows of the current chunk, per key column it splits by.
    pub(super) mine: Vec<(usize, Vec<Event>)>,
    /// Per key column, the records of the single policies keyed by it
    /// (made when the lane starts).
    pub(super) records: Vec<(usize, Records)>,
}

impl Lane {
    pub(super) fn new(
        runs: Vec<Run>,
        share: Option<Share>,
        timeline: Option<(Nanos, u64)>,
        auto: bool,
    ) -> Lane {
        let mut mine: Vec<(usize, Vec<Event>)> = Vec::new();
        if share.is_some() {
            for c in runs.iter().filter_map(|r| r.split) {
                if !mine.iter().any(|(m, _)| *m == c) {
                    mine.push((c, Vec::new()));
                }
            }
        }
        Lane {
            runs,
            share,
            timeline,
            auto,
            started: false,
            mine,
            records: Vec::new(),
        }
    }

    /// Moves each single policy keyed by a column into that column's
    /// records, so that a key's states under all of them sit together.
    /// Done when the lane starts, on the thread that decides it, once its
    /// runs are settled.
    pub(super) fn group(&mut self) {
        for run in &mut self.runs {
            let (Some(c), Exec::One(_), Some(spec)) = (run.split, &run.exec, &run.source) else {
                continue;
            };
            let at = match self.records.iter().position(|(m, _)| *m == c) {
                Some(at) => at,
                None => {
                    self.records.push((c, Records::new()));
                    self.records.len() - 1
                }
            };
            run.exec = Exec::member(spec, &mut self.records[at].1);
        }
    }

    /// Moves an automatic timeline to a coarser step until `last` falls
    /// within `AUTO_BINS` intervals of its start. Every lane is given the
    /// same span of every chunk, so all step alike.
    pub(super) fn widen_timeline(&mut self, last: Nanos) {
        let Some((mut interval, mut t0)) = self.timeline else {
            return;
        };
        while (last.0 - t0) / interval.0 >= AUTO_BINS {
            let Some(&next) = AUTO_STEPS.iter().find(|&&s| s > interval.0) else {
                break;
            };
            let (to_i, to_t0) = (Nanos(next), t0 - t0 % next);
            for run in &mut self.runs {
                run.tally.coarsen((interval, t0), (to_i, to_t0));
            }
            (interval, t0) = (to_i, to_t0);
        }
        self.timeline = Some((interval, t0));
    }

    /// Decides a chunk (in time order, from `first` to `last`) under this
    /// lane's runs, run by run so each run's loop is tight: runs split by
    /// key decide the lane's rows of it (dealt into `mine` beforehand),
    /// the others `events`, the whole chunk. `out` (only with every run
    /// in one lane) keeps each decision, run after run.
    pub(super) fn decide_chunk(
        &mut self,
        (first, last): (Nanos, Nanos),
        events: &[Event],
        names: &KeyValues,
        mut out: Option<&mut [Decision]>,
    ) -> Result<()> {
        if !self.started {
            self.started = true;
            self.group();
            if let Some((i, t0)) = &mut self.timeline {
                *t0 = first.0 - first.0 % i.0;
            }
        }
        if self.auto {
            self.widen_timeline(last);
        }
        let n = events.len();
        for (ri, run) in self.runs.iter_mut().enumerate() {
            let records = match (&run.exec, run.split) {
                (Exec::Member(_), Some(c)) => self
                    .records
                    .iter_mut()
                    .find(|(m, _)| *m == c)
                    .map(|(_, r)| r),
                _ => None,
            };
            let rows = match (self.share, run.split) {
                (Some(_), Some(c)) => {
                    let (_, rows) = self
                        .mine
                        .iter()
                        .find(|(m, _)| *m == c)
                        .expect("a lane selects rows for each column it splits by");
                    rows.as_slice()
                }
                _ => events,
            };
            let out = out.as_deref_mut().map(|o| &mut o[ri * n..(ri + 1) * n]);
            run.decide_chunk(rows, names, self.timeline, records, out)?;
        }
        Ok(())
    }
}

/// What a replay thread gets of a chunk: its rows of it per key column it
/// splits by, and the whole chunk when it decides runs that are not split.
pub(super) struct Part {
    pub(super) span: (Nanos, Nanos),
    pub(super) whole: Option<Arc<Vec<Event>>>,
    /// In the order of the lane's `mine`.
    pub(super) mine: Vec<(usize, Vec<Event>)>,
}

/// A replay thread: a lane fed its part of the same chunks as this one.
pub(super) struct Worker {
    pub(super) tx: Option<mpsc::SyncSender<Part>>,
    /// Parts the thread is done with, to be filled again.
    pub(super) back: mpsc::Receiver<Part>,
    /// The key columns its lane splits by, in the order of its `mine`.
    pub(super) columns: Vec<usize>,
    /// True when the lane decides runs that are not split by key.
    pub(super) whole: bool,
    pub(super) handle: std::thread::JoinHandle<Result<Lane>>,
}

impl Worker {
    pub(super) fn start(mut lane: Lane) -> Result<Worker> {
        let (tx, rx) = mpsc::sync_channel::<Part>(4);
        let (back_tx, back) = mpsc::channel::<Part>();
        let columns = lane.mine.iter().map(|(c, _)| *c).collect();
        let whole = lane.runs.iter().any(|r| r.split.is_none());
        let handle = std::thread::Builder::new()
            .name("drip-replay".into())
            .spawn(move || {
                for mut part in rx.iter() {
                    std::mem::swap(&mut lane.mine, &mut part.mine);
                    let whole = part.whole.take();
                    let events = whole.as_deref().map_or(&[][..], Vec::as_slice);
                    lane.decide_chunk(part.span, events, &KeyValues::default(), None)?;
                    drop(whole);
                    // The rows just decided go back to be filled again
                    // (the replay may have finished with them already).
                    let _ = back_tx.send(part);
                }
                Ok(lane)
            })
            .context("cannot start a replay thread")?;
        Ok(Worker {
            tx: Some(tx),
            back,
            columns,
            whole,
            handle,
        })
    }

    /// A part to fill: one the thread is done with, or a new one.
    pub(super) fn part(&self) -> Part {
        self.back.try_recv().unwrap_or_else(|_| Part {
            span: (Nanos::ZERO, Nanos::ZERO),
            whole: None,
            mine: self.columns.iter().map(|&c| (c, Vec::new())).collect(),
        })
    }

    /// Hands the thread its part of a chunk; false when it has stopped
    /// (its error comes out of `finish`).
    pub(super) fn send(&mut self, part: Part) -> bool {
        match &self.tx {
            Some(tx) if tx.send(part).is_err() => {
                self.tx = None;
                false
            }
            _ => true,
        }
    }

    pub(super) fn finish(mut self) -> Result<Lane> {
        drop(self.tx.take());
        self.handle
            .join()
            .map_err(|_| anyhow!("a replay thread failed"))?
    }
}
