//! Access-log formats end to end: the same requests written as CSV and as
//! each server's lines give the same reports and decisions; broken lines
//! are named by file, line, format and field.

use std::io::Write;
use std::path::Path;

use crate::common::{Drip, Scratch, s};

/// A report and its decisions file, for a log read with `args`.
fn audit(log: &Path, args: &[&str]) -> (serde_json::Value, String) {
    let (out, decisions) = Drip::audit()
        .arg(log)
        .args(["-q", "-f", "json", "--timeline", "30s"])
        .args(["-p", "gcra:rate=1/5s,burst=2"])
        .args(["-p", "nginx:rate=2r/s,burst=1,key=none"])
        .args(["-p", "sliding-log:limit=3,window=10s"])
        .args(args)
        .run_with_decisions();
    (out.json(), decisions)
}

/// The parts of a report that do not depend on how the log was written.
fn outcome(j: &serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "rows": j["input"]["rows"],
        "reordered": j["input"]["rows_reordered"],
        "first": j["input"]["first_ns"],
        "last": j["input"]["last_ns"],
        "policies": j["policies"],
        "timeline": j["timeline"],
    })
}

/// One request: arrival (ms since the epoch, whole seconds), duration (ms),
/// client address.
struct Req {
    arrival_ms: u64,
    took_ms: u64,
    client: &'static str,
    uri: String,
}

/// Requests in the order a server writes them: by completion.
fn requests() -> Vec<Req> {
    const CLIENTS: [&str; 5] = [
        "10.0.0.1",
        "10.0.0.2",
        "2001:db8::7",
        "192.0.2.9",
        "10.0.0.1",
    ];
    let base = 1_700_000_000_000u64;
    let mut arrivals: Vec<u64> = (0..400u64).map(|i| base + (i * 37 % 200) * 1000).collect();
    arrivals.sort();
    let mut reqs: Vec<Req> = arrivals
        .into_iter()
        .enumerate()
        .map(|(i, a)| Req {
            arrival_ms: a,
            took_ms: (i as u64 * 113) % 3000,
            client: CLIENTS[i % 5],
            uri: format!("/api/{}?q={}", i % 7, i),
        })
        .collect();
    reqs.sort_by_key(|r| r.arrival_ms + r.took_ms);
    reqs
}

