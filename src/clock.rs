//! Clocks for `pace`: monotonic nanoseconds since the clock was made.
//!
//! The policy core never reads a clock; `pace` does, through [`Clock`], so
//! the schedule logic can run on a `ManualClock` in tests. Readings are
//! [`Nanos`] since the clock's start and never go backwards. `sleep_until`
//! takes an absolute instant: a caller computes deadlines from its schedule,
//! so a late wake-up (sleep overshoot) delays one release and is never
//! carried into the next.

use crate::time::Nanos;
#[cfg(test)]
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A monotonic clock in nanoseconds.
pub trait Clock {
    /// The current reading, in ns since the clock's start.
    fn now(&self) -> Nanos;
    /// Returns at the first reading ≥ `t` (at once when `t` has passed).
    fn sleep_until(&self, t: Nanos);
}

/// The operating system's monotonic clock (`CLOCK_MONOTONIC` on Linux).
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    start: Instant,
}

impl MonotonicClock {
    pub fn new() -> MonotonicClock {
        MonotonicClock {
            start: Instant::now(),
        }
    }

    /// The reading of an `Instant` (0 for one before the start).
    pub fn reading(&self, i: Instant) -> Nanos {
        Nanos::from_duration(i.saturating_duration_since(self.start))
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Nanos {
        self.reading(Instant::now())
    }

    fn sleep_until(&self, t: Nanos) {
        // `thread::sleep` may return early on a signal; loop on the reading.
        loop {
            let now = self.now();
            if now >= t {
                return;
            }
            std::thread::sleep((t.saturating_sub(now)).to_duration());
        }
    }
}

/// A clock that moves only when told, for tests of the schedules:
/// `sleep_until` jumps to the deadline plus a configurable overshoot, and
/// `advance` simulates a stall.
#[cfg(test)]
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
    overshoot: AtomicU64,
}

#[cfg(test)]
impl ManualClock {
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// Every later `sleep_until` wakes this much after its deadline, as a
    /// real timer does.
    pub fn set_overshoot(&self, d: Nanos) {
        self.overshoot.store(d.0, Ordering::Relaxed);
    }

    /// Moves the clock forward by `d` (a stall, or time passing).
    pub fn advance(&self, d: Nanos) {
        self.now.fetch_add(d.0, Ordering::Relaxed);
    }

    /// Sets the reading; never moves it backwards.
    pub fn set(&self, t: Nanos) {
        self.now.fetch_max(t.0, Ordering::Relaxed);
    }
}

#[cfg(test)]
impl Clock for ManualClock {
    fn now(&self) -> Nanos {
        Nanos(self.now.load(Ordering::Relaxed))
    }

    fn sleep_until(&self, t: Nanos) {
        if t > self.now() {
            let late = self.overshoot.load(Ordering::Relaxed);
            self.set(Nanos(t.0.saturating_add(late)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn monotonic_sleeps_at_least_until_the_deadline() {
        let c = MonotonicClock::new();
        let t = c.now().saturating_add(Nanos::from_millis(2));
        c.sleep_until(t);
        assert!(c.now() >= t);
        // A deadline in the past returns at once.
        c.sleep_until(Nanos::ZERO);
        // An instant before the clock's start reads 0.
        assert_eq!(c.reading(c.start - Duration::from_millis(1)), Nanos::ZERO);
    }

    #[test]
    fn manual_clock_jumps_with_overshoot_and_never_goes_back() {
        let c = ManualClock::new();
        c.sleep_until(Nanos(100));
        assert_eq!(c.now(), Nanos(100));
        c.set_overshoot(Nanos(7));
        c.sleep_until(Nanos(200));
        assert_eq!(c.now(), Nanos(207));
        c.sleep_until(Nanos(150));
        assert_eq!(c.now(), Nanos(207));
        c.set(Nanos(10));
        assert_eq!(c.now(), Nanos(207));
        c.advance(Nanos(3));
        assert_eq!(c.now(), Nanos(210));
    }
}
