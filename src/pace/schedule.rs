//! The release schedule: policy decisions, the backlog, and when each
//! admitted record leaves. Pure: every method takes the time it acts at.
//!
//! Two time lines meet here. *Real* time is the monotonic clock's reading;
//! *policy* time is what the policy is told, `real − slip`. Deadlines come
//! from the policy's releases, never from the last wake-up. What lateness
//! does is the run's [`Lateness`]:
//! - [`Lateness::Strict`]: any lateness re-bases the schedule (`slip` grows
//!   by it), at the instant the record actually leaves. The slip never
//!   shrinks, so two records leave at least as far apart as the policy
//!   released them: every window holds what the policy allows in it, as an
//!   API that counts the requests sees them.
//! - [`Lateness::Average`]: a *hiccup* (late by at most `stall`: one
//!   interval, or 20 ms if that is longer) is made up without moving the
//!   schedule, the shaper keeping `min_gap` (half an interval) between
//!   writes: at most twice the rate while catching up, and the long-run
//!   rate stays exact; a *stall* (later than that: a paused process, a
//!   blocked downstream) re-bases the schedule, so the late record leaves
//!   now and the ones after it follow at the rate, never in a bunch.
//! - [`Lateness::CatchUp`]: late records leave at once and the schedule is
//!   restored.
//!
//! Where an interval is shorter than the timer sleeps reliably, a writer
//! wakes at most once per `quantum` and writes every record due together.
//! A record is due at its policy release plus the slip. In [`Order::Arrival`]
//! records leave in the order they were admitted, never before the record
//! ahead of it; in [`Order::Release`] (per-key pacing) they leave in order
//! of release, ties in order of `seq`, so a record for an idle key
//! overtakes the records waiting for a busy one.

use crate::policy::Decision;
use crate::policy::keyed::{KeyId, Limiter, Stack};
use crate::time::Nanos;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// An admitted record waiting for its release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending<T> {
    /// Release instant, policy time.
    pub release: Nanos,
    /// The caller's sequence number (the input line), for ties and order.
    pub seq: u64,
    /// When the record arrived, real time.
    pub arrived: Nanos,
    pub item: T,
}

/// The outcome of offering a record.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer<T> {
    /// Admitted and queued; it leaves at `release` (policy time).
    Queued { release: Nanos },
    /// Refused: the backlog is full. `retry_at` (policy time) is the first
    /// instant the record would be admitted; `None` when it never can.
    Full { retry_at: Option<Nanos>, item: T },
}

/// Lateness below this is a hiccup whatever the interval.
pub const STALL_FLOOR: Nanos = Nanos(20_000_000);
/// Intervals shorter than this (rates above 2000/s) are batched: at most
/// one wake-up per quantum, every record due written together. A wake-up
/// costs tens of µs of CPU and the timer overshoots by tens of µs, so one
/// per line at 10k/s and above would cost more than it keeps.
pub const BATCH_QUANTUM: Nanos = Nanos(500_000);

pub use crate::cli::Lateness;

/// How lateness and batching are handled (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Lateness beyond which the schedule is re-based, ns.
    pub stall: Nanos,
    /// Least time between two writes (half the shaper's interval), ns.
    pub min_gap: Option<Nanos>,
    /// Least time between two writing wake-ups, ns (0: no batching).
    pub quantum: Nanos,
    /// What lateness does.
    pub lateness: Lateness,
}

impl Timing {
    /// The timing for a policy whose shaping interval is `interval` (ns,
    /// rounded down; `None` when the policy has none). `shaper`: the policy
    /// is the shaper alone, whose records are at least an interval apart,
    /// so a gap of half an interval can be kept. Strict timing neither
    /// batches (records due at different instants would leave together)
    /// nor needs the gap (the schedule itself keeps them apart).
    pub fn new(interval: Option<Nanos>, shaper: bool, lateness: Lateness) -> Timing {
        let t = interval.unwrap_or(Nanos::ZERO);
        let half = Nanos(t.0 / 2);
        let strict = lateness == Lateness::Strict;
        let batched = interval.is_some() && t < BATCH_QUANTUM && !strict;
        let average = lateness == Lateness::Average;
        Timing {
            stall: if strict {
                Nanos::ZERO
            } else {
                t.max(STALL_FLOOR)
            },
            min_gap: (shaper && average && !batched).then_some(half),
            quantum: if batched { BATCH_QUANTUM } else { Nanos::ZERO },
            lateness,
        }
    }
}

