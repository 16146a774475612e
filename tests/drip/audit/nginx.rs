//! `drip audit --nginx-conf` end to end: configs and logs built from the
//! nginx cases pinned in the nginx spec, verified against the logged
//! `$limit_req_status`, and wrong configs caught.

use std::path::PathBuf;

use crate::common::{Drip, Out, Scratch, s};

/// The config: every case of the spec's real-nginx observations, one
/// location each, plus a map-built key, dry run, `return` and exemptions.
const CONF: &str = r#"
# zones (one per case, so the cases do not share state)
http {
    limit_req_zone $binary_remote_addr zone=five:10m rate=5r/s;
    limit_req_zone $binary_remote_addr zone=fivend:10m rate=5r/s;
    limit_req_zone $binary_remote_addr zone=two:10m rate=2r/s;
    limit_req_zone $binary_remote_addr zone=thirty:10m rate=30r/m;
    limit_req_zone $binary_remote_addr zone=seven:10m rate=7r/m;
    limit_req_zone $http_x_client zone=zf_key:1m rate=2r/s;
    limit_req_zone $all_key zone=zf_all:1m rate=10r/s;
    limit_req_zone "$binary_remote_addr" zone=dry:1m rate=1r/s;
    map $http_x_client $all_key {
        default "all";
        vip     "";
    }
    limit_req_status 429;

    server {
        listen 80;
        location / { }
        location /five/ { limit_req zone=five burst=5; }
        location /fivend/ { limit_req zone=fivend burst=5 nodelay; }
        location /two/ { limit_req zone=two burst=6 delay=3; }
        location /thirty/ { limit_req zone=thirty burst=2; }
        location /seven/ { limit_req zone=seven burst=2; }
        location /multi/ {
            limit_req zone=zf_key burst=2 delay=1;
            limit_req zone=zf_all burst=2;
        }
        location /dry/ {
            limit_req zone=dry burst=1;
            limit_req_dry_run on;
        }
        location = /health {
            limit_req zone=five;
            return 200 "ok";
        }
    }
}
"#;

/// (arrival ms after T0, client address, URI, X-Client, status, wait ms).
type Case = (
    u64,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    u64,
);

fn cases() -> Vec<Case> {
    let mut c: Vec<Case> = Vec::new();
    // 5r/s burst=5, 10 at once: 1 now, 5 delayed 200..1000 ms, 4 rejected.
    c.push((0, "10.0.0.1", "/five/a", "", "PASSED", 0));
    for i in 1..=5 {
        c.push((0, "10.0.0.1", "/five/a", "", "DELAYED", 200 * i));
    }
    for _ in 0..4 {
        c.push((0, "10.0.0.1", "/five/a", "", "REJECTED", 0));
    }
    // nodelay: 6 at once, 4 rejected.
    for i in 0..10 {
        let st = if i < 6 { "PASSED" } else { "REJECTED" };
        c.push((0, "10.0.0.1", "/fivend/b?x=1", "", st, 0));
    }
    // 2r/s burst=6 delay=3: 4 at once, then 500/1000/1500 ms, 3 rejected.
    for i in 0..10u64 {
        let (st, w) = match i {
            0..=3 => ("PASSED", 0),
            4..=6 => ("DELAYED", 500 * (i - 3)),
            _ => ("REJECTED", 0),
        };
        c.push((1000, "10.0.0.2", "/two/", "", st, w));
    }
    // 30r/m burst=2: 1 at once, 2000 and 4000 ms, 7 rejected.
    for i in 0..10u64 {
        let (st, w) = match i {
            0 => ("PASSED", 0),
            1 | 2 => ("DELAYED", 2000 * i),
            _ => ("REJECTED", 0),
        };
        c.push((2000, "10.0.0.3", "/thirty/x", "", st, w));
    }
    // 7r/m burst=2: nginx truncates the rate to 116 thousandths a second.
    c.push((3000, "10.0.0.4", "/seven/", "", "PASSED", 0));
    c.push((3000, "10.0.0.4", "/seven/", "", "DELAYED", 8620));
    c.push((3000, "10.0.0.4", "/seven/", "", "DELAYED", 17241));
    // Two limits: AND of admissions, MAX of delays, a rejection stores
    // nothing; vip's global key is empty, so only its own limit applies.
    c.push((4000, "10.1.0.1", "/multi/", "a", "PASSED", 0));
    c.push((4000, "10.1.0.2", "/multi/", "b", "DELAYED", 100));
    c.push((4000, "10.1.0.3", "/multi/", "c", "DELAYED", 200));
    c.push((4000, "10.1.0.4", "/multi/", "d", "REJECTED", 0));
    c.push((4000, "10.1.0.5", "/multi/", "vip", "PASSED", 0));
    c.push((4010, "10.1.0.5", "/multi/", "vip", "PASSED", 0));
    c.push((4020, "10.1.0.5", "/multi/", "vip", "DELAYED", 480));
    c.push((4030, "10.1.0.5", "/multi/", "vip", "REJECTED", 0));
    c.push((4500, "10.1.0.4", "/multi/", "d", "PASSED", 0));
    // Dry run: the same decisions, logged as such, nothing refused.
    c.push((5000, "10.0.0.6", "/dry/", "", "PASSED", 0));
    c.push((5000, "10.0.0.6", "/dry/", "", "DELAYED_DRY_RUN", 0));
    c.push((5000, "10.0.0.6", "/dry/", "", "REJECTED_DRY_RUN", 0));
    c.push((5000, "10.0.0.6", "/dry/", "", "REJECTED_DRY_RUN", 0));
    // `return` answers before limit_req; no location limits "/".
    for _ in 0..3 {
        c.push((6000, "10.0.0.1", "/health", "", "-", 0));
    }
    c.push((6000, "10.0.0.1", "/index.html", "", "-", 0));
    c
}

const T0: u64 = 1_700_000_000_000;

/// A CSV log as nginx writes it: `msec` is the completion time (arrival +
/// wait), `request_time` the wait.
fn csv_log(cases: &[Case]) -> String {
    let mut out =
        String::from("remote_addr,uri,http_x_client,msec,request_time,limit_req_status\n");
    for &(at, addr, uri, client, st, wait) in cases {
        let done = T0 + at + wait;
        out.push_str(&format!(
            "{addr},{uri},{client},{}.{:03},{}.{:03},{st}\n",
            done / 1000,
            done % 1000,
            wait / 1000,
            wait % 1000
        ));
    }
    out
}

