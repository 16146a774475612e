//! The one reservation rule shared by every schedule kept outside a single
//! process (a state file, Redis) and by the in-process fallback.
//!
//! Time is whole microseconds on the authority's clock (the host's wall
//! clock read under the file lock, or Redis `TIME`). The state is one
//! number, `next_free`: the first free slot. With `I` the interval, `D` the
//! longest delay a caller accepts and `n` the slots wanted:
//!
//! ```text
//! tat   = state (0 when missing or unreadable)
//! if tat > now + D + n·I: tat = now      an impossible value: a clock step back, or garbage
//! start = max(tat, now)                   no credit piles up while idle
//! delay = start − now
//! if delay > D: REFUSED(retry_after = delay − D), state unchanged
//! state = start + n·I; GRANTED(delay)
//! ```
//!
//! Each call reserves its own slots, so nobody polls: a granted caller
//! sleeps `delay` and acts. The Redis script is a line-by-line
//! transcription of [`reserve`]; both are tested on the same sequences.
//! There is no initial burst credit, exactly as the in-process shaper:
//! `release = max(now, next_free)`.

/// One microsecond in nanoseconds.
pub const MICROS: u64 = 1_000;

/// What a reservation asks for, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// `I`: one slot, µs (≥ 1).
    pub interval: u64,
    /// `D`: the longest delay accepted, µs.
    pub max_delay: u64,
    /// `n`: slots reserved at once (≥ 1).
    pub slots: u64,
}

/// The answer to one reservation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The slots start `delay` µs after the authority's `now`.
    Granted { delay: u64 },
    /// No slot within `D`; the same call succeeds `retry_after` µs later
    /// if nobody else reserves meanwhile. The state did not change.
    Refused { retry_after: u64 },
}

