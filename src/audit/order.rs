//! Re-sorting slightly out-of-order rows. Rows are held until no row still
//! to come may precede them: a row may be at most `window` older than the
//! newest row seen so far, so a held row at `t ≤ newest − window` is ready.
//! A row older than that is an error. Equal timestamps keep file order.
//! Memory is the rows of one window.

use super::input::Event;
use crate::time::Nanos;
use std::collections::VecDeque;

pub struct Reorder {
    window: Nanos,
    held: VecDeque<Event>,
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
            held: VecDeque::new(),
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
        match self.held.back() {
            Some(last) if last.at > ev.at => {
                // After every held row at the same instant: file order.
                let at = self.held.partition_point(|e| e.at <= ev.at);
                self.held.insert(at, ev);
                self.reordered += 1;
                self.max_behind = self.max_behind.max(Nanos(self.newest.0 - ev.at.0));
            }
            _ => self.held.push_back(ev),
        }
        self.newest = self.newest.max(ev.at);
        Ok(())
    }

    /// The next row no later row can precede.
    #[inline]
    pub fn pop_ready(&mut self) -> Option<Event> {
        let front = self.held.front()?;
        if front.at.saturating_add(self.window) <= self.newest {
            self.held.pop_front()
        } else {
            None
        }
    }

    /// The next held row, at the end of input.
    pub fn pop_any(&mut self) -> Option<Event> {
        self.held.pop_front()
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
}
