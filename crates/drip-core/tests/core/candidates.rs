//! The candidate replays `size` searches with count what an audit replay
//! reports: where a probe of K sizes says it saw the whole log, its counts
//! are the audit report's counts of each size's spec, with and without the
//! settled keys skipped; where it cannot (a policy that delays, keys left
//! out of the targets) it says so.

use drip_core::engine::candidates::audit;
use drip_core::engine::candidates::log::Log;
use drip_core::engine::candidates::probe::{NeedJob, ProbeJob, dispatch};
use drip_core::engine::counts::Counts;
use drip_core::ingest::input::Event;
use drip_core::ingest::keys::EMPTY_KEY;
use drip_core::ingest::stream::Sink;
use drip_core::policy::table::sizing_of;
use drip_core::policy::{PolicyConfig, parse_spec};
use drip_core::testing::Rng;
use drip_core::time::Nanos;

/// Families that never delay, as a spec at size `{}`.
const DROPPING: &[&str] = &[
    "gcra:rate=2/s,burst={}",
    "token-bucket:rate=2/s,burst={}",
    "leaky-bucket:rate=2/s,capacity={}",
    "nginx:rate=2r/s,burst={},nodelay",
    "fixed-window:limit={},window=1s",
    "sliding-window:limit={},window=2s",
    "sliding-log:limit={},window=2s",
];

/// A seeded log of `keys` keys (one heavy), costs 1-3 when `costs`, a few
/// exempt rows.
fn generated(seed: u64, keys: u32, costs: bool) -> Log {
    let mut rng = Rng(seed);
    let mut log = Log::new(true, costs);
    for k in 0..keys {
        log.names.push(format!("client-{k}").as_bytes());
        log.requests_by_key.push(0);
    }
    let mut at = 0;
    let events: Vec<Event> = (0..6_000u64)
        .map(|i| {
            at += rng.below(300) * 1_000_000;
            let key = match rng.below(40) {
                0 => EMPTY_KEY,
                1..=12 => 0,
                _ => rng.below(u64::from(keys)) as u32,
            };
            Event {
                at: Nanos(at),
                row: i + 1,
                line: 0,
                file: 0,
                cost: if costs { 1 + rng.below(3) as u32 } else { 1 },
                keys: drip_core::ingest::input::first_key(key),
            }
        })
        .collect();
    log.take(&events).expect("rows in time order");
    log
}

fn config(spec: &str) -> PolicyConfig {
    parse_spec(spec).expect("a valid spec").members[0].config
}

fn spec(template: &str, size: u64) -> String {
    template.replace("{}", &size.to_string())
}

/// Every size's counts, from one probe of all of them (`settled`: with the
/// keys that need no more than the smallest size skipped, as `size` does).
fn probed(log: &Log, template: &str, sizes: &[u64], settled: bool) -> Vec<Option<Counts>> {
    let configs: Vec<PolicyConfig> = sizes.iter().map(|&s| config(&spec(template, s))).collect();
    let family = template.split(':').next().unwrap();
    let offset = sizing_of(family).unwrap().1.level_over_size;
    let big = config(&spec(template, 1_000_000_000));
    let need = dispatch(&[big], NeedJob { log, offset });
    let need: Vec<u64> = (0..log.keys()).map(|k| need.of(k, 0)).collect();
    let smallest = *sizes.iter().min().unwrap();
    let job = ProbeJob {
        log,
        counted: &[],
        settled: settled.then_some((&need[..], smallest)),
        settled_wait: 0,
        per: None,
    };
    dispatch(&configs, job)
        .into_iter()
        .map(|p| p.counts)
        .collect()
}

#[test]
fn a_probe_counts_what_audit_reports_for_every_size() {
    let sizes = [1, 2, 3, 5, 8, 13, 40];
    for (seed, costs) in [(0x5157, false), (0x9e37, true)] {
        let log = generated(seed, 60, costs);
        for template in DROPPING {
            for settled in [false, true] {
                let counts = probed(&log, template, &sizes, settled);
                for (&size, c) in sizes.iter().zip(counts) {
                    let s = spec(template, size);
                    let audited = Counts::of(&audit(&log, &s, true, 0).unwrap());
                    assert_eq!(c, Some(audited), "{s}, costs {costs}, settled {settled}");
                }
            }
        }
    }
}

#[test]
fn a_probe_that_cannot_see_every_figure_says_so() {
    let log = generated(0x77, 20, false);
    for template in ["shaper:rate=2/s,burst={}", "nginx:rate=2r/s,burst={}"] {
        assert_eq!(probed(&log, template, &[1, 4], false), [None, None]);
    }
    let mut counted = vec![true; log.keys()];
    counted[3] = false;
    let configs = [config("gcra:rate=2/s,burst=2")];
    let job = ProbeJob {
        log: &log,
        counted: &counted,
        settled: None,
        settled_wait: 0,
        per: None,
    };
    assert_eq!(dispatch(&configs, job)[0].counts, None);
}
