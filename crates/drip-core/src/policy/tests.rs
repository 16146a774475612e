//! Vectors from the seeds, hand-worked boundary tables, and seeded
//! randomised properties over the whole core; the window policies' and
//! nginx's hand-worked tables in their own files.

mod nginx;
mod props;
mod windows;

use super::gcra::Gcra;
use super::leaky_bucket::LeakyBucket;
use super::nginx::{NginxRate, NginxState};
use super::shaper::{ShaperBound, ShaperState};
use super::sliding_log::SlidingLog;
use super::token_bucket::TokenBucket;
use super::*;
use crate::rate::{Rate, parse_rate};
use crate::testing::Rng;
use crate::time::Nanos;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn nz(n: u64) -> std::num::NonZeroU64 {
    std::num::NonZeroU64::new(n).unwrap()
}

fn rate(t: &str) -> Rate {
    parse_rate(t).unwrap()
}

fn admit(now: u64) -> Decision {
    Decision::Admit {
        release: Nanos(now),
    }
}

fn refuse(at: u64) -> Decision {
    Decision::Refuse {
        retry_at: Some(Nanos(at)),
    }
}

/// Runs `(instant ns, cost)` requests through one key of `p`.
fn run<P: Policy>(p: &P, reqs: &[(u64, u64)]) -> Vec<Decision> {
    let mut s = P::State::default();
    reqs.iter()
        .map(|&(t, c)| p.decide(&mut s, Nanos(t), c))
        .collect()
}

fn admits(ds: &[Decision]) -> Vec<bool> {
    ds.iter().map(|d| d.is_admit()).collect()
}

const RATES: [&str; 7] = [
    "3/s", "7/s", "1/200ms", "300/min", "7/min", "1000/s", "13/10s",
];

/// A gap between arrivals: often zero, often a fraction of an interval,
/// sometimes several intervals.
fn gap(rng: &mut Rng, r: Rate) -> u64 {
    let t = r.interval_ceil().0;
    match rng.below(6) {
        0 => 0,
        1 => rng.below(3),
        2 => rng.below(t / 3 + 1),
        3 => rng.below(t + 1),
        4 => t - 1 + rng.below(3),
        _ => rng.below(4 * t + 1),
    }
}

// ---- seeds -------------------------------------------------------------

#[test]
fn seed_004_capacity_three_leak_one_per_tick() {
    let lb = Checked::new(LeakyBucket::new(rate("1/s"), nz(3)));
    let ds = run(&lb, &[(0, 1), (0, 1), (0, 1), (0, 1), (S, 1)]);
    assert_eq!(admits(&ds), [true, true, true, false, true]);
}

#[test]
fn seed_002_water_level_walk() {
    let lb = Checked::new(LeakyBucket::new(rate("1/s"), nz(3)));
    let ds = run(
        &lb,
        &[(0, 1), (0, 1), (0, 1), (0, 1), (0, 1), (1000 * MS, 1)],
    );
    assert_eq!(admits(&ds), [true, true, true, false, false, true]);
    // Half a second leaks half a unit: still no room.
    let ds = run(&lb, &[(0, 1), (0, 1), (0, 1), (500 * MS, 1)]);
    assert_eq!(ds[3], refuse(S));
}

#[test]
fn seed_000_boundary_at_334_ms() {
    let r = rate("3/s");
    let lb = Checked::new(LeakyBucket::new(r, nz(1)));
    let tb = Checked::new(TokenBucket::new(r, nz(1)));
    let g = Checked::new(Gcra::new(r, nz(1)));
    let reqs = [(0, 1), (333 * MS, 1), (334 * MS, 1)];
    let want = [admit(0), refuse(333_333_334), admit(334 * MS)];
    assert_eq!(run(&lb, &reqs), want);
    assert_eq!(run(&tb, &reqs), want);
    assert_eq!(run(&g, &reqs), want);
}

