//! `drip size` end to end: every frontier row is checked against `drip
//! audit` run on the row's own spec (the same figures), and against the
//! same spec one size smaller (a target missed).

mod conf;
mod guard;
mod haproxy;
mod plot;
mod replicas;
mod site;
mod targets;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;

use crate::common::{Drip, NASA, Scratch};

/// `drip size` with `args`, as JSON (exit status 0 or 1).
fn size(args: &[&str]) -> (i32, Value) {
    let out = Drip::size()
        .args(["-f", "json", "--quiet"])
        .args(args)
        .run();
    assert!(
        out.code == 0 || out.code == 1,
        "exit {}: {}",
        out.code,
        out.stderr
    );
    (out.code, out.stdout_json())
}

/// `drip audit -p spec` on the same input, as the policy's JSON object.
fn audit(input: &[&str], spec: &str) -> Value {
    let report = Drip::audit()
        .args(["-f", "json", "--quiet", "-p", spec])
        .args(input)
        .json();
    report["policies"][0].clone()
}

/// The targets a test gives, checked on audit's figures.
#[derive(Clone, Copy, Default)]
struct Targets {
    drop_pct: Option<f64>,
    drops: Option<u64>,
    keys_hurt: Option<u64>,
    wait_ms: Option<u64>,
}

impl Targets {
    fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(p) = self.drop_pct {
            a.extend(["--max-drop-rate".to_string(), p.to_string()]);
        }
        if let Some(n) = self.drops {
            a.extend(["--max-drops".to_string(), n.to_string()]);
        }
        if let Some(n) = self.keys_hurt {
            a.extend(["--max-keys-hurt".to_string(), n.to_string()]);
        }
        if let Some(w) = self.wait_ms {
            a.extend(["--max-wait".to_string(), format!("{w}ms")]);
        }
        a
    }

    fn met_by(&self, p: &Value) -> bool {
        let n = |k: &str| p[k].as_u64().unwrap();
        let dropped = n("dropped");
        let requests = n("requests");
        self.drop_pct
            .is_none_or(|pct| dropped as f64 <= pct / 100.0 * requests as f64 + 1e-9)
            && self.drops.is_none_or(|d| dropped <= d)
            && self.keys_hurt.is_none_or(|k| n("keys_with_drops") <= k)
            && self.wait_ms.is_none_or(|w| {
                p["wait"]["max_ns"]
                    .as_u64()
                    .is_none_or(|m| m <= w * 1_000_000)
            })
    }
}

/// Runs size and checks every frontier row against audit: equal figures,
/// targets met, and one size less misses them (unless the row says the
/// search could not prove it).
fn check_exact(input: &[&str], policy: &str, sweep: &[&str], t: Targets) -> Value {
    let targets = t.args();
    let mut args: Vec<&str> = input.to_vec();
    args.extend(["-p", policy]);
    args.extend_from_slice(sweep);
    args.extend(targets.iter().map(String::as_str));
    // Every row is checked against audit's figures over every key.
    args.push("--keep-outliers");
    let (_, report) = size(&args);
    let rows = report["frontier"].as_array().unwrap();
    assert!(!rows.is_empty(), "{report}");
    // Policies that delay are held to a wait of 1 s unless told otherwise.
    let given = t.wait_ms.is_some();
    let t = Targets {
        wait_ms: report["targets"]["max_wait_ns"]
            .as_u64()
            .map(|w| w / 1_000_000),
        ..t
    };
    if t.wait_ms.is_some() && !given {
        assert_eq!(report["targets"]["max_wait_default"], true, "{report}");
        assert_eq!(t.wait_ms, Some(1000));
    }
    for row in rows {
        let spec = row["spec"].as_str().unwrap();
        let a = audit(input, spec);
        for (mine, theirs) in [
            ("requests", "requests"),
            ("admitted", "admitted"),
            ("delayed", "delayed"),
            ("dropped", "dropped"),
            ("keys", "keys"),
            ("keys_hurt", "keys_with_drops"),
        ] {
            assert_eq!(row[mine], a[theirs], "{spec}: {mine}\n{row}\n{a}");
        }
        assert_eq!(row["drop_pct"].as_f64(), a["drop_pct"].as_f64(), "{spec}");
        if a["wait"].is_object() {
            assert_eq!(row["wait_p99_ns"], a["wait"]["p99_ns"], "{spec}");
            assert_eq!(row["wait_max_ns"], a["wait"]["max_ns"], "{spec}");
        } else {
            assert!(row.get("wait_max_ns").is_none(), "{spec}");
        }
        let feasible = row["feasible"].as_bool().unwrap();
        assert_eq!(feasible, t.met_by(&a), "{spec}: feasible\n{a}");
        let size = row["size"].as_u64().unwrap();
        let min = if policy.starts_with("shaper") || policy.starts_with("nginx") {
            0
        } else {
            1
        };
        if feasible && size > min && row["method"] != "search-unproven" {
            let param = report["size_param"].as_str().unwrap();
            let smaller =
                spec.replace(&format!("{param}={size}"), &format!("{param}={}", size - 1));
            assert_ne!(smaller, spec);
            let b = audit(input, &smaller);
            assert!(!t.met_by(&b), "{smaller} meets the targets too\n{b}");
        }
    }
    report
}

fn nasa_keyed() -> Vec<&'static str> {
    vec![NASA, "--key-column", "host"]
}

#[test]
fn bucket_families_are_exact_on_the_nasa_log() {
    let t = Targets {
        drop_pct: Some(0.2),
        ..Default::default()
    };
    for policy in [
        "gcra",
        "token-bucket",
        "leaky-bucket",
        "nginx:nodelay",
        "nginx",
        "nginx:delay=2",
    ] {
        let rates = if policy.starts_with("nginx") {
            "5r/m,1r/s,2r/s"
        } else {
            "5/min,1/s,3/s"
        };
        check_exact(&nasa_keyed(), policy, &["--rate", rates], t);
    }
    // The shaper with a wait target, per client and global.
    let t = Targets {
        drop_pct: Some(0.5),
        wait_ms: Some(3000),
        ..Default::default()
    };
    check_exact(&nasa_keyed(), "shaper", &["--rate", "1/s,2/s,5/s"], t);
    check_exact(&[NASA], "shaper", &["--rate", "1/s,2/s,5/s"], t);
}

