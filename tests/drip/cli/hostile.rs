//! A hostile name — a terminal title sequence, a bell, a screen clear and
//! a right-to-left override — given wherever a user, a log or a config
//! can give one, through every error path it reaches: each is one line,
//! exit 2, with no raw control or bidi character (a config or log name
//! must not clear the screen or retitle the terminal of whoever runs the
//! check).

use std::collections::BTreeSet;

use crate::common::{Drip, Scratch, s};

const HOSTILE: &str = "x\x1b]0;pwned\x07\x1b[2J\u{202e}y";

/// A character a terminal acts on or reorders text by.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The cases: the arguments after `drip`, the files they name made in `tmp`.
fn cases(tmp: &Scratch) -> Vec<Vec<String>> {
    let h = HOSTILE;
    let log = tmp.write("log.csv", "ts,client\n2024-05-01T12:00:00Z,a\n");
    let log = s(&log).to_string();
    let bad_ts = tmp.write("bad_ts.csv", &format!("ts,client\n{h},a\n"));
    let conf = |name: &str, http: &str| {
        let text = format!("events {{}}\nhttp {{ {http} }}\n");
        s(&tmp.write(name, &text)).to_string()
    };
    let zone = "limit_req_zone $binary_remote_addr zone=one:10m rate=1r/s;";
    let confs = [
        conf(
            "zone.conf",
            &format!("server {{ location / {{ limit_req zone={h}; }} }}"),
        ),
        conf(
            "rate.conf",
            &format!("limit_req_zone $binary_remote_addr zone=one:10m rate={h}; server {{ }}"),
        ),
        conf("include.conf", &format!("include {h}/x.conf; server {{ }}")),
        conf(
            "regex.conf",
            &format!("{zone} server {{ location ~ \"({h}\" {{ limit_req zone=one; }} }}"),
        ),
        conf(
            "burst.conf",
            &format!("{zone} server {{ location / {{ limit_req zone=one burst={h}; }} }}"),
        ),
    ];
    let ok_conf = conf(
        "ok.conf",
        &format!("{zone} server {{ location / {{ limit_req zone=one; }} }}"),
    );
    let gcra = "gcra:rate=1/s";
    let mut cases: Vec<Vec<String>> = [
        vec!["audit", &format!("{h}.csv"), "-p", gcra],
        vec!["audit", &log, "-p", h],
        vec!["audit", &log, "-p", &format!("gcra:rate={h}")],
        vec!["audit", &log, "-p", &format!("gcra:rate=1/s,burst={h}")],
        vec!["audit", &log, "-p", gcra, "--key-column", h],
        vec!["audit", &log, "-p", gcra, "--time-column", h],
        vec!["audit", &log, "--nginx-conf", &format!("{h}.conf")],
        vec!["audit", &log, "-p", gcra, "--tz", h],
        vec!["audit", &log, "--policies", &format!("{h}.txt")],
        vec![
            "audit",
            &log,
            "-p",
            gcra,
            "--decisions",
            &format!("{h}/x.csv"),
        ],
        vec!["audit", &log, "-p", gcra, "--input-format", h],
        vec!["audit", &log, "-p", gcra, "--timeline", h],
        vec!["audit", &log, "-p", gcra, "--delimiter", h],
        vec!["audit", &log, "-p", gcra, "--max-drop-rate", h],
        vec!["audit", &log, "-p", gcra, &format!("--{h}")],
        vec!["audit", s(&bad_ts), "-p", gcra],
        vec!["size", &log, "-p", h, "--max-drop-rate", "1"],
        vec![
            "size",
            &log,
            "-p",
            "gcra",
            "--rate",
            h,
            "--max-drop-rate",
            "1",
        ],
        vec!["size", &log, "-p", "nginx", "--max-wait", h],
        vec![
            "size",
            &log,
            "-p",
            "gcra",
            "--exclude-keys",
            h,
            "--key-column",
            "client",
            "-q",
            "--max-drop-rate",
            "1",
        ],
        vec![
            "size",
            &log,
            "--nginx-conf",
            &ok_conf,
            "--max-drop-rate",
            "1",
            "--nginx-var",
            "remote_addr=client",
            "-q",
            "--target",
            &format!("{h}:keep"),
        ],
        vec![
            "size",
            &log,
            "--nginx-conf",
            &ok_conf,
            "--max-drop-rate",
            "1",
            "--nginx-var",
            "remote_addr=client",
            "-q",
            "--target",
            &format!("one:{h}=1"),
        ],
        vec!["pace", "--rate", h],
        vec!["pace", "--rate", "1/s", "--key", &format!("({h}")],
        vec!["pace", "--rate", "1/s", "--share", &format!("{h}://x")],
        vec!["pace", "--rate", "1/s", "--max-wait", h],
        vec!["gate", "--rate", "1/s", "--share", &format!("{h}/none/x")],
    ]
    .into_iter()
    .map(|c| c.into_iter().map(String::from).collect())
    .collect();
    for c in &confs {
        cases.push(
            ["audit", &log, "--nginx-conf", c, "--strict-includes"]
                .map(String::from)
                .to_vec(),
        );
    }
    cases
}

#[test]
fn a_hostile_name_never_reaches_the_terminal_raw() {
    let tmp = Scratch::new();
    let mut messages = BTreeSet::new();
    let mut wrong = Vec::new();
    for args in cases(&tmp) {
        let out = Drip::new().args(&args).run();
        let raw = out.stderr.chars().any(acts);
        let lines = out.stderr.lines().count();
        // The name is in the message, shown escaped.
        let escaped = out.stderr.contains("\\u{1b}");
        if out.code != 2 || lines != 1 || raw || !escaped || out.stderr.contains("panicked") {
            wrong.push(format!(
                "{args:?}: exit {}, {lines} line(s): {:?}",
                out.code, out.stderr
            ));
            continue;
        }
        messages.insert(out.stderr.replace(s(&tmp), "TMP"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Distinct messages, not one error path many times.
    assert!(
        messages.len() >= 20,
        "{} messages: {messages:#?}",
        messages.len()
    );
}
