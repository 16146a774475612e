//! `size --haproxy-cfg` on the shipped HAProxy fixture: each request-rate
//! limit sized on the rows it applies to, the patch applied by the real
//! patch(1) and accepted by the real `haproxy -c`, and the patched config
//! audited on the same log meeting the targets.

use std::process::Command;

use crate::common::{Drip, Scratch, s};

const CFG: &str = "fixtures/haproxy/haproxy.cfg";
const LOG: &str = "fixtures/haproxy/access.log";

fn haproxy_c(cfg: &std::path::Path) -> (bool, String) {
    let bin = [
        "/usr/sbin/haproxy",
        "/usr/local/sbin/haproxy",
        "/usr/bin/haproxy",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).is_file())
    .expect("haproxy is installed (Debian: apt-get install haproxy)");
    let out = Command::new(bin)
        .args(["-c", "-f", s(cfg)])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_patch_applies_passes_haproxy_c_and_meets_the_targets() {
    let tmp = Scratch::new();
    let cfg = tmp.write("haproxy.cfg", &std::fs::read(CFG).unwrap());
    let patch = tmp.join("sized.patch");
    let out = Drip::size()
        .args([
            LOG,
            "--haproxy-cfg",
            s(&cfg),
            "--max-drop-rate",
            "1",
            "-q",
            "-f",
            "json",
        ])
        .args(["--patch", s(&patch), "--max-change", "none"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let limits = v["limits"].as_array().unwrap();
    let sized: Vec<(u64, u64)> = limits
        .iter()
        .map(|l| (l["today"].as_u64().unwrap(), l["sized"].as_u64().unwrap()))
        .collect();
    // Each raised to the smallest that refuses at most 1 % of the rows
    // that reach it once the frontend's is raised: the bot's key meets the
    // api backend 272 times, not 138.
    assert_eq!(sized, [(40, 79), (15, 78), (5, 20)], "{}", out.stdout);
    assert_eq!(limits[1]["rows"], 272);
    assert_eq!(v["checked"], "haproxy -c: the patched config is valid");
    // Every raise serves one key, and the report names it.
    let notes = |i: usize| limits[i]["notes"].to_string();
    assert!(
        notes(0).contains("refuses 136 rows of 1 key: 127.0.0.9 136 of its 176"),
        "{}",
        notes(0)
    );
    assert!(notes(1).contains("bot-7f3a"), "{}", notes(1));
    let diff = std::fs::read_to_string(&patch).unwrap();
    assert_eq!(v["patch"].as_str().unwrap(), diff);
    assert!(
        diff.contains(
            "-  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 40 } !office\n"
        ) && diff.contains(
            "+  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 79 } !office\n"
        ),
        "{diff}"
    );
    let applied = Command::new("patch")
        .args(["-p1", "-i", s(&patch)])
        .current_dir(tmp.join(""))
        .output()
        .expect("patch(1) is installed (Debian: apt-get install patch)");
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stdout)
    );
    let (ok, msg) = haproxy_c(&cfg);
    assert!(ok, "{msg}");
    // Only the numbers changed.
    let before = std::fs::read_to_string(CFG).unwrap();
    let after = std::fs::read_to_string(&cfg).unwrap();
    assert_eq!(before.lines().count(), after.lines().count());
    let changed = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(changed, 3);
    // The patched config, audited on the same log: each proxy refuses
    // what the sizing said.
    let a = Drip::audit()
        .args([LOG, "--haproxy-cfg", s(&cfg), "-q", "-f", "json"])
        .json();
    let refused: Vec<u64> = (a["policies"][0]["haproxy"]["locations"]
        .as_array()
        .unwrap()
        .iter())
    .map(|l| l["rejected"].as_u64().unwrap())
    .collect();
    let want: Vec<u64> = limits
        .iter()
        .map(|l| l["refused"].as_u64().unwrap())
        .collect();
    assert_eq!(refused, want, "{a}");
}

