//! The replay: every row through every policy, in time order, in one pass,
//! collecting what the report needs. Per-key tables are vectors indexed by
//! key id; policies hold only the keys active within their horizon.

use super::counts::Counts;
use super::exec::Exec;
use super::hurt::{Keys, top_drops, top_waits};
use super::lanes::{Lane, Part, Worker};
use super::loops::PREFETCH_FAR;
pub use super::loops::Slot;
use super::merge::{Outcome, RunOutcome};
pub use super::run::Run;
use super::tally::{AUTO_STEPS, Share};
use crate::engine::outcome::{Gateway, PolicyReport, TimelineRow};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::ingest::keys::{EMPTY_KEY, Interner, KeyNames};
use crate::policy::Decision;
use crate::time::Nanos;
use anyhow::{Result, anyhow};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// The whole replay state.
pub struct Replay {
    /// The runs decided on this thread.
    pub(super) local: Lane,
    /// The other replay threads, when the runs are spread (see `spread`).
    pub(super) workers: Vec<Worker>,
    /// The chunks handed to them, each refilled once every thread is done
    /// with it, so that handing rows over allocates nothing per chunk.
    pub(super) handed: Vec<Arc<Vec<Event>>>,
    /// Labels of every run, in report order.
    pub(super) labels: Vec<String>,
    /// Key values per key column, by id.
    pub(super) names: KeyValues,
    pub(super) interners: Vec<Interner>,
    /// Requests per key, per key column.
    pub(super) requests_by_key: Vec<Vec<u64>>,
    /// Where every decision goes, row by row (`--decisions`).
    pub(super) decisions: Option<Box<dyn DecisionSink>>,
    pub first: Option<Nanos>,
    pub last: Option<Nanos>,
    pub(super) top: usize,
    /// `--compare`: every run against the first, row by row.
    pub(super) compare: Option<super::compare::Compare>,
}

impl Replay {
    pub fn new(
        runs: Vec<Run>,
        key_columns: usize,
        decisions: Option<Box<dyn DecisionSink>>,
        timeline: Option<Nanos>,
        top: usize,
    ) -> Result<Replay> {
        Ok(Replay {
            labels: runs.iter().map(|r| r.label.clone()).collect(),
            local: Lane::new(runs, None, timeline.map(|i| (i, 0)), false),
            workers: Vec::new(),
            handed: Vec::new(),
            names: KeyValues::new(key_columns),
            interners: (0..key_columns).map(|_| Interner::default()).collect(),
            requests_by_key: vec![Vec::new(); key_columns],
            decisions,
            first: None,
            last: None,
            top,
            compare: None,
        })
    }

    /// Compares every run with the first, row by row, keys by the first
    /// run's key column (or the first keyed run's). Needs every run here.
    pub fn compare(&mut self) {
        let slot = self.local.runs.iter().find_map(|r| r.tally.report_slot);
        self.compare = Some(super::compare::Compare::new(slot, self.local.runs.len()));
    }

    /// The comparison, once every row is decided.
    pub fn compare_report(&self) -> Vec<crate::engine::outcome::CompareReport> {
        self.compare.as_ref().map_or(Vec::new(), |c| {
            c.report(&self.labels, &self.names, &self.requests_by_key, self.top)
        })
    }

    /// Keeps a timeline whose interval follows the log's span: it starts at
    /// 1 ms and, whenever the arrivals span more than `AUTO_BINS`
    /// intervals, moves to the next of `AUTO_STEPS`, merging what it has.
    /// Replaces a fixed timeline. Call before `spread`.
    pub fn auto_timeline(&mut self) {
        self.local.timeline = Some((Nanos(AUTO_STEPS[0]), 0));
        self.local.auto = true;
    }

