//! Re-sorting slightly out-of-order rows. Rows are held until no row still
//! to come may precede them: a row may be at most `window` older than the
//! newest row seen so far, so a held row at `t ≤ newest − window` is ready.
//! A row older than that is an error. Equal timestamps keep file order.
//! Memory is the rows of one window.
//!
//! Rows that arrive in order (the common case) are appended to a queue in
//! O(1); a row that arrives after a later one goes to a min-heap in
//! O(log n). The next row out is the earlier of the two heads by (time,
//! arrival), so ties keep file order and no insertion is ever linear: a
//! day-long window over many interleaved servers stays O(n log n).

use super::input::Event;
use crate::time::Nanos;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// A held row with its arrival number, ordered by (time, arrival).
struct Held<T> {
    seq: u64,
    ev: T,
}

impl<T: AsRef<Event>> Held<T> {
    fn key(&self) -> (Nanos, u64) {
        (self.ev.as_ref().at, self.seq)
    }
}

impl<T: AsRef<Event>> PartialEq for Held<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T: AsRef<Event>> Eq for Held<T> {}

impl<T: AsRef<Event>> PartialOrd for Held<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: AsRef<Event>> Ord for Held<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// Rows re-sorted within a window: [`Event`]s, or anything that carries
/// one (a row with what it still needs from its batch).
pub struct Reorder<T = Event> {
    window: Nanos,
    /// Rows that arrived in time order, in that order.
    in_order: VecDeque<Held<T>>,
    /// Rows that arrived after a later row, earliest first.
    late: BinaryHeap<Reverse<Held<T>>>,
    seq: u64,
    newest: Nanos,
    /// The file of the newest row.
    newest_file: u32,
    /// Rows that arrived before a newer row and were moved.
    pub reordered: u64,
    /// How far behind the newest row seen a row came, at most.
    pub max_behind: Nanos,
    /// The last row jumped ahead of the newest by more than the window:
    /// a far-future row out of place, unless the next row follows it.
    jump: Option<Jump<T>>,
}

/// A row that moved the newest time ahead by more than the window.
#[derive(Clone)]
struct Jump<T> {
    seq: u64,
    ev: T,
    /// The newest time before it.
    before: Nanos,
}

/// A row older than the window allows.
pub struct TooLate<T> {
    pub newest: Nanos,
    /// The file of the newest row.
    pub newest_file: u32,
    /// The row just before it, when that row jumped ahead by more than the
    /// window: more likely the one out of place. It and `before` (the
    /// newest time before it).
    pub jumped: Option<(Event, Nanos)>,
    /// The row refused, handed back.
    pub row: T,
}

/// The rest of a log after a row too late for the window, read only to
/// learn what the whole log needs: its largest lateness, and whether a row
/// that jumped far ahead just before is ever caught up with (if not, no
/// window explains it: that row is out of place).
pub struct Scan {
    newest: Nanos,
    /// The largest lateness (newest time − the row's), and the row's file
    /// and line.
    pub needed: Nanos,
    pub worst: (u32, u64),
    /// The row that jumped ahead before the first late row, and whether a
    /// later row came up to its time.
    pub jumped: Option<(Event, bool)>,
}

impl Scan {
    /// Starts at the refused `row`: the newest time before it, the
    /// largest lateness so far, the row that jumped ahead before it.
    pub fn start(newest: Nanos, max_behind: Nanos, row: &Event, jumped: Option<Event>) -> Scan {
        let mut scan = Scan {
            newest,
            needed: max_behind,
            worst: (row.file, row.line),
            jumped: jumped.map(|j| (j, false)),
        };
        scan.see(row);
        scan
    }

    /// Sees the next row.
    #[inline]
    pub fn see(&mut self, ev: &Event) {
        if let Some((j, caught)) = &mut self.jumped
            && ev.at >= j.at
        {
            *caught = true;
        }
        if ev.at < self.newest {
            let behind = Nanos(self.newest.0 - ev.at.0);
            if behind > self.needed {
                self.needed = behind;
                self.worst = (ev.file, ev.line);
            }
        } else {
            self.newest = ev.at;
        }
    }

    /// The row that jumped ahead when no later row came up to its time.
    pub fn out_of_place(&self) -> Option<Event> {
        self.jumped.and_then(|(j, caught)| (!caught).then_some(j))
    }
}

impl AsRef<Event> for Event {
    fn as_ref(&self) -> &Event {
        self
    }
}