/// `ms` as CLF local time at +02:00.
fn clf(ms: u64) -> String {
    let t = (ms / 1000) as i64 + 2 * 3600;
    let (days, secs) = (t.div_euclid(86400), t.rem_euclid(86400));
    // Civil date from days since 1970 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{d:02}/{}/{y}:{:02}:{:02}:{:02} +0200",
        MONTHS[m as usize - 1],
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn write_csv(reqs: &[Req]) -> String {
    let mut s = String::from("ts,client,uri\n");
    for r in reqs {
        s += &format!("{},{},{}\n", r.arrival_ms, r.client, r.uri);
    }
    s
}

fn write_combined(reqs: &[Req]) -> String {
    reqs.iter()
        .map(|r| {
            format!(
                "{} - - [{}] \"GET {} HTTP/1.1\" 200 512 \"-\" \"test/1.0\"\n",
                r.client,
                clf(r.arrival_ms),
                r.uri
            )
        })
        .collect()
}

const NGINX_FORMAT: &str = r#"'$remote_addr - $remote_user [$time_local] "$request" '
    '$status $body_bytes_sent $msec $request_time "$http_x_forwarded_for"'"#;

fn write_nginx(reqs: &[Req]) -> String {
    reqs.iter()
        .map(|r| {
            let done = r.arrival_ms + r.took_ms;
            format!(
                "{} - - [{}] \"GET {} HTTP/1.1\" 200 512 {}.{:03} {}.{:03} \"-\"\n",
                r.client,
                clf(done),
                r.uri,
                done / 1000,
                done % 1000,
                r.took_ms / 1000,
                r.took_ms % 1000
            )
        })
        .collect()
}

/// `ms` as RFC 3339 UTC with milliseconds.
fn rfc3339(ms: u64) -> String {
    let c = clf(ms - 2 * 3600 * 1000);
    // dd/Mon/yyyy:HH:MM:SS +0200 → yyyy-mm-ddTHH:MM:SS.mmmZ
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = MONTHS.iter().position(|m| *m == &c[3..6]).unwrap() + 1;
    format!(
        "{}-{m:02}-{}T{}.{:03}Z",
        &c[7..11],
        &c[0..2],
        &c[12..20],
        ms % 1000
    )
}

/// Caddy-like: completion time as epoch seconds, the duration in seconds.
fn write_caddy(reqs: &[Req]) -> String {
    reqs.iter()
        .map(|r| {
            let done = r.arrival_ms + r.took_ms;
            format!(
                "{{\"level\":\"info\",\"ts\":{}.{:03},\"request\":{{\"remote_ip\":\"{}\",\"uri\":\"{}\"}},\"duration\":{}.{:03},\"status\":200}}\n",
                done / 1000,
                done % 1000,
                r.client,
                r.uri,
                r.took_ms / 1000,
                r.took_ms % 1000
            )
        })
        .collect()
}

/// Cloud Logging-like: the arrival as RFC 3339, the client nested.
fn write_gcp(reqs: &[Req]) -> String {
    reqs.iter()
        .map(|r| {
            format!(
                "{{\"httpRequest\":{{\"requestUrl\":\"{}\",\"remoteIp\":\"{}\"}},\"timestamp\":\"{}\"}}\n",
                r.uri,
                r.client,
                rfc3339(r.arrival_ms)
            )
        })
        .collect()
}

/// ALB: `time` is when the response was sent, `request_creation_time` the
/// arrival, both with microseconds; the client with its port.
fn write_alb(reqs: &[Req]) -> String {
    reqs.iter()
        .enumerate()
        .map(|(i, r)| {
            let done = r.arrival_ms + r.took_ms;
            let client = if r.client.contains(':') {
                format!("[{}]:{}", r.client, 40000 + i)
            } else {
                format!("{}:{}", r.client, 40000 + i)
            };
            let us = |ms: u64| rfc3339(ms).replace('Z', "000Z");
            format!(
                "https {} app/my-lb/50dc6c495c0c9188 {client} 10.0.0.1:80 0.000 {}.{:03} 0.000 200 200 34 366 \"GET https://h:443{} HTTP/1.1\" \"curl/7.46.0\" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/t/73e2d6bc24d8a067 \"Root=1-58337262-36d228ad5d99923122bbe354\" \"-\" \"-\" 0 {} \"forward\" \"-\" \"-\" \"10.0.0.1:80\" \"200\" \"-\" \"-\" TID_1\n",
                us(done),
                r.took_ms / 1000,
                r.took_ms % 1000,
                r.uri,
                us(r.arrival_ms)
            )
        })
        .collect()
}

/// CloudFront: W3C directives, tab-separated, date and time apart (UTC).
fn write_w3c(reqs: &[Req]) -> String {
    let mut s = String::from(
        "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query time-taken\n",
    );
    for r in reqs {
        let t = rfc3339(r.arrival_ms);
        let (uri, query) = r.uri.split_once('?').unwrap();
        s += &format!(
            "{}\t{}\tLAX1\t392\t{}\tGET\td111111abcdef8.cloudfront.net\t{uri}\t200\t-\tMozilla/5.0%20(X11)\t{query}\t{}.{:03}\n",
            &t[..10],
            &t[11..19],
            r.client,
            r.took_ms / 1000,
            r.took_ms % 1000
        );
    }
    s
}

#[test]
fn the_same_requests_in_every_format_give_the_same_report() {
    let tmp = Scratch::new();
    let reqs = requests();
    let csv = tmp.write("reqs.csv", write_csv(&reqs).as_bytes());
    let (want, want_d) = audit(&csv, &["--key-column", "client"]);
    assert!(want["input"]["rows_reordered"].as_u64().unwrap() > 0);
    assert!(want["policies"][0]["dropped"].as_u64().unwrap() > 0);
    let combined = tmp.write("access.log", write_combined(&reqs).as_bytes());
    let nginx = tmp.write("nginx.log", write_nginx(&reqs).as_bytes());
    let caddy = tmp.write("caddy.json", write_caddy(&reqs).as_bytes());
    let gcp = tmp.write("gcp.json", write_gcp(&reqs).as_bytes());
    let alb = tmp.write("alb.log", write_alb(&reqs).as_bytes());
    let w3c = tmp.write("cloudfront.log", write_w3c(&reqs).as_bytes());
    let cases: Vec<(&str, &Path, Vec<&str>)> = vec![
        ("combined", &combined, vec!["--key-column", "remote_addr"]),
        (
            "combined, named",
            &combined,
            vec!["--input-format", "combined", "--key-column", "0"],
        ),
        (
            "nginx",
            &nginx,
            vec![
                "--log-format",
                NGINX_FORMAT,
                "--duration-column",
                "request_time",
                "--key-column",
                "remote_addr",
            ],
        ),
        (
            "ndjson, epoch seconds and a duration",
            &caddy,
            vec![
                "--duration-column",
                "duration",
                "--key-column",
                "request.remote_ip",
            ],
        ),
        (
            "ndjson, rfc3339",
            &gcp,
            vec![
                "--input-format",
                "ndjson",
                "--key-column",
                "httpRequest.remoteIp",
            ],
        ),
        ("alb", &alb, vec!["--key-column", "client"]),
        (
            "alb, client:port stripped",
            &alb,
            vec!["--key-column", "client:port", "--strip-port"],
        ),
        ("w3c", &w3c, vec!["--key-column", "c-ip"]),
    ];
    for (what, log, args) in cases {
        let (got, got_d) = audit(log, &args);
        assert_eq!(outcome(&got), outcome(&want), "{what}");
        assert_eq!(got_d, want_d, "{what}: decisions");
    }
}

#[test]
fn the_nasa_log_reads_the_same_as_clf_and_as_tsv() {
    let args = [
        "--key-column",
        "",
        "-p",
        "gcra:rate=1/s,burst=10",
        "-p",
        "shaper:rate=3/s,burst=30,key=none",
    ];
    let mut tsv_args = args.to_vec();
    tsv_args[1] = "host";
    let (tsv, tsv_d) = audit(Path::new("fixtures/nasa_19950801.tsv"), &tsv_args);
    let mut clf_args = args.to_vec();
    clf_args[1] = "remote_addr";
    let (clf, clf_d) = audit(Path::new("fixtures/nasa_19950801.log.gz"), &clf_args);
    assert_eq!(clf["input"]["rows"], 30969);
    assert_eq!(clf["input"]["time_column"], "time_local");
    assert_eq!(clf["input"]["time_format"], "clf");
    assert_eq!(outcome(&clf), outcome(&tsv));
    assert_eq!(clf_d, tsv_d);
}

#[test]
fn the_format_is_said_on_stderr_and_stdin_works() {
    let tmp = Scratch::new();
    let reqs = requests();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(write_combined(&reqs).as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let out = Drip::audit()
        .args(["-p", "gcra:rate=1/s", "-f", "json"])
        .stdin(&gz)
        .run();
    assert_eq!(out.json()["input"]["rows"], 400);
    assert!(
        out.stderr
            .contains("drip: reading <stdin> as combined lines (detected from its first lines"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("rows were out of time order, by at most "),
        "{}",
        out.stderr
    );
    // The nginx format with a duration: the note proposes it.
    let nginx = tmp.write("nginx.log", write_nginx(&reqs).as_bytes());
    let out = Drip::audit()
        .args([
            s(&nginx),
            "--log-format",
            NGINX_FORMAT,
            "-p",
            "gcra:rate=1/s",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("'msec' is a completion time; pass --duration-column request_time"),
        "{}",
        out.stderr
    );
}

#[test]
fn without_a_key_column_the_formats_client_field_is_suggested_once() {
    let hint = "drip: no --key-column: each policy is one bucket for the whole log; for one per client, add --key-column";
    // Each format's client field, as its module documents it.
    for (file, client) in [
        ("vhost.log", "remote_addr"),
        ("elb.log", "client"),
        ("haproxy.log", "client"),
        ("iis.log", "c-ip"),
        ("s3.log", "remote_ip"),
    ] {
        let log = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/formats")
            .join(file);
        let out = Drip::audit().args([s(&log), "-p", "gcra:rate=1/s"]).run();
        assert_eq!(out.code, 0, "{file}: {}", out.stderr);
        let said: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with(hint)).collect();
        assert_eq!(said, [format!("{hint} {client}")], "{file}: {}", out.stderr);
        // A key column, a policy's own key= or --quiet: no hint.
        for extra in [
            &["--key-column", client][..],
            &["-p", &format!("gcra:rate=2/s,key={client}")][..],
            &["--quiet"][..],
        ] {
            let mut args = vec![s(&log)];
            if extra[0] != "-p" {
                args.extend(["-p", "gcra:rate=1/s"]);
            }
            args.extend_from_slice(extra);
            let out = Drip::audit().args(&args).run();
            assert_eq!(out.code, 0, "{file} {extra:?}: {}", out.stderr);
            assert!(
                !out.stderr.contains(hint),
                "{file} {extra:?}: {}",
                out.stderr
            );
        }
    }
    // CSV names no client: no hint.
    let csv = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/small.csv");
    let out = Drip::audit().args([s(&csv), "-p", "gcra:rate=1/s"]).run();
    assert!(!out.stderr.contains(hint), "{}", out.stderr);
}

/// Runs drip on a log and expects one error line with exit status 2.
fn fails(log: &[u8], name: &str, args: &[&str]) -> String {
    let tmp = Scratch::new();
    let p = tmp.write(name, log);
    let mut all = vec![s(&p), "-p", "gcra:rate=1/s"];
    all.extend_from_slice(args);
    let out = Drip::audit().args(&all).run();
    assert_eq!(out.code, 2, "{}: {}", name, out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    // The error is one line, the last; notes before it start with "drip: ".
    assert!(
        out.stderr.lines().all(|l| l.starts_with("drip: ")),
        "{}",
        out.stderr
    );
    out.stderr.lines().last().unwrap_or_default().to_string()
}

#[test]
fn several_files_of_a_format_read_as_one_log() {
    let tmp = Scratch::new();
    let reqs = requests();
    let (a, b) = reqs.split_at(150);
    let csv = tmp.write("reqs.csv", write_csv(&reqs).as_bytes());
    let (want, want_d) = audit(&csv, &["--key-column", "client"]);
    let gz = |text: String| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap()
    };
    // CloudFront writes the directives at the top of every file.
    for (what, first, second, key) in [
        ("w3c", write_w3c(a), write_w3c(b), "c-ip"),
        (
            "combined",
            write_combined(a),
            write_combined(b),
            "remote_addr",
        ),
        ("ndjson", write_gcp(a), write_gcp(b), "httpRequest.remoteIp"),
    ] {
        let one = tmp.write("one.log.gz", &gz(first));
        let two = tmp.write("two.log", second.as_bytes());
        let d = tmp.join("d.csv");
        let out = Drip::audit()
            .args([
                s(&one),
                s(&two),
                "-q",
                "-f",
                "json",
                "--timeline",
                "30s",
                "--decisions",
                s(&d),
                "--key-column",
                key,
                "-p",
                "gcra:rate=1/5s,burst=2",
                "-p",
                "nginx:rate=2r/s,burst=1,key=none",
                "-p",
                "sliding-log:limit=3,window=10s",
            ])
            .run();
        assert_eq!(outcome(&out.json()), outcome(&want), "{what}");
        assert_eq!(std::fs::read_to_string(&d).unwrap(), want_d, "{what}");
    }
    // A joined key reads the same from CSV and from combined lines.
    let combined = tmp.write("access.log", write_combined(&reqs).as_bytes());
    let (c, c_d) = audit(&combined, &["--key-column", "uri,remote_addr"]);
    let (v, v_d) = audit(&csv, &["--key-column", "uri,client"]);
    assert_eq!(outcome(&c), outcome(&v));
    assert_eq!(c_d, v_d);
    assert!(c_d.contains("/api/1?q=1|10.0.0.2,"), "{c_d}");
}

#[test]
fn empty_files_and_headless_w3c() {
    let tmp = Scratch::new();
    let empty = tmp.write("empty.log", b"");
    let heads = tmp.write("heads.log", b"#Version: 1.0\n#Fields: date time c-ip\n");
    let one = tmp.write(
        "one.log",
        b"#Version: 1.0\n#Fields: date time c-ip\n2019-12-04\t21:02:31\t1.2.3.4\n",
    );
    let out = Drip::audit()
        .args([
            s(&one),
            s(&empty),
            s(&heads),
            "--input-format",
            "w3c",
            "-p",
            "gcra:rate=1/s",
            "-q",
            "-f",
            "json",
        ])
        .run();
    assert_eq!(out.json()["input"]["rows"], 1);
    let e = fails(
        b"2019-12-04\t21:02:31\t1.2.3.4\n",
        "x.log",
        &["--input-format", "w3c"],
    );
    assert!(
        e.contains("x.log:1: a request line comes before any #Fields: line"),
        "{e}"
    );
}

/// A W3C log without its #Fields: line is read by IIS's default fields
/// when its lines have them, and said so; a line of another count is
/// named with its count. A #GMT-Offset: given with --tz is said to win.
#[test]
fn w3c_without_fields_and_with_a_gmt_offset_are_said() {
    let formats = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/formats");
    let iis = formats.join("iis75_no_fields.log");
    let out = Drip::audit().args([s(&iis), "-p", "gcra:rate=1/s"]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("as w3c lines")
            && out.stderr.contains("iis75_no_fields.log: no #Fields: line; reading IIS's default fields (date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) sc-status sc-substatus sc-win32-status time-taken)"),
        "{}",
        out.stderr
    );
    let text = std::fs::read_to_string(&iis).unwrap();
    let short: String = text
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().0.to_string() + "\n")
        .collect();
    let e = fails(short.as_bytes(), "short.log", &["--input-format", "w3c"]);
    assert!(
        e.contains("short.log:1: no #Fields: line names the fields, and this line's 13 field(s) are not IIS's default 15 (or 14 before IIS 8.5)"),
        "{e}"
    );
    // Detected as no format: the fall-through names the W3C case.
    let e = fails(short.as_bytes(), "short.log", &[]);
    assert!(
        e.contains(
            "(a date and a time first: a W3C log without its #Fields: line? put that line first)"
        ),
        "{e}"
    );
    let mut mixed = text.clone();
    mixed.push_str(&short);
    let e = fails(mixed.as_bytes(), "mixed.log", &[]);
    assert!(
        e.contains("mixed.log:4: w3c line: the line has 13 field(s), IIS's default fields (read for want of a #Fields: line) are 14"),
        "{e}"
    );

    let oracle = formats.join("w3c_oracle.log");
    let out = Drip::audit()
        .args([s(&oracle), "-p", "gcra:rate=1/s"])
        .run();
    assert!(!out.stderr.contains("--tz"), "{}", out.stderr);
    let out = Drip::audit()
        .args([s(&oracle), "-p", "gcra:rate=1/s", "--tz", "UTC"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "w3c_oracle.log: #GMT-Offset: -0800 gives the offset of its times: read at it, not in --tz"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn caddy_json_is_said_to_stamp_completion() {
    let tmp = Scratch::new();
    let caddy = tmp.write("caddy.json", write_caddy(&requests()).as_bytes());
    let out = Drip::audit().args([s(&caddy), "-p", "gcra:rate=1/s"]).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("'ts' is a completion time; pass --duration-column duration"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_json_path_missing_on_some_lines_is_an_empty_key() {
    let tmp = Scratch::new();
    let log = tmp.write(
        "a.json",
        b"{\"ts\":1700000000,\"user\":{\"id\":\"a\"}}\n{\"ts\":1700000000}\n{\"ts\":1700000000,\"user\":null}\n{\"ts\":1700000000,\"user\":\"x\"}\n{\"ts\":1700000000,\"user\":{\"id\":\"a\"}}\n",
    );
    let out = Drip::audit()
        .args([
            s(&log),
            "--key-column",
            "user.id",
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
        ])
        .run();
    let j = out.json();
    // Only the two lines of user a are limited: one admitted, one dropped.
    assert_eq!(j["policies"][0]["keys"], 1);
    assert_eq!(j["policies"][0]["dropped"], 1);
    assert_eq!(j["policies"][0]["admitted"], 4);
    assert!(
        out.stderr.contains("reading a.json as ndjson lines")
            || out.stderr.contains("as ndjson lines"),
        "{}",
        out.stderr
    );
    // A path on no first line is said.
    let out = Drip::audit()
        .args([s(&log), "--key-column", "tenant", "-p", "gcra:rate=1/s"])
        .run();
    assert!(
        out.stderr
            .contains("has no field 'tenant'; lines without it have an empty key"),
        "{}",
        out.stderr
    );
}

#[test]
fn bad_lines_name_file_line_format_and_field() {
    let tmp = Scratch::new();
    let good = r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 "-" "ua""#;
    let cases: [(&str, &str); 4] = [
        (
            r#"1.2.3.4 - - [10/Oct/2000:13:55:37 -0700] "GET / HTTP/1.1 200 5 "-" "ua""#,
            "access.log:2: combined line: field 4 (request) has an unescaped quote",
        ),
        (
            r#"1.2.3.4 - - [10/Oct/2000:13:55:37 -0700] "GET / HTTP/1.1" 200"#,
            "access.log:2: combined line: the line has 6 field(s), a combined line has at least 9",
        ),
        (
            r#"1.2.3.4 - - [10/Oct/2000:13:75:37 -0700] "GET / HTTP/1.1" 200 5 "-" "ua""#,
            "access.log:2: combined line: bad timestamp '10/Oct/2000:13:75:37 -0700' in field 'time_local'",
        ),
        (
            r#"1.2.3.4 - - [10/Oct/2000:13:55:37 -0700] "GET / HTTP/1.1" 200 5 "-" "ua" 0"#,
            "",
        ),
    ];
    for (line, want) in cases {
        let log = format!("{good}\n{line}\n{good}\n");
        if want.is_empty() {
            let out = Drip::audit()
                .args([
                    s(&tmp.write("access.log", log.as_bytes())),
                    "-p",
                    "gcra:rate=1/s",
                    "-q",
                    "-f",
                    "json",
                ])
                .run();
            assert_eq!(out.json()["input"]["rows"], 3);
            continue;
        }
        let e = fails(
            log.as_bytes(),
            "access.log",
            &["--input-format", "combined"],
        );
        assert!(e.contains(want), "{want}\n{e}");
        assert!(e.contains("or pass --skip-bad"), "{e}");
        let p = tmp.write("access.log", log.as_bytes());
        let out = Drip::audit()
            .args([
                s(&p),
                "-p",
                "gcra:rate=1/s",
                "--skip-bad",
                "-q",
                "-f",
                "json",
            ])
            .run();
        let j = out.json();
        assert_eq!(j["input"]["rows"], 2, "{line}");
        assert_eq!(j["input"]["bad_rows_skipped"], 1, "{line}");
    }
    let e = fails(
        good.as_bytes(),
        "a.log",
        &["--input-format", "combined", "--key-column", "client"],
    );
    assert!(
        e.contains(
            "a.log: combined lines have no key field 'client'; the fields are: remote_addr, ident"
        ),
        "{e}"
    );
    let e = fails(good.as_bytes(), "a.log", &["--input-format", "nginx"]);
    assert!(e.contains("--input-format nginx needs --log-format"), "{e}");
    let e = fails(
        good.as_bytes(),
        "a.log",
        &["--input-format", "csv", "--log-format", "$a"],
    );
    assert!(
        e.contains("--log-format describes nginx lines, but --input-format is csv"),
        "{e}"
    );
    let e = fails(good.as_bytes(), "a.log", &["--log-format", "$a$b"]);
    assert!(e.contains("invalid --log-format: $b follows $a"), "{e}");
    let e = fails(b"{\"ts\":1700000000}\n[1]\n", "a.json", &[]);
    assert!(
        e.contains("a.json:2: ndjson line: not a JSON object (the line starts with '[')"),
        "{e}"
    );
    let e = fails(b"{\"ts\":1700000000}\n{\"t\":2}\n", "a.json", &[]);
    assert!(
        e.contains("a.json:2: ndjson line: no time field 'ts' on this line"),
        "{e}"
    );
    let e = fails(
        b"{\"ts\":1700000000}\n{\"ts\":1700000001,\"a\":\xff}\n",
        "a.json",
        &["--key-column", "a"],
    );
    assert!(
        e.contains("a.json:2: ndjson line: invalid JSON: expected value at line 1 column 22"),
        "{e}"
    );
    let e = fails(
        b"1.2.3.4 [10/Oct/2000:13:55:36 -0700] 0.5x\n",
        "a.log",
        &[
            "--log-format",
            "$remote_addr [$time_local] $request_time",
            "--duration-column",
            "request_time",
        ],
    );
    assert!(
        e.contains("a.log:1: nginx line: bad duration '0.5x' in field 'request_time'"),
        "{e}"
    );
}

#[test]
fn keys_join_fields_and_group_addresses_by_network() {
    let tmp = Scratch::new();
    let line = |ip: &str, uri: &str| {
        format!("{ip} - - [10/Oct/2000:13:55:36 -0700] \"GET {uri} HTTP/1.1\" 200 5 \"-\" \"ua\"\n")
    };
    let log: String = [
        line("10.0.0.1", "/login"),
        line("10.0.0.2", "/login"),
        line("10.0.0.1", "/other"),
        line("2001:db8:0:1::5", "/login"),
        line("2001:db8:0:1::6", "/login"),
        line("-", "/login"),
    ]
    .concat();
    let p = tmp.write("access.log", log.as_bytes());
    let top = |args: &[&str]| -> Vec<(String, u64)> {
        let d = tmp.join("d.csv");
        let mut all = vec![s(&p), "-p", "gcra:rate=1/h", "-q", "--decisions", s(&d)];
        all.extend_from_slice(args);
        let out = Drip::audit().args(&all).run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        let text = std::fs::read_to_string(&d).unwrap();
        text.lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f[2].to_string(), f[4].parse().unwrap())
            })
            .collect()
    };
    let keys = |v: &[(String, u64)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    let admits = |v: &[(String, u64)]| v.iter().map(|(_, a)| *a).collect::<Vec<_>>();
    let joined = top(&["--key-column", "uri,remote_addr"]);
    assert_eq!(
        keys(&joined),
        [
            "/login|10.0.0.1",
            "/login|10.0.0.2",
            "/other|10.0.0.1",
            "/login|2001:db8:0:1::5",
            "/login|2001:db8:0:1::6",
            "/login|"
        ]
    );
    assert_eq!(admits(&joined), [1, 1, 1, 1, 1, 1]);
    let nets = top(&["--key-column", "remote_addr", "--key-prefix", "24,64"]);
    assert_eq!(
        keys(&nets),
        [
            "10.0.0.0/24",
            "10.0.0.0/24",
            "10.0.0.0/24",
            "2001:db8:0:1::/64",
            "2001:db8:0:1::/64",
            ""
        ]
    );
    // One per network an hour; the '-' client is not limited.
    assert_eq!(admits(&nets), [1, 0, 0, 1, 0, 1]);
    let both = top(&["--key-column", "uri,0", "--key-prefix", "16"]);
    assert_eq!(keys(&both)[1], "/login|10.0.0.0/16");
    let e = Drip::audit()
        .args([s(&p), "-p", "gcra:rate=1/h", "--key-prefix", "33"])
        .run();
    assert_eq!(e.code, 2);
    assert!(
        e.stderr.contains("invalid --key-prefix '33'"),
        "{}",
        e.stderr
    );
}

/// A dual-stack server logs IPv4 clients as `::ffff:a.b.c.d`: each is
/// grouped by its IPv4 network, not all into the one IPv6 /64 they share.
#[test]
fn ipv4_mapped_clients_are_grouped_by_their_ipv4_network() {
    let tmp = Scratch::new();
    let p = tmp.write(
        "mapped.csv",
        b"ts,ip\n1700000000,::ffff:1.2.3.4\n1700000000,::ffff:9.8.7.6\n1700000000,::ffff:1.2.3.99\n1700000000,2001:db8::1\n",
    );
    let d = tmp.join("decisions.csv");
    let out = Drip::audit()
        .args([
            s(&p),
            "--key-column",
            "ip",
            "--key-prefix",
            "24,64",
            "-p",
            "gcra:rate=1/s",
            "-q",
            "-f",
            "json",
            "--decisions",
            s(&d),
        ])
        .run();
    let v = out.json();
    let decisions = std::fs::read_to_string(&d).unwrap();
    let rows: Vec<(&str, &str)> = decisions
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2], f[4])
        })
        .collect();
    // 1.2.3.4 and 9.8.7.6 are different clients; 1.2.3.99 shares 1.2.3.0/24.
    assert_eq!(
        rows,
        [
            ("1.2.3.0/24", "1"),
            ("9.8.7.0/24", "1"),
            ("1.2.3.0/24", "0"),
            ("2001:db8::/64", "1")
        ],
        "{decisions}"
    );
    assert_eq!(v["policies"][0]["keys"], 3, "{}", out.stdout);
}

/// What a hostile line should do.
enum Want {
    /// Read, with this key.
    Key(&'static [u8]),
    /// Refused: line 2, with this text in the message.
    Bad(&'static str),
}

/// Each format's hostile lines, between two good ones: refused with a
/// `file:2` error naming the format (and skipped and counted with
/// `--skip-bad`), or read with the key a careful reader would take.
#[test]
fn hostile_lines_per_format() {
    let long = format!(
        "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET /{} HTTP/1.1\" 200 5 \"-\" \"ua\"",
        "a".repeat(1 << 21)
    );
    let clf = |req: &str, tail: &str| -> Vec<u8> {
        format!("1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"{req}\" 200 5{tail}").into_bytes()
    };
    let mut invalid_utf8 = clf("GET /\u{e9} HTTP/1.1", " \"-\" \"ua\"");
    invalid_utf8.extend_from_slice(b" \"\xff\xfe\"");
    let nginx_fmt =
        r#"$remote_addr [$time_local] "$request" $status $msec $request_time "$http_user_agent""#;
    let alb_good = r#"https 2018-07-02T22:23:00.186641Z app/lb/1 1.2.3.4:5 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://h/a HTTP/1.1" "curl/7.46.0" - - arn "Root=1" "-" "-" 0 2018-07-02T22:23:00.100000Z "forward" "-" "-" "-" "-" "-" "-""#;
    let w3c_head = "#Version: 1.0\n#Fields: date time c-ip cs-uri-stem sc-status\n";
    type Case = (&'static str, Vec<&'static str>, Vec<u8>, Vec<u8>, Want);
    let cases: Vec<Case> = vec![
        (
            "combined",
            vec!["--key-column", "uri"],
            clf("GET /ok HTTP/1.1", " \"-\" \"ua\"").to_vec(),
            clf("GET /a\\x22b HTTP/1.1", " \"-\" \"ua\""),
            Want::Key(br"/a\x22b"),
        ),
        (
            "combined",
            vec!["--key-column", "uri"],
            clf("GET /ok HTTP/1.1", " \"-\" \"ua\""),
            clf("GET /a b  c HTTP/1.1", " \"-\" \"ua\""),
            Want::Key(b"/a b  c"),
        ),
        (
            "combined",
            vec!["--key-column", "http_user_agent"],
            clf("GET /ok HTTP/1.1", " \"-\" \"ua\""),
            clf("GET /a HTTP/1.1", " \"-\" \"ua \\\"quoted\\\"\""),
            Want::Key(br#"ua \"quoted\""#),
        ),
        (
            "combined",
            vec!["--key-column", "field12"],
            clf("GET /ok HTTP/1.1", " \"-\" \"ua\" \"x\""),
            invalid_utf8,
            Want::Key(b"\xff\xfe"),
        ),
        (
            // A user agent cut by the end of the line keeps its row.
            "combined",
            vec!["--key-column", "http_user_agent"],
            clf("GET /ok HTTP/1.1", " \"-\" \"ua\""),
            clf("GET /a HTTP/1.1", " \"-\" \"ua cut"),
            Want::Key(b"ua cut"),
        ),
        (
            "combined",
            vec![],
            clf("GET /ok HTTP/1.1", " \"-\" \"ua\""),
            clf("GET /a HTTP/1.1", " \"- \"ua\""),
            Want::Bad("combined line: field 7 (http_referer) has an unescaped quote"),
        ),
        (
            "combined",
            vec!["--key-column", "uri"],
            clf("GET /ok HTTP/1.1", " \"-\" \"ua\""),
            // A Common line in a Combined log is read as Common.
            clf("GET /a HTTP/1.1", ""),
            Want::Key(b"/a"),
        ),
        (
            "combined",
            vec![],
            clf("GET /ok HTTP/1.1", " \"-\" \"ua\""),
            b"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET /a HTTP/1.1\" 200".to_vec(),
            Want::Bad("combined line: the line has 6 field(s), a combined line has at least 9"),
        ),
        (
            "combined",
            vec![],
            clf("GET /ok HTTP/1.1", " \"-\" \"ua\""),
            long.into_bytes(),
            Want::Bad("combined line: the line is longer than 1048576 bytes"),
        ),
        (
            "common",
            vec!["--key-column", "uri"],
            clf("GET /ok HTTP/1.1", ""),
            clf("GET /spaced uri", ""),
            Want::Key(b"/spaced uri"),
        ),
        (
            "common",
            vec![],
            clf("GET /ok HTTP/1.1", ""),
            b"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700 \"GET / HTTP/1.1\" 200 5".to_vec(),
            Want::Bad("common line: field 3 (time_local) opens a '[' that is never closed"),
        ),
        (
            "nginx",
            vec!["--log-format", nginx_fmt, "--key-column", "http_user_agent"],
            b"1.2.3.4 [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 971192136.100 0.100 \"ua\"".to_vec(),
            b"1.2.3.4 [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 971192136.100 0.100 \"ua\\x22 \\\"x\\\"\"".to_vec(),
            Want::Key(br#"ua\x22 \"x\""#),
        ),
        (
            "nginx",
            vec!["--log-format", nginx_fmt, "--key-column", "http_user_agent"],
            b"1.2.3.4 [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 971192136.100 0.100 \"ua\"".to_vec(),
            b"1.2.3.4 [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 971192136.100 0.100 \"ua".to_vec(),
            Want::Key(b"ua"),
        ),
        (
            "nginx",
            vec!["--log-format", nginx_fmt],
            b"1.2.3.4 [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 971192136.100 0.100 \"ua\"".to_vec(),
            b"1.2.3.4 [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 971192136.100".to_vec(),
            Want::Bad("nginx line: $msec: expected ' ' after it"),
        ),
        (
            "ndjson",
            vec!["--key-column", "a.b"],
            br#"{"ts":971192136,"a":{"b":"k"}}"#.to_vec(),
            br#"{"ts":971192136,"a":{"b":"\u0022q\""}}"#.to_vec(),
            Want::Key(br#""q""#),
        ),
        (
            "ndjson",
            vec!["--key-column", "a.b"],
            br#"{"ts":971192136,"a":{"b":"k"}}"#.to_vec(),
            br#"{"ts":971192136,"a":[1]}"#.to_vec(),
            Want::Key(b""),
        ),
        (
            "ndjson",
            vec![],
            br#"{"ts":971192136}"#.to_vec(),
            br#"["ts",971192136]"#.to_vec(),
            Want::Bad("ndjson line: not a JSON object (the line starts with '[')"),
        ),
        (
            "ndjson",
            vec![],
            br#"{"ts":971192136}"#.to_vec(),
            br#"{"ts":971192136,"ua":"unclosed}"#.to_vec(),
            Want::Bad("ndjson line: invalid JSON: EOF while parsing a string"),
        ),
        (
            "ndjson",
            vec!["--key-column", "ua"],
            br#"{"ts":971192136,"ua":"a"}"#.to_vec(),
            // Bytes that are not UTF-8 are kept, as in the other formats.
            b"{\"ts\":971192136,\"ua\":\"\xff\"}".to_vec(),
            Want::Key(b"\xff"),
        ),
        (
            "ndjson",
            vec![],
            br#"{"ts":971192136}"#.to_vec(),
            br#"{"ts":"yesterday"}"#.to_vec(),
            Want::Bad("ndjson line: bad timestamp 'yesterday' in field 'ts'"),
        ),
        (
            "alb",
            vec!["--key-column", "uri"],
            alb_good.as_bytes().to_vec(),
            alb_good.replace("/a HTTP", "/a b HTTP").into_bytes(),
            Want::Key(b"http://h/a b"),
        ),
        (
            "alb",
            vec![],
            alb_good.as_bytes().to_vec(),
            alb_good.replace("\"curl/7.46.0\"", "\"curl/7.46.0").into_bytes(),
            Want::Bad("alb line: field 13 (user_agent) has an unescaped quote"),
        ),
        (
            "alb",
            vec![],
            alb_good.as_bytes().to_vec(),
            alb_good.split(" \"GET").next().unwrap().as_bytes().to_vec(),
            Want::Bad("alb line: the line has 12 field(s), an ALB line has at least 14; no request"),
        ),
        (
            "w3c",
            vec!["--key-column", "cs-uri-stem"],
            format!("{w3c_head}2019-12-04\t21:02:31\t1.2.3.4\t/a\t200").into_bytes(),
            b"2019-12-04\t21:02:31\t1.2.3.4\t/\xff%20\t200".to_vec(),
            Want::Key(b"/\xff%20"),
        ),
        (
            "w3c",
            vec![],
            format!("{w3c_head}2019-12-04\t21:02:31\t1.2.3.4\t/a\t200").into_bytes(),
            b"2019-12-04\t21:02:31\t1.2.3.4\t200".to_vec(),
            Want::Bad("w3c line: the line has 4 field(s), the #Fields: line names 5"),
        ),
    ];
    for (n, (format, args, good, hostile, want)) in cases.into_iter().enumerate() {
        // A folder per case: no case reads a file another one wrote.
        let tmp = Scratch::new();
        let mut log = good.clone();
        log.push(b'\n');
        // W3C: the directives only once, before the first line.
        let good2 = match good.iter().rposition(|&b| b == b'\n') {
            Some(i) => good[i + 1..].to_vec(),
            None => good.clone(),
        };
        log.extend_from_slice(&hostile);
        log.push(b'\n');
        log.extend_from_slice(&good2);
        log.push(b'\n');
        let name = format!("hostile{n}.log");
        let path = tmp.write(&name, &log);
        let first_line = good.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        let mut all = vec![
            s(&path),
            "--input-format",
            format,
            "-p",
            "gcra:rate=1/h",
            "-q",
        ];
        all.extend_from_slice(&args);
        match want {
            Want::Key(key) => {
                let d = tmp.join("d.csv");
                let mut a = all.clone();
                a.extend(["--decisions", s(&d), "-f", "json"]);
                let out = Drip::audit().args(&a).run();
                assert_eq!(out.code, 0, "case {n} ({format}): {}", out.stderr);
                assert_eq!(out.json()["input"]["rows"], 3, "case {n}");
                let mut csv = csv::Reader::from_path(&d).unwrap();
                let rows: Vec<csv::ByteRecord> = csv.byte_records().map(Result::unwrap).collect();
                // row,policy,key,...; rows in time order, all at one instant.
                let key_field = rows[1][2].to_vec();
                let want_key = String::from_utf8_lossy(key).into_owned().into_bytes();
                assert_eq!(
                    String::from_utf8_lossy(&key_field),
                    String::from_utf8_lossy(&want_key),
                    "case {n} ({format})"
                );
            }
            Want::Bad(text) => {
                let out = Drip::audit().args(&all).run();
                assert_eq!(out.code, 2, "case {n} ({format}): {}", out.stderr);
                assert_eq!(out.stderr.lines().count(), 1, "case {n}: {}", out.stderr);
                let want = format!("hostile{n}.log:{}: {text}", first_line + 1);
                assert!(
                    out.stderr.contains(&want),
                    "case {n}: want {want}\n{}",
                    out.stderr
                );
                let mut skip = all.clone();
                skip.extend(["--skip-bad", "-f", "json"]);
                let j = Drip::audit().args(&skip).json();
                assert_eq!(j["input"]["rows"], 2, "case {n}");
                assert_eq!(j["input"]["bad_rows_skipped"], 1, "case {n}");
            }
        }
    }
}

/// Every character of a message is printable (newline ends it).
fn printable(text: &str) -> bool {
    text.chars().all(|c| c == '\n' || !c.is_control()) && !text.contains('\u{fffd}')
}

/// Binary data and wide or hostile headers are quoted escaped and capped,
/// in one short line.
#[test]
fn quoted_input_is_escaped_and_capped() {
    let tmp = Scratch::new();
    let elf = tmp.write(
        "true",
        b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00\x01\x00\x00\x00\xf0\x23\n\x00\x00",
    );
    let e = Drip::audit().args([s(&elf), "-p", "gcra:rate=1/s"]).run();
    assert_eq!(e.code, 2, "{}", e.stderr);
    assert!(
        e.stderr.contains("is binary data, not a text log"),
        "{}",
        e.stderr
    );
    assert!(printable(&e.stderr), "{:?}", e.stderr);
    assert_eq!(e.stderr.lines().count(), 1, "{}", e.stderr);

    let mut wide = "a,".repeat(5000);
    wide.push_str("b\n1\n");
    let w = tmp.write("wide.csv", wide.as_bytes());
    let e = Drip::audit().args([s(&w), "-p", "gcra:rate=1/s"]).run();
    assert_eq!(e.code, 2, "{}", e.stderr);
    assert!(
        e.stderr.len() < 600,
        "{} bytes: {}",
        e.stderr.len(),
        e.stderr
    );
    assert!(
        e.stderr.contains("0:a, 1:a, ") && e.stderr.contains("11:a, … and 4989 more"),
        "{}",
        e.stderr
    );

    let hostile = tmp.write("hostile.csv", b"t\x1b[2Jx,\xff\xfey\n1,2\n");
    let e = Drip::audit()
        .args([s(&hostile), "-p", "gcra:rate=1/s", "--key-column", "k\x07"])
        .run();
    assert_eq!(e.code, 2, "{}", e.stderr);
    assert!(printable(&e.stderr), "{:?}", e.stderr);
    assert!(
        e.stderr.contains("0:t\\u{1b}[2Jx, 1:\\xff\\xfey"),
        "{}",
        e.stderr
    );
}

/// A tab-separated log read without saying so: on stdin, or compressed
/// under a name without `.tsv`, it is recognised by its first line; told
/// to read CSV, the error says the header is one column holding tabs.
#[test]
fn tab_separated_logs_are_recognised_or_named() {
    let tmp = Scratch::new();
    let tsv = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/nasa_19950801.tsv"
    ))
    .unwrap();
    let args = [
        "--key-column",
        "host",
        "-p",
        "gcra:rate=1/s,burst=10",
        "-f",
        "json",
    ];
    let named = Drip::audit()
        .args(
            [
                &[
                    concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/nasa_19950801.tsv"),
                    "-q",
                ][..],
                &args[..],
            ]
            .concat(),
        )
        .run();
    let want = named.json()["policies"].clone();
    let piped = Drip::audit().args(args).stdin(&tsv).run();
    assert!(
        piped.stderr.contains("reading <stdin> as tab-separated"),
        "{}",
        piped.stderr
    );
    assert_eq!(piped.json()["policies"], want);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tsv).unwrap();
    let packed = tmp.write("n_tsv.gz", &gz.finish().unwrap());
    let out = Drip::audit()
        .args([&[s(&packed), "-q"][..], &args[..]].concat())
        .run();
    assert_eq!(out.json()["policies"], want);

    let e = Drip::audit()
        .args([&["--input-format", "csv"][..], &args[..]].concat())
        .stdin(&tsv)
        .run();
    assert_eq!(e.code, 2, "{}", e.stderr);
    assert!(
        e.stderr.contains("no key column 'host'")
            && e.stderr.contains("one column containing tabs")
            && e.stderr.contains("--delimiter tab"),
        "{}",
        e.stderr
    );
    assert!(printable(&e.stderr), "{:?}", e.stderr);
}

/// A log in another format than the one asked for, or than the files
/// before it, is named as such, at its first line.
#[test]
fn a_log_in_another_format_is_named() {
    let tmp = Scratch::new();
    let common = "pppa006.compuserve.com - - [01/Aug/1995:02:00:00 -0400] \"GET /images/a.gif HTTP/1.0\" 200 1713\n\
                  pppa006.compuserve.com - - [01/Aug/1995:02:00:01 -0400] \"GET /images/b.gif HTTP/1.0\" 200 1713\n";
    let c = tmp.write("c.log", common.as_bytes());
    let e = Drip::audit()
        .args([s(&c), "--input-format", "ndjson", "-p", "gcra:rate=1/s"])
        .run();
    assert_eq!(e.code, 2, "{}", e.stderr);
    assert!(
        e.stderr.contains("c.log:1: ndjson line: not a JSON object"),
        "{}",
        e.stderr
    );
    assert!(!e.stderr.contains("--time-column"), "{}", e.stderr);

    let e = Drip::audit()
        .args([s(&c), "--input-format", "w3c", "-p", "gcra:rate=1/s"])
        .run();
    assert_eq!(e.code, 2, "{}", e.stderr);
    assert!(e.stderr.contains("#Fields:"), "{}", e.stderr);
    assert!(!e.stderr.contains("--no-header"), "{}", e.stderr);

    let cost = tmp.write("cost.csv", b"ts,client,cost\n807256800,a,1\n");
    let e = Drip::audit()
        .args([s(&cost), s(&c), "-p", "gcra:rate=1/s"])
        .run();
    assert_eq!(e.code, 2, "{}", e.stderr);
    assert!(
        e.stderr.contains(
            "c.log: its first lines read as common lines, but the files before it are csv"
        ),
        "{}",
        e.stderr
    );
    // Two files of the same format are one log.
    let again = tmp.write("again.log", common.as_bytes());
    let out = Drip::audit()
        .args([s(&c), s(&again), "-p", "gcra:rate=1/s", "-q", "-f", "json"])
        .run();
    assert_eq!(out.json()["input"]["rows"], 4);
}

/// A real log of one format, as its source wrote it (fixtures/formats/,
/// see fixtures/README.md), and what drip must read from it.
struct Sample {
    file: &'static str,
    args: &'static [&'static str],
    rows: u64,
    bad: u64,
    truncated: u64,
    /// First and last time, ns since the epoch (UTC).
    first: u64,
    last: u64,
    /// The key column, and the keys it gives (`-` is empty).
    key: &'static str,
    keys: &'static [&'static str],
}

const SAMPLES: [Sample; 23] = [
    Sample {
        // Three directive blocks, other #Fields: each time.
        file: "iis.log",
        args: &[],
        rows: 3,
        bad: 0,
        truncated: 0,
        first: 1_514_794_150_000_000_000, // 2018-01-01T08:09:10Z
        last: 1_514_801_472_000_000_000,  // 2018-01-01T10:11:12Z
        key: "c-ip",
        keys: &["127.0.0.1", "81.2.69.143"],
    },
    Sample {
        file: "iis_bom.log",
        args: &["--skip-bad"],
        rows: 3,
        bad: 0,
        truncated: 0,
        first: 1_514_794_150_000_000_000,
        last: 1_514_801_472_000_000_000,
        key: "c-ip",
        keys: &["127.0.0.1", "81.2.69.143"],
    },
    Sample {
        // time only: the dates of the #Date: lines.
        file: "w3c_time_only.log",
        args: &[],
        rows: 14,
        bad: 0,
        truncated: 0,
        first: 971_109_889_000_000_000, // 2000-10-09T16:44:49Z
        last: 971_196_485_000_000_000,  // 2000-10-10T16:48:05Z
        key: "c-ip",
        keys: &["1.1.1.1"],
    },
    Sample {
        // Quoted fields, blank lines, date-local/time-local.
        file: "w3c_advanced.log",
        args: &[],
        rows: 3,
        bad: 0,
        truncated: 0,
        first: 1_345_050_000_363_000_000, // 2012-08-15T17:00:00.363Z
        last: 1_345_050_000_675_000_000,
        key: "c-ip",
        keys: &["", "173.5.0.0", "70.95.0.0"],
    },
    Sample {
        // The -local pair is local time: --tz places it.
        file: "w3c_advanced.log",
        args: &["--tz=-07:00"],
        rows: 3,
        bad: 0,
        truncated: 0,
        first: 1_345_075_200_363_000_000, // 2012-08-15T17:00:00.363-07:00
        last: 1_345_075_200_675_000_000,
        key: "c-ip",
        keys: &["", "173.5.0.0", "70.95.0.0"],
    },
    Sample {
        file: "w3c_incapsula.log",
        args: &["--reorder-window", "48h"],
        rows: 2,
        bad: 0,
        truncated: 0,
        first: 1_498_501_277_000_000_000, // 2017-06-26T18:21:17Z
        last: 1_498_634_795_000_000_000,  // 2017-06-28T07:26:35Z
        key: "c-ip",
        keys: &["123.123.123.123", "125.125.125.125"],
    },
    Sample {
        // #GMT-Offset: -0800: local times at that offset.
        file: "w3c_oracle.log",
        args: &[],
        rows: 1,
        bad: 0,
        truncated: 0,
        first: 1_004_515_218_000_000_000, // 2001-10-31T00:00:18-08:00
        last: 1_004_515_218_000_000_000,
        key: "c-ip",
        keys: &["64.103.37.2"],
    },
    Sample {
        // The directive wins over --tz.
        file: "w3c_oracle.log",
        args: &["--tz", "Europe/Paris"],
        rows: 1,
        bad: 0,
        truncated: 0,
        first: 1_004_515_218_000_000_000,
        last: 1_004_515_218_000_000_000,
        key: "c-ip",
        keys: &["64.103.37.2"],
    },
    Sample {
        // No #Fields: line; IIS 10's default fields.
        file: "iis_no_fields.log",
        args: &[],
        rows: 2,
        bad: 0,
        truncated: 0,
        first: 1_546_260_753_000_000_000, // 2018-12-31T12:52:33Z
        last: 1_546_260_753_000_000_000,
        key: "c-ip",
        keys: &["10.50.6.188"],
    },
    Sample {
        // No #Fields: line; IIS 7.5's default fields (no cs(Referer)).
        file: "iis75_no_fields.log",
        args: &[],
        rows: 3,
        bad: 0,
        truncated: 0,
        first: 1_551_897_797_000_000_000, // 2019-03-06T18:43:17Z
        last: 1_551_897_797_000_000_000,
        key: "c-ip",
        keys: &["10.0.140.2", "2001:cdba:0000:0000:0000:0000:3257:9652"],
    },
    Sample {
        file: "w3c_httpapi.log",
        args: &[],
        rows: 1,
        bad: 0,
        truncated: 0,
        first: 1_020_361_335_000_000_000, // 2002-05-02T17:42:15Z
        last: 1_020_361_335_000_000_000,
        key: "c-ip",
        keys: &["172.22.255.255"],
    },
    Sample {
        file: "vhost.log",
        args: &[],
        rows: 1,
        bad: 0,
        truncated: 0,
        first: 1_562_224_846_000_000_000, // 2019-07-04T09:20:46+02:00
        last: 1_562_224_846_000_000_000,
        key: "remote_addr",
        keys: &["123.123.123.123"],
    },
    Sample {
        // Lines written at completion, up to 6.3 s late.
        file: "haproxy.log",
        args: &["--reorder-window", "7s"],
        rows: 10,
        bad: 0,
        truncated: 0,
        first: 1_532_941_432_726_000_000, // 2018-07-30T09:03:52.726 (no zone: UTC)
        last: 1_624_363_388_833_000_000,  // 2021-06-22T12:03:08.833
        key: "client",
        keys: &["", "1.2.3.4"],
    },
    Sample {
        file: "haproxy_no_headers.log",
        args: &[],
        rows: 3,
        bad: 0,
        truncated: 0,
        first: 1_544_443_306_395_000_000, // 2018-12-10T12:01:46.395
        last: 1_544_456_936_017_000_000,  // 2018-12-10T15:48:56.017
        key: "client",
        keys: &["127.0.0.1"],
    },
    Sample {
        // HAProxy's notices and the SSL handshake failure are no rows.
        file: "haproxy_lnav.log",
        args: &[],
        rows: 13,
        bad: 0,
        truncated: 0,
        first: 1_551_111_588_143_000_000, // 2019-02-25T16:19:48.143
        last: 1_551_111_614_317_000_000,  // 2019-02-25T16:20:14.317
        key: "client",
        keys: &[
            "141.35.244.171",
            "79.246.138.36",
            "87.183.41.77",
            "89.247.124.65",
            "92.193.212.151",
        ],
    },
    Sample {
        file: "elb.log",
        args: &[],
        rows: 5,
        bad: 0,
        truncated: 0,
        first: 1_571_054_420_694_172_000, // 2019-10-14T12:00:20.694172Z
        last: 1_571_054_510_831_170_000,  // 2019-10-14T12:01:50.831170Z
        key: "client",
        keys: &["175.16.199.1", "81.2.69.143", "81.2.69.193"],
    },
    Sample {
        file: "elb_example.log",
        args: &[],
        rows: 2,
        bad: 0,
        truncated: 0,
        first: 1_431_560_383_945_958_000, // 2015-05-13T23:39:43.945958Z
        last: 1_431_560_383_945_958_000,
        key: "client",
        keys: &["192.168.131.39"],
    },
    Sample {
        // The second line's router name lacks its closing quote.
        file: "traefik.log",
        args: &[],
        rows: 2,
        bad: 0,
        truncated: 1,
        first: 1_506_975_727_000_000_000, // 2017-10-02T20:22:07Z
        last: 1_506_975_728_000_000_000,
        key: "remote_addr",
        keys: &["192.168.33.1", "85.181.35.98"],
    },
    Sample {
        file: "squid.log",
        args: &[],
        rows: 10,
        bad: 0,
        truncated: 0,
        first: 1_157_689_312_049_000_000, // completion times
        last: 1_157_689_343_782_000_000,
        key: "client",
        keys: &["10.105.21.199", "10.105.33.214", "10.105.47.218"],
    },
    Sample {
        // Arrival = completion − elapsed: 1157689312.049 − 5.006 s.
        file: "squid.log",
        args: &["--duration-column", "elapsed_ms"],
        rows: 10,
        bad: 0,
        truncated: 0,
        first: 1_157_689_307_043_000_000,
        last: 1_157_689_343_105_000_000, // 1157689343.106 − 0.001 s
        key: "client",
        keys: &["10.105.21.199", "10.105.33.214", "10.105.47.218"],
    },
    Sample {
        file: "s3.log",
        args: &[],
        rows: 7,
        bad: 0,
        truncated: 0,
        first: 1_391_644_838_000_000_000, // 2014-02-06T00:00:38Z
        last: 1_549_411_238_000_000_000,  // 2019-02-06T00:00:38Z
        key: "remote_ip",
        keys: &["192.0.2.3"],
    },
    Sample {
        file: "envoy.log",
        args: &[],
        rows: 2,
        bad: 0,
        truncated: 0,
        first: 1_460_751_420_310_000_000, // 2016-04-15T20:17:00.310Z
        last: 1_542_948_660_281_000_000,  // 2018-11-23T04:51:00.281Z
        key: "x_forwarded_for",
        keys: &["", "10.0.35.28"],
    },
    Sample {
        // CSV: time_micros is the completion, time_taken_micros µs.
        file: "gcs_usage.csv",
        args: &["--duration-column", "time_taken_micros"],
        rows: 5,
        bad: 0,
        truncated: 0,
        first: 1_693_206_013_851_368_000, // 1693206014339368 − 488000 µs
        last: 1_693_210_493_328_679_000,  // 1693210493491679 − 163000 µs
        key: "c_ip",
        keys: &[
            "162.158.186.54",
            "162.158.186.55",
            "172.70.210.203",
            "172.71.142.38",
        ],
    },
];

#[test]
fn real_samples_of_every_format_open_with_detection() {
    for x in &SAMPLES {
        let tmp = Scratch::new();
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/formats")
            .join(x.file);
        let d = tmp.join("samples.csv");
        let mut all = vec![
            s(&path),
            "-f",
            "json",
            "-p",
            "gcra:rate=1/s",
            "--key-column",
            x.key,
            "--decisions",
            s(&d),
        ];
        all.extend_from_slice(x.args);
        let out = Drip::audit().args(&all).run();
        let j = out.json();
        let i = &j["input"];
        let what = format!("{} {:?}: {}", x.file, x.args, out.stderr);
        assert_eq!(i["rows"], x.rows, "{what}");
        assert_eq!(i["bad_rows_skipped"], x.bad, "{what}");
        assert_eq!(i["truncated"].as_u64().unwrap_or(0), x.truncated, "{what}");
        assert_eq!(i["first_ns"], x.first, "{what}");
        assert_eq!(i["last_ns"], x.last, "{what}");
        let mut keys: Vec<String> = csv::Reader::from_path(&d)
            .unwrap()
            .records()
            .map(|r| r.unwrap()[2].to_string())
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys, x.keys, "{what}");
    }
}