#[test]
fn window_families_are_exact_on_the_nasa_log() {
    let t = Targets {
        keys_hurt: Some(10),
        ..Default::default()
    };
    for policy in [
        "fixed-window",
        "fixed-window:align=first-hit,count=all",
        "sliding-window",
        "sliding-log",
    ] {
        check_exact(&nasa_keyed(), policy, &["--window", "10s,1m,10m"], t);
    }
    let t = Targets {
        drops: Some(100),
        ..Default::default()
    };
    check_exact(&[NASA], "sliding-log", &["--window", "1s,1m"], t);
}

#[test]
fn zero_drop_targets_give_the_largest_need() {
    let t = Targets {
        drops: Some(0),
        ..Default::default()
    };
    let r = check_exact(&nasa_keyed(), "gcra", &["--rate", "1/s,10/s"], t);
    for (row, need) in r["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .zip(r["per_key"].as_array().unwrap())
    {
        assert_eq!(row["method"], "zero-drop");
        assert_eq!(row["size"], need["max"], "{row}\n{need}");
        assert_eq!(row["dropped"], 0);
    }
}

/// A log of `(ms, key, cost)` rows.
fn hand_log(tmp: &Scratch, rows: &[(u64, &str, u32)]) -> PathBuf {
    let mut text = String::from("ts,client,cost\n");
    for (t, k, c) in rows {
        text.push_str(&format!("{},{k},{c}\n", t));
    }
    tmp.write("log.csv", &text)
}

#[test]
fn costs_above_one_are_scanned_and_exact() {
    let tmp = Scratch::new();
    // The counterexample: at 1/s, burst 4 drops 8 and burst 5 drops 9.
    let rows: Vec<(u64, &str, u32)> = [
        (0, 2),
        (0, 3),
        (300, 3),
        (400, 1),
        (400, 3),
        (400, 3),
        (500, 1),
        (800, 2),
        (805, 1),
        (855, 1),
        (855, 1),
        (1855, 1),
    ]
    .iter()
    .map(|&(t, c)| (t, "a", c))
    .collect();
    let log = hand_log(&tmp, &rows);
    let input = [
        log.to_str().unwrap(),
        "--time-format",
        "epoch-ms",
        "--cost-column",
        "cost",
    ];
    let t = Targets {
        drops: Some(8),
        ..Default::default()
    };
    let r = check_exact(&input, "gcra", &["--rate", "1/s"], t);
    let row = &r["frontier"][0];
    assert_eq!(row["method"], "scan");
    assert_eq!(row["size"], 4, "{row}");
    // Burst 5 misses (9 drops) though 4 meets it: not monotone.
    assert_eq!(audit(&input, "gcra:rate=1/s,burst=5")["dropped"], 9);
    let notes = r["method_notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("costs vary"))
    );
    for policy in ["token-bucket", "shaper", "nginx", "sliding-log"] {
        let sweep: &[&str] = match policy {
            "nginx" => &["--rate", "1r/s,2r/s"],
            "sliding-log" => &["--window", "1s,2s"],
            _ => &["--rate", "1/s,2/s"],
        };
        check_exact(&input, policy, sweep, t);
    }
}

#[test]
fn ties_and_a_key_that_never_meets_the_targets() {
    let tmp = Scratch::new();
    // Ten requests at the same instant from "bot", a trickle from others.
    let mut rows: Vec<(u64, &str, u32)> = (0..10).map(|_| (1000, "bot", 1)).collect();
    for i in 0..20 {
        rows.push((i * 700, if i % 2 == 0 { "a" } else { "b" }, 1));
    }
    rows.sort_by_key(|r| r.0);
    let log = hand_log(&tmp, &rows);
    let input = [
        log.to_str().unwrap(),
        "--time-format",
        "epoch-ms",
        "--key-column",
        "client",
    ];
    let t = Targets {
        drops: Some(0),
        ..Default::default()
    };
    let r = check_exact(&input, "gcra", &["--rate", "1/s,2/s"], t);
    assert_eq!(r["frontier"][0]["size"], 10);
    let top = &r["per_key"][0]["top"][0];
    assert_eq!(
        (top["key"].as_str(), top["need"].as_u64()),
        (Some("bot"), Some(10))
    );
    // A shaper may not make anyone wait over 1 s: bot's ten at once need a
    // queue of 9, which waits 9 s at 1/s; no rate up to 2/s serves them.
    let t = Targets {
        drops: Some(0),
        wait_ms: Some(1000),
        ..Default::default()
    };
    let mut args = input.to_vec();
    args.extend([
        "-p",
        "shaper",
        "--rate",
        "1/s,2/s",
        "--max-drops",
        "0",
        "--max-wait",
        "1s",
    ]);
    let (code, r) = size(&args);
    assert_eq!(code, 1, "{r}");
    assert!(r["recommended"].is_null());
    assert!(
        r["verdict"]
            .as_str()
            .unwrap()
            .contains("capacity problem, not a limiter setting")
    );
    check_exact(&input, "shaper", &["--rate", "1/s,2/s"], t);
    // Leaving the bot out of the targets, a burst of 1 serves the others.
    let ex = tmp.write("bots.txt", "# known abusers\nbot\nnobody\n");
    let mut args = input.to_vec();
    args.extend([
        "-p",
        "gcra",
        "--rate",
        "1/s",
        "--max-drops",
        "0",
        "--horizon",
        "10s",
        "--exclude-keys",
    ]);
    args.push(ex.to_str().unwrap());
    let (code, r) = size(&args);
    assert_eq!(code, 0);
    let row = &r["frontier"][0];
    assert_eq!(row["size"], 1, "{row}");
    // Still replayed and reported: the bot's drops are in the figures.
    assert_eq!(row["dropped"], 9);
    assert_eq!(r["targets"]["excluded_keys"], 1);
    let notes = r["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("1 of the 2 keys"))
    );
}

/// The per-key need agrees with replaying each key alone at every burst.
#[test]
fn per_key_need_agrees_with_a_brute_force_search() {
    let tmp = Scratch::new();
    let (_, r) = size(&[
        NASA,
        "--key-column",
        "host",
        "-p",
        "gcra",
        "--rate",
        "1/s",
        "--max-drops",
        "0",
        "--top",
        "3",
    ]);
    let text = std::fs::read_to_string(NASA).unwrap();
    let header = text.lines().next().unwrap().to_string();
    for k in r["per_key"][0]["top"].as_array().unwrap() {
        let key = k["key"].as_str().unwrap();
        let need = k["need"].as_u64().unwrap();
        let alone: String = text
            .lines()
            .skip(1)
            .filter(|l| l.split('\t').next() == Some(key))
            .map(|l| format!("{l}\n"))
            .collect();
        let log = tmp.write("alone.tsv", &format!("{header}\n{alone}"));
        let mut zero_from = None;
        for b in 1..=need + 1 {
            let a = audit(
                &[log.to_str().unwrap(), "--key-column", "host"],
                &format!("gcra:rate=1/s,burst={b}"),
            );
            if a["dropped"] == 0 {
                zero_from = Some(b);
                break;
            }
        }
        assert_eq!(zero_from, Some(need), "{key}");
    }
}

#[test]
fn nginx_answers_come_as_directives() {
    let (code, r) = size(&[
        NASA,
        "--key-column",
        "host",
        "-p",
        "nginx:nodelay",
        "--rate",
        "1r/s..10r/s",
        "--max-drop-rate",
        "0.1",
    ]);
    assert_eq!(code, 0);
    let rec = &r["recommended"];
    let rates: Vec<&str> = r["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rate"].as_str().unwrap())
        .collect();
    assert_eq!(rates, ["1r/s", "2r/s", "5r/s", "10r/s"]);
    let n = &r["nginx"];
    assert_eq!(
        n["limit_req"],
        format!("limit_req zone=drip burst={} nodelay;", rec["size"])
    );
    assert_eq!(
        n["limit_req_zone"],
        format!(
            "limit_req_zone $binary_remote_addr zone=drip:1m rate={};",
            rec["rate"].as_str().unwrap()
        )
    );
    assert!(n["keys_active_60s"].as_u64().unwrap() > 1);
    // The fewest requests through in any minute among the frontier.
    let least = r["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["worst_in_horizon"].as_u64().unwrap())
        .min();
    assert_eq!(rec["worst_in_horizon"].as_u64(), least);
}

#[test]
fn current_config_is_audited_next_to_the_recommendation() {
    let (_, r) = size(&[
        NASA,
        "--key-column",
        "host",
        "-p",
        "gcra",
        "--rate",
        "1/s,2/s",
        "--max-drop-rate",
        "0.1",
        "--current",
        "gcra:rate=1/s,burst=2",
    ]);
    let c = &r["current"];
    let a = audit(&nasa_keyed(), "gcra:rate=1/s,burst=2");
    assert_eq!(c["dropped"], a["dropped"]);
    assert_eq!(c["keys_hurt"], a["keys_with_drops"]);
    assert_eq!(c["meets_targets"], false);
    // A stack is checked on its own figures.
    let (_, r) = size(&[
        NASA,
        "--key-column",
        "host",
        "-p",
        "gcra",
        "--rate",
        "1/s",
        "--max-drop-rate",
        "50",
        "--current",
        "gcra:rate=1/s,burst=50+gcra:rate=2/s,burst=60",
    ]);
    assert_eq!(r["current"]["meets_targets"], true, "{}", r["current"]);
    assert!(c["change"][0].as_str().unwrap().contains("drops"));
}

#[test]
fn every_format_renders_the_frontier() {
    for (format, needle) in [
        ("table", "recommended: gcra:rate="),
        ("markdown", "| rate | burst | dropped |"),
        ("csv", "rate,burst,meets_targets,tested,"),
    ] {
        let out = Drip::size()
            .args([
                NASA,
                "-q",
                "--key-column",
                "host",
                "-p",
                "gcra",
                "--rate",
                "1/s,2/s",
                "--max-drop-rate",
                "1",
                "-f",
                format,
            ])
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains(needle), "{format}:\n{}", out.stdout);
        assert!(out.stdout.contains("gcra:rate=1/s,burst="), "{format}");
    }
}