    /// Spreads the runs over `threads` replay threads, this one included.
    /// A run whose every member keys by one column is independent per key
    /// of it: each thread decides it for its share of the keys, and the
    /// tallies add up at the end. Any other run (a global one, a stack
    /// keyed by several columns, an nginx.conf) is decided whole on one
    /// thread; an nginx.conf stays on this one, which learns key values.
    /// Nothing is spread with a decisions file or a comparison, which
    /// need every decision of a row here, nor a single run: reading and
    /// interning then take longer than deciding, so a second replay thread
    /// would add the cost of splitting the rows and save no time. The
    /// report is the same for any number of threads.
    pub fn spread(&mut self, threads: usize) -> Result<()> {
        let n = threads.min(u32::MAX as usize) as u32;
        let single = self.local.runs.len() < 2;
        if n < 2 || single || self.decisions.is_some() || self.compare.is_some() {
            return Ok(());
        }
        let runs = std::mem::take(&mut self.local.runs);
        let mut lanes: Vec<Vec<Run>> = (0..n).map(|_| Vec::new()).collect();
        // Whole runs go to the thread with the fewest so far, the others
        // before this one (it also re-sorts the rows and counts keys).
        let mut whole = vec![0usize; n as usize];
        whole[0] = 1;
        for run in runs {
            if run.split.is_some() {
                let waits = Arc::new(AtomicU64::new(0));
                for lane in lanes.iter_mut().skip(1) {
                    let mut part = run.fresh().expect("a split run has a spec");
                    part.tally.shared_waits = Some((waits.clone(), 0));
                    lane.push(part);
                }
                let mut run = run;
                run.tally.shared_waits = Some((waits, 0));
                lanes[0].push(run);
            } else {
                let to = if run.reads_names() {
                    0
                } else {
                    (0..n as usize)
                        .rev()
                        .min_by_key(|&i| whole[i])
                        .expect("two or more lanes")
                };
                whole[to] += 1;
                lanes[to].push(run);
            }
        }
        let (timeline, auto) = (self.local.timeline, self.local.auto);
        let mut lanes = lanes
            .into_iter()
            .enumerate()
            .map(|(i, runs)| Lane::new(runs, Some(Share::new(i as u32, n)), timeline, auto));
        self.local = lanes.next().expect("two or more lanes");
        for lane in lanes {
            self.workers.push(Worker::start(lane)?);
        }
        Ok(())
    }

    /// Turns a batch's key values into ids unless the reader did, and
    /// learns the values first seen in it.
    pub fn intern(&mut self, batch: &mut crate::ingest::input::Batch) {
        if !batch.interned {
            batch.intern(&mut self.interners, &mut self.names.spill);
        }
        for &(c, start, end) in &batch.new_keys {
            self.names[c as usize].push(&batch.key_bytes[start as usize..end as usize]);
            self.requests_by_key[c as usize].push(0);
        }
    }

    /// Learns the value of the next key id of `column`, for a driver that
    /// numbered the keys itself (ids in order of first appearance).
    pub fn learn_key(&mut self, column: usize, value: &[u8]) {
        self.names[column].push(value);
        self.requests_by_key[column].push(0);
    }

    /// A copy of `events` for the other replay threads, in a chunk they
    /// have all finished with (they only ever drop their references), or
    /// in a new one while every chunk is still in use.
    pub(super) fn hand_over(&mut self, events: &[Event]) -> Arc<Vec<Event>> {
        let free = self.handed.iter().position(|c| Arc::strong_count(c) == 1);
        let mut chunk = match free {
            Some(i) => self.handed.swap_remove(i),
            None => Arc::new(Vec::with_capacity(events.len())),
        };
        match Arc::get_mut(&mut chunk) {
            Some(rows) => {
                rows.clear();
                rows.extend_from_slice(events);
            }
            None => chunk = Arc::new(events.to_vec()),
        }
        self.handed.push(chunk.clone());
        chunk
    }

    /// Decides a chunk of requests, in time order, under every policy:
    /// the other replay threads get it first, then this one decides its
    /// runs; decisions are written row by row afterwards.
    pub fn decide_chunk(&mut self, events: &[Event]) -> Result<()> {
        let Some(first) = events.first() else {
            return Ok(());
        };
        let span = (first.at, events.last().map_or(first.at, |e| e.at));
        if !self.workers.is_empty() {
            let whole = self
                .workers
                .iter()
                .any(|w| w.whole)
                .then(|| self.hand_over(events));
            let mut parts: Vec<Part> = self.workers.iter().map(Worker::part).collect();
            let share = self.local.share.expect("a spread lane has its share");
            for (i, (c, rows)) in self.local.mine.iter_mut().enumerate() {
                let mut lanes: Vec<&mut Vec<Event>> = std::iter::once(rows)
                    .chain(parts.iter_mut().map(|p| &mut p.mine[i].1))
                    .collect();
                share.deal(events, *c, &mut lanes);
            }
            for (i, mut part) in parts.into_iter().enumerate() {
                part.span = span;
                part.whole = whole.clone();
                if !self.workers[i].send(part) {
                    // That thread stopped on an error (a timeline past its
                    // cap): fail now, not after reading the rest of the log.
                    let w = self.workers.swap_remove(i);
                    return Err(w
                        .finish()
                        .err()
                        .unwrap_or_else(|| anyhow!("a replay thread stopped early")));
                }
            }
        }
        self.first.get_or_insert(first.at);
        self.last = events.last().map(|e| e.at);
        self.count_requests(events);
        let n = events.len();
        let mut outcomes = Vec::new();
        if self.decisions.is_some() || self.compare.is_some() {
            outcomes.resize(
                n * self.local.runs.len(),
                Decision::Admit {
                    release: Nanos::ZERO,
                },
            );
        }
        let out = (!outcomes.is_empty()).then_some(outcomes.as_mut_slice());
        self.local.decide_chunk(span, events, &self.names, out)?;
        if let Some(c) = &mut self.compare {
            c.record(events, &outcomes);
        }
        if self.decisions.is_some() {
            self.write_decisions(events, &outcomes)?;
        }
        Ok(())
    }