#[test]
fn apache_log_formats_read_with_their_durations() {
    let tmp = Scratch::new();
    // %t is the arrival: read as written.
    let log = tmp.write(
        "apache.log",
        "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /a HTTP/1.1\" 200 2326 1500 \"198.51.100.7, 10.0.0.1\"\n\
         10.0.0.1 - - [10/Oct/2000:13:55:37 -0700] \"GET /b HTTP/1.1\" 200 5 20 \"-\"\n",
    );
    let f = r#"%h %l %u %t "%r" %>s %b %D "%{X-Forwarded-For}i""#;
    let out = Drip::audit()
        .args([
            s(&log),
            "--log-format",
            f,
            "-f",
            "json",
            "-p",
            "gcra:rate=1/s",
            "--key-column",
            "http_x_forwarded_for",
        ])
        .run();
    let j = out.json();
    assert_eq!(j["input"]["rows"], 2);
    assert_eq!(j["input"]["first_ns"], 971_211_336_000_000_000u64);
    assert!(!out.stderr.contains("completion"), "{}", out.stderr);
    // %{end:msec}t is the completion: the note names %D's field, and
    // arrival = completion − duration, the µs exact.
    let log = tmp.write(
        "apache_end.log",
        "10.0.0.1 1700000000123 \"GET / HTTP/1.1\" 23456\n10.0.0.2 1700000000200 \"GET / HTTP/1.1\" 1\n",
    );
    let f = r#"%h %{end:msec}t "%r" %D"#;
    let base = [
        s(&log),
        "--log-format",
        f,
        "-f",
        "json",
        "-p",
        "gcra:rate=1/s",
    ];
    let out = Drip::audit().args(base).run();
    assert!(
        out.stderr.contains(
            "'time_end_epoch_ms' is a completion time; pass --duration-column request_time_us"
        ),
        "{}",
        out.stderr
    );
    let mut arrival = base.to_vec();
    arrival.extend(["--duration-column", "request_time_us"]);
    let j = Drip::audit().args(&arrival).json();
    assert_eq!(j["input"]["first_ns"], 1_700_000_000_099_544_000u64);
    assert_eq!(j["input"]["last_ns"], 1_700_000_000_199_999_000u64);
}

