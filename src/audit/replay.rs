//! The replay: every row through every policy, in time order, in one pass,
//! collecting what the report needs. Per-key tables are vectors indexed by
//! key id; policies hold only the keys active within their horizon.

use super::exec::Exec;
use super::input::{Event, MAX_KEYS};
use super::keys::{EMPTY_KEY, Interner, KeyNames};
use crate::policy::keyed::{KeyId, Levels, Limiter, Store};
use crate::policy::{Decision, Listed, Spec};
use crate::report::{KeyRow, PolicyReport, TimelineRow, Waits};
use crate::time::{Nanos, fmt_millis};
use anyhow::{Result, bail};
use hdrhistogram::Histogram;
use std::io::Write;

/// Where a member takes its key from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// One bucket for everything.
    Global,
    /// The event's key id in this key column.
    Column(usize),
}

impl Slot {
    /// The member's key for `ev`; `None` when its value is empty (exempt).
    #[inline]
    fn key(self, ev: &Event) -> Option<KeyId> {
        match self {
            Slot::Global => Some(0),
            Slot::Column(c) => {
                let id = ev.keys[c];
                (id != EMPTY_KEY).then_some(KeyId::from(id))
            }
        }
    }
}

/// Waits of admitted requests: exact while there are at most `EXACT_CAP`
/// non-zero waits, then an HDR histogram (3 significant digits).
struct WaitStats {
    zeros: u64,
    exact: Vec<u64>,
    hist: Option<Histogram<u64>>,
    max: u64,
}

const EXACT_CAP: usize = 1 << 20;

impl WaitStats {
    fn new() -> WaitStats {
        WaitStats {
            zeros: 0,
            exact: Vec::new(),
            hist: None,
            max: 0,
        }
    }

    #[inline]
    fn record(&mut self, ns: u64) {
        self.max = self.max.max(ns);
        if ns == 0 {
            self.zeros += 1;
        } else if let Some(h) = &mut self.hist {
            h.saturating_record(ns);
        } else {
            self.exact.push(ns);
            if self.exact.len() > EXACT_CAP {
                let mut h = Histogram::new(3).expect("3 significant digits is valid");
                for &v in &self.exact {
                    h.saturating_record(v);
                }
                self.exact = Vec::new();
                self.hist = Some(h);
            }
        }
    }

    /// Nearest-rank percentiles over all admitted requests.
    fn summary(mut self) -> Waits {
        let n = self.zeros + self.exact.len() as u64 + self.hist.as_ref().map_or(0, |h| h.len());
        self.exact.sort_unstable();
        let at = |q: u64| -> u64 {
            if n == 0 {
                return 0;
            }
            let rank = (q * n).div_ceil(100).max(1); // 1-based
            if rank <= self.zeros {
                return 0;
            }
            let i = rank - self.zeros;
            match &self.hist {
                Some(h) => h.value_at_quantile(i as f64 / h.len() as f64).min(self.max),
                None => self.exact[i as usize - 1],
            }
        };
        Waits {
            p50_ns: at(50),
            p95_ns: at(95),
            p99_ns: at(99),
            max_ns: self.max,
        }
    }
}

/// Per-interval counts of one policy.
#[derive(Clone, Copy, Default)]
struct Bin {
    arrived: u64,
    sent: u64,
    dropped: u64,
    level: u64,
}

/// Most timeline intervals kept per policy.
const MAX_BINS: usize = 1_000_000;

/// The intervals an automatic timeline steps through as the log's span
/// grows, each a whole multiple of the one before, so coarsening merges
/// whole intervals and never splits one.
const AUTO_STEPS: [u64; 12] = [
    1_000_000,              // 1 ms
    10_000_000,             // 10 ms
    100_000_000,            // 100 ms
    1_000_000_000,          // 1 s
    10_000_000_000,         // 10 s
    60_000_000_000,         // 1 min
    600_000_000_000,        // 10 min
    3_600_000_000_000,      // 1 h
    86_400_000_000_000,     // 1 day
    864_000_000_000_000,    // 10 days
    8_640_000_000_000_000,  // 100 days
    17_280_000_000_000_000, // 200 days
];

/// Most intervals an automatic timeline's arrivals span before it moves
/// to the next step: fine enough for any later choice of a few hundred.
const AUTO_BINS: u64 = 20_000;

