//! `size --nginx-conf`'s guards on a generated site: a per-client limit
//! that ordinary traffic fits as written is kept (tightened only with
//! `--tighten`), and a login limit a bot overruns is not loosened past
//! `--max-change` to let the bot in.

use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::common::{Drip, Scratch, s};

const CONF: &str = "events {}
http {
    limit_req_zone $binary_remote_addr zone=perip:1m rate=10r/s;
    limit_req_zone $binary_remote_addr zone=login:1m rate=5r/m;
    server {
        listen 127.0.0.1:8080;
        limit_req zone=perip burst=50 nodelay;
        location / { }
        location = /login { limit_req zone=login burst=3; }
    }
}
";

/// An hour of a small site: 40 clients load a page and four images in
/// one second every 61 + i seconds and log in every 20 minutes; a bot
/// posts to /login every second for five minutes.
fn site(dir: &Scratch) -> (PathBuf, PathBuf) {
    let mut rows: Vec<(u64, String, String)> = Vec::new();
    for c in 0..40u64 {
        let ip = format!("10.0.0.{c}");
        let mut t = c;
        while t < 3600 {
            rows.push((t, ip.clone(), format!("GET /page{c} HTTP/1.1")));
            for i in 0..4 {
                rows.push((t, ip.clone(), format!("GET /img{i}.gif HTTP/1.1")));
            }
            t += 61 + c;
        }
        for t in (c * 7..3600).step_by(1200) {
            rows.push((t, ip.clone(), "GET /login HTTP/1.1".into()));
        }
    }
    for t in 600..900 {
        rows.push((t, "10.9.9.9".into(), "POST /login HTTP/1.1".into()));
    }
    rows.sort_by_key(|r| r.0);
    let mut log = String::new();
    for (t, ip, req) in rows {
        let (m, sec) = (t / 60, t % 60);
        writeln!(
            log,
            "{ip} - - [01/Dec/2026:10:{m:02}:{sec:02} +0000] \"{req}\" 200 512 \"-\" \"ua\""
        )
        .unwrap();
    }
    let (log_path, conf) = (dir.join("access.log"), dir.join("nginx.conf"));
    std::fs::write(&log_path, log).unwrap();
    std::fs::write(&conf, CONF).unwrap();
    (log_path, conf)
}

/// `size --nginx-conf` as JSON, with its exit status; the line of `zone`.
fn size(extra: &[&str]) -> (i32, Value) {
    let dir = Scratch::new();
    let (log, conf) = site(&dir);
    let mut args = vec!["size", s(&log), "--nginx-conf", s(&conf)];
    args.extend(["--max-drop-rate", "0.1", "-q", "-f", "json"]);
    args.extend_from_slice(extra);
    let out = Drip::new().args(&args).run();
    assert!(matches!(out.code, 0 | 1), "{}", out.stderr);
    (out.code, serde_json::from_str(&out.stdout).unwrap())
}

fn line<'a>(v: &'a Value, zone: &str) -> &'a Value {
    v["limits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["zone"] == zone)
        .unwrap_or_else(|| panic!("no line of {zone}: {v}"))
}

