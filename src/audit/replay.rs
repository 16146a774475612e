//! The replay: every row through every policy, in time order, in one pass,
//! collecting what the report needs. Per-key tables are vectors indexed by
//! key id; policies hold only the keys active within their horizon.

use super::exec::Exec;
use super::input::{Event, MAX_KEYS};
use super::keys::{EMPTY_KEY, Interner, KeyNames};
use crate::policy::keyed::{Decides, KeyId, Levels, Limiter, Store};
use crate::policy::records::{Field, Records};
use crate::policy::table::Info;
use crate::policy::{Decision, Listed, Spec};
use crate::report::{KeyRow, PolicyReport, TimelineRow, Waits};
use crate::time::{Nanos, fmt_millis};
use crate::wait_stats::WaitStats;
use anyhow::{Context, Result, anyhow, bail};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

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
    /// The spec, to build a copy with empty state for another replay
    /// thread (none for an nginx.conf).
    source: Option<Spec>,
    /// The key column every member keys by, if there is one: the run is
    /// then independent per key of it, and can be split by key.
    split: Option<usize>,
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
    /// For a run split over threads: non-zero waits counted by all of
    /// them so far (each adds its own after every chunk), and how many of
    /// this one's are in. Past the exact cap the merged waits would be a
    /// histogram, so each part turns to one: memory stays that of one.
    shared_waits: Option<(Arc<AtomicU64>, u64)>,
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

    /// Adds this part's new non-zero waits to the count shared with the
    /// other parts of a split run, and turns to a histogram once the
    /// whole is past the exact cap.
    fn share_waits(&mut self) {
        let Some((total, counted)) = &mut self.shared_waits else {
            return;
        };
        let mine = self.waits.nonzero();
        let new = mine - *counted;
        *counted = mine;
        let all = total.fetch_add(new, Ordering::Relaxed) + new;
        if all > crate::wait_stats::EXACT_CAP as u64 {
            self.waits.spill();
        }
    }

    /// Adds what `other` counted of the same run (over other rows).
    fn merge(&mut self, other: Tally) {
        self.requests += other.requests;
        self.admitted += other.admitted;
        self.delayed += other.delayed;
        self.dropped += other.dropped;
        self.waits.merge(other.waits);
        self.peak = self.peak.max(other.peak);
        if self.drops_by_key.len() < other.drops_by_key.len() {
            self.drops_by_key.resize(other.drops_by_key.len(), 0);
        }
        for (mine, theirs) in self.drops_by_key.iter_mut().zip(other.drops_by_key) {
            *mine = mine.saturating_add(theirs);
        }
        if self.bins.len() < other.bins.len() {
            self.bins.resize(other.bins.len(), Bin::default());
        }
        for (m, b) in self.bins.iter_mut().zip(other.bins) {
            m.arrived += b.arrived;
            m.sent += b.sent;
            m.dropped += b.dropped;
            m.level = m.level.max(b.level);
        }
    }

    /// Moves drops counted under a lane's renumbered key ids into
    /// `global`, under the ids they stand for.
    fn drops_into(&mut self, share: &Share, global: &mut Vec<u32>) {
        for (i, d) in std::mem::take(&mut self.drops_by_key)
            .into_iter()
            .enumerate()
            .filter(|(_, d)| *d > 0)
        {
            let g = share.global(i);
            if global.len() <= g {
                global.resize(g + 1, 0);
            }
            global[g] = global[g].saturating_add(d);
        }
    }

    /// Counts one decision (`level`: the level just after it, or 0), but
    /// for what [`Tally::settle`] adds up for a run of decisions: the
    /// requests, the admitted ones, the zero waits. Nothing is counted for
    /// the common decision (admitted at once, below the peak, no timeline)
    /// but a comparison.
    #[inline(always)]
    fn count(
        &mut self,
        ev: &Event,
        d: Decision,
        level: u64,
        timeline: Option<(Nanos, u64)>,
    ) -> Result<()> {
        let now = ev.at;
        self.peak = self.peak.max(level);
        match d {
            Decision::Admit { release } => {
                if release > now {
                    self.delayed += 1;
                    self.waits.record(release.0 - now.0);
                }
            }
            Decision::Refuse { .. } => self.refused(ev),
        }
        match timeline {
            None => Ok(()),
            Some(t) => self.bin(ev, d, level, t),
        }
    }

    /// Where [`Tally::settle`] takes up after the decisions to count.
    #[inline(always)]
    fn mark(&self) -> (u64, u64) {
        (self.dropped, self.delayed)
    }

    /// Adds up what `count` left out for the `n` decisions counted since
    /// `mark`: each is a request; those not refused were admitted, and
    /// those admitted but not delayed waited zero.
    #[inline(always)]
    fn settle(&mut self, n: usize, (dropped, delayed): (u64, u64)) {
        let n = n as u64;
        let admitted = n - (self.dropped - dropped);
        self.requests += n;
        self.admitted += admitted;
        self.waits.record_zeros(admitted - (self.delayed - delayed));
    }

    /// Counts a refusal, by key for the report.
    #[inline]
    fn refused(&mut self, ev: &Event) {
        self.dropped += 1;
        if let Some(&id) = self.report_slot.and_then(|c| ev.keys.get(c))
            && id != EMPTY_KEY
        {
            let i = id as usize;
            if i >= self.drops_by_key.len() {
                self.drops_by_key.resize(i + 1, 0);
            }
            self.drops_by_key[i] = self.drops_by_key[i].saturating_add(1);
        }
    }

    /// Counts a decision in the timeline's intervals.
    fn bin(&mut self, ev: &Event, d: Decision, level: u64, timeline: (Nanos, u64)) -> Result<()> {
        let now = ev.at;
        let (interval, t0) = timeline;
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
        Ok(())
    }
}