fn setup(d: &Scratch, conf: &str, log: &str) -> (PathBuf, PathBuf) {
    let c = d.join("nginx.conf");
    let l = d.join("access.csv");
    std::fs::write(&c, conf).unwrap();
    std::fs::write(&l, log).unwrap();
    (c, l)
}

/// `drip audit LOG --nginx-conf CONF --verify-column limit_req_status -q`,
/// with `extra` arguments.
fn verify(log: &std::path::Path, conf: &std::path::Path, extra: &[&str]) -> Out {
    let mut args = vec![
        s(log),
        "--nginx-conf",
        s(conf),
        "--verify-column",
        "limit_req_status",
        "-q",
    ];
    args.extend_from_slice(extra);
    Drip::audit().args(&args).run()
}

#[test]
fn the_pinned_nginx_cases_verify_at_100_percent() {
    let tmp = Scratch::new();
    let cs = cases();
    let (conf, log) = setup(&tmp, CONF, &csv_log(&cs));
    let dec = conf.with_file_name("decisions.csv");
    let out = Drip::audit()
        .args([
            s(&log),
            "--nginx-conf",
            s(&conf),
            "--duration-column",
            "request_time",
            "--verify-column",
            "limit_req_status",
            "--decisions",
            s(&dec),
        ])
        .run();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let n = cs.len();
    assert!(
        out.stdout.contains(&format!(
            "$limit_req_status against column 'limit_req_status': {n} of {n} rows agree (100.00%), 0 disagree"
        )),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("first disagreements"),
        "{}",
        out.stdout
    );
    for want in [
        "location /five/    five 5r/s burst=5",
        "location /dry/     dry 1r/s burst=1 (dry run)",
        "location = /health  return (never limited)",
    ] {
        let want: Vec<&str> = want.split_whitespace().collect();
        assert!(
            out.stdout
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>().starts_with(&want)),
            "{want:?} in\n{}",
            out.stdout
        );
    }
    // Waits, row by row, as nginx delayed them.
    let text = std::fs::read_to_string(&dec).unwrap();
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), n);
    for (rec, c) in rows.iter().zip(&cs) {
        let admitted = !c.4.starts_with("REJECTED") || c.4 == "REJECTED_DRY_RUN";
        if c.4 == "REJECTED" {
            assert_eq!(&rec[4], "0", "{c:?}");
        } else if admitted && !c.4.ends_with("DRY_RUN") {
            assert_eq!(&rec[4], "1", "{c:?}");
            let wait: f64 = rec[5].parse().unwrap();
            assert_eq!(wait, c.5 as f64, "{c:?}: {rec:?}");
        }
    }
}