#[test]
fn default_sweeps_run_from_the_average_to_the_busiest_second() {
    let (code, r) = size(&[NASA, "-p", "gcra", "--max-drop-rate", "1"]);
    assert_eq!(code, 0);
    let rates: Vec<&str> = r["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rate"].as_str().unwrap())
        .collect();
    // 30,969 requests over 12.9 h: 0.67/s; the busiest second has 17.
    assert_eq!(rates, ["50/min", "1/s", "2/s", "5/s", "10/s", "20/s"]);
    let (_, r) = size(&[NASA, "-p", "sliding-log", "--max-drop-rate", "1"]);
    let windows: Vec<&str> = r["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["window"].as_str().unwrap())
        .collect();
    assert_eq!(windows, ["1s", "10s", "1m", "10m", "1h"]);
}

#[test]
fn mistakes_are_one_line_and_exit_2() {
    for (args, needle) in [
        (vec!["-p", "gcra"], "no target given"),
        (
            vec!["-p", "gcra:burst=5", "--max-drops", "0"],
            "burst= is what size finds",
        ),
        (
            vec!["-p", "gcra+shaper", "--max-drops", "0"],
            "not a '+' stack",
        ),
        (
            vec!["-p", "gcra", "--max-drop-rate", "x"],
            "invalid --max-drop-rate 'x'",
        ),
        (
            vec!["-p", "gcra", "--max-keys-hurt", "a%", "--max-drops", "1"],
            "invalid --max-keys-hurt",
        ),
        (
            vec!["-p", "gcra", "--headroom", "1", "--max-drops", "1"],
            "invalid --headroom '1'",
        ),
        (
            vec!["-p", "gcra", "--headroom", "1.5x", "--max-drops", "1"],
            "invalid --headroom '1.5x'",
        ),
        (
            vec!["-p", "gcra", "--window", "1s", "--max-drops", "0"],
            "--window applies to the window families",
        ),
        (
            vec!["-p", "nginx", "--rate", "1/7s", "--max-drops", "0"],
            "nginx takes a whole number",
        ),
        (
            vec!["-p", "gcra", "--rate", "9/s..5/s", "--max-drops", "0"],
            "from the lower rate",
        ),
        (
            vec!["-p", "gcra", "--exclude-keys", "x", "--max-drops", "0"],
            "--exclude-keys needs a keyed policy",
        ),
        (
            vec!["-p", "gcra", "--max-drops", "0", "--time-column", "nope"],
            "no time column 'nope'",
        ),
        // A period so short that the month spans billions: refused before
        // anything is laid out, with the shortest that fits.
        (
            vec!["-p", "gcra", "--max-drops", "0", "--per", "10us", "-q"],
            "--per 10us: the log spans 4632100001 periods of it, more than 16777216; give --per 5ms or longer",
        ),
    ] {
        let mut all = vec!["size", NASA, "--no-progress"];
        all.extend(args.iter().copied());
        let out = Drip::new().args(&all).run();
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(
            out.stderr.trim().lines().count(),
            1,
            "{args:?}: {}",
            out.stderr
        );
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"));
    }
}

