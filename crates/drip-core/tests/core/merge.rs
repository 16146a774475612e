//! Outcomes merge: replays of a log split by key into parts, merged, give
//! exactly the reports of one replay of the whole log, for every policy
//! family, on the NASA fixture and on a generated log.

use drip_core::engine::replayer::Replayer;
use drip_core::testing::Rng;
use drip_core::time::Nanos;

/// Tight enough that every policy drops or delays on both logs.
const SPECS: &[&str] = &[
    "gcra:rate=1/s,burst=2",
    "token-bucket:rate=1/s,burst=3",
    "leaky-bucket:rate=1/s,capacity=2",
    "shaper:rate=1/s,burst=2",
    "fixed-window:limit=10,window=10s",
    "sliding-window:limit=10,window=10s",
    "sliding-log:limit=5,window=5s",
    "nginx:rate=1r/s,burst=2",
    "nginx:rate=2r/s,burst=4,nodelay",
    "gcra:rate=1/s,burst=2+fixed-window:limit=30,window=1m",
];

/// A row: time, key, cost.
type Row = (Nanos, Vec<u8>, u32);

/// The NASA fixture's rows: the client (`host`) and the time (epoch
/// seconds), in file order (which is time order).
fn nasa() -> Vec<Row> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/nasa_19950801.tsv"
    );
    let text = std::fs::read_to_string(path).expect("the NASA fixture");
    text.lines()
        .skip(1)
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            let secs: u64 = cols[2].parse().expect("epoch seconds");
            (Nanos(secs * 1_000_000_000), cols[0].as_bytes().to_vec(), 1)
        })
        .collect()
}

/// A seeded log: bursts from a few hundred keys (some heavy), costs 1-3,
/// millisecond times, a few empty keys.
fn generated() -> Vec<Row> {
    let mut rng = Rng(0x6d65_7267_6521);
    let mut at = 0u64;
    let mut rows = Vec::new();
    while rows.len() < 40_000 {
        at += rng.below(40) * 1_000_000;
        let key = match rng.below(100) {
            0 => Vec::new(),
            1..=30 => format!("heavy-{}", rng.below(5)).into_bytes(),
            _ => format!("client-{}", rng.below(400)).into_bytes(),
        };
        let burst = 1 + rng.below(if key.starts_with(b"heavy") { 12 } else { 3 });
        for _ in 0..burst {
            rows.push((Nanos(at), key.clone(), 1 + rng.below(3) as u32));
        }
    }
    rows
}

/// FNV-1a of the key: the part it belongs to.
fn part_of(key: &[u8], parts: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h % parts
}

/// The reports of a replay of `rows`, as JSON.
fn replayed(rows: impl Iterator<Item = Row>) -> drip_core::engine::merge::Outcome {
    let mut r = Replayer::new(SPECS, 10).unwrap();
    for (at, key, cost) in rows {
        r.push(at, &key, cost).unwrap();
    }
    r.finish().unwrap()
}

fn json(outcome: drip_core::engine::merge::Outcome) -> String {
    serde_json::to_string_pretty(&outcome.reports()).unwrap()
}

/// Replays `rows` whole, then split into `parts` by key hash (empty keys,
/// exempt from every keyed limit, all in the first part) and merged.
fn check(name: &str, rows: &[Row], parts: u64) {
    let whole = json(replayed(rows.iter().cloned()));
    let mut merged: Option<drip_core::engine::merge::Outcome> = None;
    for p in 0..parts {
        let part = rows
            .iter()
            .filter(|(_, k, _)| part_of(k, parts) == p)
            .cloned();
        let outcome = replayed(part);
        match merged.as_mut() {
            None => merged = Some(outcome),
            Some(m) => m.merge(outcome).unwrap(),
        }
    }
    let merged = json(merged.unwrap());
    assert_eq!(merged, whole, "{name} in {parts} parts");
}

#[test]
fn nasa_split_by_client_in_2_and_4_parts_merges_into_the_whole_replay() {
    let rows = nasa();
    let whole: serde_json::Value =
        serde_json::from_str(&json(replayed(rows.iter().cloned()))).unwrap();
    // The check means something: every policy hurt someone.
    for r in whole.as_array().unwrap() {
        assert!(
            r["dropped"].as_u64().unwrap() + r["delayed"].as_u64().unwrap() > 0,
            "{r}"
        );
    }
    check("NASA", &rows, 2);
    check("NASA", &rows, 4);
}

#[test]
fn a_generated_log_split_by_key_in_2_and_4_parts_merges_into_the_whole_replay() {
    let rows = generated();
    check("generated", &rows, 2);
    check("generated", &rows, 4);
}

#[test]
fn outcomes_of_other_specs_do_not_merge() {
    let rows = generated();
    let mut a = replayed(rows.iter().take(100).cloned());
    let mut r = Replayer::new(&["gcra:rate=1/s,burst=2"], 10).unwrap();
    r.push(Nanos(0), b"k", 1).unwrap();
    let b = r.finish().unwrap();
    let e = a.merge(b).unwrap_err();
    assert!(e.to_string().contains("different runs"), "{e}");
}

#[test]
fn rows_out_of_time_order_are_refused() {
    let mut r = Replayer::new(&["gcra:rate=1/s,burst=2"], 10).unwrap();
    r.push(Nanos(5), b"a", 1).unwrap();
    let e = r.push(Nanos(4), b"a", 1).unwrap_err();
    assert!(e.to_string().contains("time order"), "{e}");
}

#[test]
fn outcomes_of_specs_with_one_label_but_other_limits_do_not_merge() {
    let one = |spec: &str| {
        let mut r = Replayer::new(&[spec], 10).unwrap();
        r.push(Nanos(0), b"k", 1).unwrap();
        r.finish().unwrap()
    };
    let mut a = one("gcra:rate=1/s,burst=2,label=api");
    let e = a.merge(one("gcra:rate=9/s,burst=2,label=api")).unwrap_err();
    assert!(e.to_string().contains("different runs"), "{e}");
}