#[test]
fn messages_name_the_shape_of_a_line() {
    let vhost = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/formats/vhost.log");
    let out = Drip::audit()
        .args([
            s(&vhost),
            "--input-format",
            "combined",
            "-p",
            "gcra:rate=1/s",
        ])
        .run();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains(
            "vhost.log:1: this is not a combined line: it starts with a host:port (vcombined?); set --input-format vcombined"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("bad timestamp"), "{}", out.stderr);
    // A line of another layout is named before its time is read.
    for (file, given, want) in [
        (
            "squid.log",
            "combined",
            "squid.log:1: this is not a combined line: it reads as a squid line; set --input-format squid",
        ),
        (
            "elb.log",
            "alb",
            "elb.log:1: this is not an alb line: it reads as an elb line; set --input-format elb",
        ),
        (
            "s3.log",
            "common",
            "s3.log:1: this is not a common line: it reads as an s3 line; set --input-format s3",
        ),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/formats")
            .join(file);
        let out = Drip::audit()
            .args([s(&path), "--input-format", given, "-p", "gcra:rate=1/s"])
            .run();
        assert_eq!(out.code, 2);
        assert!(out.stderr.contains(want), "{}", out.stderr);
        assert!(!out.stderr.contains("time format"), "{}", out.stderr);
    }
    // Text of no known shape falls through to CSV, and says so.
    let e = fails(
        b"Mozilla/5.0 (Windows NT 6.1; Win64; x64) hello\nmore text; here\n",
        "odd.log",
        &[],
    );
    assert!(
        e.contains("; it was read as CSV, its first lines being none of ndjson, w3c, alb, elb, s3, haproxy, envoy, squid, traefik, vcombined, vcommon, combined, common; set --input-format FORMAT, or --log-format"),
        "{e}"
    );
    assert!(!e.contains("--delimiter"), "{e}");
    // CSV-like text with another delimiter keeps its hint.
    let e = fails(b"ts;key\n1700000000;a\n", "semi.csv", &[]);
    assert!(e.contains("give --delimiter ';'"), "{e}");
}