/// Reserves `params.slots` slots at `now` (µs) against `state`
/// (`next_free`, µs; 0 when missing). Returns the new state and the outcome.
pub fn reserve(state: u64, now: u64, params: Params) -> (u64, Outcome) {
    let span = params.interval.saturating_mul(params.slots);
    let mut tat = state;
    if tat > now.saturating_add(params.max_delay).saturating_add(span) {
        tat = now;
    }
    let start = tat.max(now);
    let delay = start - now;
    if delay > params.max_delay {
        return (
            state,
            Outcome::Refused {
                retry_after: delay - params.max_delay,
            },
        );
    }
    (start.saturating_add(span), Outcome::Granted { delay })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::testing::Rng;

    /// The plan the tests reserve with: 5 ms slots, up to 40 ms ahead.
    pub(in crate::pace::share) const P: Params = Params {
        interval: 5_000,
        max_delay: 40_000,
        slots: 1,
    };

    #[test]
    fn a_fresh_state_grants_at_once_then_one_slot_per_interval() {
        let now = 1_000_000;
        let mut state = 0;
        for k in 0..=8 {
            let (s, out) = reserve(state, now, P);
            assert_eq!(out, Outcome::Granted { delay: k * 5_000 });
            state = s;
        }
        // The ninth waiting slot would be 45 ms away: over D = 40 ms.
        assert_eq!(
            reserve(state, now, P),
            (state, Outcome::Refused { retry_after: 5_000 })
        );
        // And it is granted exactly when the refusal said.
        assert_eq!(
            reserve(state, now + 5_000, P).1,
            Outcome::Granted { delay: 40_000 }
        );
    }

    #[test]
    fn spacing_is_at_least_the_interval_and_delay_at_most_d() {
        for seed in 1..40 {
            let mut state = 0;
            let mut last_slot: Option<u64> = None;
            let mut rng = Rng(seed);
            let mut now = 10_000_000;
            for _ in 0..2_000 {
                now += rng.below(8_000);
                let (s, out) = reserve(state, now, P);
                match out {
                    Outcome::Granted { delay } => {
                        assert!(delay <= P.max_delay);
                        let slot = now + delay;
                        if let Some(prev) = last_slot {
                            assert!(slot >= prev + P.interval, "{prev} then {slot}");
                        }
                        last_slot = Some(slot);
                    }
                    Outcome::Refused { retry_after } => {
                        assert_eq!(s, state, "a refusal changes nothing");
                        assert!(retry_after > 0);
                    }
                }
                state = s;
            }
        }
    }

    #[test]
    fn a_refusal_leaves_the_state_unchanged() {
        let state = 1_000_000 + 45_000;
        let (s, out) = reserve(state, 1_000_000, P);
        assert_eq!(s, state);
        assert_eq!(out, Outcome::Refused { retry_after: 5_000 });
    }

    #[test]
    fn the_clamp_resets_an_impossible_state() {
        let now = 5_000_000;
        // D + I ahead is the most a real schedule can hold: kept.
        let (s, out) = reserve(now + 45_000, now, P);
        assert_eq!(out, Outcome::Refused { retry_after: 5_000 });
        assert_eq!(s, now + 45_000);
        // One microsecond more is a clock step back or garbage: reset.
        let (s, out) = reserve(now + 45_001, now, P);
        assert_eq!(out, Outcome::Granted { delay: 0 });
        assert_eq!(s, now + 5_000);
        // Garbage far in the future too.
        assert_eq!(
            reserve(u64::MAX, now, P),
            (now + 5_000, Outcome::Granted { delay: 0 })
        );
    }

    #[test]
    fn idle_time_banks_no_credit() {
        let (state, _) = reserve(0, 1_000_000, P);
        // An hour later: one slot now, then one per interval, as if fresh.
        let later = 1_000_000 + 3_600_000_000;
        let (state, a) = reserve(state, later, P);
        let (_, b) = reserve(state, later, P);
        assert_eq!(a, Outcome::Granted { delay: 0 });
        assert_eq!(b, Outcome::Granted { delay: 5_000 });
    }

    #[test]
    fn several_slots_at_once() {
        let p = Params { slots: 3, ..P };
        let (state, out) = reserve(0, 100, p);
        assert_eq!((state, out), (15_100, Outcome::Granted { delay: 0 }));
        let (state, out) = reserve(state, 100, p);
        assert_eq!((state, out), (30_100, Outcome::Granted { delay: 15_000 }));
        let (state, out) = reserve(state, 100, p);
        assert_eq!((state, out), (45_100, Outcome::Granted { delay: 30_000 }));
        // 45 ms out is over D: refused until 5 ms have passed.
        assert_eq!(
            reserve(state, 100, p),
            (state, Outcome::Refused { retry_after: 5_000 })
        );
        // The clamp bound grows with n: D + n·I = 55 ms ahead is kept.
        assert_eq!(reserve(55_100, 100, p).0, 55_100);
        assert_eq!(reserve(55_101, 100, p).0, 15_100);
    }

    #[test]
    fn zero_delay_is_pure_allow_or_deny() {
        let p = Params { max_delay: 0, ..P };
        let (state, out) = reserve(0, 0, p);
        assert_eq!(out, Outcome::Granted { delay: 0 });
        assert_eq!(
            reserve(state, 1_000, p).1,
            Outcome::Refused { retry_after: 4_000 }
        );
        assert_eq!(reserve(state, 5_000, p).1, Outcome::Granted { delay: 0 });
    }

    #[test]
    fn matches_the_in_process_shaper_slot_for_slot() {
        // shaper(rate, burst=B) with D = B·I grants the same release instants.
        use crate::policy::{Decision, Policy, Shaper, shaper::ShaperBound, shaper::ShaperState};
        use crate::rate::Rate;
        use crate::time::Nanos;
        let rate = Rate::new(200, Nanos::from_secs(1)).unwrap();
        let shaper = Shaper::new(rate, ShaperBound::Burst(8));
        let mut ss = ShaperState::default();
        let mut state = 0;
        let mut rng = Rng(7);
        let mut now = 1_000_000u64;
        for _ in 0..5_000 {
            now += rng.below(7_000);
            let d = shaper.decide(&mut ss, Nanos(now * MICROS), 1);
            let (s, out) = reserve(state, now, P);
            state = s;
            match (d, out) {
                (Decision::Admit { release }, Outcome::Granted { delay }) => {
                    assert_eq!(release, Nanos((now + delay) * MICROS));
                }
                (Decision::Refuse { retry_at: Some(r) }, Outcome::Refused { retry_after }) => {
                    assert_eq!(r, Nanos((now + retry_after) * MICROS));
                }
                other => panic!("at {now}: {other:?}"),
            }
        }
    }
}