impl<T: AsRef<Event> + Clone> Reorder<T> {
    pub fn new(window: Nanos) -> Reorder<T> {
        Reorder {
            window,
            in_order: VecDeque::new(),
            late: BinaryHeap::new(),
            seq: 0,
            newest: Nanos::ZERO,
            newest_file: 0,
            reordered: 0,
            max_behind: Nanos::ZERO,
            jump: None,
        }
    }

    /// Sets the window before the first row (when it depends on what the
    /// log turns out to be).
    pub fn set_window(&mut self, window: Nanos) {
        debug_assert_eq!(self.seq, 0);
        self.window = window;
    }

    /// Holds `ev` in time order.
    pub fn push(&mut self, row: T) -> Result<(), TooLate<T>> {
        let ev = *row.as_ref();
        if ev.at.saturating_add(self.window) < self.newest {
            return Err(TooLate {
                newest: self.newest,
                newest_file: self.newest_file,
                jumped: self.jump.as_ref().map(|j| (*j.ev.as_ref(), j.before)),
                row,
            });
        }
        self.seq += 1;
        // A row far ahead of every row so far is held as a jump until the
        // next row shows whether the log really moved on.
        self.jump =
            (self.seq > 1 && ev.at > self.newest.saturating_add(self.window)).then(|| Jump {
                seq: self.seq,
                ev: row.clone(),
                before: self.newest,
            });
        let held = Held {
            seq: self.seq,
            ev: row,
        };
        match self.in_order.back() {
            Some(last) if last.ev.as_ref().at > ev.at => {
                self.late.push(Reverse(held));
                self.reordered += 1;
            }
            _ => self.in_order.push_back(held),
        }
        if ev.at < self.newest {
            self.max_behind = self.max_behind.max(Nanos(self.newest.0 - ev.at.0));
        } else {
            self.newest = ev.at;
            self.newest_file = ev.file;
        }
        Ok(())
    }

    /// Whether the next row comes from the late heap.
    #[inline]
    fn late_first(&self) -> Option<bool> {
        match (self.in_order.front(), self.late.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            (Some(a), Some(Reverse(b))) => Some(b < a),
        }
    }

    /// Takes back the row that jumped ahead when the next one was too
    /// late for it (it is out of place): the newest time is as before it.
    pub fn drop_jump(&mut self) -> Option<T> {
        let j = self.jump.take()?;
        match self.in_order.back() {
            Some(h) if h.seq == j.seq => {
                self.newest = j.before;
                self.in_order.pop_back().map(|h| h.ev)
            }
            _ => None,
        }
    }

    /// The next row no later row can precede.
    #[inline]
    pub fn pop_ready(&mut self) -> Option<T> {
        let late = self.late_first()?;
        let at = if late {
            self.late.peek()?.0.ev.as_ref().at
        } else {
            self.in_order.front()?.ev.as_ref().at
        };
        // While a jump is unconfirmed, rows go out as if it had not come.
        let newest = self.jump.as_ref().map_or(self.newest, |j| j.before);
        if at.saturating_add(self.window) <= newest {
            self.pop(late)
        } else {
            None
        }
    }

    /// Holds the longest run of `rows` from the start that arrive in time
    /// order, none more than the window past the newest row before it (so
    /// none is late, none a jump): each as `push` would hold it, appended
    /// in one go. How many it held; the caller pushes the next row.
    pub fn push_in_order(&mut self, rows: &[T]) -> usize {
        let mut newest = self.newest;
        let mut first = self.seq == 0;
        let n = rows
            .iter()
            .take_while(|r| {
                let at = r.as_ref().at;
                // The very first row cannot be a jump.
                let fits = at >= newest && (first || at <= newest.saturating_add(self.window));
                first = false;
                if fits {
                    newest = at;
                }
                fits
            })
            .count();
        if n > 0 {
            let seq = self.seq;
            self.in_order.extend(
                rows[..n]
                    .iter()
                    .zip(seq + 1..)
                    .map(|(r, seq)| Held { seq, ev: r.clone() }),
            );
            self.seq += n as u64;
            self.newest = newest;
            self.newest_file = rows[n - 1].as_ref().file;
            self.jump = None;
        }
        n
    }

