//! Targets per limit (`--target SCOPE:TARGETS`, `--only-zones`) on the
//! week of the site in [`super::site`]: a login limit meant to delay gets
//! its own wait target, a zone can be kept as written or left out of the
//! sizing, and every other line keeps the global targets.

use super::site::{line, run, site};
use crate::common::{Drip, Scratch, s};

/// Sized for everyone (the bot too) with any change allowed: the login
/// limit is where the wait target decides.
const EVERYONE: [&str; 3] = ["--keep-outliers", "--max-change", "none"];

fn with(extra: &[&str]) -> serde_json::Value {
    let (code, v, stderr) = run(&[&EVERYONE[..], extra].concat());
    assert_eq!(code, 0, "{stderr}\n{v}");
    v
}

#[test]
fn a_login_limit_meant_to_delay_keeps_its_delay() {
    // The global 1 s wait target loosens the login limit 36x.
    let global = with(&[]);
    let login = line(&global, "login");
    assert!(
        login["change"]["rate_factor"].as_f64().unwrap() > 4.0,
        "{login}"
    );
    assert!(login["after"]["wait_max_ns"].as_u64().unwrap() <= 1_000_000_000);
    assert!(login["targets"].is_null(), "{login}");

    // Its own target lifts the wait: it is tightened, not loosened, and
    // the bot waits (the limit's point) instead of being let in.
    let own = with(&["--target", "= /login:max-wait=none"]);
    let login = line(&own, "login");
    assert!(
        login["change"]["rate_factor"].as_f64().unwrap() <= 1.0,
        "{login}"
    );
    assert!(login["after"]["wait_max_ns"].as_u64().unwrap() > 60_000_000_000);
    assert!(login["after"]["dropped_pct"].as_f64().unwrap() <= 0.1);
    assert_eq!(login["targets"], "--target '= /login:max-wait=none'");
    // The lines --target does not name keep the global targets: the same
    // sizing as without it.
    for zone in ["perip", "api"] {
        let (mut a, mut b) = (line(&own, zone).clone(), line(&global, zone).clone());
        // The two runs' configs are in two folders.
        a["at"].take();
        b["at"].take();
        assert_eq!(a, b, "{zone}");
    }

    // A line's own value wins over its zone's, whatever the order given.
    let both = with(&[
        "--target",
        "= /login:max-wait=1s",
        "--target",
        "login:max-wait=none",
    ]);
    let login = line(&both, "login");
    assert_eq!(login["rate"], line(&global, "login")["rate"], "{login}");
    assert_eq!(login["burst"], line(&global, "login")["burst"], "{login}");
}

#[test]
fn kept_and_unnamed_zones_stay_as_written() {
    let tighten = ["--tighten", "--max-change", "none"];
    let (code, v, _) = run(&[&tighten[..], &["--target", "login:keep"]].concat());
    assert_eq!(code, 0, "{v}");
    let login = line(&v, "login");
    assert_eq!(
        (login["rate"].as_str(), login["burst"].as_u64()),
        (Some("5r/m"), Some(3))
    );
    assert_eq!(
        login["change"]["kept"],
        "kept as written: --target login:keep"
    );
    // The others are tightened, and the patch touches their lines only.
    assert_ne!(line(&v, "perip")["rate"], "10r/s");
    let patch = v["patch"].as_str().unwrap();
    let changed: Vec<&str> = patch.lines().filter(|l| l.starts_with('+')).collect();
    assert!(changed.iter().any(|l| l.contains("zone=perip")), "{patch}");
    assert!(!changed.iter().any(|l| l.contains("zone=login")), "{patch}");

    let (code, v, _) = run(&[&tighten[..], &["--only-zones", "api"]].concat());
    assert_eq!(code, 0, "{v}");
    for zone in ["perip", "login"] {
        let kept = line(&v, zone)["change"]["kept"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            kept, "kept as written: not among --only-zones api",
            "{zone}"
        );
    }
    assert_ne!(line(&v, "api")["rate"], "5r/s");
}

#[test]
fn a_target_that_names_nothing_says_what_there_is() {
    let dir = Scratch::new();
    let (logs, conf) = site(&dir);
    let cases = [
        (
            "--target",
            "nope:keep",
            "no zone, location or limit_req line (FILE:LINE) of",
        ),
        // `/` has only the server's line, which other locations share.
        (
            "--target",
            "/:keep",
            "location '/' has no limit_req line of its own (it inherits perip from",
        ),
        (
            "--target",
            "login:max-delay=1s",
            "no target is named 'max-delay'",
        ),
        ("--target", "login", "give SCOPE:TARGETS"),
        ("--target", "login:max-wait=\x1b[2J", "\\u{1b}"),
        ("--only-zones", "api,nope", "no limit_req_zone of"),
    ];
    for (flag, value, says) in cases {
        let out = Drip::new()
            .args(["size", s(&logs[0]), "--nginx-conf", s(&conf)])
            .args(["--max-drop-rate", "0.1", "-q", flag, value])
            .run();
        assert_eq!(out.code, 2, "{value}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(says), "{value}: {}", out.stderr);
        assert!(!out.stderr.contains('\x1b'), "{}", out.stderr);
    }
    // The scope of a line (FILE:LINE) and its zone's lines are listed.
    let out = Drip::new()
        .args(["size", s(&logs[0]), "--nginx-conf", s(&conf)])
        .args(["--max-drop-rate", "0.1", "-q", "--target", "nope:keep"])
        .run();
    assert!(
        out.stderr.contains("its zones: perip, api, login"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("of their own: /api/, = /login"),
        "{}",
        out.stderr
    );
    let out = Drip::new()
        .args(["size", s(&logs[0]), "--nginx-conf", s(&conf), "-q"])
        .args(["--max-drop-rate", "0.1", "--target", "nginx.conf:11:keep"])
        .run();
    assert!(matches!(out.code, 0 | 1), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("targets of its own, from --target nginx.conf:11:keep"),
        "{}",
        out.stdout
    );
}
