//! Per-key pacing: the lines that wait for their key's turn.
//!
//! With `--key` every line is decided under its own key (members with
//! `key=none` under one global key). A line its policies refuse for now
//! waits in its key's *lane* and is offered again at the refusal's retry
//! instant; the lines behind it in the same lane wait behind it, so each
//! key keeps its input order while a line for an idle key goes straight to
//! the schedule, which releases lines in order of release time. With
//! `--keep-order` there is one lane for all keys: head-of-line blocking,
//! input order on the way out.
//!
//! Memory is bounded by `max_pending`: lines waiting in lanes plus lines
//! admitted and not yet written. At the bound, block mode stops taking
//! input (so the reader stops reading and the upstream writer blocks), and
//! drop and fail mode refuse the next line.
//!
//! Events are handled in time order: a lane's retry instant and a new
//! line's arrival, the earlier first, so decisions never go back in time.

use super::keys::{Keys, NO_KEY};
use super::schedule::{Offer, Schedule};
use super::{Inbox, Record};
use crate::cli::OnFull;
use crate::policy::keyed::{IdMap, KeyId};
use crate::time::Nanos;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A line waiting in a lane.
struct Parked {
    line: u64,
    key: KeyId,
    arrived: Nanos,
    bytes: Vec<u8>,
}

/// What a round of decisions ended with.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Everything that could be decided now was.
    Done,
    /// `--on-full fail`: input line `line` found no room (it is back at
    /// the front of the inbox, unsent).
    Full { line: u64 },
    /// The policies can never admit a line.
    Never,
}

/// Lanes of waiting lines, their retry timers, and the keys.
pub struct Lanes {
    keys: Keys,
    /// For each stack member: true when it counts by the line's key,
    /// false for `key=none` (one global bucket).
    per_key: Vec<bool>,
    keep_order: bool,
    on_full: OnFull,
    max_pending: usize,
    lanes: IdMap<VecDeque<Parked>>,
    /// (retry instant in policy time, the head's line, lane): when each
    /// blocked lane's head is offered again.
    timers: BinaryHeap<Reverse<(Nanos, u64, KeyId)>>,
    parked: usize,
    member_keys: Vec<Option<KeyId>>,
}

