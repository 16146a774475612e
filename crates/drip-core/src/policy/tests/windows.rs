//! The window policies' hand-worked boundaries, and per-key state in
//! stores.

use super::*;

/// The spec's one policy, of variant `$v`, checked.
macro_rules! checked {
    ($spec:expr, $v:ident) => {
        match parse_spec($spec).unwrap().members[0].config {
            PolicyConfig::$v(f) => Checked::new(f),
            _ => unreachable!(),
        }
    };
}

// ---- window policies: hand-worked boundaries -----------------------------

#[test]
fn fixed_window_boundaries() {
    let spec = |t: &str| checked!(t, FixedWindow);
    // epoch windows of 10 s, limit 2
    let f = spec("fixed-window:limit=2,window=10s");
    let ds = run(
        &f,
        &[
            (3 * S, 1),
            (9 * S, 1),
            (10 * S - 1, 1),
            (10 * S, 1),
            (12 * S, 2),
        ],
    );
    assert_eq!(
        ds,
        [
            admit(3 * S),
            admit(9 * S),
            refuse(10 * S),
            admit(10 * S),
            refuse(20 * S)
        ]
    );
    // first-hit: the window opens at the first hit and lasts 10 s
    let f = spec("fixed-window:limit=2,window=10s,align=first-hit");
    let ds = run(
        &f,
        &[
            (3 * S, 1),
            (9 * S, 1),
            (12 * S, 1),
            (13 * S - 1, 1),
            (13 * S, 1),
        ],
    );
    assert_eq!(
        ds,
        [
            admit(3 * S),
            admit(9 * S),
            refuse(13 * S),
            refuse(13 * S),
            admit(13 * S)
        ]
    );
    // count=all: refused hits count too (INCR before compare)
    let f = spec("fixed-window:limit=2,window=10s,align=first-hit,count=all");
    let mut s = FixedWindowState::default();
    for (t, want) in [(0, true), (S, true), (2 * S, false)] {
        assert_eq!(f.decide(&mut s, Nanos(t), 1).is_admit(), want);
    }
    assert_eq!(s.count, 3);
    assert_eq!(f.level(&s, Nanos(3 * S)), 3);
    assert_eq!(f.level(&s, Nanos(10 * S)), 0);
    // count=all: a cost above the limit is refused without a retry time and
    // still adds its whole cost (Redis INCRBY, Python limits), so a later
    // hit in the same window is refused; the next window frees the key.
    let f = spec("fixed-window:limit=5,window=10s,align=first-hit,count=all");
    let mut s = FixedWindowState::default();
    assert!(f.decide(&mut s, Nanos(0), 2).is_admit());
    assert_eq!(
        f.decide(&mut s, Nanos(S), 7),
        Decision::Refuse { retry_at: None }
    );
    assert_eq!(s.count, 9);
    assert_eq!(
        f.decide(&mut s, Nanos(2 * S), 1),
        Decision::Refuse {
            retry_at: Some(Nanos(10 * S))
        }
    );
    assert_eq!(s.count, 10);
    assert!(f.decide(&mut s, Nanos(10 * S), 5).is_admit());
    assert_eq!(s.count, 5);
    // count=admitted leaves the counter alone for the same oversized hit.
    let f = spec("fixed-window:limit=5,window=10s,align=first-hit");
    let mut s = FixedWindowState::default();
    assert!(f.decide(&mut s, Nanos(0), 2).is_admit());
    assert_eq!(
        f.decide(&mut s, Nanos(S), 7),
        Decision::Refuse { retry_at: None }
    );
    assert!(f.decide(&mut s, Nanos(2 * S), 3).is_admit());
}

use crate::policy::fixed_window::FixedWindowState;