#[test]
fn a_line_cut_in_its_last_quoted_field_is_kept_and_counted() {
    let tmp = Scratch::new();
    // The 10,000-line Apache log of elastic/examples has one such line.
    let log = tmp.write(
        "cut.log",
        "1.2.3.4 - - [17/May/2015:10:05:03 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"ua\"\n\
         5.6.7.8 - - [17/May/2015:10:05:04 +0000] \"GET /a HTTP/1.1\" 200 5 \"-\" \"Mozilla/5.0 (cut\n\
         1.2.3.4 - - [17/May/2015:10:05:05 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"ua\"\n",
    );
    let j = Drip::audit()
        .args([
            s(&log),
            "-f",
            "json",
            "-p",
            "gcra:rate=1/s",
            "--key-column",
            "remote_addr",
        ])
        .json();
    assert_eq!(j["input"]["rows"], 3);
    assert_eq!(j["input"]["truncated"], 1);
    assert_eq!(j["input"]["bad_rows_skipped"], 0);
    assert_eq!(j["input"]["last_ns"], 1_431_857_105_000_000_000u64);
    // The table's summary says so too.
    let table = Drip::audit()
        .args([s(&log), "-p", "gcra:rate=1/s", "-q"])
        .run();
    assert!(
        table
            .stdout
            .contains("0 skipped as bad, 1 with a cut last field (kept)"),
        "{}",
        table.stdout
    );
    // Without a cut line the count is left out of the JSON.
    let whole = tmp.write(
        "whole.log",
        "1.2.3.4 - - [17/May/2015:10:05:03 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"ua\"\n",
    );
    let j = Drip::audit()
        .args([s(&whole), "-f", "json", "-p", "gcra:rate=1/s"])
        .json();
    assert!(j["input"].get("truncated").is_none(), "{}", j["input"]);
    // CSV keeps its rule: an unclosed quote is an error.
    let e = fails(b"ts,ua\n1700000000,\"cut\n", "cut.csv", &[]);
    assert!(e.contains("cut.csv"), "{e}");
}