    /// Counts each row for its key, per key column.
    pub(super) fn count_requests(&mut self, events: &[Event]) {
        for (i, ev) in events.iter().enumerate() {
            let ahead = events.get(i + PREFETCH_FAR).map(|a| &a.keys);
            for (c, (reqs, &id)) in self.requests_by_key.iter_mut().zip(&ev.keys).enumerate() {
                if let Some(n) = ahead.and_then(|keys| reqs.get(keys[c] as usize)) {
                    crate::policy::keyed::prefetch_line(n);
                }
                if let Some(n) = reqs.get_mut(id as usize) {
                    *n += 1;
                }
            }
        }
    }

    /// Writes the decisions of a chunk, row by row, each row's runs in
    /// report order (`outcomes`: run after run).
    pub(super) fn write_decisions(
        &mut self,
        events: &[Event],
        outcomes: &[Decision],
    ) -> Result<()> {
        let n = events.len();
        let Some(sink) = self.decisions.as_mut() else {
            return Ok(());
        };
        for (i, ev) in events.iter().enumerate() {
            for (ri, run) in self.local.runs.iter().enumerate() {
                sink.take(&Decided {
                    row: ev.row,
                    at: ev.at,
                    policy: &run.label,
                    key: key_bytes(&self.names, run.tally.report_slot, ev),
                    cost: ev.cost,
                    decision: outcomes[ri * n + i],
                })?;
            }
        }
        Ok(())
    }

    /// Waits for the other replay threads and merges what each counted
    /// into one run per policy, in report order: counts add up, peaks and
    /// levels keep their maximum, waits merge, and drops by key (each key
    /// on one thread) are put back under their own ids.
    pub(super) fn gather(&mut self) -> Result<Vec<Run>> {
        let mut lanes = vec![std::mem::replace(
            &mut self.local,
            Lane::new(Vec::new(), None, None, false),
        )];
        for w in std::mem::take(&mut self.workers) {
            lanes.push(w.finish()?);
        }
        let timeline = lanes[0].timeline;
        self.local.timeline = timeline;
        let mut runs: Vec<Run> = Vec::new();
        for lane in lanes {
            for mut run in lane.runs {
                let at = runs.iter().position(|r| r.order == run.order);
                if let (Some(share), Some(_)) = (lane.share, run.split) {
                    // Straight into the merged run's table: no table of
                    // every key per thread.
                    let (mut drops, mut waits) = (Vec::new(), Vec::new());
                    let (d, w) = match at {
                        Some(i) => {
                            let t = &mut runs[i].tally;
                            (&mut t.drops_by_key, &mut t.waits_by_key)
                        }
                        None => (&mut drops, &mut waits),
                    };
                    run.tally.by_key_into(&share, d, w);
                    if at.is_none() {
                        run.tally.drops_by_key = drops;
                        run.tally.waits_by_key = waits;
                    }
                }
                match at {
                    Some(i) => runs[i].tally.merge(run.tally),
                    None => runs.push(run),
                }
            }
        }
        runs.sort_by_key(|r| r.order);
        Ok(runs)
    }

    /// Flushes the decisions file and builds the per-policy reports and
    /// timeline rows.
    pub fn finish(self) -> Result<(Vec<PolicyReport>, Option<TimelineRows>)> {
        let (outcome, timeline) = self.finish_outcome()?;
        Ok((outcome.reports(), timeline))
    }

