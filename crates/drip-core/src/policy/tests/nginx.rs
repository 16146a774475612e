//! nginx `limit_req`, request by request against nginx's own figures.

use super::*;

// ---- nginx ---------------------------------------------------------------

fn nginx(t: &str) -> NginxLimitReq {
    match parse_spec(t).unwrap().members[0].config {
        PolicyConfig::Nginx(n) => n,
        _ => unreachable!(),
    }
}

/// (status, delay in ms) of each request, all at `at_ms`.
fn burst_of(n: &NginxLimitReq, count: usize, at_ms: u64) -> Vec<(&'static str, u64)> {
    let mut s = NginxState::default();
    (0..count)
        .map(|_| {
            let now = Nanos(at_ms * MS);
            let d = n.decide(&mut s, now, 1);
            (d.nginx_status(now), d.wait(now).0 / MS)
        })
        .collect()
}

#[test]
fn nginx_parses_rates_as_nginx() {
    assert_eq!(nginx("nginx:rate=7r/m").rate_m(), 116);
    assert_eq!(nginx("nginx:rate=30r/m").rate_m(), 500);
    assert_eq!(nginx("nginx:rate=1r/m").rate_m(), 16);
    assert_eq!(nginx("nginx:rate=5").rate_m(), 5000);
    assert_eq!(nginx("nginx:rate=10r/s,burst=0"), nginx("nginx:rate=10r/s"));
    assert_eq!(
        nginx("nginx:rate=10r/s,burst=4,delay=0"),
        nginx("nginx:rate=10r/s,burst=4")
    );
}

#[test]
fn nginx_5rs_burst5_ten_at_once() {
    let got = burst_of(&nginx("nginx:rate=5r/s,burst=5"), 10, 1000);
    let mut want = vec![("PASSED", 0)];
    want.extend([200, 400, 600, 800, 1000].map(|d| ("DELAYED", d)));
    want.extend([("REJECTED", 0); 4]);
    assert_eq!(got, want);
    let got = burst_of(&nginx("nginx:rate=5r/s,burst=5,nodelay"), 10, 1000);
    let mut want = vec![("PASSED", 0); 6];
    want.extend([("REJECTED", 0); 4]);
    assert_eq!(got, want);
}

#[test]
fn nginx_2rs_burst6_delay3() {
    let got = burst_of(&nginx("nginx:rate=2r/s,burst=6,delay=3"), 10, 5);
    let mut want = vec![("PASSED", 0); 4];
    want.extend([500, 1000, 1500].map(|d| ("DELAYED", d)));
    want.extend([("REJECTED", 0); 3]);
    assert_eq!(got, want);
}

#[test]
fn nginx_30rm_burst2() {
    let got = burst_of(&nginx("nginx:rate=30r/m,burst=2"), 10, 7);
    let mut want = vec![("PASSED", 0), ("DELAYED", 2000), ("DELAYED", 4000)];
    want.extend([("REJECTED", 0); 7]);
    assert_eq!(got, want);
}

#[test]
fn nginx_7rm_burst2_truncated_rate() {
    let got = burst_of(&nginx("nginx:rate=7r/m,burst=2"), 3, 0);
    assert_eq!(got, [("PASSED", 0), ("DELAYED", 8620), ("DELAYED", 17241)]);
}

#[test]
fn nginx_burst0_needs_a_full_drain_and_counts_from_the_last_admit() {
    let n = nginx("nginx:rate=10r/s");
    let mut s = NginxState::default();
    assert!(n.decide(&mut s, Nanos(0), 1).is_admit());
    // 99 ms: e = 0 − 990 + 1000 = 10 > 0 → rejected, retry at 100 ms.
    assert_eq!(n.decide(&mut s, Nanos(99 * MS), 1), refuse(100 * MS));
    // The rejection did not move `last`: 100 ms after the admit passes.
    assert_eq!(
        n.decide(&mut s, Nanos(100 * MS + 999_999), 1),
        admit(100 * MS + 999_999)
    );
    assert_eq!(s.last, 100);
}

#[test]
fn nginx_r_per_minute_loses_the_leak_remainder() {
    // 30r/m: leak = floor(500·ms/1000) = floor(ms/2). Admitted 1 ms apart,
    // nothing leaks: the level rises by a whole unit each time.
    let n = nginx("nginx:rate=30r/m,burst=3,nodelay");
    let mut s = NginxState::default();
    for t in 0..4 {
        assert!(n.decide(&mut s, Nanos(t * MS), 1).is_admit());
    }
    assert_eq!(s.excess, 3000);
    assert_eq!(s.excess_text(), "3.000");
    assert!(!n.decide(&mut s, Nanos(4 * MS), 1).is_admit());
    // 1597 ms apart: each admit throws away half a thousandth.
    let n = nginx("nginx:rate=30r/m,burst=5,nodelay");
    let mut s = NginxState::default();
    let mut t = 0;
    for _ in 0..3 {
        n.decide(&mut s, Nanos(t * MS), 1);
        t += 1597;
    }
    // e: 0, then 0 − 798 + 1000 = 202, then 202 − 798 + 1000 = 404.
    assert_eq!(s.excess, 404);
}