#[test]
fn traefik_json_is_read_from_its_arrival() {
    let tmp = Scratch::new();
    // Traefik writes `time` (whole seconds, when the line is written) and
    // `StartUTC` (arrival, ns): the arrival is read.
    let log = tmp.write(
        "traefik.json",
        r#"{"ClientHost":"192.168.33.1","Duration":2016000,"RequestMethod":"GET","RequestPath":"/","StartUTC":"2017-10-02T20:22:07.123456789Z","level":"info","msg":"","time":"2017-10-02T20:22:08Z"}
"#,
    );
    let j = Drip::audit()
        .args([s(&log), "-f", "json", "-p", "gcra:rate=1/s"])
        .json();
    assert_eq!(j["input"]["time_column"], "StartUTC");
    assert_eq!(j["input"]["first_ns"], 1_506_975_727_123_456_789u64);
}

/// nginx lines logging `$http_x_forwarded_for` first: two addresses are
/// not taken for a virtual host and its client; the message names the
/// flags that read them, and those flags do.
#[test]
fn a_forwarded_list_in_front_is_named_then_read() {
    let tmp = Scratch::new();
    let log = concat!(
        "203.0.113.7, 10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl/8\"\n",
        "198.51.100.2, 10.0.0.1, 10.0.0.2 - bob [10/Oct/2000:13:55:37 -0700] \"GET /a HTTP/1.1\" 404 9 \"-\" \"curl/8\"\n",
        "192.0.2.9 - - [10/Oct/2000:13:55:38 -0700] \"GET /b HTTP/1.1\" 200 7 \"-\" \"curl/8\"\n",
    );
    let flags = r#"--log-format '$http_x_forwarded_for - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"' --key-column http_x_forwarded_for"#;
    // Only such lines: no format is detected, the flags are named.
    let listed: String = log.lines().take(2).map(|l| format!("{l}\n")).collect();
    let err = fails(listed.as_bytes(), "xff.log", &[]);
    assert!(
        err.contains("xff.log: its first line is in no format drip detects: it starts with an X-Forwarded-For list")
            && err.ends_with(flags),
        "{err}"
    );
    // Among Combined lines, the line is named with the same flags.
    let err = fails(log.as_bytes(), "xff.log", &[]);
    assert!(
        err.contains(
            "xff.log:1: this is not a combined line: it starts with an X-Forwarded-For list"
        ) && err.contains(flags),
        "{err}"
    );
    // Read as vcombined by mistake, the first line would be one request
    // of client 10.0.0.1: it is named instead.
    let err = fails(log.as_bytes(), "xff.log", &["--input-format", "vcombined"]);
    assert!(
        err.contains(
            "xff.log:1: this is not a vcombined line: it starts with an X-Forwarded-For list"
        ),
        "{err}"
    );
    let p = tmp.write("xff-read.log", log);
    let format = r#"$http_x_forwarded_for - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#;
    let out = Drip::audit()
        .args([
            s(&p),
            "-p",
            "gcra:rate=1/s",
            "-q",
            "-f",
            "json",
            "--log-format",
            format,
            "--key-column",
            "http_x_forwarded_for",
        ])
        .run();
    let v = out.json();
    assert_eq!(v["input"]["rows"], 3);
    assert_eq!(v["policies"][0]["keys"], 3);
}