/// One policy (or stack) being replayed.
pub struct Run {
    pub order: usize,
    pub label: String,
    pub spec: String,
    exec: Exec,
    slots: Vec<Slot>,
    keys: Vec<Option<KeyId>>,
    tally: Tally,
}

/// What one run has counted.
pub struct Tally {
    /// The highest level the policy can reach: once `peak` is there, no
    /// level needs computing (without a timeline).
    peak_cap: u64,
    report_slot: Option<usize>,
    requests: u64,
    admitted: u64,
    delayed: u64,
    dropped: u64,
    waits: WaitStats,
    peak: u64,
    /// Drops per key id of the report column (saturating).
    drops_by_key: Vec<u32>,
    bins: Vec<Bin>,
}

impl Tally {
    /// Which levels the next decision should compute.
    #[inline]
    fn levels(&self, timeline: bool) -> Levels {
        if timeline {
            Levels::All
        } else if self.peak < self.peak_cap {
            Levels::Rises
        } else {
            Levels::None
        }
    }

    /// Merges the bins, kept every `from.0` from `from.1`, into bins every
    /// `to.0` from `to.1` (a whole multiple, starting at or before): counts
    /// add up, levels keep their peak.
    fn coarsen(&mut self, from: (Nanos, u64), to: (Nanos, u64)) {
        let mut merged: Vec<Bin> = Vec::new();
        for (j, b) in self.bins.iter().enumerate() {
            let start = from.1 + j as u64 * from.0.0;
            let i = ((start - to.1) / to.0.0) as usize;
            if merged.len() <= i {
                merged.resize(i + 1, Bin::default());
            }
            let m = &mut merged[i];
            m.arrived += b.arrived;
            m.sent += b.sent;
            m.dropped += b.dropped;
            m.level = m.level.max(b.level);
        }
        self.bins = merged;
    }

    /// Counts one decision (`level`: the level just after it, or 0).
    #[inline]
    fn record(
        &mut self,
        ev: &Event,
        d: Decision,
        level: u64,
        timeline: Option<(Nanos, u64)>,
    ) -> Result<()> {
        let now = ev.at;
        self.requests += 1;
        self.peak = self.peak.max(level);
        match d {
            Decision::Admit { release } => {
                self.admitted += 1;
                let wait = release.0 - now.0;
                self.delayed += u64::from(wait > 0);
                self.waits.record(wait);
            }
            Decision::Refuse { .. } => {
                self.dropped += 1;
                if let Some(c) = self.report_slot {
                    let id = ev.keys[c];
                    if id != EMPTY_KEY {
                        let i = id as usize;
                        if i >= self.drops_by_key.len() {
                            self.drops_by_key.resize(i + 1, 0);
                        }
                        self.drops_by_key[i] = self.drops_by_key[i].saturating_add(1);
                    }
                }
            }
        }
        if let Some((interval, t0)) = timeline {
            let bin = |t: Nanos| ((t.0 - t0) / interval.0) as usize;
            let (here, sent_at) = match d {
                Decision::Admit { release } => (bin(now), Some(bin(release))),
                Decision::Refuse { .. } => (bin(now), None),
            };
            let need = here.max(sent_at.unwrap_or(0)) + 1;
            if need > MAX_BINS {
                bail!(
                    "the timeline would have more than {MAX_BINS} intervals; choose a longer --timeline"
                );
            }
            if self.bins.len() < need {
                self.bins.resize(need, Bin::default());
            }
            let b = &mut self.bins[here];
            b.arrived += 1;
            b.level = b.level.max(level);
            match sent_at {
                Some(s) => self.bins[s].sent += 1,
                None => b.dropped += 1,
            }
        }
        Ok(())
    }
}

/// How far ahead of the row being decided its successors' states are
/// fetched: the state slot at `FAR`, what it points to at `NEAR`.
const PREFETCH_FAR: usize = 8;
const PREFETCH_NEAR: usize = 3;