/// How far ahead of the row being decided its successors' states are
/// fetched: the state slot at `FAR`, what it points to at `NEAR`.
const PREFETCH_FAR: usize = 16;
const PREFETCH_NEAR: usize = 3;

impl Run {
    /// Decides `events` (in time order) under this run, counting each
    /// decision and, when `out` is given, keeping it there by position.
    /// `records`: those of the run's key column, for a member of them.
    fn decide_chunk(
        &mut self,
        events: &[Event],
        names: &[KeyNames],
        timeline: Option<(Nanos, u64)>,
        records: Option<&mut Records>,
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
            // One policy, its states in the records of its key column.
            Exec::Member(m) => {
                let records = records.expect("a member decides with its column's records");
                m.decide_chunk(records, events, slots[0], tally, timeline, out)?;
            }
            Exec::Stack(stack) => {
                let mark = tally.mark();
                for (i, ev) in events.iter().enumerate() {
                    for (k, s) in keys.iter_mut().zip(slots.iter()) {
                        *k = s.key(ev);
                    }
                    let (d, level) =
                        stack.decide_level(keys, ev.at, u64::from(ev.cost), tally.levels(on));
                    tally.count(ev, d, level, timeline)?;
                    if let Some(out) = out.as_deref_mut() {
                        out[i] = d;
                    }
                }
                tally.settle(events.len(), mark);
            }
            // Routed per row: the row's location chooses the limits.
            Exec::Conf(conf) => {
                let mark = tally.mark();
                for (i, ev) in events.iter().enumerate() {
                    let levels = !matches!(tally.levels(on), Levels::None);
                    let (d, level) = conf.decide(ev, names, levels)?;
                    tally.count(ev, d, level, timeline)?;
                    if let Some(out) = out.as_deref_mut() {
                        out[i] = d;
                    }
                }
                tally.settle(events.len(), mark);
            }
        }
        tally.share_waits();
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

/// A single policy's replay loop over a chunk when its states are a field
/// of its key column's records, compiled per policy type (implemented by
/// the field of each), chosen once per chunk.
pub trait MemberLoop: Send {
    /// As [`OneLoop::decide_chunk`], the states in `records` (those that
    /// issued the field).
    fn decide_chunk(
        &mut self,
        records: &mut Records,
        events: &[Event],
        slot: Slot,
        tally: &mut Tally,
        timeline: Option<(Nanos, u64)>,
        out: Option<&mut [Decision]>,
    ) -> Result<()>;

    /// What reports need to know about the policy.
    fn info(&self) -> &Info;
}

impl<P: Listed> MemberLoop for Field<P> {
    fn decide_chunk(
        &mut self,
        records: &mut Records,
        events: &[Event],
        slot: Slot,
        tally: &mut Tally,
        timeline: Option<(Nanos, u64)>,
        out: Option<&mut [Decision]>,
    ) -> Result<()> {
        decide_rows(
            &mut records.column(self),
            events,
            slot,
            tally,
            timeline,
            out,
        )
    }

