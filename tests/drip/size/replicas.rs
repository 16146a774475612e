//! `size --replicas N --total RATE`: the per-replica value that holds a
//! total at the edge, found by replaying the replicas on the log.

use crate::common::{Drip, Scratch, s};

/// One client at 50 requests a second for 4 s.
fn busy(tmp: &Scratch) -> std::path::PathBuf {
    let mut rows = String::from("t,client\n");
    for i in 0..200u64 {
        rows.push_str(&format!(
            "{}.{:03},bot\n",
            1_700_000_000 + i / 50,
            (i % 50) * 20
        ));
    }
    tmp.write("log.csv", &rows)
}

#[test]
fn three_replicas_for_a_ten_a_second_total_get_three_each() {
    let tmp = Scratch::new();
    let log = busy(&tmp);
    let r = Drip::size()
        .args([s(&log), "--key-column", "client", "-q", "-f", "json"])
        .args(["-p", "fixed-window", "--replicas", "3", "--total", "10/s"])
        .json();
    assert_eq!(r["pick"]["spec"], "fixed-window:window=1s,limit=3", "{r}");
    assert_eq!(r["pick"]["edge_peak"], 9);
    // One more per replica is 12 a second at the edge: over the total.
    assert_eq!(r["over"]["spec"], "fixed-window:window=1s,limit=4");
    assert_eq!(r["over"]["edge_peak"], 12);
    // The pick, audited as replicas, gives the same edge.
    let a = Drip::audit()
        .args([s(&log), "--key-column", "client", "-q", "-f", "json"])
        .args(["-p", "fixed-window:window=1s,limit=3", "--replicas", "3"])
        .json();
    assert_eq!(
        a["policies"][0]["replicas"]["replicated"]["peak_per_key"],
        9
    );
}

#[test]
fn a_bucket_is_split_in_steps_of_the_total_over_n_and_hashing_keeps_it_whole() {
    let tmp = Scratch::new();
    let log = busy(&tmp);
    let pick = |balance: &str| {
        let r = Drip::size()
            .args([s(&log), "--key-column", "client", "-q", "-f", "json"])
            .args([
                "-p",
                "gcra",
                "--replicas",
                "3",
                "--total",
                "10/s",
                "--balance",
                balance,
            ])
            .json();
        r["pick"]["spec"].as_str().unwrap().to_string()
    };
    // 10/3s a replica lets a key through 4 in some second of each: 12.
    assert_eq!(pick("round-robin"), "gcra:rate=9/3s,burst=1");
    assert_eq!(pick("hash(client)"), "gcra:rate=30/3s,burst=1");
}

#[test]
fn a_total_no_replica_can_hold_exits_1_and_bad_totals_exit_2() {
    let tmp = Scratch::new();
    let log = busy(&tmp);
    // 2 a second through 3 replicas: even 1 each lets 3 through.
    let out = Drip::size()
        .args([s(&log), "--key-column", "client", "-p", "fixed-window"])
        .args(["--replicas", "3", "--total", "2/s"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("no per-replica value holds --total 2/s"),
        "{}",
        out.stderr
    );
    for (args, want) in [
        (&["--replicas", "3"][..], "needs --total RATE"),
        (
            &["--replicas", "3", "--total", "0.5/s"][..],
            "a whole number of requests per period",
        ),
        (
            &[
                "--replicas",
                "3",
                "--total",
                "10/s",
                "--balance",
                "hash(host)",
            ][..],
            "give --key-column host",
        ),
        (
            &[
                "--replicas",
                "3",
                "--total",
                "10/s",
                "--haproxy-cfg",
                "fixtures/haproxy/haproxy.cfg",
            ][..],
            "a config as replicas is audited by audit --replicas and not sized yet",
        ),
    ] {
        let out = Drip::size()
            .args([s(&log), "--key-column", "client", "-p", "fixed-window"])
            .args(args)
            .run();
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
    }
}