    /// Flushes the decisions file and gathers what every run found, before
    /// it is reduced to reports (see [`Outcome::merge`]), with the timeline
    /// rows.
    pub fn finish_outcome(mut self) -> Result<(Outcome, Option<TimelineRows>)> {
        if let Some(mut sink) = self.decisions.take() {
            sink.finish()?;
        }
        let runs = self.gather()?;
        let mut outcomes = Vec::new();
        let mut rows = Vec::new();
        let nbins = runs.iter().map(|r| r.tally.bins.len()).max().unwrap_or(0);
        for mut run in runs {
            if let Some((interval, t0)) = self.local.timeline {
                for i in 0..nbins {
                    let b = run.tally.bins.get(i).copied().unwrap_or_default();
                    rows.push((
                        i,
                        TimelineRow {
                            start_ns: t0 + i as u64 * interval.0,
                            policy: run.label.clone(),
                            arrived: b.arrived,
                            sent: b.sent,
                            dropped: b.dropped,
                            level: b.level,
                        },
                    ));
                }
            }
            outcomes.push(self.run_outcome(&mut run));
        }
        // Interval by interval, policies in the order given.
        rows.sort_by_key(|(i, _)| *i);
        let timeline = self
            .local
            .timeline
            .map(|(i, _)| (i, rows.into_iter().map(|(_, r)| r).collect()));
        let outcome = Outcome {
            runs: outcomes,
            top: self.top,
            timeline: timeline.is_some(),
        };
        Ok((outcome, timeline))
    }

    /// What `run` found: its counts, waits and the keys it hurt most.
    fn run_outcome(&self, run: &mut Run) -> RunOutcome {
        let shapes = run.exec.shapes();
        let (section, limited) = match &mut run.exec {
            Exec::Conf(c) => (Some(c.section()), Some(c.take_limited_by_key())),
            Exec::Replicas(r) => match r.section() {
                Some((s, l)) => (Some(s), Some(l)),
                None => (None, None),
            },
            _ => (None, None),
        };
        let (mut nginx, mut haproxy, mut traefik) = (None, None, None);
        match section {
            Some((Gateway::Nginx, s)) => nginx = Some(s),
            Some((Gateway::Haproxy, s)) => haproxy = Some(s),
            Some((Gateway::Traefik, s)) => traefik = Some(s),
            None => {}
        }
        let keys = run.tally.report_slot.map(|c| Keys {
            names: &self.names[c],
            requests: &self.requests_by_key[c],
            limited: limited.as_deref(),
        });
        let top_keys = keys.as_ref().map_or(Vec::new(), |k| {
            top_drops(k, &run.tally.drops_by_key, self.top)
        });
        let top_waits = shapes.then(|| {
            keys.as_ref().map_or(Vec::new(), |k| {
                top_waits(k, &run.tally.waits_by_key, self.top)
            })
        });
        let counted = run.tally.counts;
        let counts = match run.tally.report_slot {
            Some(c) => Counts {
                keys_seen: self.names[c].len() as u64,
                keys_with_drops: run.tally.drops_by_key.iter().filter(|d| **d > 0).count() as u64,
                ..counted
            },
            None => Counts {
                keys_seen: u64::from(counted.requests > 0),
                keys_with_drops: u64::from(counted.dropped > 0),
                ..counted
            },
        };
        let report = PolicyReport {
            shapes,
            peak: run.tally.peak,
            peak_kind: run.exec.level_kind().as_str(),
            bound: Some(run.exec.max_level()).filter(|&b| b != u64::MAX),
            nginx,
            haproxy,
            traefik,
            replicas: match &run.exec {
                Exec::Replicas(r) => Some(r.report(run.tally.report_slot.map(|c| &self.names[c]))),
                _ => None,
            },
            ..counts.report(run.label.clone(), run.spec.clone())
        };
        RunOutcome {
            report,
            waits: std::mem::take(&mut run.tally.waits),
            top_keys,
            top_waits,
        }
    }
}

/// One decision of a replay, as a [`DecisionSink`] sees it.
#[derive(Clone, Copy, Debug)]
pub struct Decided<'a> {
    /// The row's 1-based number in input order (headers not counted).
    pub row: u64,
    /// The row's time: the `now` the policy decided at.
    pub at: Nanos,
    /// The run's label (a policy spec, a stack, an nginx.conf's name).
    pub policy: &'a str,
    /// The key the run reports by, its bytes as read (empty: none).
    pub key: &'a [u8],
    /// The row's cost.
    pub cost: u32,
    /// What the run decided: admitted (with the time it goes on) or refused.
    pub decision: Decision,
}