#[test]
fn nginx_stack_max_not_sum_and_no_charge_on_refusal() {
    // zf_key: 2r/s burst=2 delay=1 per client; zf_all: 10r/s burst=2, global,
    // with the client `vip` mapped to an empty global key.
    let spec = parse_spec("nginx:rate=2r/s,burst=2,delay=1 + nginx:rate=10r/s,burst=2").unwrap();
    let mut stack = spec.build();
    const GLOBAL: u64 = 0;
    let (a, b, c, vip) = (1, 2, 3, 4);
    let mut go = |client: u64, ms: u64| {
        let now = Nanos(ms * MS);
        let global = (client != vip).then_some(GLOBAL);
        let d = stack.decide(&[Some(client), global], now, 1);
        (d.nginx_status(now), d.wait(now).0 / MS)
    };
    assert_eq!(go(a, 0), ("PASSED", 0));
    assert_eq!(go(a, 0), ("DELAYED", 100)); // key 0, global 100
    assert_eq!(go(a, 0), ("DELAYED", 500)); // key 500, global 200: max, not sum 700
    // Rejected by the first limit (key e = 3000): the global one is not charged.
    assert_eq!(go(a, 0), ("REJECTED", 0));
    // Rejected by the second (global e = 3000): b's own limit is not charged.
    assert_eq!(go(b, 0), ("REJECTED", 0));
    assert_eq!(go(b, 0), ("REJECTED", 0));
    assert_eq!(go(b, 0), ("REJECTED", 0));
    // vip skips the global limit entirely.
    assert_eq!(go(vip, 0), ("PASSED", 0));
    // 100 ms later the global level is exactly 2000 again (not 3000): c passes
    // with the global delay of 200 ms.
    assert_eq!(go(c, 100), ("DELAYED", 200));
    // At 300 ms: b was never charged, so its key bucket is fresh.
    assert_eq!(go(b, 400), ("PASSED", 0));
    assert_eq!(go(b, 400), ("DELAYED", 100));
    assert_eq!(go(b, 400), ("DELAYED", 500));
}

/// The next gap in ms for an nginx rate whose interval is about `t` ms:
/// none, up to one interval, about one interval, or up to three.
fn ms_gap(rng: &mut Rng, t: u64) -> u64 {
    match rng.below(4) {
        0 => 0,
        1 => rng.below(t + 1),
        2 => t - 1 + rng.below(3),
        _ => rng.below(3 * t + 1),
    }
}

#[test]
fn nginx_nodelay_admits_as_leaky_bucket_of_burst_plus_one() {
    let mut rng = Rng(0x5eed_0005);
    let mut decisions = 0;
    for case in 0..160 {
        let n = 1 + (case as u64 % 20) * 3;
        let b = rng.below(8);
        let ng = NginxLimitReq::new(NginxRate::PerSec(n), b, None);
        let lb = Checked::new(LeakyBucket::new(rate(&format!("{n}/s")), nz(b + 1)));
        let (mut sn, mut sl) = (NginxState::default(), Default::default());
        let mut ms = 1_700_000_000_000 + rng.below(1000);
        let t = 1000 / n + 1;
        for _ in 0..130 {
            ms += ms_gap(&mut rng, t);
            let a = ng.decide(&mut sn, Nanos(ms * MS), 1);
            let e = lb.decide(&mut sl, Nanos(ms * MS), 1);
            assert_eq!(a.is_admit(), e.is_admit(), "{n}r/s burst={b} at {ms}");
            assert_eq!(a.wait(Nanos(ms * MS)), Nanos::ZERO);
            decisions += 1;
        }
    }
    assert!(decisions >= 20_000);
}

#[test]
fn nginx_delays_as_the_shaper_to_the_truncated_ms() {
    let mut rng = Rng(0x5eed_0006);
    let mut decisions = 0;
    for case in 0..160 {
        let n = 1 + (case as u64 % 25) * 2;
        let b = rng.below(10);
        let ng = NginxLimitReq::new(NginxRate::PerSec(n), b, Some(0));
        let sh = Shaper::new(rate(&format!("{n}/s")), ShaperBound::Burst(b));
        let (mut sn, mut ss) = (NginxState::default(), ShaperState::default());
        let mut ms = rng.below(1000);
        let t = 1000 / n + 1;
        for _ in 0..130 {
            ms += ms_gap(&mut rng, t);
            let now = Nanos(ms * MS);
            let a = ng.decide(&mut sn, now, 1);
            let e = sh.decide(&mut ss, now, 1);
            assert_eq!(a.is_admit(), e.is_admit(), "{n}r/s burst={b} at {ms}");
            assert_eq!(
                a.wait(now).0,
                e.wait(now).0 / MS * MS,
                "{n}r/s burst={b} at {ms}"
            );
            decisions += 1;
        }
    }
    assert!(decisions >= 20_000);
}

/// The level just after an admission, without the leak, equals `level`
/// there: on times going forward, standing still, stepping back less than
/// a minute (nginx leaks nothing then) and more (nginx counts 1 ms).
#[test]
fn nginx_admitted_level_is_the_level() {
    let mut rng = Rng(0x6c65_7665);
    for spec in [
        "nginx:rate=7r/m,burst=9",
        "nginx:rate=3r/s,burst=40,delay=5",
    ] {
        let n = nginx(spec);
        let mut s = NginxState::default();
        let mut now: u64 = 3_600_000 * MS;
        for _ in 0..5_000 {
            now = match rng.below(6) {
                0 => now.saturating_sub(rng.below(59_000) * MS),
                1 => now.saturating_sub(61_000 * MS + rng.below(MS)),
                2 => now,
                _ => now + rng.below(2_000 * MS),
            };
            if n.decide(&mut s, Nanos(now), 1).is_admit() {
                assert_eq!(n.admitted_level(&s, Nanos(now)), n.level(&s, Nanos(now)));
            }
        }
    }
}