impl Run {
    /// Decides `events` (in time order) under this run, counting each
    /// decision and, when `out` is given, keeping it there by position.
    fn decide_chunk(
        &mut self,
        events: &[Event],
        names: &[KeyNames],
        timeline: Option<(Nanos, u64)>,
        mut out: Option<&mut [Decision]>,
    ) -> Result<()> {
        let Run {
            exec,
            slots,
            keys,
            tally,
            ..
        } = self;
        let on = timeline.is_some();
        match exec {
            // One policy: the loop is compiled per policy type.
            Exec::One(one) => one.decide_chunk(events, slots[0], tally, timeline, out)?,
            Exec::Stack(stack) => {
                for (i, ev) in events.iter().enumerate() {
                    for (k, s) in keys.iter_mut().zip(slots.iter()) {
                        *k = s.key(ev);
                    }
                    let (d, level) =
                        stack.decide_level(keys, ev.at, u64::from(ev.cost), tally.levels(on));
                    tally.record(ev, d, level, timeline)?;
                    if let Some(out) = out.as_deref_mut() {
                        out[i] = d;
                    }
                }
            }
            // Routed per row: the row's location chooses the limits.
            Exec::Conf(conf) => {
                for (i, ev) in events.iter().enumerate() {
                    let levels = !matches!(tally.levels(on), Levels::None);
                    let (d, level) = conf.decide(ev, names, levels)?;
                    tally.record(ev, d, level, timeline)?;
                    if let Some(out) = out.as_deref_mut() {
                        out[i] = d;
                    }
                }
            }
        }
        Ok(())
    }
}

/// A single policy's replay loop over a chunk, compiled per policy type
/// (implemented by the store of each), chosen once per chunk.
pub trait OneLoop: Limiter {
    /// Decides `events` under the policy, keyed by `slot`, counting each
    /// decision and, when `out` is given, keeping it there by position.
    fn decide_chunk(
        &mut self,
        events: &[Event],
        slot: Slot,
        tally: &mut Tally,
        timeline: Option<(Nanos, u64)>,
        out: Option<&mut [Decision]>,
    ) -> Result<()>;
}

impl<P: Listed> OneLoop for Store<P> {
    fn decide_chunk(
        &mut self,
        events: &[Event],
        slot: Slot,
        tally: &mut Tally,
        timeline: Option<(Nanos, u64)>,
        mut out: Option<&mut [Decision]>,
    ) -> Result<()> {
        let on = timeline.is_some();
        for (i, ev) in events.iter().enumerate() {
            if let Some(k) = events.get(i + PREFETCH_FAR).and_then(|e| slot.key(e)) {
                self.prefetch(k, false);
            }
            if let Some(k) = events.get(i + PREFETCH_NEAR).and_then(|e| slot.key(e)) {
                self.prefetch(k, true);
            }
            let (d, level) = match slot.key(ev) {
                Some(k) => self.decide_level(k, ev.at, u64::from(ev.cost), tally.levels(on)),
                None => (Decision::Admit { release: ev.at }, 0),
            };
            tally.record(ev, d, level, timeline)?;
            if let Some(out) = out.as_deref_mut() {
                out[i] = d;
            }
        }
        Ok(())
    }
}

impl Run {
    /// `slots[i]`: where member i of `spec` takes its key from; `order`:
    /// the run's place in the report.
    pub fn new(spec: &Spec, slots: Vec<Slot>, order: usize) -> Run {
        let report_slot = slots.iter().find_map(|s| match s {
            Slot::Column(c) => Some(*c),
            Slot::Global => None,
        });
        Run::with_exec(
            Exec::new(spec),
            spec.label.clone(),
            spec.text.clone(),
            slots,
            report_slot,
            order,
        )
    }

    /// An nginx.conf run: it keys and routes rows itself.
    pub fn nginx(conf: super::nginx::ConfExec, label: String, spec: String, order: usize) -> Run {
        let report_slot = conf.report_slot();
        Run::with_exec(
            Exec::Conf(Box::new(conf)),
            label,
            spec,
            Vec::new(),
            report_slot,
            order,
        )
    }

    /// True for runs that need the key values (not only ids) of each row.
    pub fn reads_names(&self) -> bool {
        matches!(self.exec, Exec::Conf(_))
    }