#[test]
fn a_limit_met_as_written_is_kept_and_a_large_change_is_held_back() {
    // One key hurt at most: every limit as written meets it.
    let out = Drip::size()
        .args([
            LOG,
            "--haproxy-cfg",
            CFG,
            "--max-keys-hurt",
            "1",
            "-q",
            "-f",
            "json",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(v["patch"].is_null(), "{v}");
    let l0 = &v["limits"][0];
    assert_eq!(
        (l0["sized"].as_u64(), l0["needed"].as_u64()),
        (Some(40), Some(20)),
        "{l0}"
    );
    assert!(
        l0["notes"][0]
            .as_str()
            .unwrap()
            .contains("the tightest that would is 20 (--tighten patches it)")
    );
    // --max-change 1.5: 40 → 79 is 2×: kept, and the run fails.
    let out = Drip::size()
        .args([
            LOG,
            "--haproxy-cfg",
            CFG,
            "--max-drop-rate",
            "1",
            "--max-change",
            "1.5",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("needs 79 (2.0× today's 40); kept as written: --max-change 2.0 allows it"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("no limit changes: no patch"),
        "{}",
        out.stdout
    );
}

#[test]
fn what_size_cannot_do_with_a_haproxy_cfg_is_one_line_and_exit_2() {
    let tmp = Scratch::new();
    let plain = tmp.write(
        "plain.cfg",
        "frontend fe\n  bind :80\n  default_backend b\nbackend b\n  server s 127.0.0.1:1\n",
    );
    let cases: [(&[&str], &str); 4] = [
        (
            &["--haproxy-cfg", CFG, "--max-drop-rate", "1", "--patch", CFG],
            "--patch",
        ),
        (
            &[
                "--haproxy-cfg",
                CFG,
                "--max-drop-rate",
                "1",
                "--nginx-var",
                "a=b",
            ],
            "--nginx-var is not taken with --haproxy-cfg",
        ),
        (
            &["--haproxy-cfg", s(&plain), "--max-drop-rate", "1"],
            "no rule refuses above a request rate",
        ),
        (
            &[
                "--haproxy-cfg",
                CFG,
                "--nginx-conf",
                "fixtures/nginx/discourse/discourse.conf",
                "--max-drop-rate",
                "1",
            ],
            "cannot be used with",
        ),
    ];
    for (args, want) in cases {
        let out = Drip::size().arg(LOG).args(args).run();
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn a_bot_is_left_out_of_the_targets_and_named() {
    let tmp = Scratch::new();
    let cfg = tmp.write(
        "haproxy.cfg",
        "frontend fe\n  bind :80\n  stick-table type ip size 1k store http_req_rate(10s)\n  \
         http-request track-sc0 src\n  http-request deny if { sc_http_req_rate(0) gt 5 }\n  \
         default_backend b\nbackend b\n  server s 127.0.0.1:1\n",
    );
    // Twelve clients a request a second for a minute, a bot 20 a second.
    let mut rows = String::from("client,uri,t\n");
    for ms in (0..60_000u64).step_by(50) {
        let t = |ms: u64| format!("{}.{:03}", 1_700_000_000 + ms / 1000, ms % 1000);
        if ms % 1000 == 0 {
            for c in 1..=12 {
                rows.push_str(&format!("10.0.0.{c},/,{}\n", t(ms)));
            }
        }
        rows.push_str(&format!("10.9.9.9,/,{}\n", t(ms)));
    }
    let log = tmp.write("log.csv", &rows);
    let v = Drip::size()
        .args([
            s(&log),
            "--haproxy-cfg",
            s(&cfg),
            "--max-drop-rate",
            "1",
            "-q",
            "-f",
            "json",
        ])
        .json();
    let l = &v["limits"][0];
    // A client at one a second reads up to 11 by HAProxy's estimate (a
    // full previous period fading, plus this one's first): sized for the
    // clients, not for the bot.
    assert_eq!(l["sized"], 11, "{l}");
    assert_eq!(l["rows"], 12 * 60, "{l}");
    assert!(
        l["notes"]
            .to_string()
            .contains("outlier left out of the targets: 10.9.9.9 (1200 rows here"),
        "{l}"
    );
    let kept = Drip::size()
        .args([
            s(&log),
            "--haproxy-cfg",
            s(&cfg),
            "--max-drop-rate",
            "1",
            "-q",
            "-f",
            "json",
        ])
        .args(["--keep-outliers", "--max-change", "none"])
        .json();
    assert!(kept["limits"][0]["sized"].as_u64().unwrap() > 150, "{kept}");
}

#[test]
fn a_rate_in_a_named_acl_is_sized_and_left_out_of_the_patch() {
    let tmp = Scratch::new();
    let cfg = tmp.write(
        "haproxy.cfg",
        "frontend fe\n  bind :80\n  stick-table type ip size 1k store http_req_rate(10s)\n  \
         http-request track-sc0 src\n  acl too_fast sc_http_req_rate(0) gt 1\n  \
         http-request deny if too_fast\n  default_backend b\nbackend b\n  server s 127.0.0.1:1\n",
    );
    let log = tmp.write(
        "log.csv",
        "client,uri,t\n1.1.1.1,/,1700000000\n1.1.1.1,/,1700000001\n1.1.1.1,/,1700000002\n",
    );
    let v = Drip::size()
        .args([
            s(&log),
            "--haproxy-cfg",
            s(&cfg),
            "--max-drops",
            "0",
            "-q",
            "-f",
            "json",
        ])
        .json();
    let l = &v["limits"][0];
    assert_eq!(
        (l["today"].as_u64(), l["sized"].as_u64()),
        (Some(1), Some(3)),
        "{l}"
    );
    assert!(
        l["notes"]
            .to_string()
            .contains("compared in a named ACL, not on line 6"),
        "{l}"
    );
    assert!(v["patch"].is_null(), "{v}");
}

#[test]
fn a_log_on_stdin_is_read_once_for_every_limit() {
    // Each limit is sized on its own replay; the log is read once.
    let v = Drip::size()
        .args([
            "-",
            "--haproxy-cfg",
            CFG,
            "--max-drop-rate",
            "1",
            "--max-change",
            "none",
        ])
        .args(["-q", "-f", "json"])
        .stdin(std::fs::read(LOG).unwrap())
        .json();
    let sized: Vec<u64> = (v["limits"].as_array().unwrap().iter())
        .map(|l| l["sized"].as_u64().unwrap())
        .collect();
    assert_eq!(sized, [79, 78, 20], "{v}");
}