#[test]
fn sliding_window_floor_rule() {
    let f = checked!("sliding-window:limit=10,window=10s", SlidingWindow);
    // 10 admitted in window [0,10 s).
    let mut reqs: Vec<(u64, u64)> = (0..10).map(|i| (i * S / 2, 1)).collect();
    // At 10 s (e = 0) the previous window weighs fully: floor(10·10/10) = 10.
    reqs.push((10 * S, 1));
    // At 11 s (e = 1 s): floor(10·9/10) = 9, 9 + 0 + 1 ≤ 10: admitted.
    reqs.push((11 * S, 1));
    // At 11.5 s: floor(10·8.5/10) = floor(8.5) = 8; 8 + 1 + 1 ≤ 10: admitted
    // (the floor rule; exact weighting would refuse at 8.5 + 2 > 10).
    reqs.push((11 * S + S / 2, 1));
    // Same instant again: 8 + 2 + 1 = 11 > 10; retry where floor(10·(W−e)/W) ≤ 7,
    // i.e. 10·(10 s − e) < 80 s  ⟹  e > 2 s: first ns is e = 2 s + 1 ns.
    reqs.push((11 * S + S / 2, 1));
    let ds = run(&f, &reqs);
    assert!(admits(&ds[..10]).iter().all(|a| *a));
    assert_eq!(ds[10], refuse(10 * S + 1));
    assert_eq!(ds[11], admit(11 * S));
    assert_eq!(ds[12], admit(11 * S + S / 2));
    assert_eq!(ds[13], refuse(12 * S + 1));
    // Two windows later the past no longer counts at all.
    let mut s = Default::default();
    for _ in 0..10 {
        f.decide(&mut s, Nanos(0), 1);
    }
    assert!(f.is_neutral(&s, Nanos(20 * S)));
    assert!(!f.is_neutral(&s, Nanos(20 * S - 1)));
}

#[test]
fn sliding_log_entry_exactly_w_old_still_counts() {
    let f = checked!("sliding-log:limit=2,window=10s", SlidingLog);
    let ds = run(
        &f,
        &[
            (0, 1),
            (4 * S, 1),
            (10 * S, 1),
            (10 * S + 1, 1),
            (14 * S, 1),
            (14 * S + 1, 1),
        ],
    );
    assert_eq!(
        ds,
        [
            admit(0),
            admit(4 * S),
            refuse(10 * S + 1), // the entry at 0 is exactly 10 s old: counts
            admit(10 * S + 1),
            refuse(14 * S + 1),
            admit(14 * S + 1),
        ]
    );
    // Cost 2 needs both old entries gone: retry after the younger expires.
    let ds = run(&f, &[(0, 1), (3 * S, 1), (5 * S, 2)]);
    assert_eq!(ds[2], refuse(13 * S + 1));
}

// ---- per-key state -----------------------------------------------------

#[test]
fn a_store_holds_one_fixed_state_per_key_and_a_neutral_one_decides_as_fresh() {
    use keyed::Limiter;
    let PolicyConfig::Gcra(gcra) = parse_spec("gcra:rate=10/s,burst=2").unwrap().members[0].config
    else {
        panic!("a gcra spec makes a gcra");
    };
    let mut lim = keyed::Store::new(gcra);
    // 100k keys, each hit once, 1 ms apart: each is neutral 100 ms later.
    for k in 0..100_000u64 {
        assert!(lim.decide(k, Nanos(k * MS), 1).is_admit());
    }
    // Key ids are dense: one fixed-size state per id, nothing more.
    assert_eq!(lim.tracked(), 100_000);
    // A neutral key behaves exactly as a fresh one.
    assert!(lim.decide(3, Nanos(100_000 * MS), 2).is_admit());
    assert!(!lim.decide(3, Nanos(100_000 * MS), 1).is_admit());
}

#[test]
fn dense_sliding_logs_of_idle_keys_are_released() {
    let config = parse_spec("sliding-log:limit=50,window=1s")
        .unwrap()
        .members[0]
        .config;
    let PolicyConfig::SlidingLog(p) = config else {
        unreachable!()
    };
    let mut lim = keyed::Store::new(p);
    use keyed::Limiter;
    // 20k keys each send 10 requests, then go quiet; the clock moves on.
    for k in 0..20_000u64 {
        for i in 0..10 {
            assert!(lim.decide(k, Nanos(k * MS + i), 1).is_admit());
        }
    }
    // Sweeps run every 20k decisions here: only the keys active in the last
    // second or two still hold entries (without sweeps all 20k would).
    let holding = lim
        .states()
        .iter()
        .filter(|s| !s.entries.is_empty())
        .count();
    assert!(holding < 3_000, "{holding} keys hold entries");
    // A reset key decides as a fresh one.
    for i in 0..50 {
        assert!(lim.decide(3, Nanos(30_000 * MS + i), 1).is_admit());
    }
    assert!(!lim.decide(3, Nanos(30_000 * MS + 50), 1).is_admit());
}