    fn info(&self) -> &Info {
        Field::info(self)
    }
}

/// Decides `events` (in time order) under one policy keyed by `slot`,
/// fetching the states of the rows ahead, counting each decision and,
/// when `out` is given, keeping it there by position.
#[inline(always)]
fn decide_rows(
    states: &mut impl Decides,
    events: &[Event],
    slot: Slot,
    tally: &mut Tally,
    timeline: Option<(Nanos, u64)>,
    out: Option<&mut [Decision]>,
) -> Result<()> {
    let column = |c: usize| {
        // Checked once here, so that no row checks it again.
        assert!(c < MAX_KEYS, "a key column past the last");
        move |ev: &Event| {
            let id = ev.keys[c];
            (id != EMPTY_KEY).then_some(KeyId::from(id))
        }
    };
    match slot {
        Slot::Global => decide_with(states, events, |_: &Event| Some(0), tally, timeline, out),
        Slot::Column(c) => decide_with(states, events, column(c), tally, timeline, out),
    }
}

/// `decide_rows` with the rows' keys taken by `key`, through a loop
/// compiled for what the chunk needs: with or without a timeline, so that
/// a replay without one tests nothing for it per row; without levels once
/// the peak is at its cap, so that one tests nothing for them either; and
/// without refusals' retry times unless decisions are kept in `out`.
#[inline(always)]
fn decide_with<S: Decides, K: Fn(&Event) -> Option<KeyId>>(
    states: &mut S,
    events: &[Event],
    key: K,
    tally: &mut Tally,
    timeline: Option<(Nanos, u64)>,
    out: Option<&mut [Decision]>,
) -> Result<()> {
    let levels = tally.levels(timeline.is_some()) != Levels::None;
    match (timeline.is_some(), levels, out.is_some()) {
        (false, false, false) => {
            decide_by::<_, _, false, false, false>(states, events, key, tally, None, out)
        }
        (false, true, false) => {
            decide_by::<_, _, false, true, false>(states, events, key, tally, None, out)
        }
        (true, _, false) => {
            decide_by::<_, _, true, true, false>(states, events, key, tally, timeline, out)
        }
        (false, _, true) => {
            decide_by::<_, _, false, true, true>(states, events, key, tally, None, out)
        }
        (true, _, true) => {
            decide_by::<_, _, true, true, true>(states, events, key, tally, timeline, out)
        }
    }
}

/// `decide_rows` with the rows' keys taken by `key`; `TIMELINE`: whether
/// `timeline` is given; `LEVELS`: whether levels may be needed (false once
/// the peak is at its cap without a timeline: it stays there); `RETRY`:
/// whether a refusal's retry time is worked out (for `out`).
#[inline(always)]
fn decide_by<
    S: Decides,
    K: Fn(&Event) -> Option<KeyId>,
    const TIMELINE: bool,
    const LEVELS: bool,
    const RETRY: bool,
>(
    states: &mut S,
    events: &[Event],
    key: K,
    tally: &mut Tally,
    timeline: Option<(Nanos, u64)>,
    mut out: Option<&mut [Decision]>,
) -> Result<()> {
    let timeline = timeline.filter(|_| TIMELINE);
    let mark = tally.mark();
    for (i, ev) in events.iter().enumerate() {
        if let Some(k) = events.get(i + PREFETCH_FAR).and_then(&key) {
            states.prefetch(k, false);
        }
        if states.deep()
            && let Some(k) = events.get(i + PREFETCH_NEAR).and_then(&key)
        {
            states.prefetch(k, true);
        }
        let levels = match LEVELS {
            true => tally.levels(TIMELINE),
            false => Levels::None,
        };
        let (d, level) = match key(ev) {
            Some(k) if RETRY => states.decide_level(k, ev.at, u64::from(ev.cost), levels),
            Some(k) => states.decide_level_no_retry(k, ev.at, u64::from(ev.cost), levels),
            None => (Decision::Admit { release: ev.at }, 0),
        };
        tally.count(ev, d, level, timeline)?;
        if let Some(out) = out.as_deref_mut() {
            out[i] = d;
        }
    }
    tally.settle(events.len(), mark);
    Ok(())
}

impl<P: Listed> OneLoop for Store<P> {
    fn decide_chunk(
        &mut self,
        events: &[Event],
        slot: Slot,
        tally: &mut Tally,
        timeline: Option<(Nanos, u64)>,
        out: Option<&mut [Decision]>,
    ) -> Result<()> {
        decide_rows(self, events, slot, tally, timeline, out)
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
        let split = match slots.first() {
            Some(&Slot::Column(c)) if slots.iter().all(|s| *s == Slot::Column(c)) => Some(c),
            _ => None,
        };
        let mut run = Run::with_exec(
            Exec::new(spec),
            spec.label.clone(),
            spec.text.clone(),
            slots,
            report_slot,
            order,
        );
        run.source = Some(spec.clone());
        run.split = split;
        run
    }