    fn with_exec(
        exec: Exec,
        label: String,
        spec: String,
        slots: Vec<Slot>,
        report_slot: Option<usize>,
        order: usize,
    ) -> Run {
        let peak_cap = exec.max_level();
        Run {
            order,
            label,
            spec,
            exec,
            keys: vec![None; slots.len()],
            slots,
            tally: Tally {
                peak_cap,
                report_slot,
                requests: 0,
                admitted: 0,
                delayed: 0,
                dropped: 0,
                waits: WaitStats::new(),
                peak: 0,
                drops_by_key: Vec::new(),
                bins: Vec::new(),
            },
        }
    }
}

/// The whole replay state.
pub struct Replay {
    pub runs: Vec<Run>,
    /// Key values per key column, by id.
    names: Vec<KeyNames>,
    interners: Vec<Interner>,
    /// Requests per key, per key column.
    requests_by_key: Vec<Vec<u64>>,
    decisions: Option<csv::Writer<Box<dyn Write + Send>>>,
    /// The decisions file as given, for messages.
    decisions_name: String,
    timeline: Option<(Nanos, u64)>,
    /// The timeline's interval follows the log's span (see `auto_timeline`).
    auto: bool,
    pub first: Option<Nanos>,
    pub last: Option<Nanos>,
    top: usize,
    /// `--compare`: every run against the first, row by row.
    compare: Option<super::compare::Compare>,
}

impl Replay {
    pub fn new(
        runs: Vec<Run>,
        key_columns: usize,
        decisions: Option<(Box<dyn Write + Send>, String)>,
        timeline: Option<Nanos>,
        top: usize,
    ) -> Result<Replay> {
        let (decisions, decisions_name) = match decisions {
            Some((w, name)) => {
                let mut w = csv::Writer::from_writer(w);
                let header = w.write_record([
                    "row",
                    "policy",
                    "key",
                    "cost",
                    "admit",
                    "wait_ms",
                    "retry_after_ms",
                ]);
                let mut w = Some(w);
                written(header, &mut w, &name)?;
                (w, name)
            }
            None => (None, String::new()),
        };
        assert!(key_columns <= MAX_KEYS);
        Ok(Replay {
            runs,
            names: (0..key_columns).map(|_| KeyNames::default()).collect(),
            interners: (0..key_columns).map(|_| Interner::default()).collect(),
            requests_by_key: vec![Vec::new(); key_columns],
            decisions,
            decisions_name,
            timeline: timeline.map(|i| (i, 0)),
            auto: false,
            first: None,
            last: None,
            top,
            compare: None,
        })
    }

    /// Compares every run with the first, row by row, keys by the first
    /// run's key column (or the first keyed run's). Needs every run here.
    pub fn compare(&mut self) {
        let slot = self.runs.iter().find_map(|r| r.tally.report_slot);
        self.compare = Some(super::compare::Compare::new(slot, self.runs.len()));
    }

    /// The comparison, once every row is decided.
    pub fn compare_report(&self) -> Vec<crate::report::CompareReport> {
        let labels: Vec<String> = self.runs.iter().map(|r| r.label.clone()).collect();
        self.compare.as_ref().map_or(Vec::new(), |c| {
            c.report(&labels, &self.names, &self.requests_by_key, self.top)
        })
    }

    /// Keeps a timeline whose interval follows the log's span: it starts at
    /// 1 ms and, whenever the arrivals span more than `AUTO_BINS`
    /// intervals, moves to the next of `AUTO_STEPS`, merging what it has.
    /// Replays fed the same chunks step alike. Replaces a fixed timeline.
    pub fn auto_timeline(&mut self) {
        self.timeline = Some((Nanos(AUTO_STEPS[0]), 0));
        self.auto = true;
    }