#[test]
fn seed_003_shaper_schedule_and_retry_after() {
    // interval 2 s, burst 2: the limit on the delay is 4 s.
    let sh = Shaper::new(rate("1/2s"), ShaperBound::Burst(2));
    let mut s = ShaperState::default();
    let d = |s: &mut ShaperState, t: u64| sh.decide(s, Nanos(t), 1);
    // An idle client: one immediate release, then one per interval.
    assert_eq!(d(&mut s, 0), admit(0));
    assert_eq!(d(&mut s, 0), admit(2 * S));
    assert_eq!(d(&mut s, 0), admit(4 * S));
    // Full: release would be 6 s, a delay of 6 s > 4 s. Retry-After =
    // release − burst·interval − now = 6 − 4 − 0 = 2 s.
    let refused = d(&mut s, 0);
    assert_eq!(refused, refuse(2 * S));
    // A refusal does not move the schedule: the same answer again.
    assert_eq!(d(&mut s, 0), refused);
    assert_eq!(d(&mut s, S), refuse(2 * S));
    let Decision::Refuse { retry_at: Some(at) } = refused else {
        unreachable!()
    };
    assert_eq!(at.saturating_sub(Nanos(0)).ceil_secs(), 2);
    assert!(!sh.check(&s, Nanos(2 * S - 1), 1).is_admit());
    assert_eq!(d(&mut s, 2 * S), admit(6 * S));
    // Idle time is not banked: after a long pause, one at once, then spaced.
    assert_eq!(d(&mut s, 100 * S), admit(100 * S));
    assert_eq!(d(&mut s, 100 * S), admit(102 * S));
    // Retry-After shown in whole seconds rounds up.
    let sh = Shaper::new(rate("1/1500ms"), ShaperBound::Burst(0));
    let mut s = ShaperState::default();
    d2(&sh, &mut s);
    fn d2(sh: &Shaper, s: &mut ShaperState) {
        assert_eq!(sh.decide(s, Nanos(0), 1), admit(0));
        let Decision::Refuse { retry_at: Some(at) } = sh.decide(s, Nanos(0), 1) else {
            panic!("expected a refusal")
        };
        assert_eq!(at, Nanos(1_500_000_000));
        assert_eq!(at.ceil_secs(), 2);
    }
}

// ---- randomised equivalences -------------------------------------------

// In `tests/props.rs`, as properties that shrink.

// ---- properties ----------------------------------------------------------

/// Every policy at (rate, b), with the largest cost each can ever admit.
fn all_policies(r: Rate, b: u64) -> Vec<(String, PolicyConfig, u64)> {
    let w = Nanos(r.per().0 * 3);
    let max_wait = Nanos(r.per().0 * b / 2 + 1);
    let wait_fits = (r.scale(max_wait) / r.intervals(1)) as u64 + 1;
    [
        format!("token-bucket:rate={r},burst={b}"),
        format!("leaky-bucket:rate={r},capacity={b}"),
        format!("gcra:rate={r},burst={b}"),
        format!("shaper:rate={r},burst={b}"),
        format!("shaper:rate={r},max-wait={}ns", max_wait.0),
        format!("fixed-window:limit={b},window={}ns", w.0),
        format!(
            "fixed-window:limit={b},window={}ns,align=first-hit,count=all",
            w.0
        ),
        format!("sliding-window:limit={b},window={}ns", w.0),
        format!("sliding-log:limit={b},window={}ns", w.0),
        format!("nginx:rate=7r/m,burst={b}"),
        format!("nginx:rate=3r/s,burst={b},delay=1"),
        format!("nginx:rate=10r/s,burst={b},nodelay"),
    ]
    .into_iter()
    .map(|t| {
        let c = parse_spec(&t).unwrap().members[0].config;
        let fits = match c {
            PolicyConfig::Shaper(s) if matches!(s.bound(), ShaperBound::Burst(_)) => b + 1,
            PolicyConfig::Shaper(_) => wait_fits,
            PolicyConfig::Nginx(_) => b + 1,
            _ => b,
        };
        (t, c, fits)
    })
    .collect()
}

#[test]
fn bucket_admits_in_any_window_stay_under_burst_plus_rate_times_window() {
    let mut rng = Rng(0x5eed_0004);
    for case in 0..140 {
        let r = rate(RATES[case % RATES.len()]);
        let b = 1 + rng.below(8);
        let g = Checked::new(Gcra::new(r, nz(b)));
        let mut s = Default::default();
        let mut now = rng.below(S);
        let mut admitted: Vec<(u64, u64)> = Vec::new();
        for _ in 0..150 {
            now += gap(&mut rng, r);
            let cost = 1 + rng.below(b);
            if g.decide(&mut s, Nanos(now), cost).is_admit() {
                admitted.push((now, cost));
            }
        }
        for j in 0..admitted.len() {
            let mut units = 0u128;
            for i in (0..=j).rev() {
                units += u128::from(admitted[i].1);
                let w = admitted[j].0 - admitted[i].0;
                // units ≤ b + rate·w, exactly: units·per ≤ b·per + w·count
                assert!(
                    units * u128::from(r.per().0) <= r.intervals(b) + r.scale(Nanos(w)),
                    "{r} burst {b}: {units} units in {w} ns"
                );
            }
        }
    }
}