    /// The same run with empty state.
    fn fresh(&self) -> Option<Run> {
        let spec = self.source.as_ref()?;
        Some(Run::new(spec, self.slots.clone(), self.order))
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
            source: None,
            split: None,
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
                shared_waits: None,
                bins: Vec::new(),
            },
        }
    }
}

/// Runs decided on one thread. A lane takes part in every chunk: a run
/// split by key decides only the lane's share of the keys (see [`Share`]),
/// dealt out to it; any other run every row of the chunk.
struct Lane {
    runs: Vec<Run>,
    share: Option<Share>,
    timeline: Option<(Nanos, u64)>,
    /// The timeline's interval follows the log's span (see `auto_timeline`).
    auto: bool,
    started: bool,
    /// This lane's rows of the current chunk, per key column it splits by.
    mine: Vec<(usize, Vec<Event>)>,
    /// Per key column, the records of the single policies keyed by it
    /// (made when the lane starts).
    records: Vec<(usize, Records)>,
}

/// Which keys a lane decides, for runs split by key: key ids `i` with
/// `i mod n = lane` (rows with an empty key go to lane 0). In the rows the
/// lane decides, a key id becomes `i div n`, so its per-key tables stay
/// dense whatever the number of lanes.
#[derive(Clone, Copy)]
struct Share {
    lane: u32,
    n: u32,
    /// ⌈2⁶⁴ / n⌉: `i div n` is the high half of `i · magic` for any 32-bit
    /// `i` (a multiply instead of a division per row).
    magic: u64,
}

impl Share {
    fn new(lane: u32, n: u32) -> Share {
        assert!(n >= 2 && lane < n);
        Share {
            lane,
            n,
            magic: u64::MAX / u64::from(n) + 1,
        }
    }

    /// `(i div n, i mod n)`.
    #[inline]
    fn split(&self, id: u32) -> (u32, u32) {
        let q = ((u128::from(self.magic) * u128::from(id)) >> 64) as u32;
        (q, id - q * self.n)
    }

    /// The key id a lane's local id stands for.
    fn global(&self, local: usize) -> usize {
        local * self.n as usize + self.lane as usize
    }

    /// Deals the rows of `events` out to the lanes by their key in column
    /// `c`, in order: lane i's rows go to `lanes[i]`, their key there
    /// renumbered (rows with an empty key go to lane 0).
    fn deal(&self, events: &[Event], c: usize, lanes: &mut [&mut Vec<Event>]) {
        assert_eq!(lanes.len(), self.n as usize);
        assert!(c < MAX_KEYS, "a key column past the last");
        for rows in lanes.iter_mut() {
            rows.clear();
        }
        for ev in events {
            let id = ev.keys[c];
            if id == EMPTY_KEY {
                lanes[0].push(*ev);
                continue;
            }
            let (q, r) = self.split(id);
            let mut mine = *ev;
            mine.keys[c] = q;
            lanes[r as usize].push(mine);
        }
    }
}