    /// Moves the rows `pop_ready` would give, at most `room` of them, to
    /// `out`, in their order: runs of rows that arrived in order in one
    /// go, up to the first of the late ones; how many.
    pub fn pop_ready_into(&mut self, out: &mut Vec<T>, room: usize) -> usize {
        // While a jump is unconfirmed, rows go out as if it had not come.
        let newest = self.jump.as_ref().map_or(self.newest, |j| j.before);
        let window = self.window;
        let ready = |h: &Held<T>| h.ev.as_ref().at.saturating_add(window) <= newest;
        let mut n = 0;
        while n < room {
            let first_late = self.late.peek().map(|Reverse(h)| h.key());
            let run = self
                .in_order
                .partition_point(|h| ready(h) && first_late.is_none_or(|l| h.key() < l))
                .min(room - n);
            if run > 0 {
                out.extend(self.in_order.drain(..run).map(|h| h.ev));
                n += run;
                continue;
            }
            // The late heap's first comes next, if it is ready (when it is
            // not, no row that arrived in order after it is either).
            match self.late.peek() {
                Some(Reverse(h)) if ready(h) => {
                    let Reverse(h) = self.late.pop().expect("peeked");
                    out.push(h.ev);
                    n += 1;
                }
                _ => break,
            }
        }
        n
    }

    fn pop(&mut self, late: bool) -> Option<T> {
        if late {
            self.late.pop().map(|Reverse(h)| h.ev)
        } else {
            self.in_order.pop_front().map(|h| h.ev)
        }
    }

    /// The largest lateness that would be allowed.
    pub fn window(&self) -> Nanos {
        self.window
    }

    /// The next held row, at the end of input.
    pub fn pop_any(&mut self) -> Option<T> {
        let late = self.late_first()?;
        self.pop(late)
    }

    /// The next held row, ready or not: the one `pop_any` gives.
    pub fn peek(&self) -> Option<&T> {
        if self.late_first()? {
            self.late.peek().map(|Reverse(h)| &h.ev)
        } else {
            self.in_order.front().map(|h| &h.ev)
        }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.in_order.len() + self.late.len()
    }