/// The order admitted records leave in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// The order they were admitted in (head-of-line blocking).
    Arrival,
    /// Their release instants; equal releases by `seq`.
    Release,
}

/// A pending record ordered by (release, seq), for the release heap.
struct ByRelease<T>(Pending<T>);

impl<T> PartialEq for ByRelease<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<T> Eq for ByRelease<T> {}
impl<T> PartialOrd for ByRelease<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for ByRelease<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.0.release, self.0.seq).cmp(&(other.0.release, other.0.seq))
    }
}

/// The backlog, in the order records leave.
enum Queue<T> {
    Fifo(VecDeque<Pending<T>>),
    Heap(BinaryHeap<Reverse<ByRelease<T>>>),
}

impl<T> Queue<T> {
    fn len(&self) -> usize {
        match self {
            Queue::Fifo(q) => q.len(),
            Queue::Heap(h) => h.len(),
        }
    }

    #[inline]
    fn push(&mut self, p: Pending<T>) {
        match self {
            Queue::Fifo(q) => q.push_back(p),
            Queue::Heap(h) => h.push(Reverse(ByRelease(p))),
        }
    }

    #[inline]
    fn front(&self) -> Option<&Pending<T>> {
        match self {
            Queue::Fifo(q) => q.front(),
            Queue::Heap(h) => h.peek().map(|r| &r.0.0),
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Pending<T>> {
        match self {
            Queue::Fifo(q) => q.pop_front(),
            Queue::Heap(h) => h.pop().map(|r| r.0.0),
        }
    }
}

/// Decisions and the backlog of one `pace` run.
pub struct Schedule<T> {
    stack: Stack,
    keys: Vec<Option<KeyId>>,
    timing: Timing,
    /// Real time of the last write.
    last_write: Option<Nanos>,
    /// Policy time = real time − slip.
    slip: Nanos,
    /// The latest policy time decided at; decisions never go back in time.
    last: Nanos,
    /// The latest release admitted, policy time.
    last_release: Option<Nanos>,
    /// Total time paused (part of `slip`).
    paused: Nanos,
    queue: Queue<T>,
}

impl<T> Schedule<T> {
    /// A schedule whose records leave in arrival order, all under one key.
    pub fn new(stack: Stack, timing: Timing) -> Schedule<T> {
        Schedule::with_order(stack, timing, Order::Arrival)
    }

    /// A schedule whose records leave in `order`.
    pub fn with_order(stack: Stack, timing: Timing, order: Order) -> Schedule<T> {
        let keys = vec![Some(0); stack.len()];
        Schedule {
            stack,
            keys,
            timing,
            last_write: None,
            slip: Nanos::ZERO,
            last: Nanos::ZERO,
            last_release: None,
            paused: Nanos::ZERO,
            queue: match order {
                Order::Arrival => Queue::Fifo(VecDeque::new()),
                Order::Release => Queue::Heap(BinaryHeap::new()),
            },
        }
    }

    /// The policy time of real instant `real` (never before the last decision).
    pub fn policy_time(&self, real: Nanos) -> Nanos {
        real.saturating_sub(self.slip).max(self.last)
    }

    /// The real instant of policy instant `t`.
    pub fn real_time(&self, t: Nanos) -> Nanos {
        t.saturating_add(self.slip)
    }

    /// Total re-basing after stalls so far, ns (pauses not included).
    pub fn slip(&self) -> Nanos {
        self.slip.saturating_sub(self.paused)
    }

    /// Total time paused, ns.
    pub fn paused(&self) -> Nanos {
        self.paused
    }

    /// Moves the schedule by a pause of `span`: everything not yet written
    /// leaves `span` later, at the same spacing, and the policies see no
    /// time pass (idle time is not banked).
    pub fn pause(&mut self, span: Nanos) {
        self.slip = self.slip.saturating_add(span);
        self.paused = self.paused.saturating_add(span);
    }

    /// Replaces stack member `i` (a global member, key 0) with `member`
    /// and new `timing`. The new member starts as if it had admitted the
    /// latest release so far, so the next admission keeps one of its own
    /// intervals after it: a rate change applies from the next release,
    /// without drift and without a burst. Records already admitted keep
    /// their release.
    pub fn retune(&mut self, i: usize, member: Box<dyn Limiter>, timing: Timing) {
        let m = self.stack.replace(i, member);
        if let Some(last) = self.last_release {
            m.decide(0, last, 1);
        }
        self.timing = timing;
    }

    /// Records admitted and not yet taken.
    pub fn backlog(&self) -> usize {
        self.queue.len()
    }

    /// Offers a record at policy time `at` (an arrival's `policy_time`, or
    /// the `retry_at` of an earlier refusal: a record held since before that
    /// instant is offered at it, so a late wake-up does not move the
    /// schedule). `arrived` is its real arrival, for waits; `seq` its
    /// input position, carried to its [`Pending`].
    #[inline]
    pub fn offer(&mut self, at: Nanos, arrived: Nanos, seq: u64, item: T) -> Offer<T> {
        let keys = std::mem::take(&mut self.keys);
        let offer = self.offer_keyed(at, arrived, &keys, seq, item);
        self.keys = keys;
        offer
    }

    /// `offer` with each stack member's key (`keys[i]` for member i) and
    /// the caller's sequence number `seq` (the record's input line).
    pub fn offer_keyed(
        &mut self,
        at: Nanos,
        arrived: Nanos,
        keys: &[Option<KeyId>],
        seq: u64,
        item: T,
    ) -> Offer<T> {
        let at = at.max(self.last);
        // A refused line is not sent: the API never counts it.
        let decision = self.stack.offer(keys, at, 1);
        self.offer_decided(at, arrived, seq, item, decision)
    }

    /// [`offer`](Self::offer) with a decision made elsewhere (a shared
    /// schedule) instead of the stack's.
    pub fn offer_with(
        &mut self,
        at: Nanos,
        arrived: Nanos,
        seq: u64,
        item: T,
        decision: Decision,
    ) -> Offer<T> {
        self.offer_decided(at, arrived, seq, item, decision)
    }

    /// `offer_keyed` with a decision made elsewhere (a shared schedule):
    /// queued at its release, or refused with its retry time.
    #[inline]
    pub fn offer_decided(
        &mut self,
        at: Nanos,
        arrived: Nanos,
        seq: u64,
        item: T,
        decision: Decision,
    ) -> Offer<T> {
        let at = at.max(self.last);
        self.last = at;
        match decision {
            Decision::Admit { release } => {
                self.last_release = self.last_release.max(Some(release));
                self.queue.push(Pending {
                    release,
                    seq,
                    arrived,
                    item,
                });
                Offer::Queued { release }
            }
            Decision::Refuse { retry_at } => Offer::Full {
                // A retry must move time forward, or a caller would spin.
                retry_at: retry_at.map(|r| r.max(Nanos(at.0 + 1))),
                item,
            },
        }
    }

    /// Re-bases the schedule when something due at policy instant `due` is
    /// handled at real instant `now` later than the stall threshold (any
    /// lateness when strict; never when catching up). The driver calls it
    /// before re-offering a held record, so a stall does not let a pile of
    /// past-due records in, and, strict, at the instant each record leaves.
    pub fn settle(&mut self, due: Nanos, now: Nanos) {
        let late = now.saturating_sub(self.real_time(due));
        if self.timing.lateness != Lateness::CatchUp && late > self.timing.stall {
            self.slip = self.slip.saturating_add(late);
        }
    }

    /// Whether any lateness moves the schedule.
    pub fn strict(&self) -> bool {
        self.timing.lateness == Lateness::Strict
    }

    /// The earliest real instant the next write may happen (gap, quantum).
    pub fn earliest_write(&self) -> Nanos {
        let least = self
            .timing
            .min_gap
            .unwrap_or(Nanos::ZERO)
            .max(self.timing.quantum);
        self.last_write
            .map_or(Nanos::ZERO, |w| w.saturating_add(least))
    }

    /// When the next record is due, real time.
    pub fn next_due(&self) -> Option<Nanos> {
        let head = self.queue.front()?;
        Some(self.real_time(head.release).max(self.earliest_write()))
    }

    /// Moves the records due at real instant `now` into `out`, in order:
    /// with a gap to keep, the head alone; else every record due. Re-bases
    /// first when the head is a stall late. Returns how many were moved.
    #[cfg(test)]
    pub fn take_due(&mut self, now: Nanos, out: &mut Vec<Pending<T>>) -> usize {
        self.take_due_upto(now, out, usize::MAX)
    }

    /// [`take_due`](Self::take_due), `most` records at most (commands
    /// start only as far as `--jobs` leaves room).
    pub fn take_due_upto(&mut self, now: Nanos, out: &mut Vec<Pending<T>>, most: usize) -> usize {
        match self.next_due() {
            Some(due) if due <= now => {}
            _ => return 0,
        }
        let head = self.queue.front().map_or(Nanos::ZERO, |p| p.release);
        self.settle(head, now);
        let mut n = 0;
        while let Some(p) = self.queue.front() {
            if self.real_time(p.release) > now
                || n == most
                || (n == 1 && self.timing.min_gap.is_some())
            {
                break;
            }
            out.extend(self.queue.pop());
            n += 1;
        }
        self.last_write = Some(now);
        n
    }

    /// Records that the last write completed at real instant `at`: the gap
    /// and the quantum count from there, so a write that was itself
    /// delayed does not let the next one come closer.
    pub fn wrote(&mut self, at: Nanos) {
        self.last_write = self.last_write.max(Some(at));
    }

    /// Empties the backlog (at a stop: the records are unsent), in the
    /// order the records would have left.
    pub fn take_all(&mut self) -> impl Iterator<Item = Pending<T>> + '_ {
        std::iter::from_fn(|| self.queue.pop())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::policy::spec::parse_spec;

    const MS: u64 = 1_000_000;

    /// A schedule for `spec`, a lone shaper of interval `t`.
    fn schedule(spec: &str, t: Nanos, catch_up: bool) -> Schedule<u32> {
        let lateness = if catch_up {
            Lateness::CatchUp
        } else {
            Lateness::Average
        };
        let shaper = spec.starts_with("shaper");
        let timing = Timing::new(Some(t), shaper, lateness);
        Schedule::new(parse_spec(spec).unwrap().build(), timing)
    }

    /// A block-mode pacer on `clock`, as the driver runs it: records are
    /// all available at 0, a refused record is re-offered at its retry
    /// time, and the writer sleeps until each deadline. `stall_at` pauses
    /// the process once, before the wake-up for that record index.
    /// Asserts that no two writes of `sent` came closer than half of a
    /// 100 ms interval.
    fn keeps_half_intervals(sent: &[(u32, Nanos)]) {
        for w in sent.windows(2) {
            let gap = w[1].1.0 - w[0].1.0;
            assert!(
                gap >= 50 * MS,
                "gap {gap} between {:?} and {:?}",
                w[0],
                w[1]
            );
        }
    }

    fn run(
        s: &mut Schedule<u32>,
        clock: &ManualClock,
        n: u32,
        stall_at: Option<(u32, Nanos)>,
    ) -> Vec<(u32, Nanos)> {
        let mut sent = Vec::new();
        let mut out = Vec::new();
        let mut next = 0u32;
        let mut retry: Option<Nanos> = None;
        while sent.len() < n as usize {
            while next < n {
                let at = match retry {
                    Some(r) if s.real_time(r) > clock.now() => break,
                    Some(r) => {
                        s.settle(r, clock.now());
                        r
                    }
                    // Every record arrived at 0.
                    None => s.policy_time(Nanos::ZERO),
                };
                match s.offer(at, Nanos::ZERO, 0, next) {
                    Offer::Queued { .. } => {
                        retry = None;
                        next += 1;
                    }
                    Offer::Full { retry_at, .. } => {
                        // Offered again at once if the retry has passed.
                        retry = retry_at;
                    }
                }
            }
            out.clear();
            s.take_due(clock.now(), &mut out);
            for p in &out {
                sent.push((p.item, clock.now()));
            }
            let wake = [s.next_due(), retry.map(|r| s.real_time(r))]
                .into_iter()
                .flatten()
                .min();
            if let Some((i, d)) = stall_at
                && sent.len() == i as usize
                && out.len() == 1
            {
                clock.advance(d);
            }
            if let Some(w) = wake {
                clock.sleep_until(w);
            }
        }
        sent
    }

    #[test]
    fn overshoot_never_accumulates() {
        // 3/s: the ideal k-th release is ceil(k·1e9/3) ns after the first.
        let clock = ManualClock::new();
        clock.set_overshoot(Nanos(80_000));
        let mut s = schedule("shaper:rate=3/s", Nanos(333 * MS), false);
        let sent = run(&mut s, &clock, 301, None);
        for (k, (item, at)) in sent.iter().enumerate() {
            assert_eq!(*item, k as u32, "order");
            let ideal = (k as u64 * 1_000_000_000).div_ceil(3);
            let dev = at.0 - ideal;
            // Offers land on whole nanoseconds: under 1 ns per line of
            // rounding, on top of one overshoot.
            assert!(
                dev <= 80_000 + k as u64,
                "line {k} at {at:?}, ideal {ideal}"
            );
        }
        assert_eq!(s.slip(), Nanos::ZERO);
        // 100 s for 300 intervals, plus one overshoot and the rounding.
        assert!(sent[300].1.0 - 100_000_000_000 <= 80_300);
    }

    #[test]
    fn a_stall_rebases_and_never_bunches() {
        let clock = ManualClock::new();
        // burst 5 so a backlog is queued when the stall hits.
        let mut s = schedule("shaper:rate=10/s,burst=5", Nanos(100 * MS), false);
        let sent = run(&mut s, &clock, 40, Some((10, Nanos(2_000 * MS))));
        keeps_half_intervals(&sent);
        // The stall moved the schedule, by about the stall.
        assert!(s.slip() >= Nanos(1_900 * MS), "slip {:?}", s.slip());
    }

    #[test]
    fn catch_up_restores_the_schedule_after_a_stall() {
        let clock = ManualClock::new();
        let mut s = schedule("shaper:rate=10/s,burst=5", Nanos(100 * MS), true);
        let sent = run(&mut s, &clock, 40, Some((10, Nanos(1_000 * MS))));
        assert_eq!(s.slip(), Nanos::ZERO);
        // The line after the stall and the queued ones behind it leave at once.
        let after: Vec<_> = sent.iter().filter(|(_, t)| t.0 > 1_000 * MS).collect();
        assert!(after.len() >= 2 && after[0].1 == after[1].1, "{sent:?}");
        // And the last line is back on the ideal schedule: 39 intervals.
        assert_eq!(sent[39].1, Nanos(3_900 * MS));
    }

    /// Strict: a write late by any amount moves what follows by as much,
    /// so no two writes come closer than the interval (a hiccup of 30 ms
    /// is not made up), and nothing is batched at high rates.
    #[test]
    fn strict_moves_the_schedule_by_any_lateness() {
        let t = Nanos(100 * MS);
        let timing = Timing::new(Some(t), true, Lateness::Strict);
        assert_eq!((timing.min_gap, timing.stall), (None, Nanos::ZERO));
        let fast = Timing::new(Some(Nanos(100_000)), true, Lateness::Strict);
        assert_eq!(fast.quantum, Nanos::ZERO);
        let spec = parse_spec("shaper:rate=10/s,burst=5").unwrap();
        let mut s: Schedule<u32> = Schedule::new(spec.build(), timing);
        for i in 0..4 {
            assert!(matches!(
                s.offer(Nanos::ZERO, Nanos::ZERO, i, i as u32),
                Offer::Queued { .. }
            ));
        }
        let mut out = Vec::new();
        let mut writes = Vec::new();
        // The first write is on time, the second 30 ms late (a hiccup).
        for late in [0, 30 * MS, 0, 0] {
            let due = s.next_due().unwrap();
            let now = Nanos(due.0 + late);
            out.clear();
            assert_eq!(s.take_due(now, &mut out), 1);
            s.settle(out[0].release, now);
            writes.push(now.0);
        }
        assert_eq!(writes, [0, 130 * MS, 230 * MS, 330 * MS]);
        assert_eq!(s.slip(), Nanos(30 * MS));
    }

    #[test]
    fn idle_time_is_not_banked() {
        let clock = ManualClock::new();
        let mut s = schedule("shaper:rate=2/s,burst=3", Nanos(500 * MS), false);
        let mut out = Vec::new();
        assert_eq!(
            s.offer(Nanos::ZERO, Nanos::ZERO, 0, 0),
            Offer::Queued {
                release: Nanos::ZERO
            }
        );
        s.take_due(clock.now(), &mut out);
        clock.advance(Nanos::from_secs(60));
        let now = s.policy_time(clock.now());
        // After a minute idle: one immediate release, then one per 500 ms.
        for k in 0..4u64 {
            assert_eq!(
                s.offer(now, now, 0, 1),
                Offer::Queued {
                    release: Nanos(now.0 + k * 500 * MS)
                }
            );
        }
        assert!(matches!(
            s.offer(now, now, 0, 9),
            Offer::Full { retry_at: Some(r), .. } if r == Nanos(now.0 + 500 * MS)
        ));
        assert_eq!(s.backlog(), 4);
        assert_eq!(s.take_due(clock.now(), &mut out), 1);
        assert_eq!(s.take_all().count(), 3);
    }

    #[test]
    fn a_token_bucket_releases_its_burst_in_one_take() {
        let mut s = schedule("token-bucket:rate=1/s,burst=3", Nanos(1_000 * MS), false);
        for i in 0..3 {
            assert!(matches!(
                s.offer(Nanos(10), Nanos(10), 0, i),
                Offer::Queued { .. }
            ));
        }
        assert!(matches!(
            s.offer(Nanos(10), Nanos(10), 0, 3),
            Offer::Full { .. }
        ));
        let mut out = Vec::new();
        assert_eq!(s.take_due(Nanos(11), &mut out), 3);
        let items: Vec<u32> = out.iter().map(|p| p.item).collect();
        assert_eq!(items, [0, 1, 2]);
    }

    #[test]
    fn policy_time_never_goes_back_after_a_rebase() {
        let mut s = schedule("shaper:rate=1/s,burst=2", Nanos(1_000 * MS), false);
        s.offer(Nanos::ZERO, Nanos::ZERO, 0, 0);
        s.offer(Nanos::ZERO, Nanos::ZERO, 0, 1);
        let mut out = Vec::new();
        // The writer wakes 3 s late: re-based by 3 s.
        s.take_due(Nanos::from_secs(3), &mut out);
        assert_eq!(s.slip(), Nanos::from_secs(3));
        assert_eq!(s.next_due(), Some(Nanos::from_secs(4)));
        // A decision was made at policy 0; real 1 s would be policy −2 s.
        assert_eq!(s.policy_time(Nanos::from_secs(1)), Nanos::ZERO);
    }

    #[test]
    fn a_hiccup_is_made_up_at_half_intervals_without_drift() {
        let clock = ManualClock::new();
        let mut s = schedule("shaper:rate=10/s,burst=5", Nanos(100 * MS), false);
        // 80 ms late once: less than an interval, so not a stall.
        let sent = run(&mut s, &clock, 20, Some((5, Nanos(80 * MS))));
        assert_eq!(s.slip(), Nanos::ZERO);
        keeps_half_intervals(&sent);
        // Back on the ideal schedule: 19 intervals.
        assert_eq!(sent[19].1, Nanos(1_900 * MS));
    }

    #[test]
    fn timing_follows_the_interval() {
        let t = Timing::new(Some(Nanos(200 * MS)), true, Lateness::Average);
        assert_eq!(t.stall, Nanos(200 * MS));
        assert_eq!(t.min_gap, Some(Nanos(100 * MS)));
        assert_eq!(t.quantum, Nanos::ZERO);
        // 1000/s: a hiccup is up to 20 ms.
        let t = Timing::new(Some(Nanos(MS)), true, Lateness::Average);
        assert_eq!((t.stall, t.min_gap), (STALL_FLOOR, Some(Nanos(500_000))));
        // 2000/s keeps its gap; 2500/s and 10k/s are batched, no gap kept.
        let t = Timing::new(Some(Nanos(500_000)), true, Lateness::Average);
        assert_eq!((t.min_gap, t.quantum), (Some(Nanos(250_000)), Nanos::ZERO));
        for interval in [400_000, 100_000] {
            let t = Timing::new(Some(Nanos(interval)), true, Lateness::Average);
            assert_eq!((t.min_gap, t.quantum), (None, BATCH_QUANTUM));
        }
        // Catching up keeps no gap; other policies keep none either.
        assert_eq!(
            Timing::new(Some(Nanos(MS)), true, Lateness::CatchUp).min_gap,
            None
        );
        assert_eq!(
            Timing::new(Some(Nanos(MS)), false, Lateness::Average).min_gap,
            None
        );
        let t = Timing::new(None, false, Lateness::Average);
        assert_eq!((t.stall, t.quantum), (STALL_FLOOR, Nanos::ZERO));
    }

    #[test]
    fn batching_writes_every_due_record_once_per_quantum() {
        let clock = ManualClock::new();
        clock.set_overshoot(Nanos(60_000));
        // 100k/s: 10 µs intervals, 500 µs quantum.
        let mut s = schedule("shaper:rate=100000/s", Nanos(10_000), false);
        let sent = run(&mut s, &clock, 100_001, None);
        let writes = sent.windows(2).filter(|w| w[1].1 != w[0].1).count() + 1;
        assert!(writes <= 100_001 / 50 + 1, "{writes} writes");
        assert_eq!(s.slip(), Nanos::ZERO);
        // The exact average: 100k intervals in 1 s, the last write late by
        // less than a quantum and two overshoots, not by 100k overshoots.
        let last = sent[100_000].1.0;
        assert!((1_000_000_000..1_000_620_000).contains(&last), "{last}");
    }
}