#[test]
fn envoy_ratelimit_service_vectors() {
    // envoyproxy/ratelimit: a limit's Redis key is the descriptor and the
    // window start `(now / divider) · divider` in Unix seconds
    // (`src/limiter/cache_key.go`); every hit is `INCRBY`'d, refused ones
    // too, and a request is over the limit when the count after it is
    // above `requests_per_unit` (`src/limiter/base_limiter.go`): that is
    // `fixed-window` with epoch windows and `count=all`. The vectors are
    // `test/redis/fixed_cache_impl_test.go`'s, at UnixNow() = 1234.
    let spec = |t: &str| checked!(t, FixedWindow);
    let at = |s: u64| s * S;
    // 10/second, the count 5 after the hit: OK, 5 remaining.
    let f = spec("fixed-window:limit=10,window=1s,count=all");
    let mut st = Default::default();
    for _ in 0..4 {
        f.decide(&mut st, Nanos(at(1234)), 1);
    }
    assert_eq!(f.decide(&mut st, Nanos(at(1234)), 1), admit(at(1234)));
    assert_eq!(10 - f.level(&st, Nanos(at(1234))), 5);
    // 10/minute, the window keyed 1200, the count 11 after the hit:
    // OVER_LIMIT, reset in 26 s (`CalculateReset`: 60 − 1234 mod 60).
    let f = spec("fixed-window:limit=10,window=1m,count=all");
    let mut st = Default::default();
    for t in 1200..1210 {
        assert!(f.decide(&mut st, Nanos(at(t)), 1).is_admit());
    }
    assert_eq!(f.decide(&mut st, Nanos(at(1234)), 1), refuse(at(1260)));
    // The refused hit was counted, and the next window starts empty.
    assert_eq!(f.level(&st, Nanos(at(1234))), 11);
    assert!(f.decide(&mut st, Nanos(at(1260)), 1).is_admit());
    // hitsAddend 3 on 20/second, the count 5 after: OK, 15 remaining; and
    // hitsAddend 2 on 8/second, the count 7 after: OK, 1 remaining.
    for (limit, cost, before, remaining) in [(20, 3, 2, 15), (8, 2, 5, 1)] {
        let f = spec(&format!("fixed-window:limit={limit},window=1s,count=all"));
        let mut st = Default::default();
        for _ in 0..before {
            f.decide(&mut st, Nanos(at(1234)), 1);
        }
        assert_eq!(f.decide(&mut st, Nanos(at(1234)), cost), admit(at(1234)));
        assert_eq!(limit - f.level(&st, Nanos(at(1234))), remaining);
    }
}

#[test]
fn an_offer_refused_is_not_a_hit() {
    // A pacer sends only what is admitted: HAProxy counts the 3 lines sent
    // at 0 and nothing else, so the 4th fits 1 ms into the next period
    // (1 + ⌊3·999/1000⌋ = 3); had the refused offer counted, only from
    // 1251 ms (1 + ⌊4·749/1000⌋ = 3).
    let mut stack = parse_spec("haproxy:limit=3,window=1s").unwrap().build();
    let key = [Some(1)];
    for _ in 0..3 {
        assert!(stack.offer(&key, Nanos(0), 1).is_admit());
    }
    let ms = 1_000_000;
    assert_eq!(stack.offer(&key, Nanos(0), 1), refuse(1_001 * ms));
    assert_eq!(stack.offer(&key, Nanos(0), 1), refuse(1_001 * ms));
    assert!(stack.offer(&key, Nanos(1_001 * ms), 1).is_admit());
    // The same requests decided as a log's hits: the refusals count.
    let mut stack = parse_spec("haproxy:limit=3,window=1s").unwrap().build();
    for _ in 0..3 {
        stack.decide(&key, Nanos(0), 1);
    }
    stack.decide(&key, Nanos(0), 1);
    assert!(!stack.decide(&key, Nanos(1_001 * ms), 1).is_admit());
}