/// Where a replay hands every decision, row by row and, within a row, run
/// by run in report order. The replay decides the same with or without
/// one; with one, the runs stay on one thread so the order holds.
pub trait DecisionSink: Send {
    /// Takes one decision; an error stops the replay.
    fn take(&mut self, decided: &Decided<'_>) -> Result<()>;
    /// Every row is decided.
    fn finish(&mut self) -> Result<()>;
}

/// The timeline interval and its rows.
pub type TimelineRows = (Nanos, Vec<TimelineRow>);

/// The key a run reports by, for the decisions file: its bytes as read
/// (the CSV writer quotes them), so rows can be matched to the log exactly.
pub(super) fn key_bytes<'a>(names: &'a [KeyNames], slot: Option<usize>, ev: &Event) -> &'a [u8] {
    match slot {
        Some(c) if ev.keys[c] != EMPTY_KEY => names[c].get(ev.keys[c]),
        _ => b"",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::input::MAX_KEYS;
    use crate::policy::parse_spec;

    /// Sorted arrival times over about `span` seconds, in bursts.
    fn arrivals(n: u64, span: u64) -> Vec<Event> {
        let mut rng = crate::testing::Rng(0x2545_f491_4f6c_dd1d);
        let mut times: Vec<u64> = (0..n)
            .map(|_| {
                let x = rng.next();
                // Crowd half the rows into the first tenth of the span.
                let t = x % (span * 1_000_000_000);
                if x.is_multiple_of(2) { t / 10 } else { t }
            })
            .collect();
        times.sort_unstable();
        times
            .into_iter()
            .enumerate()
            .map(|(i, t)| Event {
                at: Nanos(1_700_000_000_123_456_789 + t),
                row: i as u64 + 1,
                line: i as u64 + 2,
                file: 0,
                cost: 1,
                keys: [EMPTY_KEY; MAX_KEYS],
            })
            .collect()
    }

    fn replay(timeline: Option<Nanos>, auto: bool, events: &[Event]) -> TimelineRows {
        let runs = ["shaper:rate=5/s,burst=30", "gcra:rate=2/s,burst=5"]
            .iter()
            .enumerate()
            .map(|(i, t)| Run::new(&parse_spec(t).unwrap(), vec![Slot::Global], i))
            .collect();
        let mut r = Replay::new(runs, 0, None, timeline, 10).unwrap();
        if auto {
            r.auto_timeline();
        }
        for chunk in events.chunks(4096) {
            r.decide_chunk(chunk).unwrap();
        }
        r.finish().unwrap().1.unwrap()
    }

    #[test]
    fn an_automatic_timeline_equals_a_fixed_one_at_its_interval() {
        // 5000 s of arrivals: past 20,000 intervals at 100 ms, so 1 s.
        let events = arrivals(40_000, 5000);
        let (interval, auto) = replay(None, true, &events);
        assert_eq!(interval, Nanos::from_secs(1));
        let (_, fixed) = replay(Some(Nanos::from_secs(1)), false, &events);
        let key = |r: &TimelineRow| {
            (
                r.start_ns,
                r.policy.clone(),
                r.arrived,
                r.sent,
                r.dropped,
                r.level,
            )
        };
        assert_eq!(
            auto.iter().map(key).collect::<Vec<_>>(),
            fixed.iter().map(key).collect::<Vec<_>>()
        );
        assert_eq!(auto.iter().map(|r| r.arrived).sum::<u64>(), 2 * 40_000);
    }

    #[test]
    fn a_share_splits_ids_as_division_does() {
        let mut rng = crate::testing::Rng(0x2545_f491_4f6c_dd1d);
        for n in 2..=67u32 {
            for lane in [0, n - 1] {
                let share = Share::new(lane, n);
                let edges = [0, 1, n - 1, n, n + 1, u32::MAX - 1, u32::MAX];
                let random = (0..2000).map(|_| rng.next() as u32);
                for id in edges.into_iter().chain(random) {
                    assert_eq!(share.split(id), (id / n, id % n), "{id} / {n}");
                    if id % n == lane {
                        assert_eq!(share.global((id / n) as usize), id as usize);
                    }
                }
            }
        }
    }

    #[test]
    fn a_short_log_keeps_milliseconds() {
        let events = arrivals(500, 3);
        let (interval, rows) = replay(None, true, &events);
        assert_eq!(interval, Nanos::from_millis(1));
        assert_eq!(rows.iter().map(|r| r.arrived).sum::<u64>(), 2 * 500);
    }
}