/// By default the bot is an outlier of the login line: named, with what
/// the limit does to it, and left out of its targets, which the clients'
/// logins meet as written.
#[test]
fn the_bot_is_named_as_an_outlier_and_the_login_kept_as_written() {
    let (code, v) = size(&[]);
    assert_eq!(code, 0, "{v}");
    let login = line(&v, "login");
    assert_eq!(login["rate"], "5r/m", "{login}");
    assert_eq!(login["burst"], 3, "{login}");
    let o = &login["outliers"];
    assert_eq!(o["kept"], false, "{o}");
    let keys = o["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1, "{o}");
    let bot = &keys[0];
    assert_eq!(bot["key"], "10.9.9.9", "{bot}");
    assert_eq!(bot["requests"], 300, "{bot}");
    assert_eq!(bot["busiest_minute"], 60, "{bot}");
    // 300 of the 420 login rows.
    assert!((bot["share_pct"].as_f64().unwrap() - 300.0 * 100.0 / 420.0).abs() < 1e-9);
    let refused = bot["refused"].as_u64().unwrap();
    assert!(refused > 200, "{bot}");
    assert_eq!(bot["refused_as_written"].as_u64(), Some(refused), "{bot}");
    let before = &login["before"];
    assert_eq!(
        (before["seen"].as_u64(), before["dropped"].as_u64()),
        (Some(120), Some(0))
    );
    assert_eq!(before["outlier_rows"], 300, "{before}");
    assert_eq!(
        before["outlier_dropped"].as_u64(),
        Some(refused),
        "{before}"
    );
    assert!(
        login["change"]["kept"]
            .as_str()
            .unwrap()
            .starts_with("meets the targets as written"),
        "{login}"
    );
    // The clients' own traffic has no outlier: the bot's share of the
    // page loads is small, and the per-client line never sees /login.
    assert!(
        line(&v, "perip")["outliers"]["keys"]
            .as_array()
            .is_none_or(|k| k.is_empty())
    );
    assert!(v["patch"].as_str().unwrap().is_empty(), "{v}");

    // Said to people: who, how far above the others, what the limit does.
    let dir = Scratch::new();
    let (log, conf) = site(&dir);
    let out = Drip::new()
        .args([
            "size",
            s(&log),
            "--nginx-conf",
            s(&conf),
            "--max-drop-rate",
            "0.1",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(&format!(
            "  10.9.9.9: 300 in 10m, 300× the p90 key's 1; refused {refused} of its 300 requests (as written: {refused}): the limit doing its job"
        )),
        "{}",
        out.stdout
    );
}

#[test]
fn a_limit_met_as_written_is_kept_and_a_kept_bot_does_not_loosen_the_login() {
    let (code, v) = size(&["--keep-outliers"]);
    // The login limit misses as written (the bot is refused and queued),
    // and admitting the bot needs more than a 4× change: kept, exit 1.
    assert_eq!(code, 1, "{v}");
    let perip = line(&v, "perip");
    assert_eq!(perip["rate"], perip["rate_today"], "{perip}");
    assert_eq!(perip["burst"], perip["burst_today"], "{perip}");
    let kept = perip["change"]["kept"].as_str().unwrap();
    assert!(
        kept.starts_with(
            "meets the targets as written: kept; the tightest that still meets them is rate="
        ) && kept.ends_with("patched with --tighten"),
        "{kept}"
    );
    let login = line(&v, "login");
    assert_eq!(login["rate"], "5r/m", "{login}");
    assert_eq!(login["burst"], 3, "{login}");
    let missed = login["missed"].as_str().unwrap();
    let allow: f64 = missed
        .rsplit_once("allow it with --max-change ")
        .unwrap_or_else(|| panic!("{missed}"))
        .1
        .parse()
        .unwrap();
    assert!(
        allow > 4.0 && missed.contains("beyond --max-change 4;"),
        "{missed}"
    );
    assert!(v["patch"].as_str().unwrap().is_empty(), "{v}");

    // Allowed the change it named, the login limit loosens to let the bot
    // through: relieved, the bot first, and nobody newly hurt.
    let (code, v) = size(&["--keep-outliers", "--max-change", &allow.to_string()]);
    assert_eq!(code, 0, "{v}");
    let login = line(&v, "login");
    let change = &login["change"];
    assert!(change["rate_factor"].as_f64().unwrap() > 4.0, "{change}");
    assert!(
        change["text"].as_str().unwrap().contains("looser"),
        "{change}"
    );
    assert_eq!(change["relieved_top"][0], "10.9.9.9", "{change}");
    assert_eq!(change["newly_hurt"], 0, "{change}");
    assert!(change["kept"].is_null(), "{change}");
    assert_eq!(line(&v, "perip")["rate"], "10r/s");
}

#[test]
fn tighten_patches_a_limit_met_as_written_and_names_who_it_hurts() {
    let (code, v) = size(&["--tighten", "--max-change", "none"]);
    assert_eq!(code, 0, "{v}");
    let perip = line(&v, "perip");
    let change = &perip["change"];
    let (rate, burst) = (
        change["rate_factor"].as_f64().unwrap(),
        change["burst_factor"].as_f64().unwrap(),
    );
    assert!(rate < 1.0 || burst < 1.0, "{change}");
    assert!(
        change["text"].as_str().unwrap().contains("tighter"),
        "{change}"
    );
    // Whom the tighter limit refuses that the written one did not.
    let hurt = change["newly_hurt"].as_u64().unwrap();
    assert_eq!(
        hurt,
        perip["after"]["keys_hurt"].as_u64().unwrap()
            - perip["before"]["keys_hurt"].as_u64().unwrap()
    );
    for k in change["newly_hurt_top"].as_array().unwrap() {
        assert!(k.as_str().unwrap().starts_with("10."), "{change}");
    }
    assert!(v["patch"].as_str().unwrap().contains("zone=perip"), "{v}");
}

#[test]
fn max_change_must_be_a_factor() {
    let dir = Scratch::new();
    let (log, conf) = site(&dir);
    for bad in ["0.5", "x", "-3"] {
        let flag = format!("--max-change={bad}");
        let out = Drip::new()
            .args(["size", s(&log), "--nginx-conf", s(&conf)])
            .args(["--max-drop-rate", "0.1", &flag])
            .run();
        assert_eq!(out.code, 2, "{bad}: {}", out.stderr);
        assert!(out.stderr.contains("--max-change"), "{}", out.stderr);
    }
}

/// `--exclude-keys` with `--nginx-conf`: the bot left out, the login limit
/// meets the targets as written on the other rows and is kept; the bot's
/// rows are counted apart.
#[test]
fn excluded_keys_leave_the_bot_out_of_the_login_targets() {
    let dir = Scratch::new();
    let ex = dir.join("bots.txt");
    std::fs::write(&ex, "# the bot\n10.9.9.9\n").unwrap();
    let (code, v) = size(&["--exclude-keys", s(&ex)]);
    assert_eq!(code, 0, "{v}");
    let login = line(&v, "login");
    assert!(
        login["change"]["kept"]
            .as_str()
            .unwrap()
            .starts_with("meets the targets as written"),
        "{login}"
    );
    let before = &login["before"];
    assert_eq!(before["excluded_rows"], 300, "{before}");
    assert!(
        before["excluded_dropped"].as_u64().unwrap() > 200,
        "{before}"
    );
    assert_eq!(before["dropped"], 0, "{before}");
    assert_eq!(before["seen"], 120, "{before}");
}

/// The before → after table's growth columns are the sized config's
/// replay with the requests arriving 1.5 and 2 times as fast: here every
/// line is kept as written, so the 2× figures are those `--headroom 2`
/// gives the config as written.
#[test]
fn the_growth_figures_are_the_replay_of_faster_traffic() {
    let (_, v) = size(&[]);
    let (_, fast) = size(&["--headroom", "2"]);
    for zone in ["perip", "login"] {
        let (l, f) = (line(&v, zone), line(&fast, zone));
        assert_eq!(
            (l["rate"].clone(), l["burst"].clone()),
            (l["rate_today"].clone(), l["burst_today"].clone())
        );
        let h = l["headroom"].as_array().unwrap();
        assert_eq!(
            (h[0]["factor"].as_str(), h[1]["factor"].as_str()),
            (Some("1.5"), Some("2"))
        );
        for k in ["dropped", "wait_max_ns", "keys_hurt"] {
            assert_eq!(h[1][k], f["before"][k], "{zone} {k}: {h:?} {}", f["before"]);
        }
    }
    // The login line queues its clients' logins more at 2× than at 1×.
    let login = line(&v, "login");
    let waits = |i: usize| login["headroom"][i]["wait_max_ns"].as_u64().unwrap();
    assert!(waits(1) >= waits(0) && waits(0) >= login["after"]["wait_max_ns"].as_u64().unwrap());
}