impl Lanes {
    pub fn new(
        keys: Keys,
        per_key: Vec<bool>,
        keep_order: bool,
        on_full: OnFull,
        max_pending: usize,
    ) -> Lanes {
        let members = per_key.len();
        Lanes {
            keys,
            per_key,
            keep_order,
            on_full,
            max_pending: max_pending.max(1),
            lanes: IdMap::default(),
            timers: BinaryHeap::new(),
            parked: 0,
            member_keys: vec![None; members],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.parked == 0
    }

    /// Lines waiting in lanes (not yet admitted).
    pub fn waiting(&self) -> usize {
        self.parked
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The next retry instant, policy time.
    pub fn next_retry(&self) -> Option<Nanos> {
        self.timers.peek().map(|Reverse((at, _, _))| *at)
    }

    /// Offers every waiting lane again at policy instant `at` at the
    /// latest (after the policy changed, its old retry times may be late).
    pub fn retry_all_at(&mut self, at: Nanos) {
        let timers = std::mem::take(&mut self.timers);
        self.timers = timers
            .into_iter()
            .map(|Reverse((t, line, lane))| Reverse((t.min(at), line, lane)))
            .collect();
    }

    /// Decides what can be decided at real instant `now`: lanes whose
    /// retry has come and lines in `inbox`, in time order. Lines refused in
    /// drop mode are pushed on `dropped`.
    pub fn decide(
        &mut self,
        schedule: &mut Schedule<Vec<u8>>,
        inbox: &mut Inbox,
        now: Nanos,
        dropped: &mut Vec<Vec<u8>>,
    ) -> Step {
        loop {
            let retry = self
                .timers
                .peek()
                .map(|Reverse((at, _, _))| *at)
                .filter(|&at| schedule.real_time(at) <= now);
            let pending = self.parked + schedule.backlog();
            let room = pending < self.max_pending || self.on_full != OnFull::Block;
            let arrival = inbox
                .records
                .front()
                .filter(|_| room)
                .map(|r| schedule.policy_time(r.arrived));
            let step = match (retry, arrival) {
                (Some(r), a) if a.is_none_or(|a| r <= a) => self.retry_lane(schedule, now),
                (_, Some(at)) => {
                    let full = pending >= self.max_pending;
                    self.take_arrival(schedule, inbox, at, full, dropped)
                }
                _ => return Step::Done,
            };
            if let Some(step) = step {
                return step;
            }
        }
    }

    /// Offers again the lane whose retry instant is the first, which has
    /// come by real instant `now`.
    fn retry_lane(&mut self, schedule: &mut Schedule<Vec<u8>>, now: Nanos) -> Option<Step> {
        let Some(Reverse((at, _, lane))) = self.timers.pop() else {
            unreachable!("peeked")
        };
        schedule.settle(at, now);
        self.offer_lane(schedule, lane, at)
    }

    /// Takes the inbox's first line, arrived at policy instant `at`, when
    /// the backlog is `full` or not: it waits behind its lane, or is
    /// offered. `None`: the next can be decided.
    fn take_arrival(
        &mut self,
        schedule: &mut Schedule<Vec<u8>>,
        inbox: &mut Inbox,
        at: Nanos,
        full: bool,
        dropped: &mut Vec<Vec<u8>>,
    ) -> Option<Step> {
        let rec = inbox.records.pop_front().expect("peeked");
        inbox.buffered -= rec.bytes.len();
        if full {
            match self.on_full {
                OnFull::Drop => {
                    self.keys.key_of(&rec.bytes);
                    dropped.push(rec.bytes);
                    return None;
                }
                _ => return Some(Self::put_back(inbox, rec)),
            }
        }
        let key = self.keys.key_of(&rec.bytes);
        let lane = if self.keep_order { 0 } else { key };
        let parked = Parked {
            line: rec.line,
            key,
            arrived: rec.arrived,
            bytes: rec.bytes,
        };
        match self.lanes.get_mut(&lane) {
            Some(q) if !q.is_empty() => {
                q.push_back(parked);
                self.parked += 1;
                None
            }
            _ => self.offer_arrival(schedule, inbox, lane, parked, at, dropped),
        }
    }

    /// Offers a line whose lane is empty at policy instant `at`; refused
    /// for now, it waits at its lane's head (block), is dropped, or ends
    /// the run (fail).
    fn offer_arrival(
        &mut self,
        schedule: &mut Schedule<Vec<u8>>,
        inbox: &mut Inbox,
        lane: KeyId,
        parked: Parked,
        at: Nanos,
        dropped: &mut Vec<Vec<u8>>,
    ) -> Option<Step> {
        self.set_keys(parked.key);
        let offer = schedule.offer_keyed(
            at,
            parked.arrived,
            &self.member_keys,
            parked.line,
            parked.bytes,
        );
        let (retry_at, item) = match offer {
            Offer::Queued { .. } => return None,
            Offer::Full { retry_at, item } => (retry_at, item),
        };
        let back = |item| restore(parked.line, parked.arrived, item);
        let bytes = match (retry_at, self.on_full) {
            (None, _) => {
                Self::put_back(inbox, back(item));
                return Some(Step::Never);
            }
            (Some(r), OnFull::Block) => {
                self.timers.push(Reverse((r, parked.line, lane)));
                item
            }
            (Some(_), OnFull::Drop) => {
                dropped.push(item);
                return None;
            }
            (Some(_), OnFull::Fail) => return Some(Self::put_back(inbox, back(item))),
        };
        self.lanes
            .entry(lane)
            .or_default()
            .push_back(Parked { bytes, ..parked });
        self.parked += 1;
        None
    }

    /// Offers the lines of `lane` at policy instant `at`, head first, until
    /// one is refused (its retry is set) or the lane is empty.
    fn offer_lane(
        &mut self,
        schedule: &mut Schedule<Vec<u8>>,
        lane: KeyId,
        at: Nanos,
    ) -> Option<Step> {
        loop {
            let q = self.lanes.get_mut(&lane)?;
            let Some(head) = q.pop_front() else {
                self.lanes.remove(&lane);
                return None;
            };
            self.parked -= 1;
            self.set_keys(head.key);
            match schedule.offer_keyed(at, head.arrived, &self.member_keys, head.line, head.bytes) {
                Offer::Queued { .. } => {}
                Offer::Full { retry_at, item } => {
                    let q = self.lanes.get_mut(&lane).expect("lane exists");
                    q.push_front(Parked {
                        bytes: item,
                        ..head
                    });
                    self.parked += 1;
                    return match retry_at {
                        Some(r) => {
                            self.timers.push(Reverse((r, head.line, lane)));
                            None
                        }
                        None => Some(Step::Never),
                    };
                }
            }
        }
    }

    fn set_keys(&mut self, key: KeyId) {
        // The policies' stores are indexed by dense ids: lines without a
        // key share the first, and key k takes the one after.
        let id = if key == NO_KEY { 0 } else { key + 1 };
        for (k, &per_key) in self.member_keys.iter_mut().zip(&self.per_key) {
            *k = Some(if per_key { id } else { 0 });
        }
    }

    fn put_back(inbox: &mut Inbox, rec: Record) -> Step {
        let line = rec.line;
        inbox.buffered += rec.bytes.len();
        inbox.records.push_front(rec);
        Step::Full { line }
    }

    /// Empties every lane (at a stop: the lines are unsent), as (input
    /// line, bytes).
    pub fn take_all(&mut self) -> Vec<(u64, Vec<u8>)> {
        self.timers.clear();
        self.parked = 0;
        self.lanes
            .drain()
            .flat_map(|(_, q)| q.into_iter().map(|p| (p.line, p.bytes)))
            .collect()
    }
}

fn restore(line: u64, arrived: Nanos, bytes: Vec<u8>) -> Record {
    Record {
        line,
        arrived,
        bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::pace::keys::KeySource;
    use crate::pace::schedule::{Lateness, Order, Pending, Timing};
    use crate::policy::spec::{KeyChoice, parse_spec};

    const MS: u64 = 1_000_000;

    struct Run {
        schedule: Schedule<Vec<u8>>,
        lanes: Lanes,
        inbox: Inbox,
    }

    /// Lines are "KEY REST"; the key is the first field. `interval` is the
    /// interval the timing keeps (the global one when there is one).
    fn setup(spec: &str, interval: u64, keep_order: bool, on_full: OnFull, max: usize) -> Run {
        let spec = parse_spec(spec).unwrap();
        let per_key = spec
            .members
            .iter()
            .map(|m| m.key != KeyChoice::Global)
            .collect();
        let order = if keep_order {
            Order::Arrival
        } else {
            Order::Release
        };
        let timing = Timing::new(Some(Nanos(interval)), false, Lateness::Average);
        let keys = Keys::new(
            KeySource::Field {
                index: 1,
                sep: None,
            },
            b'\n',
        );
        Run {
            schedule: Schedule::with_order(spec.build(), timing, order),
            lanes: Lanes::new(keys, per_key, keep_order, on_full, max),
            inbox: Inbox::default(),
        }
    }

    impl Run {
        /// Pushes `lines` (a newline added), all arrived at 0, and decides
        /// at 0: the step and the lines dropped.
        fn decide_at_zero<S: AsRef<str>>(&mut self, lines: &[S]) -> (Step, Vec<Vec<u8>>) {
            for line in lines {
                let bytes = format!("{}\n", line.as_ref()).into_bytes();
                self.inbox.push(Nanos::ZERO, bytes);
            }
            let mut dropped = Vec::new();
            let step = self.lanes.decide(
                &mut self.schedule,
                &mut self.inbox,
                Nanos::ZERO,
                &mut dropped,
            );
            (step, dropped)
        }
    }

    fn text(p: &[u8]) -> String {
        String::from_utf8_lossy(p).trim_end().to_string()
    }

    /// Runs to the end on a manual clock: `input` is (arrival ms, line).
    /// Returns (line, written at).
    fn drive(r: &mut Run, input: &[(u64, &str)]) -> Vec<(String, Nanos)> {
        let clock = ManualClock::new();
        let mut next = 0;
        let mut out = Vec::new();
        let mut due: Vec<Pending<Vec<u8>>> = Vec::new();
        let mut dropped = Vec::new();
        loop {
            let now = clock.now();
            while next < input.len() && Nanos(input[next].0 * MS) <= now {
                r.inbox
                    .push(now, format!("{}\n", input[next].1).into_bytes());
                next += 1;
            }
            assert_eq!(
                r.lanes
                    .decide(&mut r.schedule, &mut r.inbox, now, &mut dropped),
                Step::Done
            );
            due.clear();
            r.schedule.take_due(now, &mut due);
            for p in due.drain(..) {
                out.push((text(&p.item), now));
            }
            r.schedule.wrote(now);
            if next == input.len()
                && r.inbox.records.is_empty()
                && r.schedule.backlog() == 0
                && r.lanes.is_empty()
            {
                return out;
            }
            let wake = [
                r.schedule.next_due(),
                r.lanes.next_retry().map(|t| r.schedule.real_time(t)),
                input.get(next).map(|(ms, _)| Nanos(ms * MS)),
            ]
            .into_iter()
            .flatten()
            .min()
            .expect("something to wait for");
            clock.sleep_until(wake.max(Nanos(now.0 + 1)));
        }
    }

    fn at(out: &[(String, Nanos)], line: &str) -> u64 {
        out.iter().find(|(l, _)| l == line).unwrap().1.0 / MS
    }

    #[test]
    fn an_idle_key_overtakes_a_busy_one() {
        let mut r = setup("shaper:rate=2/s", 500 * MS, false, OnFull::Block, 100);
        let input = [(0, "a 1"), (0, "a 2"), (0, "a 3"), (0, "b 1"), (700, "c 1")];
        let out = drive(&mut r, &input);
        let order: Vec<&str> = out.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(order, ["a 1", "b 1", "a 2", "c 1", "a 3"]);
        let times: Vec<u64> = out.iter().map(|(_, t)| t.0 / MS).collect();
        assert_eq!(times, [0, 0, 500, 700, 1000]);
    }

    #[test]
    fn keep_order_blocks_behind_the_head() {
        let mut r = setup("shaper:rate=2/s", 500 * MS, true, OnFull::Block, 100);
        let input = [(0, "a 1"), (0, "a 2"), (0, "b 1"), (0, "a 3")];
        let out = drive(&mut r, &input);
        let order: Vec<&str> = out.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(order, ["a 1", "a 2", "b 1", "a 3"]);
        // b waits for a 2 (head-of-line), then goes with it.
        assert_eq!(at(&out, "b 1"), 500);
        assert_eq!(at(&out, "a 3"), 1000);
    }

    #[test]
    fn per_key_and_global_rates_both_hold() {
        // Three hosts at 2/s each, 5/s in all.
        let mut r = setup(
            "shaper:rate=2/s + shaper:rate=5/s,key=none",
            200 * MS,
            false,
            OnFull::Block,
            100,
        );
        let mut input = Vec::new();
        let names: Vec<String> = (1..=5)
            .flat_map(|i| ["a", "b", "c"].map(|h| format!("{h} {i}")))
            .collect();
        for n in &names {
            input.push((0, n.as_str()));
        }
        let out = drive(&mut r, &input);
        assert_eq!(out.len(), 15);
        for w in out.windows(2) {
            assert!(w[1].1.0 - w[0].1.0 >= 200 * MS, "{w:?}");
        }
        for host in ["a", "b", "c"] {
            let mine: Vec<_> = out.iter().filter(|(l, _)| l.starts_with(host)).collect();
            for w in mine.windows(2) {
                assert!(w[1].1.0 - w[0].1.0 >= 500 * MS, "{w:?}");
                // Each key keeps its own order.
                assert!(w[0].0 < w[1].0);
            }
        }
        // The global rate is the binding one: 14 intervals of 200 ms.
        assert_eq!(out[14].1, Nanos(2_800 * MS));
    }

    #[test]
    fn the_pending_bound_stops_taking_input() {
        let mut r = setup(
            "shaper:rate=1/s,burst=1",
            1_000 * MS,
            false,
            OnFull::Block,
            3,
        );
        let lines: Vec<String> = (0..6).map(|i| format!("a {i}")).collect();
        let (step, dropped) = r.decide_at_zero(&lines);
        assert_eq!(step, Step::Done);
        // Two admitted (burst 1), one waiting; three left unread.
        assert_eq!(r.schedule.backlog(), 2);
        assert_eq!(r.lanes.parked, 1);
        assert_eq!(r.inbox.records.len(), 3);
        assert!(dropped.is_empty());
        // At a stop, what waited is unsent, in input order with its line.
        let waiting = r.lanes.take_all();
        assert_eq!(waiting, [(3, b"a 2\n".to_vec())]);
    }

    #[test]
    fn drop_and_fail_refuse_per_key() {
        let mut r = setup("shaper:rate=1/s", 1_000 * MS, false, OnFull::Drop, 3);
        let (step, dropped) = r.decide_at_zero(&["a 1", "a 2", "b 1", "c 1", "d 1"]);
        assert_eq!(step, Step::Done);
        // a 2 is refused by its key; d 1 finds three lines pending.
        let dropped: Vec<String> = dropped.iter().map(|d| text(d)).collect();
        assert_eq!(dropped, ["a 2", "d 1"]);
        assert_eq!(r.schedule.backlog(), 3);
        assert_eq!(r.lanes.keys().seen(), 4);

        let mut r = setup("shaper:rate=1/s", 1_000 * MS, false, OnFull::Fail, 10);
        let (step, _) = r.decide_at_zero(&["a 1", "b 1", "a 2", "c 1"]);
        assert_eq!(step, Step::Full { line: 3 });
        // The refused line is back in front, unsent.
        assert_eq!(r.inbox.records.len(), 2);
        assert_eq!(r.inbox.records[0].line, 3);
    }
}
