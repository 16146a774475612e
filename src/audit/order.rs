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
struct Held {
    seq: u64,
    ev: Event,
}

impl Held {
    fn key(&self) -> (Nanos, u64) {
        (self.ev.at, self.seq)
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Held {}

impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Held {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

pub struct Reorder {
    window: Nanos,
    /// Rows that arrived in time order, in that order.
    in_order: VecDeque<Held>,
    /// Rows that arrived after a later row, earliest first.
    late: BinaryHeap<Reverse<Held>>,
    seq: u64,
    newest: Nanos,
    /// Rows that arrived before a newer row and were moved.
    pub reordered: u64,
    /// How far behind the newest row seen a row came, at most.
    pub max_behind: Nanos,
}

/// A row older than the window allows.
pub struct TooLate {
    pub newest: Nanos,
}

impl Reorder {
    pub fn new(window: Nanos) -> Reorder {
        Reorder {
            window,
            in_order: VecDeque::new(),
            late: BinaryHeap::new(),
            seq: 0,
            newest: Nanos::ZERO,
            reordered: 0,
            max_behind: Nanos::ZERO,
        }
    }

    /// Holds `ev` in time order.
    pub fn push(&mut self, ev: Event) -> Result<(), TooLate> {
        if ev.at.saturating_add(self.window) < self.newest {
            return Err(TooLate {
                newest: self.newest,
            });
        }
        self.seq += 1;
        let held = Held { seq: self.seq, ev };
        match self.in_order.back() {
            Some(last) if last.ev.at > ev.at => {
                self.late.push(Reverse(held));
                self.reordered += 1;
                self.max_behind = self.max_behind.max(Nanos(self.newest.0 - ev.at.0));
            }
            _ => self.in_order.push_back(held),
        }
        self.newest = self.newest.max(ev.at);
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

    /// The next row no later row can precede.
    #[inline]
    pub fn pop_ready(&mut self) -> Option<Event> {
        let late = self.late_first()?;
        let at = if late {
            self.late.peek()?.0.ev.at
        } else {
            self.in_order.front()?.ev.at
        };
        if at.saturating_add(self.window) <= self.newest {
            self.pop(late)
        } else {
            None
        }
    }

    fn pop(&mut self, late: bool) -> Option<Event> {
        if late {
            self.late.pop().map(|Reverse(h)| h.ev)
        } else {
            self.in_order.pop_front().map(|h| h.ev)
        }
    }

    /// The next held row, at the end of input.
    pub fn pop_any(&mut self) -> Option<Event> {
        let late = self.late_first()?;
        self.pop(late)
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
            keys: [0; 4],
        }
    }

    #[test]
    fn resorts_within_the_window_and_keeps_ties_in_file_order() {
        let mut r = Reorder::new(Nanos(10));
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
    fn a_row_older_than_the_window_is_refused() {
        let mut r = Reorder::new(Nanos(10));
        r.push(ev(100, 0)).ok().unwrap();
        assert!(r.push(ev(90, 1)).is_ok());
        let Err(e) = r.push(ev(89, 2)) else {
            panic!("accepted")
        };
        assert_eq!(e.newest, Nanos(100));
    }

    #[test]
    fn agrees_with_a_stable_sort_on_random_interleavings() {
        // A small xorshift: the same cases every run.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..200 {
            let window = next() % 50;
            let mut r = Reorder::new(Nanos(window));
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