#[test]
fn a_report_onto_its_own_log_is_refused() {
    let tmp = Scratch::new();
    let log = tmp.write(
        "s.csv",
        &std::fs::read_to_string("fixtures/small.csv").unwrap(),
    );
    let before = std::fs::read(&log).unwrap();
    let ex = tmp.write("ex.txt", "alice\n");
    for (target, needle) in [
        (&log, "is the same file as the log"),
        (&ex, "is the same file as --exclude-keys"),
    ] {
        // `drip size log ... >> target`: stdout appends to the file.
        let out = std::fs::OpenOptions::new()
            .append(true)
            .open(target)
            .unwrap();
        let res = Drip::new()
            .command()
            .args([
                "size",
                log.to_str().unwrap(),
                "-q",
                "--key-column",
                "client",
            ])
            .args(["-p", "gcra", "--rate", "1/s", "--max-drops", "0"])
            .args(["--exclude-keys", ex.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(out)
            .output()
            .expect("run drip");
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("standard output (the report)"), "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    assert_eq!(
        std::fs::read(&log).unwrap(),
        before,
        "the log was written to"
    );
    assert_eq!(std::fs::read_to_string(&ex).unwrap(), "alice\n");
}

#[test]
fn nothing_meeting_the_targets_exits_1_with_one_line_saying_so() {
    let tmp = Scratch::new();
    // Ten requests in one second for one client; a shaper at 1/s may not
    // keep any waiting over a second: no rate up to 2/s serves them.
    let log = hand_log(
        &tmp,
        &(0..10)
            .map(|_| (1_700_000_000_000, "bot", 1))
            .collect::<Vec<_>>(),
    );
    for format in ["table", "json"] {
        let out = Drip::size()
            .args([
                log.to_str().unwrap(),
                "-q",
                "-f",
                format,
                "--time-format",
                "epoch-ms",
                "--key-column",
                "client",
                "-p",
                "shaper",
                "--rate",
                "1/s,2/s",
                "--max-drops",
                "0",
                "--max-wait",
                "1s",
            ])
            .run();
        assert_eq!(out.code, 1, "{format}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr.starts_with("drip: no limit up to 2/s meets")
                && out.stderr.contains("capacity problem"),
            "{}",
            out.stderr
        );
        assert!(!out.stdout.is_empty(), "the report is still written");
    }
    // A current config missing the targets does not change the status:
    // the recommendation exists; the report says the current one misses.
    let out = Drip::size()
        .args([
            log.to_str().unwrap(),
            "-q",
            "--time-format",
            "epoch-ms",
            "--key-column",
            "client",
            "-p",
            "gcra",
            "--rate",
            "1/s",
            "--max-drops",
            "0",
            "--current",
            "gcra:rate=1/s,burst=2",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("misses the targets"), "{}", out.stdout);
}

#[test]
fn a_global_nginx_answer_counts_every_request_in_one_bucket() {
    let out = Drip::size()
        .args([
            NASA,
            "-q",
            "-p",
            "nginx:nodelay,key=none",
            "--rate",
            "5r/s,10r/s",
            "--max-drop-rate",
            "1",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Not `$server_name` (one bucket per server), not a constant that
    // could be empty (exempt): a map giving every request the key "all".
    assert!(
        out.stdout
            .contains("    map $remote_addr $drip_all { default all; }\n    limit_req_zone $drip_all zone=drip:1m rate="),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("$server_name"));
    let (_, r) = size(&[
        NASA,
        "-p",
        "nginx:key=none",
        "--rate",
        "10r/s",
        "--max-drops",
        "0",
        "--max-wait",
        "none",
    ]);
    assert_eq!(
        r["nginx"]["map"],
        "map $remote_addr $drip_all { default all; }"
    );
    assert!(
        r["nginx"]["limit_req_zone"]
            .as_str()
            .unwrap()
            .starts_with("limit_req_zone $drip_all zone=drip:1m rate=10r/s")
    );
}

#[test]
fn excluded_keys_match_as_shown_and_as_logged_under_prefix_and_joined_keys() {
    let tmp = Scratch::new();
    let log = tmp.write(
        "k.csv",
        "ts,ip,path\n1700000000,10.1.2.3,/a\n1700000000,10.1.2.4,/a\n1700000000,10.1.2.5,/a\n1700000001,9.9.9.9,/b\n1700000002,8.8.8.8,/b\n",
    );
    let log = log.to_str().unwrap();
    let excluded = |keying: &[&str], lines: &str| {
        let ex = tmp.write("ex.txt", lines);
        let mut args = vec![log, "-p", "gcra", "--rate", "1/s", "--max-drops", "0"];
        args.extend_from_slice(keying);
        args.extend(["--exclude-keys", ex.to_str().unwrap()]);
        let (_, r) = size(&args);
        (
            r["targets"]["excluded_keys"].as_u64().unwrap(),
            r["targets"]["excluded_requests"].as_u64().unwrap(),
            r["notes"].to_string(),
        )
    };
    let prefix = ["--key-column", "ip", "--key-prefix", "24"];
    // As the report shows the key, and as logged: both name 10.1.2.0/24.
    for lines in ["10.1.2.0/24\n", "10.1.2.3\n", "10.1.2.0/24\n10.1.2.4\n"] {
        let (keys, requests, notes) = excluded(&prefix, lines);
        assert_eq!((keys, requests), (1, 3), "{lines:?}: {notes}");
        assert!(!notes.contains("do not appear"), "{lines:?}: {notes}");
    }
    let (keys, _, notes) = excluded(&prefix, "10.9.9.9\n");
    assert_eq!(keys, 0);
    assert!(notes.contains("1 of the 1 keys"), "{notes}");
    // Joined columns, shown as `path|ip`; the logged parts shaped alike.
    let joined = [
        "--key-column",
        "path,ip",
        "--key-prefix",
        "24",
        "--strip-port",
    ];
    for lines in ["/a|10.1.2.0/24\n", "/a|10.1.2.3:4711\n", "/b | 9.9.9.9\n"] {
        let (keys, _, notes) = excluded(&joined, lines);
        assert_eq!(keys, 1, "{lines:?}: {notes}");
        assert!(!notes.contains("do not appear"), "{lines:?}: {notes}");
    }
}

#[test]
fn a_sparse_average_rate_reads_per_hour_not_as_zero() {
    let tmp = Scratch::new();
    // 200 clients, one request each over ten hours: 0.0000279/s per key.
    let mut text = String::from("ts,client\n");
    for i in 0..200u64 {
        text.push_str(&format!("{},c{i}\n", 1_700_000_000 + i * 180));
    }
    let log = tmp.write("sparse.csv", &text);
    let out = Drip::size()
        .args([
            log.to_str().unwrap(),
            "-q",
            "--key-column",
            "client",
            "-p",
            "gcra",
            "--rate",
            "1/s",
            "--max-drops",
            "0",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("0.0000/s"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("the log's average rate is 0.1005/h (p99 across keys)"),
        "{}",
        out.stdout
    );
}

/// `-p nginx` and `-p shaper` with only a drop target hold every wait to
/// 1 s; the recommendation says what it drops, delays and how long.
#[test]
fn policies_that_delay_are_held_to_a_one_second_wait_by_default() {
    for policy in ["nginx", "shaper"] {
        let out = Drip::size()
            .args([
                NASA,
                "-q",
                "--key-column",
                "host",
                "-p",
                policy,
                "--max-drop-rate",
                "0.1",
            ])
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stdout
                .lines()
                .next()
                .unwrap()
                .contains("wait ≤ 1s (default; --max-wait none lifts it)"),
            "{}",
            out.stdout
        );
        let rec = out
            .stdout
            .lines()
            .find(|l| l.starts_with("recommended:"))
            .unwrap();
        assert!(
            rec.contains("dropped 29 (0.09 %), delayed 5552 (17.93 %), wait p99 600ms max 800ms, keys hurt 17"),
            "{rec}"
        );
        // The frontier table fits in 100 columns.
        let table: Vec<&str> = out
            .stdout
            .lines()
            .skip(3)
            .take_while(|l| !l.is_empty())
            .collect();
        assert!(
            table.len() > 5 && table[0].starts_with("rate ") && table[0].contains("burst  dropped"),
            "{table:?}"
        );
        for l in table.iter().filter(|l| !l.starts_with("  ")) {
            assert!(l.chars().count() <= 100, "{l}");
        }
        let (_, r) = size(&[
            NASA,
            "--key-column",
            "host",
            "-p",
            policy,
            "--max-drop-rate",
            "0.1",
        ]);
        let rec = &r["recommended"];
        assert!(
            rec["wait_p99_ns"].as_u64().unwrap() <= 1_000_000_000,
            "{rec}"
        );
        assert!(
            rec["wait_max_ns"].as_u64().unwrap() <= 1_000_000_000,
            "{rec}"
        );
        assert_eq!(rec["delayed"], 5552);
        // Lifted, the tightest is the slowest rate, whatever it waits.
        let (_, r) = size(&[
            NASA,
            "--key-column",
            "host",
            "-p",
            policy,
            "--max-drop-rate",
            "0.1",
            "--max-wait",
            "none",
        ]);
        assert!(r["targets"].get("max_wait_ns").is_none());
        assert!(r["recommended"]["wait_max_ns"].as_u64().unwrap() > 3_600_000_000_000);
    }
    // A policy that never delays has no wait target.
    let (_, r) = size(&[NASA, "-p", "nginx:nodelay", "--max-drop-rate", "0.1"]);
    assert!(r["targets"].get("max_wait_ns").is_none());
    assert_eq!(r["targets"]["max_wait_default"], false);
}

#[test]
fn an_empty_log_is_an_error_as_in_audit() {
    let tmp = Scratch::new();
    let log = tmp.write("empty.csv", "ts,client\n");
    let out = Drip::size()
        .args([log.to_str().unwrap(), "-p", "gcra", "--max-drops", "0"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("the input has no rows"),
        "{}",
        out.stderr
    );
}

/// All rows at one instant: the rates run from 1/s to the busiest second,
/// and the size that holds them all is recommended.
#[test]
fn a_log_of_one_instant_is_sized_from_its_busiest_second() {
    let tmp = Scratch::new();
    let log = hand_log(
        &tmp,
        &(0..10)
            .map(|_| (1_700_000_000_000, "a", 1))
            .collect::<Vec<_>>(),
    );
    let (code, r) = size(&[
        log.to_str().unwrap(),
        "--time-format",
        "epoch-ms",
        "-p",
        "gcra",
        "--max-drops",
        "2",
    ]);
    assert_eq!(code, 0, "{r}");
    let rates: Vec<&str> = r["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rate"].as_str().unwrap())
        .collect();
    assert_eq!(rates, ["1/s", "2/s", "5/s", "10/s"]);
    assert_eq!(r["recommended"]["size"], 8);
}

/// A point whose burst takes longer to refill than the log spans, or a
/// log shorter than the horizon, is marked untested and never picked.
#[test]
fn points_the_log_cannot_test_are_never_recommended() {
    let tmp = Scratch::new();
    // 4 minutes of a steady 1 request per 2 s, and a burst of 20 at once.
    let mut rows: Vec<(u64, &str, u32)> = (0..120).map(|i| (i * 2000, "a", 1)).collect();
    rows.extend((0..20).map(|_| (60_000, "a", 1)));
    rows.sort_by_key(|r| r.0);
    let log = hand_log(&tmp, &rows);
    let input = [log.to_str().unwrap(), "--time-format", "epoch-ms"];
    let mut args = input.to_vec();
    args.extend(["-p", "gcra", "--rate", "1/min,1/s", "--max-drops", "0"]);
    let (code, r) = size(&args);
    assert_eq!(code, 0, "{r}");
    let f = r["frontier"].as_array().unwrap();
    // At 1/min a burst of about 21 takes 21 min to refill: untested.
    assert_eq!(f[0]["tested"], false, "{}", f[0]);
    assert_eq!(f[1]["tested"], true, "{}", f[1]);
    assert_eq!(r["recommended"]["rate"], "1/s");
    // A horizon longer than the log: nothing is tested, said plainly.
    let mut args = input.to_vec();
    args.extend([
        "-p",
        "gcra",
        "--rate",
        "1/s",
        "--max-drops",
        "0",
        "--horizon",
        "1h",
    ]);
    let out = Drip::new()
        .args([&["size", "-q"][..], &args].concat())
        .run();
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("too short to test"), "{}", out.stderr);
}

/// The nginx snippet counts by what was sized: the client address, the
/// URL, host and URL, a network prefix; a column nginx has no variable
/// for is said plainly instead of a wrong zone key.
#[test]
fn the_nginx_snippet_keys_what_was_sized() {
    let zone_of = |key: &str, extra: &[&str]| {
        let mut args = vec![
            NASA,
            "--key-column",
            key,
            "-p",
            "nginx:nodelay",
            "--rate",
            "1r/s",
        ];
        args.extend(["--max-drop-rate", "0.1"]);
        args.extend_from_slice(extra);
        size(&args).1["nginx"].clone()
    };
    let n = zone_of("url", &[]);
    assert!(
        n["limit_req_zone"]
            .as_str()
            .unwrap()
            .starts_with("limit_req_zone $uri zone=drip:"),
        "{n}"
    );
    let n = zone_of("host", &[]);
    assert!(
        n["limit_req_zone"]
            .as_str()
            .unwrap()
            .starts_with("limit_req_zone $binary_remote_addr ")
    );
    // NASA's `host` is the client; beside a URL it could be read as the
    // Host header: which it is is not guessed.
    let n = zone_of("host,url", &[]);
    assert_eq!(n["limit_req_zone"], "", "{n}");
    assert!(
        n["key_problem"]
            .as_str()
            .unwrap()
            .contains("'host' may be the client"),
        "{n}"
    );
    // A need of 0: no `burst=0` (nginx's default) in the snippet.
    let n = zone_of("host,url", &[]);
    assert_eq!(n["limit_req"], "limit_req zone=drip nodelay;", "{n}");
    let n = zone_of("logname", &[]);
    assert_eq!(n["limit_req_zone"], "");
    assert!(
        n["key_problem"].as_str().unwrap().contains("'logname'"),
        "{n}"
    );
    let n = zone_of("host", &["--key-prefix", "24,128"]);
    assert!(
        n["limit_req_zone"]
            .as_str()
            .unwrap()
            .starts_with("limit_req_zone $drip_net ")
    );
    assert!(
        n["map"]
            .as_str()
            .unwrap()
            .starts_with("map $remote_addr $drip_net {\n"),
        "{n}"
    );
    let n = zone_of("host", &["--key-prefix", "20"]);
    assert!(n["key_problem"].as_str().unwrap().contains("/20"), "{n}");
}

/// Alternatives stand next to the pick, each by its rule, and a horizon
/// that would pick otherwise is named.
#[test]
fn alternatives_and_horizon_sensitivity_are_shown() {
    let (_, r) = size(&[
        NASA,
        "--key-column",
        "host",
        "-p",
        "gcra",
        "--max-drop-rate",
        "0.1",
    ]);
    assert_eq!(r["recommended"]["spec"], "gcra:rate=10/min,burst=17");
    let alt = &r["alternatives"][0];
    assert_eq!(alt["rule"], "knee");
    assert_eq!(alt["row"]["spec"], "gcra:rate=5/min,burst=22");
    let notes: Vec<&str> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.iter().any(
            |n| n.starts_with("the pick depends on --horizon (1m): 1s → gcra:rate=2/s,burst=6")
        ),
        "{notes:?}"
    );
    let (_, r) = size(&[
        NASA,
        "--key-column",
        "host",
        "-p",
        "nginx",
        "--max-drop-rate",
        "0.1",
    ]);
    let alts = r["alternatives"].as_array().unwrap();
    let lowest = alts.iter().find(|a| a["rule"] == "lowest wait").unwrap();
    assert_eq!(lowest["row"]["spec"], "nginx:rate=20r/s,burst=4");
    let marked: Vec<&Value> = r["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f.get("marks").is_some())
        .collect();
    assert_eq!(marked.len(), 1 + alts.len());
}

/// `--headroom 2` sizes exactly what the log with every gap halved gives.
#[test]
fn headroom_compresses_the_times_exactly() {
    let tmp = Scratch::new();
    let mut rows: Vec<(u64, &str, u32)> = Vec::new();
    let mut t = 0u64;
    for i in 0..400u64 {
        t += (i * 7919) % 1300 + 1;
        rows.push((t, if i % 3 == 0 { "a" } else { "b" }, 1));
    }
    let halved: Vec<(u64, &str, u32)> = rows
        .iter()
        .map(|&(at, k, c)| (rows[0].0 + (at - rows[0].0) / 2, k, c))
        .collect();
    let text = |rows: &[(u64, &str, u32)]| {
        let mut s = String::from("ts,client,cost\n");
        for (t, k, c) in rows {
            s.push_str(&format!("{t},{k},{c}\n"));
        }
        s
    };
    let (a, b) = (
        tmp.write("slow.csv", &text(&rows)),
        tmp.write("fast.csv", &text(&halved)),
    );
    let run_on = |p: &PathBuf, extra: &[&str]| {
        let mut args = vec![
            p.to_str().unwrap(),
            "--time-format",
            "epoch-ms",
            "--key-column",
            "client",
        ];
        args.extend([
            "-p",
            "gcra",
            "--rate",
            "1/s,2/s,5/s",
            "--max-drops",
            "3",
            "--horizon",
            "1s",
        ]);
        args.extend_from_slice(extra);
        size(&args).1
    };
    let (slow, fast) = (run_on(&a, &["--headroom", "2"]), run_on(&b, &[]));
    assert_eq!(slow["frontier"], fast["frontier"]);
    assert_eq!(slow["targets"]["headroom"], "2");
    let notes = slow["notes"].to_string();
    assert!(notes.contains("at the speed they came"), "{notes}");
    // The input line shows the log as it came.
    assert_eq!(
        slow["input"]["last_ns"].as_u64().unwrap(),
        rows[399].0 * 1_000_000
    );
}

/// `--per 1h`: the pick holds the drop target in every hour, as `audit
/// --timeline 1h` counts them, where the whole-log pick does not.
#[test]
fn per_hour_targets_hold_in_every_hour() {
    let hours = |spec: &str| {
        let args = [
            "audit",
            NASA,
            "--key-column",
            "host",
            "-p",
            spec,
            "--timeline",
            "1h",
            "-f",
            "json",
            "-q",
        ];
        let out = Drip::new().args(args).run();
        out.stdout_json()["timeline"]["rows"]
            .as_array()
            .unwrap()
            .clone()
    };
    let worst = |rows: &[Value]| {
        rows.iter()
            .map(|r| r["dropped"].as_f64().unwrap() / r["arrived"].as_f64().unwrap())
            .fold(0.0, f64::max)
    };
    let base = [
        NASA,
        "--key-column",
        "host",
        "-p",
        "gcra",
        "--max-drop-rate",
        "0.1",
    ];
    let (_, whole) = size(&base);
    let spec = whole["recommended"]["spec"].as_str().unwrap().to_string();
    assert!(
        worst(&hours(&spec)) > 0.001,
        "{spec} already holds every hour"
    );
    let (code, per) = size(&[&base[..], &["--per", "1h"]].concat());
    assert_eq!(code, 0);
    assert_eq!(per["targets"]["per_ns"], 3_600_000_000_000u64);
    let spec = per["recommended"]["spec"].as_str().unwrap();
    let rows = hours(spec);
    assert!(worst(&rows) <= 0.001, "{spec}");
    let notes = per["notes"].to_string();
    assert!(notes.contains("worst period of 1h starts"), "{notes}");
}

/// URLs logged with a query string: `$uri` counts them under their path,
/// and the snippet says so.
#[test]
fn urls_with_queries_are_said_to_share_a_key_under_uri() {
    let tmp = Scratch::new();
    let log = tmp.write(
        "q.csv",
        "ts,url\n1700000000,/a?x=1\n1700000000,/a?x=2\n1700000001,/a?x=1\n1700000002,/b\n",
    );
    let (_, r) = size(&[
        log.to_str().unwrap(),
        "--key-column",
        "url",
        "-p",
        "nginx:nodelay",
        "--rate",
        "1r/s",
        "--max-drops",
        "0",
        "--horizon",
        "1s",
    ]);
    let n = &r["nginx"];
    assert!(
        n["limit_req_zone"]
            .as_str()
            .unwrap()
            .starts_with("limit_req_zone $uri "),
        "{n}"
    );
    assert!(
        n["key_from"]
            .as_str()
            .unwrap()
            .contains("2 of the log's URLs carry a query string"),
        "{n}"
    );
}

/// Random logs of a few heavy keys in bursts, many light ones and some
/// rows with no key: every row of every family equals audit on its spec
/// and one size less misses the targets, however the search went (an
/// answer at the least the keys' own needs allow, or above it; figures
/// taken from the search's replays, or from an audit replay where the
/// policy delays).
#[test]
fn random_logs_give_exact_rows_whichever_way_the_search_goes() {
    let tmp = Scratch::new();
    let mut rng = drip::testing::Rng(20_261_201);
    let names: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    for round in 0..4 {
        let mut rows: Vec<(u64, &str, u32)> = Vec::new();
        let mut t = 1_700_000_000_000u64;
        for _ in 0..600 {
            // Heavy keys come in bursts; a tenth of the rows carry no key.
            t += if rng.below(4) == 0 {
                rng.below(3000)
            } else {
                rng.below(40)
            };
            let k = match rng.below(10) {
                0 => "",
                1..=5 => names[rng.below(3) as usize].as_str(),
                _ => names[3 + rng.below(37) as usize].as_str(),
            };
            let cost = if round == 3 {
                1 + rng.below(3) as u32
            } else {
                1
            };
            rows.push((t, k, cost));
        }
        let log = hand_log(&tmp, &rows);
        let mut input = vec![log.to_str().unwrap(), "--time-format", "epoch-ms"];
        if round == 3 {
            input.extend(["--cost-column", "cost"]);
        }
        input.extend(["--key-column", "client"]);
        let targets = [
            Targets {
                drop_pct: Some([0.5, 2.0, 10.0][round % 3]),
                ..Default::default()
            },
            Targets {
                drops: Some(rng.below(40)),
                keys_hurt: Some(rng.below(6)),
                ..Default::default()
            },
        ];
        for t in targets {
            for (policy, points) in [
                ("gcra", ["--rate", "1/s,4/s,20/s"]),
                ("token-bucket", ["--rate", "2/s,10/s,30/s"]),
                ("nginx:nodelay", ["--rate", "1r/s,5r/s,20r/s"]),
                ("shaper", ["--rate", "2/s,10/s,40/s"]),
                ("sliding-log", ["--window", "1s,5s,30s"]),
                ("fixed-window", ["--window", "1s,10s,1m"]),
            ] {
                let t = Targets {
                    wait_ms: (policy == "shaper").then_some(5000),
                    ..t
                };
                check_exact(&input, policy, &points, t);
            }
        }
    }
}

/// One key far busier than the rest: its own need less the drops allowed
/// is where the search looks first, and that is the answer; the row's
/// figures come from that one replay, with no audit replay after it.
#[test]
fn an_answer_at_the_least_the_needs_allow_takes_one_replay() {
    let tmp = Scratch::new();
    let mut rows: Vec<(u64, &str, u32)> = (0..400).map(|i| (i * 2, "heavy", 1)).collect();
    rows.extend((0..100).map(|i| (i * 97, "light", 1)));
    rows.sort_unstable();
    let log = hand_log(&tmp, &rows);
    let input = [
        log.to_str().unwrap(),
        "--time-format",
        "epoch-ms",
        "--key-column",
        "client",
    ];
    let t = Targets {
        drops: Some(50),
        ..Default::default()
    };
    let r = check_exact(&input, "gcra", &["--rate", "1/s,2/s"], t);
    for row in r["frontier"].as_array().unwrap() {
        assert_eq!(row["dropped"], 50, "{row}");
        assert_eq!(row["replays"], 1, "{row}");
    }
}

/// NASA's times are whole seconds: the report says so and gives the pick
/// with each second's requests spread evenly over it, the same pick
/// `size` makes of that spread log written with nanoseconds (which gets
/// no note).
#[test]
fn a_whole_second_log_is_sized_both_ways() {
    let args = ["--key-column=host", "-p", "nginx", "--max-drop-rate=0.1"];
    let mut all = vec![NASA];
    all.extend(args);
    let (code, v) = size(&all);
    assert_eq!(code, 0, "{v}");
    let res = &v["time_resolution"];
    assert_eq!(res["unit_ns"], 1_000_000_000u64, "{res}");
    assert_eq!(res["assumed"], "simultaneous");
    let spread_spec = res["spread_pick"]["spec"].as_str().unwrap();
    assert_ne!(spread_spec, v["recommended"]["spec"], "{v}");
    assert!(
        res["note"].as_str().unwrap().contains(spread_spec)
            && v["notes"].as_array().unwrap().contains(&res["note"]),
        "{v}"
    );
    // The spread log, by hand: the i-th of n rows of a second at + i/n s.
    let text = std::fs::read_to_string(NASA).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (ti, hi) = (col("time"), col("host"));
    let mut rows: Vec<(u64, String)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[ti].parse().unwrap(), f[hi].to_string())
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    let mut csv = String::from("ts,host\n");
    let mut i = 0;
    while i < rows.len() {
        let n = rows[i..].iter().take_while(|r| r.0 == rows[i].0).count();
        for (j, (t, host)) in rows[i..i + n].iter().enumerate() {
            let ns = j as u64 * 1_000_000_000 / n as u64;
            csv.push_str(&format!("{t}.{ns:09},{host}\n"));
        }
        i += n;
    }
    let tmp = Scratch::new();
    let spread = tmp.join("spread.csv");
    std::fs::write(&spread, csv).unwrap();
    let mut all = vec![spread.to_str().unwrap()];
    all.extend(args);
    let (code, v) = size(&all);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["recommended"]["spec"], spread_spec, "{v}");
    assert!(v["time_resolution"].is_null(), "{v}");
}

/// With `--exclude-keys`, the figures the targets are checked on are
/// given apart: they equal audit's on the log without the excluded keys'
/// rows (keys are independent), and the recommendation says both.
#[test]
fn excluded_keys_figures_are_the_checked_ones() {
    let tmp = Scratch::new();
    let text = std::fs::read_to_string(NASA).unwrap();
    let busiest = "isaac.ksc.nasa.gov";
    let excluded = tmp.write("ex.txt", &format!("{busiest}\n"));
    let kept: String = text
        .lines()
        .filter(|l| l.split('\t').next() != Some(busiest))
        .map(|l| format!("{l}\n"))
        .collect();
    let without = tmp.write("without.tsv", &kept);
    let ex = excluded.to_str().unwrap();
    let args = [
        "--key-column=host",
        "-p",
        "gcra",
        "--rate=1/s",
        "--max-drops=0",
    ];
    let mut all = vec![NASA, "--exclude-keys", ex];
    all.extend(args);
    let (code, v) = size(&all);
    assert_eq!(code, 0, "{v}");
    let rec = &v["recommended"];
    let checked = &rec["checked"];
    let a = audit(
        &[without.to_str().unwrap(), "--key-column", "host"],
        rec["spec"].as_str().unwrap(),
    );
    assert_eq!(checked["requests"], a["requests"], "{checked} vs {a}");
    assert_eq!(checked["dropped"], a["dropped"], "{checked} vs {a}");
    assert_eq!(
        checked["keys_hurt"], a["keys_with_drops"],
        "{checked} vs {a}"
    );
    assert_eq!(checked["dropped"], 0, "{checked}");
    // The excluded key drops: the figures over every key are larger.
    assert!(
        rec["dropped"].as_u64() > checked["dropped"].as_u64(),
        "{rec}"
    );
    let out = Drip::new()
        .args(["size", NASA, "-q", "--exclude-keys", ex])
        .args(args)
        .run();
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("recommended:"))
        .unwrap();
    assert!(
        line.contains(&format!(
            "on the {} rows the targets count: dropped {} (",
            checked["requests"], checked["dropped"]
        )),
        "{line}"
    );
}