    /// Whether no row is held.
    pub fn is_empty(&self) -> bool {
        self.in_order.is_empty() && self.late.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(at: u64, row: u64) -> Event {
        Event {
            at: Nanos(at),
            row,
            line: row + 1,
            file: 0,
            cost: 1,
            keys: crate::ingest::input::first_key(0),
        }
    }

    #[test]
    fn resorts_within_the_window_and_keeps_ties_in_file_order() {
        let mut r = Reorder::<Event>::new(Nanos(10));
        let mut out = Vec::new();
        for (i, t) in [5u64, 3, 5, 4, 20, 12, 30].into_iter().enumerate() {
            r.push(ev(t, i as u64)).ok().unwrap();
            while let Some(e) = r.pop_ready() {
                out.push((e.at.0, e.row));
            }
        }
        while let Some(e) = r.pop_any() {
            out.push((e.at.0, e.row));
        }
        assert_eq!(
            out,
            [(3, 1), (4, 3), (5, 0), (5, 2), (12, 5), (20, 4), (30, 6)]
        );
        assert_eq!(r.reordered, 3);
        assert_eq!(r.max_behind, Nanos(8));
    }

    #[test]
    fn peek_shows_the_row_pop_any_gives() {
        let mut r = Reorder::<Event>::new(Nanos(10));
        assert!(r.peek().is_none());
        for (i, t) in [5u64, 3, 7, 3].into_iter().enumerate() {
            r.push(ev(t, i as u64)).ok().unwrap();
        }
        assert_eq!(r.len(), 4);
        let mut out = Vec::new();
        while let Some(&e) = r.peek() {
            assert_eq!(r.pop_any(), Some(e));
            out.push(e.row);
        }
        assert_eq!(out, [1, 3, 0, 2]);
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn a_row_older_than_the_window_is_refused() {
        let mut r = Reorder::<Event>::new(Nanos(10));
        r.push(ev(100, 0)).ok().unwrap();
        assert!(r.push(ev(90, 1)).is_ok());
        let Err(e) = r.push(ev(89, 2)) else {
            panic!("accepted")
        };
        assert_eq!(e.newest, Nanos(100));
        assert!(e.jumped.is_none());
    }

    #[test]
    fn a_row_far_ahead_is_taken_back_when_the_next_is_too_late_for_it() {
        let mut r = Reorder::<Event>::new(Nanos(10));
        let mut out = Vec::new();
        for (i, t) in [100u64, 105, 99].into_iter().enumerate() {
            r.push(ev(t, i as u64)).ok().unwrap();
        }
        r.push(ev(1_000_000, 3)).ok().unwrap();
        // Nothing goes out on the strength of the jump alone.
        assert!(r.pop_ready().is_none());
        let Err(e) = r.push(ev(106, 4)) else {
            panic!("accepted")
        };
        let (jumped, before) = e.jumped.unwrap();
        assert_eq!((jumped.row, before), (3, Nanos(105)));
        assert_eq!(r.drop_jump().map(|e| e.row), Some(3));
        r.push(ev(106, 4)).ok().unwrap();
        while let Some(e) = r.pop_any() {
            out.push(e.row);
        }
        assert_eq!(out, [2, 0, 1, 4]);
        // A real jump (a gap in the log) is confirmed by the next row.
        let mut r = Reorder::<Event>::new(Nanos(10));
        r.push(ev(100, 0)).ok().unwrap();
        r.push(ev(5000, 1)).ok().unwrap();
        r.push(ev(5001, 2)).ok().unwrap();
        assert_eq!(r.pop_ready().map(|e| e.row), Some(0));
        assert!(r.push(ev(101, 3)).err().unwrap().jumped.is_none());
    }

    /// Rows through `push` and `pop_ready` one at a time, and through
    /// `push_in_order` and `pop_ready_into` where they apply: the same rows
    /// out in the same order, the same refusals.
    #[test]
    fn rows_held_in_bulk_come_out_as_one_by_one() {
        let mut rng = crate::testing::Rng(0x6275_6c6b);
        for case in 0..300 {
            let window = rng.below(40);
            let mut rows = Vec::new();
            let mut base = rng.below(1000);
            for i in 0..(20 + rng.below(200)) {
                base += rng.below(6);
                let t = match rng.below(20) {
                    0 => base.saturating_sub(rng.below(window + 10)),
                    1 => base + window + rng.below(30),
                    _ => base,
                };
                rows.push(ev(t, i));
            }
            let mut one = Reorder::<Event>::new(Nanos(window));
            let mut expect = Vec::new();
            for &row in &rows {
                match one.push(row) {
                    Ok(()) => expect.push(None),
                    Err(e) => expect.push(Some(e.row.row)),
                }
                while let Some(e) = one.pop_ready() {
                    expect.push(Some(e.row + 1000));
                }
            }
            let mut bulk = Reorder::<Event>::new(Nanos(window));
            let mut got = Vec::new();
            let mut rest = &rows[..];
            let mut out = Vec::new();
            while !rest.is_empty() {
                let n = bulk.push_in_order(rest);
                let mut pushed = vec![None; n];
                if n == 0 {
                    pushed.push(bulk.push(rest[0]).err().map(|e| e.row.row));
                }
                rest = &rest[pushed.len()..];
                // One row at a time as `pop_ready` would, after each push.
                for p in pushed {
                    got.push(p);
                    let room = 1 + rng.below(3) as usize;
                    while bulk.pop_ready_into(&mut out, room) == room {}
                    got.extend(out.drain(..).map(|e: Event| Some(e.row + 1000)));
                }
            }
            // Pops may come a push later in bulk: compare what went out
            // and in which order, and the refusals.
            let outs = |v: &[Option<u64>]| v.iter().flatten().copied().collect::<Vec<_>>();
            assert_eq!(outs(&got), outs(&expect), "case {case}");
            assert_eq!(
                (bulk.reordered, bulk.max_behind),
                (one.reordered, one.max_behind)
            );
            let rest_one: Vec<u64> = std::iter::from_fn(|| one.pop_any())
                .map(|e| e.row)
                .collect();
            let rest_bulk: Vec<u64> = std::iter::from_fn(|| bulk.pop_any())
                .map(|e| e.row)
                .collect();
            assert_eq!(rest_bulk, rest_one, "case {case}");
        }
    }

    #[test]
    fn agrees_with_a_stable_sort_on_random_interleavings() {
        // Seeded: the same cases every run.
        let mut rng = crate::testing::Rng(0x9e37_79b9_7f4a_7c15);
        let mut next = move || rng.next();
        for case in 0..200 {
            let window = next() % 50;
            let mut r = Reorder::<Event>::new(Nanos(window));
            let mut accepted = Vec::new();
            let mut out = Vec::new();
            let mut base = 1000u64;
            for i in 0..(50 + case) {
                base += next() % 7;
                let t = base - next() % (window + 3).min(base);
                if r.push(ev(t, i)).is_ok() {
                    accepted.push((t, i));
                }
                while let Some(e) = r.pop_ready() {
                    out.push((e.at.0, e.row));
                }
            }
            while let Some(e) = r.pop_any() {
                out.push((e.at.0, e.row));
            }
            // Rows come out by time, ties in arrival order: a stable sort.
            accepted.sort_by_key(|&(t, _)| t);
            assert_eq!(out, accepted, "case {case}, window {window}");
        }
    }
}
