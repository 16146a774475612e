//! `audit --replicas N --balance …`: each policy as N instances behind a
//! balancer, what clients get at the edge against the policy as written,
//! and the messages for what it cannot run.

use crate::common::{Drip, Scratch, s};

/// One client at 50 requests a second for 3 s, and a quiet one.
fn burst_log(tmp: &Scratch) -> std::path::PathBuf {
    let mut rows = String::from("t,client\n");
    for i in 0..150u64 {
        rows.push_str(&format!(
            "{}.{:03},bot\n",
            1_700_000_000 + i / 50,
            (i % 50) * 20
        ));
    }
    rows.push_str("1700000001.500,quiet\n");
    tmp.write("log.csv", &rows)
}

#[test]
fn three_round_robin_replicas_let_a_client_through_at_three_times_its_limit() {
    let tmp = Scratch::new();
    let log = burst_log(&tmp);
    let r = Drip::audit()
        .args([s(&log), "--key-column", "client", "-q", "-f", "json"])
        .args(["-p", "fixed-window:limit=10,window=1s", "--replicas", "3"])
        .json();
    let p = &r["policies"][0];
    let rep = &p["replicas"];
    assert_eq!(rep["balance"], "round-robin");
    assert_eq!(rep["written"]["peak_per_key"], 10, "{rep}");
    assert_eq!(rep["replicated"]["peak_per_key"], 30, "{rep}");
    assert_eq!(rep["replicated"]["peak_key"], "bot");
    // The policy's own figures are the replicas': 30 of the bot's 50 a
    // second, for 3 s, and the quiet client's one.
    assert_eq!(
        (p["admitted"].as_u64(), rep["written"]["admitted"].as_u64()),
        (Some(91), Some(31))
    );
    let text = Drip::audit()
        .args([s(&log), "--key-column", "client", "-q"])
        .args(["-p", "fixed-window:limit=10,window=1s", "--replicas", "3"])
        .run()
        .ok();
    assert!(text.contains("behind 3 replicas (round-robin) one key got up to 30 per 1s (key bot) (3.00× the 10 one instance lets through)"), "{text}");
}

#[test]
fn hashing_by_the_client_holds_the_limit_and_a_seeded_spread_repeats() {
    let tmp = Scratch::new();
    let log = burst_log(&tmp);
    let run = |balance: &str| {
        let csv = Drip::audit()
            .args([s(&log), "--key-column", "client", "-q", "-f", "csv"])
            .args([
                "-p",
                "fixed-window:limit=10,window=1s",
                "--replicas",
                "3",
                "--balance",
                balance,
            ])
            .run()
            .ok();
        csv.lines()
            .find(|l| l.contains(&format!(",3,{balance},")))
            .unwrap_or_else(|| panic!("{csv}"))
            .to_string()
    };
    // policy,replicas,balance,window_ms,written_admitted,written_peak_per_key,
    // written_peak_all,replicated_admitted,replicated_peak_per_key,…
    let hashed = run("hash(client)");
    let cells: Vec<&str> = hashed.split(',').collect();
    assert_eq!(
        &cells[cells.len() - 10..cells.len() - 2],
        ["3", "hash(client)", "1000", "31", "10", "11", "31", "10"],
        "{hashed}"
    );
    assert_eq!(run("random:7"), run("random:7"));
}

#[test]
fn each_row_is_decided_by_the_instance_it_went_to() {
    let tmp = Scratch::new();
    let log = tmp.write(
        "log.csv",
        "t,client\n1700000001,a\n1700000001.1,a\n1700000001.2,a\n1700000001.3,a\n1700000001.4,a\n",
    );
    let (_, decisions) = Drip::audit()
        .args([s(&log), "--key-column", "client", "-q"])
        .args(["-p", "fixed-window:limit=1,window=1s", "--replicas", "2"])
        .run_with_decisions();
    // row,policy,key,cost,admit,…: rows 1 and 2 are each replica's first.
    let admits: Vec<&str> = (decisions.lines().skip(1))
        .map(|l| l.rsplit(',').nth(2).unwrap())
        .collect();
    assert_eq!(admits, ["1", "1", "0", "0", "0"], "{decisions}");
}

#[test]
fn what_replicas_cannot_run_is_one_line_and_exit_2() {
    let tmp = Scratch::new();
    let log = burst_log(&tmp);
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "-p",
                "gcra:rate=1/s",
                "--replicas",
                "2",
                "--balance",
                "least-conn",
            ],
            "--balance 'least-conn': expected round-robin",
        ),
        (
            &[
                "-p",
                "gcra:rate=1/s",
                "--replicas",
                "2",
                "--balance",
                "random:x",
            ],
            "the seed is not a whole number",
        ),
        (
            &[
                "--haproxy-cfg",
                "fixtures/haproxy/haproxy.cfg",
                "--replicas",
                "2",
                "--verify-column",
                "termination_state",
            ],
            "with --replicas the log says nothing of which instance took a row",
        ),
        (&["-p", "gcra:rate=1/s", "--replicas", "0"], "--replicas"),
    ];
    for (args, want) in cases {
        let out = Drip::audit().arg(&log).args(args).run();
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
}

#[test]
fn a_haproxy_cfg_as_three_replicas_adds_up_its_proxies_and_lets_the_bot_through() {
    let r = Drip::audit()
        .args([
            "fixtures/haproxy/access.log",
            "--haproxy-cfg",
            "fixtures/haproxy/haproxy.cfg",
        ])
        .args([
            "-q",
            "-f",
            "json",
            "--replicas",
            "3",
            "--edge-window",
            "10s",
        ])
        .json();
    let p = &r["policies"][0];
    let rep = &p["replicas"];
    // The frontend's 40 per 10 s, counted in each of three instances: the
    // bot gets 24 in 10 s through them, 15 through one (the api
    // backend's key limit still holds it per instance).
    assert_eq!(rep["written"]["peak_per_key"], 15, "{rep}");
    assert_eq!(rep["replicated"]["peak_per_key"], 24, "{rep}");
    assert_eq!(rep["replicated"]["peak_key"], "127.0.0.9");
    // The section is the three instances' rows added up: every row enters
    // the frontend once.
    let proxies = p["haproxy"]["locations"].as_array().unwrap();
    assert_eq!(proxies[0]["location"], "frontend www");
    assert_eq!(proxies[0]["requests"], 417, "{proxies:?}");
    let refused: u64 = proxies
        .iter()
        .map(|l| l["rejected"].as_u64().unwrap())
        .sum();
    assert_eq!(p["dropped"].as_u64(), Some(refused), "{p}");
}