#[test]
fn the_largest_cost_that_fits_is_the_one_every_rule_admits() {
    for (r, b) in [(rate("5/s"), 3), (rate("7/min"), 1), (rate("13/10s"), 6)] {
        for (text, config, fits) in all_policies(r, b) {
            let mut lim = config.build();
            assert_eq!(lim.info().max_cost, fits, "{text}");
            // An empty key admits the largest cost that fits.
            assert!(lim.decide(0, Nanos(S), fits).is_admit(), "{text}");
        }
    }
}

#[test]
fn an_oversized_cost_is_refused_forever_and_leaves_the_key_usable() {
    for (text, config, fits) in all_policies(rate("5/s"), 3) {
        let mut lim = config.build();
        assert_eq!(
            lim.decide(0, Nanos(0), fits + 1),
            Decision::Refuse { retry_at: None },
            "{text}"
        );
        if text.contains("count=all") {
            // INCRBY counts the oversized hit: the key is full until the
            // window it opened ends, then usable again.
            let end = Nanos(rate("5/s").per().0 * 3);
            assert!(!lim.decide(0, Nanos(0), 1).is_admit(), "{text}");
            assert!(lim.decide(0, end, 1).is_admit(), "{text}");
        } else {
            assert!(lim.decide(0, Nanos(0), 1).is_admit(), "{text}");
        }
    }
    let n = NginxLimitReq::new(NginxRate::PerSec(5), 2, None);
    let mut s = NginxState::default();
    assert_eq!(
        n.decide(&mut s, Nanos(0), 4),
        Decision::Refuse { retry_at: None }
    );
    assert!(n.decide(&mut s, Nanos(0), 1).is_admit());
}

#[test]
fn spec_and_rate_parsers_never_panic() {
    const ALPHABET: &[char] = &[
        '0', '1', '5', '9', '/', ':', '=', ',', '+', '.', ' ', '-', 'r', 's', 'm', 'h', 'n', 'u',
        'µ', '\0', 'a', 'e', 'k', 'l', 'x', 'y',
    ];
    let seeds = [
        "nginx:rate=30r/m,burst=2,delay=1,key=client + gcra:rate=5/s,label=x",
        "shaper:rate=1/200ms,max-wait=1h 30m",
        "fixed-window:limit=10,window=1m,align=first-hit,count=all",
        "sliding-log:limit=99999999999999999999,window=0s",
    ];
    let mut rng = Rng(0x5eed_0007);
    for i in 0..30_000 {
        let mut v: Vec<char> = seeds[i % seeds.len()].chars().collect();
        for _ in 0..(rng.below(5)) {
            let at = rng.below(v.len() as u64 + 1) as usize;
            let c = ALPHABET[rng.below(ALPHABET.len() as u64) as usize];
            match rng.below(3) {
                0 if at < v.len() => {
                    v.remove(at);
                }
                1 if at < v.len() => v[at] = c,
                _ => v.insert(at, c),
            }
        }
        let text: String = v.into_iter().collect();
        if let Ok(spec) = parse_spec(&text) {
            // Whatever parses builds and decides without panicking.
            let mut stack = spec.build();
            let keys = vec![Some(1); spec.members.len()];
            stack.decide(&keys, Nanos(1_700_000_000 * S), 1 + rng.below(3));
            stack.decide(&keys, Nanos(u64::MAX - 1), 1);
        }
        let _ = parse_rate(&text);
        let _ = crate::rate::parse_duration(&text);
    }
}

#[test]
fn a_row_of_candidates_decides_as_separate_stores() {
    use keyed::{Limiter, Store};
    let mut rng = Rng(0x5eed_0008);
    let logs: Vec<SlidingLog> = [2, 5, 9]
        .iter()
        .map(|l| {
            match parse_spec(&format!("sliding-log:limit={l},window=1s"))
                .unwrap()
                .members[0]
                .config
            {
                PolicyConfig::SlidingLog(p) => p,
                _ => unreachable!(),
            }
        })
        .collect();
    let mut row = Store::rows(&logs);
    let mut apart: Vec<Store<SlidingLog>> = logs.iter().map(|&p| Store::new(p)).collect();
    let mut now = 0;
    // Enough decisions over enough keys for several sweeps to run.
    for _ in 0..60_000 {
        now += rng.below(200_000);
        let key = rng.below(3_000);
        let cost = 1 + rng.below(10);
        let policies = row.row().to_vec();
        let states = row.row_mut(key, Nanos(now));
        for ((p, s), one) in policies.iter().zip(states).zip(&mut apart) {
            assert_eq!(
                p.decide(s, Nanos(now), cost),
                one.decide(key, Nanos(now), cost)
            );
        }
    }
    // Once every key is idle, the next sweep gives their entries back.
    let held = row
        .states()
        .iter()
        .filter(|s| !s.entries.is_empty())
        .count();
    assert!(held > 0);
    let later = Nanos(now + 2 * S);
    for _ in 0..row.states().len() {
        let policies = row.row().to_vec();
        let states = row.row_mut(0, later);
        for (p, s) in policies.iter().zip(states) {
            p.decide(s, later, 1);
        }
    }
    let held = row
        .states()
        .iter()
        .filter(|s| !s.entries.is_empty())
        .count();
    assert!(held <= 3, "{held} states hold entries");
}

