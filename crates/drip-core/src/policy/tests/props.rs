//! The randomised equivalences and the retry property, as properties that
//! shrink: each draws its cases from a fixed seed (the same cases on every
//! run, as the seeded loops before them) and, when one fails, reports the
//! fewest and smallest arrivals that still fail it.

use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseResult, TestRunner};
use std::cell::Cell;
use std::fmt::Debug;

/// Runs `test` on `cases` cases of `strategy` drawn from `seed`; a failure
/// panics with the shrunk case.
fn check<S: Strategy>(seed: u64, cases: u32, strategy: S, test: impl Fn(S::Value) -> TestCaseResult)
where
    S::Value: Debug,
{
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    };
    if let Err(e) = TestRunner::new(config).run(&strategy, test) {
        panic!("{e}");
    }
}

/// One arrival before it meets a rate: the kind of gap (as [`gap`] draws
/// them: none, a few ns, a fraction of an interval, up to one, about one,
/// up to four), the gap's draw and the cost's draw.
type Draw = (u8, u64, u64);

/// A case: a rate of [`RATES`], a size from `sizes`, a start within a
/// second, and up to `n` arrivals.
fn cases(
    sizes: std::ops::RangeInclusive<u64>,
    n: usize,
) -> impl Strategy<Value = (usize, u64, u64, Vec<Draw>)> {
    (
        0..RATES.len(),
        sizes,
        0..S,
        prop::collection::vec((0u8..6, any::<u64>(), any::<u64>()), 1..=n),
    )
}

/// The draws as arrivals under rate `r` from `start`: `(instant, cost)`,
/// costs from 1 to `max_cost`.
fn arrivals(draws: &[Draw], r: Rate, start: u64, max_cost: u64) -> Vec<(u64, u64)> {
    let t = r.interval_ceil().0;
    let mut now = start;
    draws
        .iter()
        .map(|&(kind, g, c)| {
            now += match kind {
                0 => 0,
                1 => g % 3,
                2 => g % (t / 3 + 1),
                3 => g % (t + 1),
                4 => t - 1 + g % 3,
                _ => g % (4 * t + 1),
            };
            (now, 1 + c % max_cost)
        })
        .collect()
}

#[test]
fn token_bucket_leaky_bucket_gcra_are_one_algorithm() {
    check(
        0x5eed_0001,
        200,
        cases(1..=8, 150),
        |(ri, b, start, draws)| {
            let r = rate(RATES[ri]);
            let tb = Checked::new(TokenBucket::new(r, nz(b)));
            let lb = Checked::new(LeakyBucket::new(r, nz(b)));
            let g = Checked::new(Gcra::new(r, nz(b)));
            let (mut st, mut sl, mut sg) = Default::default();
            for (now, cost) in arrivals(&draws, r, 1_700_000_000 * S + start, b + 1) {
                let a = tb.decide(&mut st, Nanos(now), cost);
                prop_assert_eq!(a, lb.decide(&mut sl, Nanos(now), cost), "{} burst {}", r, b);
                prop_assert_eq!(a, g.decide(&mut sg, Nanos(now), cost), "{} burst {}", r, b);
            }
            Ok(())
        },
    );
}

#[test]
fn shaper_admits_as_gcra_with_one_more_burst_and_waits_until_tat() {
    check(
        0x5eed_0002,
        200,
        cases(0..=7, 150),
        |(ri, b, start, draws)| {
            let r = rate(RATES[ri]);
            let sh = Shaper::new(r, ShaperBound::Burst(b));
            let g = Checked::new(Gcra::new(r, nz(b + 1)));
            let (mut ss, mut sg) = (ShaperState::default(), gcra::GcraState::default());
            for (now, cost) in arrivals(&draws, r, start, b + 2) {
                let tat_before = sg.tat;
                let a = sh.decide(&mut ss, Nanos(now), cost);
                let e = g.decide(&mut sg, Nanos(now), cost);
                prop_assert_eq!(
                    a.is_admit(),
                    e.is_admit(),
                    "{} burst {} cost {}",
                    r,
                    b,
                    cost
                );
                if a.is_admit() {
                    let tat = r.unscale_ceil(tat_before);
                    prop_assert_eq!(a.wait(Nanos(now)), tat.saturating_sub(Nanos(now)));
                } else {
                    prop_assert_eq!(a, e, "retry times agree too");
                }
            }
            Ok(())
        },
    );
}

#[test]
fn a_retry_time_is_the_first_instant_that_admits() {
    let checked = Cell::new(0u64);
    check(
        0x5eed_0003,
        60,
        cases(1..=6, 120),
        |(ri, b, start, draws)| {
            let r = rate(RATES[ri]);
            for (text, config, fits) in all_policies(r, b) {
                let mut lim = config.build();
                for (now, cost) in arrivals(&draws, r, 1_600_000_000 * S + start, fits + 1) {
                    let d = lim.decide(0, Nanos(now), cost);
                    let level = lim.level(0, Nanos(now));
                    prop_assert!(
                        level <= lim.info().max_level,
                        "{}: level {} above its bound",
                        text,
                        level
                    );
                    let Decision::Refuse { retry_at } = d else {
                        continue;
                    };
                    if cost > fits {
                        prop_assert_eq!(retry_at, None, "{}: cost {} can never fit", text, cost);
                        continue;
                    }
                    let Some(at) = retry_at else {
                        return Err(TestCaseError::fail(format!("{text}: no retry for {cost}")));
                    };
                    prop_assert!(at > Nanos(now), "{}", text);
                    prop_assert!(
                        lim.check(0, at, cost).is_admit(),
                        "{}: refused at retry {:?}",
                        text,
                        at
                    );
                    prop_assert!(
                        !lim.check(0, Nanos(at.0 - 1), cost).is_admit(),
                        "{}: admitted 1 ns before retry {:?}",
                        text,
                        at
                    );
                    checked.set(checked.get() + 1);
                }
            }
            Ok(())
        },
    );
    assert!(checked.get() > 5_000, "{}", checked.get());
}
