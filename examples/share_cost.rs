//! The cost of one reservation in a shared schedule, with its floors
//! measured in the same run.
//!
//! ```sh
//! cargo run --release --example share_cost -- --file PATH [--redis redis://127.0.0.1:PORT] [--calls 20000] [--reps 5]
//! ```
//!
//! Cases, interleaved rep by rep: the pure `reserve()` in process (the
//! floor of every backend), the state file (`flock`, `pread`, clock,
//! `pwrite`, unlock), a Redis `PING` on the same connection (the round
//! trip, the floor for Redis) and the Redis script (`EVALSHA`). Each call
//! is timed alone; prints the median and p99 per case (medians over reps
//! of each rep's quantile) as a markdown table, and the ratios to the floors.

use drip::share::Backend;
use drip::share::FileBackend;
use drip::share::RedisBackend;
use drip::share::{Outcome, Params, reserve};
use std::time::Instant;

/// Slots 1 µs apart and a delay bound no run reaches: every call is granted.
const PARAMS: Params = Params {
    interval: 1,
    max_delay: 1_000_000_000_000,
    slots: 1,
};

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    quantile(&v, 0.5)
}

/// (median, p99) in µs of `calls` timed calls of `f`.
fn time(calls: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut t = Vec::with_capacity(calls);
    for _ in 0..calls / 10 {
        f(); // warm-up
    }
    for _ in 0..calls {
        let start = Instant::now();
        f();
        t.push(start.elapsed().as_nanos() as f64 / 1_000.0);
    }
    t.sort_by(f64::total_cmp);
    (quantile(&t, 0.5), quantile(&t, 0.99))
}

fn main() {
    let mut file = None;
    let mut redis_url = None;
    let mut calls = 20_000usize;
    let mut reps = 5usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().expect("a value after the flag");
        match a.as_str() {
            "--file" => file = Some(value()),
            "--redis" => redis_url = Some(value()),
            "--calls" => calls = value().parse().expect("--calls N"),
            "--reps" => reps = value().parse().expect("--reps N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let file = file.expect("--file PATH");
    let _ = std::fs::remove_file(&file);
    let mut fb = FileBackend::open(file.as_ref(), false).expect("a state file");
    let mut rb = redis_url.map(|u| {
        let mut b = RedisBackend::open(&u, "share-cost").expect("a Redis URL");
        b.connect(std::time::Duration::from_secs(1))
            .expect("Redis answers");
        // A second backend, on its own connection, for the bare PINGs.
        let ping = RedisBackend::open(&u, "share-cost").expect("a Redis URL");
        (b, ping)
    });

    let cases = [
        "in-process reserve()",
        "file",
        "Redis PING",
        "Redis EVALSHA",
    ];
    let mut results: Vec<Vec<(f64, f64)>> = vec![Vec::new(); cases.len()];
    for _ in 0..reps {
        let mut state = 0u64;
        let mut now = 1_795_975_200_000_000u64;
        results[0].push(time(calls, || {
            now += 1;
            let (s, o) = reserve(std::hint::black_box(state), now, PARAMS);
            state = s;
            assert!(matches!(o, Outcome::Granted { .. }));
        }));
        results[1].push(time(calls, || {
            let o = fb
                .reserve(PARAMS, drip::share::LOCK_DEADLINE)
                .expect("file reserve");
            assert!(matches!(o, Outcome::Granted { .. }));
        }));
        if let Some((b, ping)) = &mut rb {
            results[2].push(time(calls, || {
                ping.connect(std::time::Duration::from_secs(1))
                    .expect("PING");
            }));
            results[3].push(time(calls, || {
                let o = b
                    .reserve(PARAMS, drip::share::LOCK_DEADLINE)
                    .expect("Redis reserve");
                assert!(matches!(o, Outcome::Granted { .. }));
            }));
        }
    }
    println!("{calls} calls per case and rep, {reps} reps; µs per call (median over reps)\n");
    println!("| case | median µs | p99 µs |");
    println!("|---|---|---|");
    let mut med = Vec::new();
    for (name, r) in cases.iter().zip(&results) {
        if r.is_empty() {
            continue;
        }
        let m = median(r.iter().map(|x| x.0).collect());
        let p = median(r.iter().map(|x| x.1).collect());
        med.push((m, p));
        println!("| {name} | {m:.3} | {p:.3} |");
    }
    println!();
    println!(
        "file ÷ in-process: median {:.0}×, p99 {:.0}×",
        med[1].0 / med[0].0,
        med[1].1 / med[0].1
    );
    if med.len() == 4 {
        println!(
            "EVALSHA ÷ PING: median {:.2}×, p99 {:.2}×",
            med[3].0 / med[2].0,
            med[3].1 / med[2].1
        );
    }
}
