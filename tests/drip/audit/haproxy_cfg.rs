//! `audit --haproxy-cfg` on the shipped fixture (a config and the log a
//! real HAProxy 2.6 wrote with it) and on small configs and logs written
//! here: routing, the report's section, messages and exit statuses.

use crate::common::{Drip, Scratch, s};

const CFG: &str = "fixtures/haproxy/haproxy.cfg";
const LOG: &str = "fixtures/haproxy/access.log";

#[test]
fn the_fixture_is_decided_as_haproxy_logged_it() {
    let out = Drip::audit()
        .args([
            LOG,
            "--haproxy-cfg",
            CFG,
            "--verify-column",
            "termination_state",
        ])
        .args(["-q", "-f", "json", "--fail-untested"])
        .run();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let r = out.stdout_json();
    let p = &r["policies"][0];
    assert_eq!(p["label"], "haproxy.cfg");
    assert!(p.get("nginx").is_none());
    let v = &p["haproxy"]["verify"];
    assert_eq!(
        (v["rows"].as_u64(), v["agreed"].as_u64()),
        (Some(417), Some(417))
    );
    let row = |name: &str| {
        let l = (p["haproxy"]["locations"].as_array().unwrap().iter())
            .find(|l| l["location"] == name)
            .unwrap_or_else(|| panic!("{name}: {}", out.stdout));
        [
            l["requests"].as_u64().unwrap(),
            l["passed"].as_u64().unwrap(),
            l["rejected"].as_u64().unwrap(),
        ]
    };
    // Every row enters the frontend; the bot's burst is denied there once
    // its client passes 40 per 10 s, and by its key in the api backend
    // past 15; scripted logins are tarpitted in web.
    assert_eq!(row("frontend www"), [417, 281, 136]);
    assert_eq!(row("backend api"), [138, 113, 25]);
    assert_eq!(row("backend web"), [143, 104, 39]);
    assert_eq!(p["dropped"], 161 + 39);
    let top = &p["top_keys"][0];
    assert_eq!(top["key"], "127.0.0.9");
}

#[test]
fn the_section_names_proxies_and_rules_for_people() {
    let out = Drip::audit().args([LOG, "--haproxy-cfg", CFG, "-q"]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("haproxy.cfg: proxies of fixtures/haproxy/haproxy.cfg"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("tarpit if login { sc_http_req_rate(0) gt 5 }"),
        "{}",
        out.stdout
    );
    let md = Drip::audit()
        .args([LOG, "--haproxy-cfg", CFG, "-q", "-f", "markdown"])
        .run()
        .ok();
    assert!(md.contains("| proxy") && md.contains("| refused"), "{md}");
    let csv = Drip::audit()
        .args([LOG, "--haproxy-cfg", CFG, "-q", "-f", "csv"])
        .run()
        .ok();
    assert!(
        csv.contains("policy,proxy,rules,requests,passed,refused,untracked"),
        "{csv}"
    );
}

/// A config and a CSV log of `rows` (`client,uri,t,frontend_name`).
fn setup(tmp: &Scratch, cfg: &str, rows: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let c = tmp.write("haproxy.cfg", cfg);
    let l = tmp.write("log.csv", &format!("client,uri,t,frontend_name\n{rows}"));
    (c, l)
}

#[test]
fn rows_enter_the_frontend_their_line_names_and_switch_by_path() {
    let tmp = Scratch::new();
    let (cfg, log) = setup(
        &tmp,
        "frontend a\n  stick-table type ip size 1k store http_req_rate(10s)\n  http-request track-sc0 src\n  \
         acl api path_beg /api\n  http-request deny if { sc_http_req_rate(0) gt 1 } api\n  default_backend b\n\
         frontend other\n  default_backend b\n\
         backend b\n  stick-table type ip size 1k store http_req_rate(10s)\n  http-request track-sc1 src\n  \
         http-request deny if { sc_http_req_rate(1) gt 2 }\n\
         backend spare\n  http-request deny\n",
        "1.1.1.1,/api/x,1700000000,a\n1.1.1.1,/api/y,1700000000.1,a\n1.1.1.1,/x,1700000000.2,a~\n\
         2.2.2.2,/x,1700000000.3,other\n2.2.2.2,/x,1700000000.4,other\n2.2.2.2,/x,1700000000.5,other\n\
         3.3.3.3,/x,1700000000.6,gone\n",
    );
    let out = Drip::audit()
        .args([
            s(&log),
            "--haproxy-cfg",
            s(&cfg),
            "-q",
            "-f",
            "json",
            "--decisions",
            "-",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let admits: Vec<&str> = (out.stdout.lines())
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split(',').nth(4).unwrap())
        .collect();
    // 1.1.1.1: the second /api row is its second request in 10 s (denied
    // in frontend a); its third row (a TLS frontend, `a~`) passes a and
    // is the third that b's counter counts: not above 2. 2.2.2.2 through
    // `other`: b denies its third. A frontend the config lacks: admitted.
    assert_eq!(
        admits,
        ["1", "0", "1", "1", "1", "0", "1"],
        "{}",
        out.stdout
    );
    let fail = Drip::audit()
        .args([s(&log), "--haproxy-cfg", s(&cfg), "-q", "--fail-untested"])
        .run();
    assert_eq!(fail.code, 1, "{}", fail.stderr);
    assert!(
        fail.stdout
            .contains("backend spare refuses requests and no row of the log reached it"),
        "{}",
        fail.stdout
    );
    assert!(
        fail.stdout.contains("1 rows name frontend 'gone'"),
        "{}",
        fail.stdout
    );
}

#[test]
fn configs_drip_cannot_follow_are_one_line_naming_file_and_line() {
    let tmp = Scratch::new();
    let cases = [
        (
            "frontend fe\n  http-request track-sc0 req.hdr(x-key)\n  stick-table type string size 1k store http_req_rate(1s)\n",
            ":2: this rule reads the request header 'x-key'",
        ),
        (
            "frontend fe\n  use_backend api if { path_beg /api }\n",
            ":2: no backend (or listen) named 'api'",
        ),
        (
            "frontend fe\n  http-request deny if { sc0_gpc0 gt 1 }\n",
            ":2: 'sc0_gpc0': drip models the request rate",
        ),
        (
            "frontend fe\n  stick-table type ip size 1k store http_req_rate(1s)\n  http-request track-sc3 src\n",
            ":3: 'track-sc3'",
        ),
    ];
    for (cfg, want) in cases {
        let c = tmp.write("bad.cfg", cfg);
        let l = tmp.write("log.csv", "client,t\n1.1.1.1,1700000000\n");
        let out = Drip::audit().args([s(&l), "--haproxy-cfg", s(&c)]).run();
        assert_eq!(out.code, 2, "{cfg}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr.contains(&format!("bad.cfg{want}")),
            "{}",
            out.stderr
        );
    }
    // A log without the field a rule reads.
    let c = tmp.write(
        "ok.cfg",
        "frontend fe\n  http-request deny if { path /x }\n",
    );
    let l = tmp.write("log.csv", "client,t\n1.1.1.1,1700000000\n");
    let out = Drip::audit().args([s(&l), "--haproxy-cfg", s(&c)]).run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("the log has no field 'uri'"),
        "{}",
        out.stderr
    );
}