    /// Moves an automatic timeline to a coarser step until `last` falls
    /// within `AUTO_BINS` intervals of its start.
    fn widen_timeline(&mut self, last: Nanos) {
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

    /// Turns a batch's key values into ids unless the reader did, and
    /// learns the values first seen in it.
    pub fn intern(&mut self, batch: &mut super::input::Batch) {
        if !batch.interned {
            batch.intern(&mut self.interners);
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

    /// Decides a chunk of requests, in time order, under every policy:
    /// run by run over the chunk, so each run's loop is tight; decisions
    /// are written row by row afterwards.
    pub fn decide_chunk(&mut self, events: &[Event]) -> Result<()> {
        let Some(first) = events.first() else {
            return Ok(());
        };
        if self.first.is_none() {
            self.first = Some(first.at);
            if let Some((i, t0)) = &mut self.timeline {
                *t0 = first.at.0 - first.at.0 % i.0;
            }
        }
        self.last = events.last().map(|e| e.at);
        if self.auto
            && let Some(last) = self.last
        {
            self.widen_timeline(last);
        }
        for (i, ev) in events.iter().enumerate() {
            for (c, reqs) in self.requests_by_key.iter_mut().enumerate() {
                if let Some(n) = events
                    .get(i + PREFETCH_FAR)
                    .and_then(|ahead| reqs.get(ahead.keys[c] as usize))
                {
                    crate::policy::keyed::prefetch_line(n);
                }
                if let Some(n) = reqs.get_mut(ev.keys[c] as usize) {
                    *n += 1;
                }
            }
        }
        let n = events.len();
        let mut outcomes = Vec::new();
        if self.decisions.is_some() || self.compare.is_some() {
            outcomes.resize(
                n * self.runs.len(),
                Decision::Admit {
                    release: Nanos::ZERO,
                },
            );
        }
        for (ri, run) in self.runs.iter_mut().enumerate() {
            let out = (!outcomes.is_empty()).then(|| &mut outcomes[ri * n..(ri + 1) * n]);
            run.decide_chunk(events, &self.names, self.timeline, out)?;
        }
        if let Some(c) = &mut self.compare {
            c.record(events, &outcomes);
        }
        if let Some(w) = self.decisions.as_mut() {
            for (i, ev) in events.iter().enumerate() {
                let now = ev.at;
                for (ri, run) in self.runs.iter().enumerate() {
                    let key = key_bytes(&self.names, run.tally.report_slot, ev);
                    let (admit, wait, retry) = match outcomes[ri * n + i] {
                        Decision::Admit { release } => {
                            ("1", fmt_millis(release.saturating_sub(now)), String::new())
                        }
                        Decision::Refuse { retry_at } => (
                            "0",
                            String::new(),
                            retry_at.map_or(String::new(), |t| fmt_millis(t.saturating_sub(now))),
                        ),
                    };
                    let r = w.write_record([
                        ev.row.to_string().as_bytes(),
                        run.label.as_bytes(),
                        key,
                        ev.cost.to_string().as_bytes(),
                        admit.as_bytes(),
                        wait.as_bytes(),
                        retry.as_bytes(),
                    ]);
                    if r.is_err() {
                        return written(r, &mut self.decisions, &self.decisions_name);
                    }
                }
            }
        }
        Ok(())
    }

    /// Splits off every second run (the 2nd, 4th, ...), to be decided on
    /// another thread by a replay of their own: alternate runs spread the
    /// costly policies over both.
    pub fn split_off(&mut self) -> Vec<Run> {
        let (mine, theirs): (Vec<_>, Vec<_>) = std::mem::take(&mut self.runs)
            .into_iter()
            .enumerate()
            .partition(|(i, _)| i % 2 == 0);
        self.runs = mine.into_iter().map(|(_, r)| r).collect();
        theirs.into_iter().map(|(_, r)| r).collect()
    }

    /// Takes back the runs `split_off` gave away, in their first order.
    pub fn rejoin(&mut self, theirs: Vec<Run>) {
        self.runs.extend(theirs);
        self.runs.sort_by_key(|r| r.order);
    }

    /// The runs, once every event is decided.
    pub fn into_runs(self) -> Vec<Run> {
        self.runs
    }

    /// Flushes the decisions file and builds the per-policy reports and
    /// timeline rows.
    pub fn finish(mut self) -> Result<(Vec<PolicyReport>, Option<TimelineRows>)> {
        if let Some(w) = self.decisions.as_mut() {
            let r = w.flush().map_err(csv::Error::from);
            written(r, &mut self.decisions, &self.decisions_name)?;
        }
        self.decisions = None;
        let mut reports = Vec::new();
        let mut rows = Vec::new();
        let nbins = self
            .runs
            .iter()
            .map(|r| r.tally.bins.len())
            .max()
            .unwrap_or(0);
        for mut run in std::mem::take(&mut self.runs) {
            let shapes = run.exec.shapes();
            let nginx = match &mut run.exec {
                Exec::Conf(c) => Some(c.report()),
                _ => None,
            };
            let keys_seen = match run.tally.report_slot {
                Some(c) => self.names[c].len() as u64,
                None => u64::from(run.tally.requests > 0),
            };
            let mut top: Vec<(u32, u64)> = run
                .tally
                .drops_by_key
                .iter()
                .enumerate()
                .filter(|(_, d)| **d > 0)
                .map(|(k, d)| (k as u32, u64::from(*d)))
                .collect();
            let names = run.tally.report_slot.map(|c| &self.names[c]);
            top.sort_unstable_by(|a, b| {
                b.1.cmp(&a.1).then_with(|| match names {
                    Some(n) => n.get(a.0).cmp(n.get(b.0)),
                    None => a.0.cmp(&b.0),
                })
            });
            let top_keys = top
                .iter()
                .take(self.top)
                .map(|&(id, dropped)| {
                    let c = run
                        .tally
                        .report_slot
                        .expect("drops by key need a key column");
                    let requests = self.requests_by_key[c][id as usize];
                    KeyRow {
                        key: crate::report::key_text(self.names[c].get(id)),
                        requests,
                        dropped,
                        drop_pct: percent(dropped, requests),
                    }
                })
                .collect();
            if let Some((interval, t0)) = self.timeline {
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
            reports.push(PolicyReport {
                label: run.label,
                spec: run.spec,
                requests: run.tally.requests,
                admitted: run.tally.admitted,
                delayed: run.tally.delayed,
                dropped: run.tally.dropped,
                drop_pct: percent(run.tally.dropped, run.tally.requests),
                shapes,
                wait: shapes.then(|| run.tally.waits.summary()),
                peak: run.tally.peak,
                peak_kind: run.exec.level_kind().as_str(),
                bound: Some(run.exec.max_level()).filter(|&b| b != u64::MAX),
                keys_seen,
                keys_with_drops: match run.tally.report_slot {
                    Some(_) => run.tally.drops_by_key.iter().filter(|d| **d > 0).count() as u64,
                    None => u64::from(run.tally.dropped > 0),
                },
                skipped_bad: 0,
                top_keys,
                nginx,
            });
        }
        // Interval by interval, policies in the order given.
        rows.sort_by_key(|(i, _)| *i);
        let timeline = self
            .timeline
            .map(|(i, _)| (i, rows.into_iter().map(|(_, r)| r).collect()));
        Ok((reports, timeline))
    }
}

/// The outcome of a write to the decisions file. A reader that stopped
/// reading (`--decisions - | head`) ends the file quietly and the replay
/// goes on, so thresholds are still checked; any other failure names the
/// file.
fn written(
    r: csv::Result<()>,
    w: &mut Option<csv::Writer<Box<dyn Write + Send>>>,
    name: &str,
) -> Result<()> {
    let Err(e) = r else { return Ok(()) };
    let text = e.to_string();
    match e.into_kind() {
        csv::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe => {
            // Dropping it tries its buffer once more, quietly.
            *w = None;
            Ok(())
        }
        csv::ErrorKind::Io(io) => {
            Err(anyhow::Error::new(io).context(format!("cannot write the decisions to {name}")))
        }
        _ => Err(anyhow::anyhow!(
            "cannot write the decisions to {name}: {text}"
        )),
    }
}

/// The timeline interval and its rows.
pub type TimelineRows = (Nanos, Vec<TimelineRow>);

/// The key a run reports by, for the decisions file: its bytes as read
/// (the CSV writer quotes them), so rows can be matched to the log exactly.
fn key_bytes<'a>(names: &'a [KeyNames], slot: Option<usize>, ev: &Event) -> &'a [u8] {
    match slot {
        Some(c) if ev.keys[c] != EMPTY_KEY => names[c].get(ev.keys[c]),
        _ => b"",
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::parse_spec;

    /// Sorted arrival times over about `span` seconds, in bursts.
    fn arrivals(n: u64, span: u64) -> Vec<Event> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut times: Vec<u64> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
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
    fn a_short_log_keeps_milliseconds() {
        let events = arrivals(500, 3);
        let (interval, rows) = replay(None, true, &events);
        assert_eq!(interval, Nanos::from_millis(1));
        assert_eq!(rows.iter().map(|r| r.arrived).sum::<u64>(), 2 * 500);
    }
}