impl Lane {
    fn new(
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
    fn group(&mut self) {
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

    /// Decides a chunk (in time order, from `first` to `last`) under this
    /// lane's runs, run by run so each run's loop is tight: runs split by
    /// key decide the lane's rows of it (dealt into `mine` beforehand),
    /// the others `events`, the whole chunk. `out` (only with every run
    /// in one lane) keeps each decision, run after run.
    fn decide_chunk(
        &mut self,
        (first, last): (Nanos, Nanos),
        events: &[Event],
        names: &[KeyNames],
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
struct Part {
    span: (Nanos, Nanos),
    whole: Option<Arc<Vec<Event>>>,
    /// In the order of the lane's `mine`.
    mine: Vec<(usize, Vec<Event>)>,
}

/// A replay thread: a lane fed its part of the same chunks as this one.
struct Worker {
    tx: Option<mpsc::SyncSender<Part>>,
    /// Parts the thread is done with, to be filled again.
    back: mpsc::Receiver<Part>,
    /// The key columns its lane splits by, in the order of its `mine`.
    columns: Vec<usize>,
    /// True when the lane decides runs that are not split by key.
    whole: bool,
    handle: std::thread::JoinHandle<Result<Lane>>,
}

impl Worker {
    fn start(mut lane: Lane) -> Result<Worker> {
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
                    lane.decide_chunk(part.span, events, &[], None)?;
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
    fn part(&self) -> Part {
        self.back.try_recv().unwrap_or_else(|_| Part {
            span: (Nanos::ZERO, Nanos::ZERO),
            whole: None,
            mine: self.columns.iter().map(|&c| (c, Vec::new())).collect(),
        })
    }

    /// Hands the thread its part of a chunk; false when it has stopped
    /// (its error comes out of `finish`).
    fn send(&mut self, part: Part) -> bool {
        match &self.tx {
            Some(tx) if tx.send(part).is_err() => {
                self.tx = None;
                false
            }
            _ => true,
        }
    }

    fn finish(mut self) -> Result<Lane> {
        drop(self.tx.take());
        self.handle
            .join()
            .map_err(|_| anyhow!("a replay thread failed"))?
    }
}

/// The whole replay state.
pub struct Replay {
    /// The runs decided on this thread.
    local: Lane,
    /// The other replay threads, when the runs are spread (see `spread`).
    workers: Vec<Worker>,
    /// The chunks handed to them, each refilled once every thread is done
    /// with it, so that handing rows over allocates nothing per chunk.
    handed: Vec<Arc<Vec<Event>>>,
    /// Labels of every run, in report order.
    labels: Vec<String>,
    /// Key values per key column, by id.
    names: Vec<KeyNames>,
    interners: Vec<Interner>,
    /// Requests per key, per key column.
    requests_by_key: Vec<Vec<u64>>,
    decisions: Option<csv::Writer<Box<dyn Write + Send>>>,
    /// The decisions file as given, for messages.
    decisions_name: String,
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
            labels: runs.iter().map(|r| r.label.clone()).collect(),
            local: Lane::new(runs, None, timeline.map(|i| (i, 0)), false),
            workers: Vec::new(),
            handed: Vec::new(),
            names: (0..key_columns).map(|_| KeyNames::default()).collect(),
            interners: (0..key_columns).map(|_| Interner::default()).collect(),
            requests_by_key: vec![Vec::new(); key_columns],
            decisions,
            decisions_name,
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
    pub fn compare_report(&self) -> Vec<crate::report::CompareReport> {
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

    /// A copy of `events` for the other replay threads, in a chunk they
    /// have all finished with (they only ever drop their references), or
    /// in a new one while every chunk is still in use.
    fn hand_over(&mut self, events: &[Event]) -> Arc<Vec<Event>> {
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
    fn count_requests(&mut self, events: &[Event]) {
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
    fn write_decisions(&mut self, events: &[Event], outcomes: &[Decision]) -> Result<()> {
        let n = events.len();
        let Some(w) = self.decisions.as_mut() else {
            return Ok(());
        };
        for (i, ev) in events.iter().enumerate() {
            let now = ev.at;
            for (ri, run) in self.local.runs.iter().enumerate() {
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
        Ok(())
    }

    /// Waits for the other replay threads and merges what each counted
    /// into one run per policy, in report order: counts add up, peaks and
    /// levels keep their maximum, waits merge, and drops by key (each key
    /// on one thread) are put back under their own ids.
    fn gather(&mut self) -> Result<Vec<Run>> {
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
                    let mut global = Vec::new();
                    let into = match at {
                        Some(i) => &mut runs[i].tally.drops_by_key,
                        None => &mut global,
                    };
                    run.tally.drops_into(&share, into);
                    if at.is_none() {
                        run.tally.drops_by_key = global;
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
    pub fn finish(mut self) -> Result<(Vec<PolicyReport>, Option<TimelineRows>)> {
        if let Some(w) = self.decisions.as_mut() {
            let r = w.flush().map_err(csv::Error::from);
            written(r, &mut self.decisions, &self.decisions_name)?;
        }
        self.decisions = None;
        let runs = self.gather()?;
        let mut reports = Vec::new();
        let mut rows = Vec::new();
        let nbins = runs.iter().map(|r| r.tally.bins.len()).max().unwrap_or(0);
        for mut run in runs {
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
            reports.push(PolicyReport {
                label: run.label,
                spec: run.spec,
                requests: run.tally.requests,
                admitted: run.tally.admitted,
                delayed: run.tally.delayed,
                dropped: run.tally.dropped,
                drop_pct: percent(run.tally.dropped, run.tally.requests),
                shapes,
                wait: shapes.then(|| waits(&mut run.tally.waits)),
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
            .local
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

/// The report's wait percentiles.
fn waits(w: &mut WaitStats) -> Waits {
    let p = w.percentiles();
    Waits {
        p50_ns: p.p50,
        p95_ns: p.p95,
        p99_ns: p.p99,
        max_ns: p.max,
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
    fn a_share_splits_ids_as_division_does() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in 2..=67u32 {
            for lane in [0, n - 1] {
                let share = Share::new(lane, n);
                let edges = [0, 1, n - 1, n, n + 1, u32::MAX - 1, u32::MAX];
                let random = (0..2000).map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u32
                });
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