#[test]
fn the_same_millisecond_is_compared_as_a_group() {
    let tmp = Scratch::new();
    // nginx logs each request when it completes: the rows of one burst are
    // written in completion order, not arrival order.
    let mut cs = cases();
    cs.sort_by_key(|c| (c.0 + c.5, c.4 == "REJECTED"));
    cs.reverse();
    cs.sort_by_key(|c| c.0 + c.5);
    let (conf, log) = setup(&tmp, CONF, &csv_log(&cs));
    let out = verify(&log, &conf, &["--duration-column", "request_time"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("(100.00%), 0 disagree"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_wrong_config_is_caught_with_the_disagreements_listed() {
    let tmp = Scratch::new();
    let (conf, log) = setup(
        &tmp,
        &CONF.replace("zone=two burst=6 delay=3", "zone=two burst=6"),
        &csv_log(&cases()),
    );
    let out = verify(&log, &conf, &["--duration-column", "request_time"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    // delay=3 dropped: the 3 requests nginx passed at once are delayed.
    assert!(out.stdout.contains("3 disagree"), "{}", out.stdout);
    assert!(out.stdout.contains("first disagreements"), "{}", out.stdout);
    let listed: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("access.csv:"))
        .collect();
    assert_eq!(listed.len(), 3, "{}", out.stdout);
    for l in listed {
        assert!(
            l.contains("DELAYED (in a group of 10 same-ms rows)")
                && l.trim_end().ends_with("PASSED"),
            "{l}"
        );
    }
    assert!(
        out.stderr.contains("crossed --max-disagree") && out.stderr.contains("3 of"),
        "{}",
        out.stderr
    );
    // A tolerance lets it pass.
    let out = verify(
        &log,
        &conf,
        &["--duration-column", "request_time", "--max-disagree", "10"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn forced_location_and_renamed_variables() {
    let tmp = Scratch::new();
    let log = "client,path,t\n1.1.1.1,/a,1700000000.000\n1.1.1.1,/b,1700000000.100\n1.1.1.1,/c,1700000000.150\n2.2.2.2,/d,1700000000.150\n";
    let conf = "http { limit_req_zone $binary_remote_addr zone=z:1m rate=10r/s;\n server { location /b { limit_req zone=z; } } }\n";
    let (conf, log) = setup(&tmp, conf, log);
    // Routed by path: only /b is limited.
    let out = Drip::audit()
        .args([
            s(&log),
            "--nginx-conf",
            s(&conf),
            "--nginx-var",
            "remote_addr=client",
            "--nginx-var",
            "uri=path",
            "-f",
            "json",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let p = &v["policies"][0];
    assert_eq!(p["dropped"], 0);
    assert_eq!(p["nginx"]["locations"][1]["location"], "location /b");
    assert_eq!(p["nginx"]["locations"][1]["passed"], 1);
    // Forced: every row through /b; 1.1.1.1 at 0, 100 (admitted, 100 ms
    // later), 150 (50 ms: refused).
    let out = Drip::audit()
        .args([
            s(&log),
            "--nginx-conf",
            s(&conf),
            "--nginx-var",
            "remote_addr=client",
            "--nginx-location",
            "/b",
            "-f",
            "json",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let p = &v["policies"][0];
    assert_eq!(p["dropped"], 1, "{}", out.stdout);
    assert_eq!(p["top_keys"][0]["key"], "1.1.1.1");
    let out = Drip::audit()
        .args([
            s(&log),
            "--nginx-conf",
            s(&conf),
            "--nginx-location",
            "/nope",
        ])
        .run();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("--nginx-location '/nope'") && out.stderr.contains("location /b"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
}

#[test]
fn config_errors_are_one_line_with_file_and_line() {
    let tmp = Scratch::new();
    let (conf, log) = setup(
        &tmp,
        "http {\n  limit_req_zone $binary_remote_addr zone=z:1m rate=1.5r/s;\n}\n",
        "remote_addr,uri,t\n1.1.1.1,/,1700000000\n",
    );
    let out = Drip::audit()
        .args([s(&log), "--nginx-conf", s(&conf)])
        .run();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains(&format!(
            "{}:2: invalid nginx rate '1.5r/s'",
            conf.display()
        )),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"));
    let out = Drip::audit()
        .args([s(&log), "--nginx-conf", "/nonexistent/nginx.conf"])
        .run();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("cannot read the nginx config"),
        "{}",
        out.stderr
    );
    let out = Drip::audit()
        .args([s(&log), "--nginx-conf", s(&conf), "--nginx-var", "oops"])
        .run();
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("NAME=FIELD"), "{}", out.stderr);
}

#[test]
fn a_bad_logged_status_names_its_line() {
    let tmp = Scratch::new();
    let (conf, log) = setup(
        &tmp,
        "http { limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n server { location / { limit_req zone=z; } } }\n",
        "remote_addr,uri,t,st\n1.1.1.1,/,1700000000,PASSED\n1.1.1.1,/,1700000001,OK\n",
    );
    let out = Drip::audit()
        .args([s(&log), "--nginx-conf", s(&conf), "--verify-column", "st"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("access.csv:3: the logged $limit_req_status 'OK'"),
        "{}",
        out.stderr
    );
}

/// The same cases as nginx writes them with a `log_format` of the config:
/// one line per request at its completion, in completion order.
fn access_log(cases: &[Case]) -> String {
    let mut lines: Vec<(u64, String)> = cases
        .iter()
        .map(|&(at, addr, uri, client, st, wait)| {
            let done = T0 + at + wait;
            let status = if st == "REJECTED" { 429 } else { 200 };
            let client = if client.is_empty() { "-" } else { client };
            (
                done,
                format!(
                    "{addr} - \"GET {uri} HTTP/1.1\" {status} {}.{:03} {}.{:03} \"{client}\" {st}",
                    done / 1000,
                    done % 1000,
                    wait / 1000,
                    wait % 1000
                ),
            )
        })
        .collect();
    lines.sort_by_key(|l| l.0);
    lines.into_iter().map(|l| l.1 + "\n").collect()
}

fn with_log_format(conf: &str) -> String {
    conf.replacen(
        "limit_req_status 429;",
        "limit_req_status 429;\n    log_format timed '$remote_addr - \"$request\" $status '\n                     '$msec $request_time \"$http_x_client\" $limit_req_status';\n    access_log /var/log/nginx/access.log timed;",
        1,
    )
}

#[test]
fn an_access_log_in_the_configs_own_format_needs_nothing_else() {
    let cs = cases();
    let d = Scratch::new();
    let conf = d.join("nginx.conf");
    let log = d.join("access.log");
    std::fs::write(&conf, with_log_format(CONF)).unwrap();
    std::fs::write(&log, access_log(&cs)).unwrap();
    let out = Drip::audit()
        .args([s(&log), "--nginx-conf", s(&conf)])
        .run();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    for note in [
        "drip: reading ",
        "with log_format 'timed' (",
        "nginx.conf:17), used by access_log /var/log/nginx/access.log (",
        "minus $request_time",
        "add --verify-column limit_req_status",
    ] {
        assert!(out.stderr.contains(note), "{note}: {}", out.stderr);
    }
    let n = cs.len();
    let out = verify(&log, &conf, &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains(&format!("{n} of {n} rows agree (100.00%), 0 disagree")),
        "{}",
        out.stdout
    );
    // A wrong config: the 7r/m zone at 8r/m delays less than nginx did.
    let wrong = d.join("wrong.conf");
    std::fs::write(
        &wrong,
        with_log_format(&CONF.replace("rate=7r/m", "rate=8r/m")),
    )
    .unwrap();
    let out = verify(&log, &wrong, &[]);
    // Same statuses (DELAYED either way): the decisions agree, and only
    // the waits differ, which a status cannot show.
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    // burst=5 → burst=4 at /five/: one DELAYED becomes REJECTED.
    std::fs::write(
        &wrong,
        with_log_format(&CONF.replace("zone=five burst=5", "zone=five burst=4")),
    )
    .unwrap();
    let out = verify(&log, &wrong, &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(&format!("{} of {n} rows agree", n - 1)),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .lines()
            .any(|l| l.split_whitespace().eq(["REJECTED", "DELAYED", "1"])),
        "{}",
        out.stdout
    );
    let listed: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("access.log:"))
        .collect();
    assert_eq!(listed.len(), 1, "{}", out.stdout);
    assert!(
        out.stderr.contains("crossed --max-disagree"),
        "{}",
        out.stderr
    );
}

/// Two configs on the NASA fixture (common log format, 1 s timestamps):
/// one host limit of 1r/s outside /images/, burst 10 before and 5 after.
/// The figures were worked out independently of drip (a separate
/// implementation of nginx's integer rule over the fixture's rows).
#[test]
fn compare_two_configs_on_the_nasa_fixture() {
    let d = Scratch::new();
    let old = d.join("old.conf");
    let new = d.join("new.conf");
    let conf = |burst: u32| {
        format!(
            "http {{\n  limit_req_zone $binary_remote_addr zone=perip:10m rate=1r/s;\n  server {{\n    location / {{ limit_req zone=perip burst={burst} nodelay; }}\n    location /images/ {{ }}\n  }}\n}}\n"
        )
    };
    std::fs::write(&old, conf(10)).unwrap();
    std::fs::write(&new, conf(5)).unwrap();
    let out = Drip::audit()
        .args([
            "fixtures/nasa_19950801.log.gz",
            "--nginx-conf",
            s(&old),
            "--nginx-conf",
            s(&new),
            "--compare",
            "--top",
            "5",
            "-f",
            "json",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["policies"][0]["dropped"], 1);
    assert_eq!(v["policies"][1]["dropped"], 31);
    let c = &v["compare"][0];
    assert_eq!(c["policy"], "new.conf");
    assert_eq!(c["against"], "old.conf");
    assert_eq!(c["newly_dropped"], 30);
    assert_eq!(c["newly_admitted"], 0);
    assert_eq!(c["keys_newly_hurt"], 10);
    assert_eq!(c["keys_relieved"], 0);
    let hurt: Vec<(String, u64, u64)> = c["top_hurt"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["key"].as_str().unwrap().to_string(),
                k["dropped_before"].as_u64().unwrap(),
                k["dropped_now"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("163.205.156.16", 5),
        ("fkirchman.gsfc.nasa.gov", 4),
        ("isaac.ksc.nasa.gov", 4),
        ("128.159.122.137", 2),
        ("128.164.153.38", 2),
    ];
    assert_eq!(hurt.len(), want.len());
    for ((k, before, now), (wk, wn)) in hurt.iter().zip(want) {
        assert_eq!((k.as_str(), *before, *now), (wk, 0, wn));
    }
    // The HTML page has the comparison too.
    let out = Drip::audit()
        .args([
            "fixtures/nasa_19950801.log.gz",
            "--nginx-conf",
            s(&old),
            "--nginx-conf",
            s(&new),
            "--compare",
            "-f",
            "html",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("<h2>Keys newly hurt (no drop before, some now)</h2>")
            && out.stdout.contains("<td>163.205.156.16</td>"),
        "{}",
        out.stdout
    );
    // The other way round, the same keys are relieved.
    let out = Drip::audit()
        .args([
            "fixtures/nasa_19950801.log.gz",
            "--nginx-conf",
            s(&new),
            "--nginx-conf",
            s(&old),
            "--compare",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("keys relieved (drops before, none now)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.lines().any(|l| l
            .split_whitespace()
            .eq(["old.conf", "new.conf", "0", "30", "0", "10"])),
        "{}",
        out.stdout
    );
}

#[test]
fn compare_works_for_any_policies_and_needs_two() {
    let d = Scratch::new();
    let log = d.join("log.csv");
    std::fs::write(
        &log,
        "t,k\n1700000000,a\n1700000000,a\n1700000000,a\n1700000000,b\n1700000000,b\n1700000001,a\n",
    )
    .unwrap();
    let out = Drip::audit()
        .args([
            s(&log),
            "--key-column",
            "k",
            "-p",
            "token-bucket:rate=1/s,burst=2,label=wide",
            "-p",
            "token-bucket:rate=1/s,burst=1,label=narrow",
            "--compare",
            "-f",
            "json",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let c = &v["compare"][0];
    // wide drops a's third row; narrow drops a's 2nd and 3rd and b's 2nd.
    assert_eq!(c["newly_dropped"], 2);
    assert_eq!(c["keys_newly_hurt"], 1);
    assert_eq!(c["top_hurt"][0]["key"], "b");
    let out = Drip::audit()
        .args([s(&log), "-p", "gcra:rate=1/s", "--compare"])
        .run();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("--compare needs two or more policies"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_log_without_host_goes_to_the_server_that_limits() {
    // The usual pair: plain HTTP redirects, HTTPS serves (and limits).
    let d = Scratch::new();
    let conf = d.join("nginx.conf");
    std::fs::write(
        &conf,
        "http {\n  limit_req_zone $binary_remote_addr zone=perip:10m rate=1r/s;\n  server { listen 80; server_name example.org; return 301 https://$host$request_uri; }\n  server {\n    listen 443 ssl; server_name example.org;\n    location / { limit_req zone=perip burst=5 nodelay; }\n    location /images/ { }\n  }\n}\n",
    )
    .unwrap();
    let out = Drip::audit()
        .args([
            "fixtures/nasa_19950801.log.gz",
            "--nginx-conf",
            s(&conf),
            "-f",
            "json",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "2 server blocks and the log has no host field: every row goes to the one at"
        ) && out.stderr.contains("nginx.conf:4 (example.org)"),
        "{}",
        out.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        v["policies"][0]["dropped"].as_u64().unwrap() > 0,
        "{}",
        out.stdout
    );
    // A zone key the log cannot give, and no URI to route by: errors before
    // reading, naming what is missing and the fix.
    std::fs::write(
        &conf,
        "http {\n  limit_req_zone $http_x_api_key zone=k:1m rate=1r/s;\n  server { location / { limit_req zone=k; } location /a { } }\n}\n",
    )
    .unwrap();
    let out = Drip::audit()
        .args(["fixtures/nasa_19950801.log.gz", "--nginx-conf", s(&conf)])
        .run();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("nginx.conf:2: zone \"k\" key $http_x_api_key reads the field 'http_x_api_key', which the log does not have")
            && out.stderr.contains("--nginx-var http_x_api_key=FIELD")
            && !out.stderr.contains("field10"),
        "{}",
        out.stderr
    );
    let log = d.join("nouri.csv");
    std::fs::write(&log, "http_x_api_key,t\nk1,1700000000\n").unwrap();
    let out = Drip::audit()
        .args([s(&log), "--nginx-conf", s(&conf)])
        .run();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("the log has no field 'uri' (its fields: http_x_api_key, t)")
            && out.stderr.contains("--nginx-location"),
        "{}",
        out.stderr
    );
    let out = Drip::audit()
        .args([
            s(&log),
            "--nginx-conf",
            s(&conf),
            "--nginx-location",
            "/",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_map_built_key_reports_the_client_not_the_maps_input() {
    let tmp = Scratch::new();
    // The zone key is the map's output: the client address, or "" (exempt)
    // for KEY1. The report must not count by the API key the map reads.
    let conf = "http {\n  map $http_x_api_key $tier { default $binary_remote_addr; \"KEY1\" \"\"; }\n  limit_req_zone $tier zone=api:10m rate=1r/s;\n  server { listen 80 default_server; location /api/ { limit_req zone=api; } }\n}\n";
    let log = "ts,client_ip,path,api_key\n1700000000,1.1.1.1,/api/x,\n1700000000,2.2.2.2,/api/x,\n1700000000,1.1.1.1,/api/x,\n1700000000,3.3.3.3,/api/x,KEY2\n1700000000,3.3.3.3,/api/x,KEY2\n1700000000,3.3.3.3,/api/x,KEY1\n1700000000,3.3.3.3,/api/x,KEY1\n";
    let (conf, log) = setup(&tmp, conf, log);
    let d = log.with_file_name("decisions.csv");
    let out = Drip::audit()
        .args([
            s(&log),
            "--nginx-conf",
            s(&conf),
            "--nginx-var",
            "remote_addr=client_ip",
            "--nginx-var",
            "http_x_api_key=api_key",
            "--nginx-var",
            "uri=path",
            "--decisions",
            s(&d),
            "-f",
            "json",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let p = &v["policies"][0];
    assert_eq!(p["dropped"], 2, "{}", out.stdout);
    assert_eq!(p["keys_with_drops"], 2, "{}", out.stdout);
    let top: Vec<&str> = p["top_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap())
        .collect();
    assert!(
        top.contains(&"1.1.1.1") && top.contains(&"3.3.3.3"),
        "{}",
        out.stdout
    );
    let decisions = std::fs::read_to_string(&d).unwrap();
    let keys: Vec<&str> = decisions
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "1.1.1.1", "2.2.2.2", "1.1.1.1", "3.3.3.3", "3.3.3.3", "3.3.3.3", "3.3.3.3"
        ],
        "{decisions}"
    );
}

#[test]
fn a_disagreement_is_blamed_on_a_row_of_the_key_drip_decided_that_way() {
    // At second 1, 1.1.1.1's second row is refused by drip (logged
    // PASSED); 2.2.2.2's row in the same ms goes to an unlimited location.
    // Rows of different keys must not be pooled into one group.
    let conf = "http {\n  log_format main '$remote_addr [$time_local] \"$request\" $status $limit_req_status';\n  access_log /var/log/nginx/v.log main;\n  limit_req_zone $binary_remote_addr zone=perip:10m rate=1r/s;\n  server { location / { limit_req zone=perip burst=1 nodelay; } }\n}\n";
    let log = [
        "1.1.1.1 [01/Aug/1995:00:00:00 +0000] \"GET / HTTP/1.0\" 200 PASSED",
        "1.1.1.1 [01/Aug/1995:00:00:00 +0000] \"GET / HTTP/1.0\" 200 PASSED",
        "1.1.1.1 [01/Aug/1995:00:00:00 +0000] \"GET / HTTP/1.0\" 503 REJECTED",
        "1.1.1.1 [01/Aug/1995:00:00:01 +0000] \"GET / HTTP/1.0\" 200 PASSED",
        "1.1.1.1 [01/Aug/1995:00:00:01 +0000] \"GET / HTTP/1.0\" 200 PASSED",
        "2.2.2.2 [01/Aug/1995:00:00:01 +0000] \"GET /x HTTP/1.0\" 200 -",
    ]
    .join("\n")
        + "\n";
    let d = Scratch::new();
    let c = d.join("nginx.conf");
    let l = d.join("v.log");
    std::fs::write(&c, conf).unwrap();
    std::fs::write(&l, log).unwrap();
    let out = Drip::audit()
        .args([
            s(&l),
            "--nginx-conf",
            s(&c),
            "--verify-column",
            "limit_req_status",
            "--max-disagree",
            "100",
            "-f",
            "json",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let verify = &v["policies"][0]["nginx"]["verify"];
    let first = &verify["first_disagreements"];
    // Line 6 genuinely disagrees: location / takes /x, so nginx limited it.
    assert_eq!(first.as_array().map(Vec::len), Some(2), "{verify}");
    let row = &first[0];
    assert!(row["at"].as_str().unwrap().ends_with("v.log:5"), "{verify}");
    assert!(
        row["emulated"].as_str().unwrap().starts_with("REJECTED"),
        "{verify}"
    );
    assert_eq!(row["logged"], "PASSED", "{verify}");
    let row = &first[1];
    assert!(row["at"].as_str().unwrap().ends_with("v.log:6"), "{verify}");
    assert_eq!(row["emulated"], "PASSED", "{verify}");
    assert_eq!(row["logged"], "-", "{verify}");
    // No status pair drip never gave a row.
    let pairs: Vec<(String, String)> = verify["confusion"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c[0].to_string(), c[1].to_string()))
        .collect();
    assert!(
        !pairs.contains(&("\"REJECTED\"".into(), "\"-\"".into())),
        "{verify}"
    );
}

#[test]
fn a_log_not_in_the_configs_log_format_is_detected_with_a_note() {
    // The config's format would read "host - -" as $remote_addr and the
    // byte count as $limit_req_status: the NASA common log is not in it.
    let conf = "http {\n  log_format main '$remote_addr [$time_local] \"$request\" $status $limit_req_status';\n  access_log /var/log/nginx/v.log main;\n  limit_req_zone $binary_remote_addr zone=perip:10m rate=1r/s;\n  server { location / { limit_req zone=perip burst=1 nodelay; } }\n}\n";
    let d = Scratch::new();
    let c = d.join("nginx.conf");
    std::fs::write(&c, conf).unwrap();
    let dec = d.join("decisions.csv");
    let out = Drip::audit()
        .args([
            "fixtures/nasa_19950801.log.gz",
            "--nginx-conf",
            s(&c),
            "--decisions",
            s(&dec),
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("nasa_19950801.log.gz:1 is not written with log_format 'main'")
            && out.stderr.contains("$remote_addr")
            && out.stderr.contains("common lines"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("--verify-column"), "{}", out.stderr);
    let decisions = std::fs::read_to_string(&dec).unwrap();
    let key = decisions.lines().nth(1).unwrap().split(',').nth(2).unwrap();
    assert_eq!(key, "pppa006.compuserve.com", "{decisions}");
}

#[test]
fn a_pcre_only_location_regex_says_what_to_do() {
    let tmp = Scratch::new();
    let conf = "http {\n  limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n  server {\n    location ~ ^/(?!static)(.*)$ { limit_req zone=z; }\n  }\n}\n";
    let (conf, log) = setup(&tmp, conf, "client,uri,t\n1.1.1.1,/a,1700000000\n");
    let out = Drip::audit()
        .args([
            s(&log),
            "--nginx-conf",
            s(&conf),
            "--nginx-var",
            "remote_addr=client",
        ])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("nginx.conf:4:")
            && out.stderr.contains("look-around")
            && out.stderr.contains("rewritten without them"),
        "{}",
        out.stderr
    );
}

#[test]
fn csv_carries_the_locations_verification_and_comparison() {
    let tmp = Scratch::new();
    let conf = "http {\n  limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n  server { location / { limit_req zone=z burst=1 nodelay; } }\n}\n";
    let log = "remote_addr,uri,t,limit_req_status\n1.1.1.1,/a,1700000000,PASSED\n1.1.1.1,/a,1700000000,PASSED\n1.1.1.1,/a,1700000000,REJECTED\n";
    let (old, log) = setup(&tmp, conf, log);
    let new = old.with_file_name("new.conf");
    std::fs::write(&new, conf.replace(" burst=1", "")).unwrap();
    let out = Drip::audit()
        .args([
            s(&log),
            "--nginx-conf",
            s(&old),
            "--nginx-conf",
            s(&new),
            "--compare",
            "--verify-column",
            "limit_req_status",
            "--max-disagree",
            "100",
            "-f",
            "csv",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = &out.stdout;
    assert!(
        o.contains("\npolicy,location,limit_req,requests,passed,delayed,rejected,no limit\n")
            && o.contains("\nnginx.conf,location /,z 1r/s burst=1 nodelay,3,2,0,1,0\n"),
        "{o}"
    );
    assert!(
        o.contains(
            "\npolicy,verify_column,rows,agreed,disagreed,within_clock,reordered,agreement_pct\n"
        ) && o.contains("\nnginx.conf,limit_req_status,3,3,0,0,0,100\n"),
        "{o}"
    );
    assert!(
        o.contains("\npolicy,against,newly_dropped,newly_admitted,keys_newly_hurt,keys_relieved\nnew.conf,nginx.conf,1,0,"),
        "{o}"
    );
}

#[test]
fn untested_locations_and_unused_zones_are_said() {
    let tmp = Scratch::new();
    // A conf.d fragment: zones and a server at the top, and an include
    // copied off a server without the file it names.
    let (conf, log) = setup(
        &tmp,
        "include /etc/nginx-drip-absent/mime.types;\n\
         limit_req_zone $binary_remote_addr zone=api:1m rate=1r/s;\n\
         limit_req_zone $binary_remote_addr zone=spare:1m rate=1r/s;\n\
         server {\n location / { }\n location /api/ { limit_req zone=api; }\n\
         location /login { limit_req zone=api; }\n}\n",
        "remote_addr,uri,t\n1.1.1.1,/api/a,1700000000.000\n1.1.1.1,/api/b,1700000000.500\n1.1.1.1,/x,1700000001\n",
    );
    let out = Drip::audit()
        .args([s(&log), "--nginx-conf", s(&conf)])
        .run();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("read as the content of http")
            && out
                .stderr
                .contains(":1: include '/etc/nginx-drip-absent/mime.types' was not found"),
        "{}",
        out.stderr
    );
    let row = |loc: &str| {
        out.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(loc))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
    };
    assert_eq!(
        row("location /login").as_deref(),
        Some(&["location", "/login", "api", "1r/s", "0", "0", "0", "0", "0"][..]),
        "{}",
        out.stdout
    );
    assert_eq!(
        row("location /api/").unwrap()[4..],
        ["2", "1", "0", "1", "0"]
    );
    for want in [
        "location /login has limit_req and matched no row of the log",
        "zone \"spare\" (",
        "is defined and no limit_req uses it",
        "the results assume it holds no limit_req, location, server or map",
    ] {
        assert!(out.stdout.contains(want), "{want}: {}", out.stdout);
    }
    // A CI check: untested is a failure when asked.
    let out = Drip::audit()
        .args([s(&log), "--nginx-conf", s(&conf), "--fail-untested", "-q"])
        .run();
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("crossed --fail-untested")
            && out
                .stderr
                .contains("location /login matched no row of the log"),
        "{}",
        out.stderr
    );
    let out = Drip::audit()
        .args([s(&log), "--nginx-conf", s(&conf), "--strict-includes", "-q"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(":1: include '/etc/nginx-drip-absent/mime.types': no such file"),
        "{}",
        out.stderr
    );
    // Every limited location matched a row: the check passes.
    let tested = log.with_file_name("tested.csv");
    std::fs::write(
        &tested,
        "remote_addr,uri,t\n1.1.1.1,/api/a,1700000000\n1.1.1.1,/login,1700000002\n",
    )
    .unwrap();
    let out = Drip::audit()
        .args([
            s(&tested),
            "--nginx-conf",
            s(&conf),
            "--fail-untested",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_same_millisecond_group_spans_the_locations_of_a_zone() {
    let tmp = Scratch::new();
    // nginx saw /b first; the log (written at completion) has /a first.
    // Two locations share the zone: the order within the millisecond is
    // unknown for both, so the rows are one group.
    let (conf, log) = setup(
        &tmp,
        "http { limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n\
         server { location /a { limit_req zone=z; } location /b { limit_req zone=z; } } }\n",
        "remote_addr,uri,t,limit_req_status\n1.1.1.1,/a,1700000000.000,REJECTED\n1.1.1.1,/b,1700000000.000,PASSED\n",
    );
    let out = verify(&log, &conf, &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("2 of 2 rows agree"), "{}", out.stdout);
}

#[test]
fn a_pull_request_must_not_make_it_worse() {
    // Before: burst=5; after: no burst. Three keys, 1r/s, bursts of 3.
    let d = Scratch::new();
    let before = d.join("before.conf");
    let after = d.join("after.conf");
    let conf = |burst: &str| {
        format!(
            "http {{ limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n\
             server {{ location / {{ limit_req zone=z{burst} nodelay; }} }} }}\n"
        )
    };
    std::fs::write(&before, conf(" burst=5")).unwrap();
    std::fs::write(&after, conf("")).unwrap();
    let mut log = String::from("remote_addr,uri,t\n");
    for (k, t) in [
        ("1.1.1.1", 0),
        ("1.1.1.1", 1),
        ("1.1.1.1", 2),
        ("2.2.2.2", 0),
        ("2.2.2.2", 1),
        ("3.3.3.3", 0),
    ] {
        log.push_str(&format!("{k},/,1700000000.{t:03}\n"));
    }
    let log_path = d.join("access.csv");
    std::fs::write(&log_path, log).unwrap();
    let compare = |extra: &[&str]| {
        let mut args = vec![
            s(&log_path),
            "--nginx-conf",
            s(&before),
            "--nginx-conf",
            s(&after),
            "--compare",
            "-q",
        ];
        args.extend_from_slice(extra);
        Drip::audit().args(&args).run()
    };
    // 3 rows newly dropped (of 6), 2 keys newly hurt (of 3).
    let out = compare(&["--max-newly-dropped", "3", "--max-keys-newly-hurt", "67%"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = compare(&["--max-newly-dropped", "2"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("'after.conf' crossed --max-newly-dropped: measured 3 of 6, limit 2"),
        "{}",
        out.stderr
    );
    let out = compare(&["--max-keys-newly-hurt", "50%"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("crossed --max-keys-newly-hurt: measured 2 of 3, limit 50%"),
        "{}",
        out.stderr
    );
    // --max-keys-hurt as size takes it, per label.
    let out = compare(&["--max-keys-hurt", "after.conf=1"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("'after.conf' crossed --max-keys-hurt: measured 2 of 3, limit 1"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    let out = compare(&["--max-keys-hurt", "x%"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("a count (e.g. 3) or a percentage"),
        "{}",
        out.stderr
    );
}

#[test]
fn discourses_rate_limit_template_limits_rows() {
    let tmp = Scratch::new();
    // The limits sit in `location @discourse`, reached through
    // `try_files $uri @discourse;`; one outlet folder is missing.
    let mut log = String::from("remote_addr,uri,t\n");
    for i in 0..20 {
        log.push_str(&format!("10.0.0.1,/t/topic/1,1700000000.{:03}\n", 10 + i));
    }
    log.push_str("10.0.0.2,/assets/app.js,1700000000.050\n10.0.0.3,/srv/status,1700000000.100\n");
    let path = tmp.join("discourse.csv");
    std::fs::write(&path, log).unwrap();
    let out = Drip::audit()
        .args([
            s(&path),
            "--nginx-conf",
            "fixtures/nginx/discourse/discourse.conf",
            "-f",
            "json",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("discourse.conf:20: include 'conf.d/outlets/server/*.conf' was not found"),
        "{}",
        out.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let n = &v["policies"][0]["nginx"];
    let at = n["locations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["location"] == "location @discourse")
        .unwrap_or_else(|| panic!("{n}"));
    // 12r/s burst=12 nodelay: 13 of the 20 same-second requests pass.
    assert_eq!(
        (at["requests"].clone(), at["rejected"].clone()),
        (21.into(), 7.into()),
        "{at}"
    );
    assert_eq!(v["policies"][0]["dropped"], 7);
}

#[test]
fn a_keys_drop_share_counts_its_limited_rows_and_its_waits_are_listed() {
    let tmp = Scratch::new();
    // 1.1.1.1 sends 10 rows to an unlimited location and 5 at once to
    // /api/ (1r/s burst=2): 1 passed, 2 delayed (1 s, 2 s), 2 rejected.
    // 2.2.2.2 sends 2 to /api/; 3.3.3.3 only to the unlimited location.
    let mut log = String::from("remote_addr,uri,t,limit_req_status\n");
    for _ in 0..10 {
        log.push_str("1.1.1.1,/static/a.css,1700000000.000,-\n");
    }
    for st in ["PASSED", "DELAYED", "DELAYED", "REJECTED", "REJECTED"] {
        log.push_str(&format!("1.1.1.1,/api/x,1700000000.000,{st}\n"));
    }
    log.push_str("2.2.2.2,/api/x,1700000000.000,PASSED\n2.2.2.2,/api/x,1700000000.000,DELAYED\n");
    log.push_str("3.3.3.3,/static/b.css,1700000000.000,-\n");
    let (conf, log) = setup(
        &tmp,
        "http { limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n\
         server { location / { } location /api/ { limit_req zone=z burst=2; } } }\n",
        &log,
    );
    let out = verify(&log, &conf, &["-f", "json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let p = &v["policies"][0];
    assert_eq!(p["nginx"]["verify"]["disagreed"], 0, "{}", out.stdout);
    // 2 of the 5 rows that reached the limit, not 2 of the key's 15.
    let top = &p["top_keys"];
    assert_eq!(top.as_array().unwrap().len(), 1, "{}", out.stdout);
    assert_eq!(top[0]["key"], "1.1.1.1");
    assert_eq!(top[0]["requests"], 15);
    assert_eq!(top[0]["limited"], 5);
    assert_eq!(top[0]["dropped"], 2);
    assert_eq!(top[0]["drop_pct"], 40.0);
    let waits = p["top_waits"].as_array().unwrap();
    let got: Vec<(&str, u64, u64, u64, u64)> = waits
        .iter()
        .map(|w| {
            let n = |f: &str| w[f].as_u64().unwrap();
            let key = w["key"].as_str().unwrap();
            (
                key,
                n("requests"),
                n("limited"),
                n("delayed"),
                n("wait_max_ns"),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("1.1.1.1", 15, 5, 2, 2_000_000_000),
            ("2.2.2.2", 2, 2, 1, 1_000_000_000)
        ]
    );
    assert_eq!(waits[1]["delayed_pct"], 50.0);
    // The table says so, the waits beside the drops.
    let out = verify(&log, &conf, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for want in [
        "key      requests  limited  dropped  drop_pct",
        "1.1.1.1        15        5        2     40.00",
        "keys with the longest waits",
        "1.1.1.1        15        5        2s        2        40.00",
        "2.2.2.2         2        2        1s        1        50.00",
    ] {
        assert!(out.stdout.contains(want), "{want:?} in\n{}", out.stdout);
    }
}

#[test]
fn targets_nginx_refuses_and_rewrites_are_reported() {
    let tmp = Scratch::new();
    // A common-format log: the targets are as sent, so the ones nginx
    // answers with 400 are known; a rewrite cycle is nginx's 500.
    let conf = "limit_req_zone $binary_remote_addr zone=z:1m rate=1r/m;\n\
                server { listen 80;\n\
                  location / { limit_req zone=z burst=1 nodelay; }\n\
                  location /loop/ { rewrite ^ /loop/x last; }\n\
                  location /old/ { rewrite ^/old/(.*)$ /new/$1 permanent; limit_req zone=z; } }\n";
    let mut log = String::new();
    for t in [
        "/%2e%2e/x",
        "/a/../../x",
        "/bad%zz",
        "/x",
        "/loop/",
        "/old/p",
        "/y",
    ] {
        log.push_str(&format!(
            "10.0.0.1 - - [01/Aug/1995:00:00:01 -0400] \"GET {t} HTTP/1.0\" 200 1\n"
        ));
    }
    let (c, l) = setup(&tmp, conf, &log);
    let out = Drip::audit()
        .args([s(&l), "--nginx-conf", s(&c), "-q"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let o = &out.stdout;
    for want in [
        "answered 400 by nginx before any limit",
        "3 rows have a target nginx's parser refuses",
        "1 rows are rewritten more than 10 times",
        "location /old/, answered by its rewrite phase",
    ] {
        assert!(o.contains(want), "{want}:\n{o}");
    }
    // The answered entries are no location --nginx-location can name.
    let out = Drip::audit()
        .args([
            s(&l),
            "--nginx-conf",
            s(&c),
            "--nginx-location",
            "answered 400 by nginx before any limit",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 2, "{}", out.stdout);
    let listed = out.stderr.split("its locations are:").nth(1).unwrap();
    assert_eq!(
        listed.trim(),
        "server, location /, location /loop/, location /old/"
    );
}

#[test]
fn rewrites_without_a_uri_in_the_log_are_said() {
    let tmp = Scratch::new();
    let conf = "limit_req_zone $binary_remote_addr zone=z:1m rate=1r/m;\n\
                server { listen 80; rewrite ^/a /b last; location / { limit_req zone=z; } }\n";
    let (c, l) = setup(
        &tmp,
        conf,
        "remote_addr,t\n10.0.0.1,1700000000.1\n10.0.0.1,1700000000.2\n",
    );
    let out = Drip::audit().args([s(&l), "--nginx-conf", s(&c)]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("has rewrites, and the log has no field 'uri' to run them on"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_disagreement_a_1_ms_move_removes_is_within_nginxs_clock() {
    // rate=1r/s without burst: a second request 999 ms after the first is
    // refused, one 1000 ms after passes. nginx logged PASSED at .999 (its
    // cached clock said 1.000): within its clock granularity. The row at
    // 1.500 logged REJECTED is a genuine disagreement.
    let conf = "http {\n  log_format main '$remote_addr $msec \"$request\" $status $limit_req_status';\n  access_log /var/log/nginx/v.log main;\n  limit_req_zone $binary_remote_addr zone=perip:10m rate=1r/s;\n  server { location / { limit_req zone=perip nodelay; } }\n}\n";
    let log = [
        "1.1.1.1 1700000000.000 \"GET / HTTP/1.1\" 200 PASSED",
        "1.1.1.1 1700000000.999 \"GET / HTTP/1.1\" 200 PASSED",
        "2.2.2.2 1700000000.000 \"GET / HTTP/1.1\" 200 PASSED",
        "2.2.2.2 1700000001.500 \"GET / HTTP/1.1\" 503 REJECTED",
    ]
    .join("\n")
        + "\n";
    let d = Scratch::new();
    let c = d.join("nginx.conf");
    let l = d.join("v.log");
    std::fs::write(&c, conf).unwrap();
    std::fs::write(&l, log).unwrap();
    let run = |extra: &[&str]| {
        let max = if extra.contains(&"--max-disagree") {
            &[][..]
        } else {
            &["--max-disagree", "30"][..]
        };
        Drip::audit()
            .args([
                s(&l),
                "--nginx-conf",
                s(&c),
                "--verify-column",
                "limit_req_status",
            ])
            .arg("-q")
            .args(max)
            .args(extra)
            .run()
    };
    // One genuine disagreement in four rows: 25 % ≤ 30 %.
    let out = run(&["-f", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.stdout_json();
    let verify = &v["policies"][0]["nginx"]["verify"];
    assert_eq!(verify["disagreed"], 2, "{verify}");
    assert_eq!(verify["within_clock"], 1, "{verify}");
    assert_eq!(
        verify["first_disagreements"][0]["emulated"],
        "REJECTED (PASSED 1 ms later: within nginx's clock granularity)",
        "{verify}"
    );
    assert_eq!(
        verify["first_disagreements"][1]["emulated"], "PASSED",
        "{verify}"
    );
    let out = run(&[]);
    assert!(
        out.stdout
            .contains("2 disagree (1 within nginx's clock granularity"),
        "{}",
        out.stdout
    );
    // Strict, both count: 50 % > 30 %.
    let out = run(&["--verify-strict"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("crossed --max-disagree"),
        "{}",
        out.stderr
    );
    let out = run(&["--max-disagree", "20"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("1 of 4 rows disagree with column 'limit_req_status', not counting 1 within nginx's clock granularity"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_config_reading_six_log_fields_is_audited_and_verified() {
    // Three servers on two ports, nested and exact locations, a key of two
    // variables and one of an argument: client, user agent, URI, host,
    // port and the verified status, six fields (past the four of before).
    let conf = "http {
  limit_req_zone $binary_remote_addr$http_user_agent zone=ua:1m rate=1r/m;
  limit_req_zone $arg_k zone=k:1m rate=1r/m;
  server { listen 80; server_name a.test; return 301 https://$host$request_uri; }
  server { listen 443; server_name a.test;
    location /api/ { limit_req zone=ua nodelay;
      location /api/v2/ { limit_req zone=k nodelay; } }
    location = /login { limit_req zone=ua nodelay; } }
  server { listen 443; server_name b.test; location / { } }
}
";
    let log = "\
remote_addr,http_user_agent,uri,host,server_port,msec,limit_req_status
1.1.1.1,curl,/api/x,a.test,443,1700000000.000,PASSED
1.1.1.1,curl,/api/y,a.test,443,1700000000.100,REJECTED
1.1.1.1,wget,/api/y,a.test,443,1700000000.200,PASSED
1.1.1.1,curl,/api/x,a.test,80,1700000000.300,-
2.2.2.2,curl,/api/v2/a?k=1,a.test,443,1700000000.400,PASSED
2.2.2.2,wget,/api/v2/b?k=1,a.test,443,1700000000.500,REJECTED
3.3.3.3,curl,/login,a.test,443,1700000000.600,PASSED
3.3.3.3,curl,/login,a.test,443,1700000000.700,REJECTED
3.3.3.3,curl,/login,b.test,443,1700000000.800,-
";
    let d = Scratch::new();
    let (c, l) = setup(&d, conf, log);
    let out = verify(&l, &c, &["--time-column", "msec", "-f", "json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.stdout_json();
    let verify = &v["policies"][0]["nginx"]["verify"];
    assert_eq!(verify["rows"], 9, "{verify}");
    assert_eq!(verify["agreed"], 9, "{verify}");
}