/// The sliding log against its definition, counted from every admitted
/// request: keys that hold a few entries (kept in the state) and many (in
/// its queue), moving from one to the other as entries expire.
#[test]
fn a_sliding_log_admits_what_its_window_has_room_for() {
    let mut rng = Rng(0x5eed_10a7);
    for case in 0..200 {
        let limit = 1 + rng.below(9);
        let window = 1 + rng.below(50);
        let p = Checked::new(SlidingLog::new(
            nz(limit),
            Window::new(Nanos(window)).unwrap(),
        ));
        let mut s = Default::default();
        let mut admitted: Vec<(u64, u64)> = Vec::new();
        let mut now = rng.below(1000);
        for _ in 0..300 {
            now += match rng.below(4) {
                0 => 0,
                1 => rng.below(window * 3),
                _ => rng.below(window / 4 + 1),
            };
            let cost = 1 + rng.below(limit);
            let used: u64 = admitted
                .iter()
                .filter(|&&(t, _)| t + window >= now)
                .map(|&(_, c)| c)
                .sum();
            let d = p.decide(&mut s, Nanos(now), cost);
            assert_eq!(d.is_admit(), used + cost <= limit, "case {case} at {now}");
            if d.is_admit() {
                admitted.push((now, cost));
            }
            let level: u64 = admitted
                .iter()
                .filter(|&&(t, _)| t + window >= now)
                .map(|&(_, c)| c)
                .sum();
            assert_eq!(p.level(&s, Nanos(now)), level, "case {case} at {now}");
        }
    }
}

/// A policy's `decide` (some do in one step what `check` and `admit` do in
/// two) against `check` followed by `admit` or `refuse`: the same decisions,
/// levels and neutrality, request after request. And a decision without
/// the retry time against `decide`: the same, but for refusals' retry times.
#[test]
fn every_decide_is_check_then_record() {
    struct Both(u64);
    impl super::table::WithPolicy for Both {
        type Out = u64;
        fn run<P: Listed>(self, policy: &P) -> u64 {
            let p = Checked::new(*policy);
            let mut rng = Rng(self.0);
            let (mut one, mut two) = (P::State::default(), P::State::default());
            let mut three = P::State::default();
            let mut now = 1_600_000_000 * S + rng.below(S);
            let max = policy.info().max_cost;
            for _ in 0..400 {
                now += match rng.below(3) {
                    0 => 0,
                    1 => rng.below(S / 3),
                    _ => rng.below(5 * S),
                };
                let cost = 1 + rng.below(max.min(1 << 20) + 1);
                let d = p.decide(&mut one, Nanos(now), cost);
                let e = p.check(&two, Nanos(now), cost);
                match e {
                    Decision::Admit { .. } => p.admit(&mut two, Nanos(now), cost),
                    Decision::Refuse { .. } => p.refuse(&mut two, Nanos(now), cost),
                }
                assert_eq!(d, e, "{} at {now}, cost {cost}", P::NAME);
                let bare = match d {
                    Decision::Refuse { .. } => Decision::Refuse { retry_at: None },
                    admitted => admitted,
                };
                let f = p.decide_retry::<false>(&mut three, Nanos(now), cost);
                assert_eq!(f, bare, "{} without retry at {now}, cost {cost}", P::NAME);
                assert_eq!(p.level(&one, Nanos(now)), p.level(&two, Nanos(now)));
                assert_eq!(p.level(&one, Nanos(now)), p.level(&three, Nanos(now)));
                if d.is_admit() {
                    let at = Nanos(now);
                    assert_eq!(p.admitted_level(&one, at), p.level(&one, at), "{}", P::NAME);
                }
                let later = Nanos(now + rng.below(20 * S));
                assert_eq!(p.is_neutral(&one, later), p.is_neutral(&two, later));
                assert_eq!(p.is_neutral(&one, later), p.is_neutral(&three, later));
            }
            400
        }
    }
    let mut decided = 0;
    for (case, r) in RATES.iter().enumerate() {
        for (_, config, _) in all_policies(rate(r), 1 + case as u64 % 7) {
            decided += config.with(Both(0x5eed_de00 + case as u64));
        }
    }
    assert!(decided > 10_000, "{decided}");
}
