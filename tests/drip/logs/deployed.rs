//! Logs as deployments write them: IPv6 clients logged `address:port`
//! without brackets, HAProxy's own lines between requests, Common lines in
//! a Combined log, JSON lines with raw bytes and exponents.

use crate::common::{Drip, Scratch, s};

/// The clients: two connections each, from other ports.
const CLIENTS: [&str; 3] = ["2001:db8::1", "2001:db8:0:0:0:0:0:2", "::ffff:10.0.0.3"];

/// `line(client, port, second)` for two connections of each client.
fn log_of(line: impl Fn(&str, u32, u32) -> String) -> String {
    let mut out = String::new();
    for (i, c) in CLIENTS.iter().enumerate() {
        for (j, port) in [40001, 52817].iter().enumerate() {
            out.push_str(&line(c, *port, 10 + 2 * i as u32 + j as u32));
            out.push('\n');
        }
    }
    out
}

/// Audits `log` (format detected) keyed by `client`: the JSON report.
fn audit(tmp: &Scratch, name: &str, log: &str) -> serde_json::Value {
    json_of(s(&tmp.write(name, log)), "client")
}

/// The JSON report of one policy over the log at `path`, keyed by `key`.
fn json_of(path: &str, key: &str) -> serde_json::Value {
    let out = Drip::audit()
        .args([path, "--key-column", key, "-p", "gcra:rate=1/s,burst=1"])
        .args(["--format", "json", "--quiet"])
        .run();
    assert_eq!(out.code, 0, "{path}: {}", out.stderr);
    out.stdout_json()
}

#[test]
fn ipv6_clients_logged_with_their_port_are_one_key_each() {
    let tmp = Scratch::new();
    let haproxy = log_of(|c, port, sec| {
        format!(
            "Jul 30 09:03:{sec} lb haproxy[1]: {c}:{port} [30/Jul/2018:09:03:{sec}.726] \
             www~ app/s1 0/0/1/0/2 200 168 - - ---- 6/6/0/0/0 0/0 \"GET /a HTTP/1.1\""
        )
    });
    let alb = log_of(|c, port, sec| {
        format!(
            "http 2019-10-11T15:01:{sec}.376735Z app/lb/c86a {c}:{port} 10.0.0.192:80 0.001 \
             0.002 0.000 200 200 125 0 \"GET http://lb:80/ HTTP/1.1\" \"curl/7.58.0\" - - \
             arn:aws:x \"Root=1-5da0\" \"-\" \"-\" 0 2019-10-11T15:01:{sec}.370000Z \
             \"forward\" \"-\" \"-\""
        )
    });
    let elb = log_of(|c, port, sec| {
        format!(
            "2019-10-14T12:00:{sec}.694172Z lb {c}:{port} 10.0.1.185:80 0.000043 0.000785 \
             0.000023 200 200 0 612 \"GET http://lb:80/ HTTP/1.1\" \"curl/8\" - -"
        )
    });
    // Each is detected from its first line, an IPv6 client's.
    for (name, log) in [("haproxy.log", haproxy), ("alb.log", alb), ("elb.log", elb)] {
        let j = audit(&tmp, name, &log);
        assert_eq!(j["input"]["rows"], 6, "{name}");
        assert_eq!(j["policies"][0]["keys"], 3, "{name}: one key per client");
    }
}

#[test]
fn haproxys_own_lines_are_counted_notices_not_bad_lines() {
    // lnav's HAProxy log: three `Proxy … started.` lines and an SSL
    // handshake failure between thirteen requests.
    let j = json_of("fixtures/formats/haproxy_lnav.log", "client");
    assert_eq!(j["input"]["rows"], 13);
    assert_eq!(j["input"]["bad_rows_skipped"], 0);
    assert_eq!(j["input"]["notices"], 4);
    let table = Drip::audit()
        .args([
            "fixtures/formats/haproxy_lnav.log",
            "--key-column",
            "client",
        ])
        .args(["-p", "gcra:rate=1/s,burst=1", "--quiet", "--wide"])
        .run();
    assert!(
        table
            .stdout
            .contains("; 4 notices (the server's own lines, not requests)"),
        "{}",
        table.stdout
    );
}

#[test]
fn common_lines_in_a_combined_log_are_read_and_counted() {
    // The real Apache log, its every third line written Common (as a
    // server logged before it was switched to Combined) and every fifth
    // with two fields more.
    let real = std::fs::read_to_string("fixtures/logs/apache-elastic-examples-60.log").unwrap();
    let mut mixed = String::new();
    let mut common = 0;
    for (i, line) in real.lines().enumerate() {
        if i % 3 == 2 {
            let cut = line.match_indices(" \"").nth(1).expect("a referer").0;
            mixed.push_str(&line[..cut]);
            common += 1;
        } else if i % 5 == 4 {
            mixed.push_str(line);
            mixed.push_str(" \"-\" 0.004");
        } else {
            mixed.push_str(line);
        }
        mixed.push('\n');
    }
    let tmp = Scratch::new();
    let path = tmp.write("mixed.log", &mixed);
    let j = json_of(s(&path), "remote_addr");
    assert_eq!(j["input"]["rows"], real.lines().count());
    assert_eq!(j["input"]["lines_read_as"]["common"], common);
    // The same requests all written Combined key and time alike.
    let whole = json_of(
        "fixtures/logs/apache-elastic-examples-60.log",
        "remote_addr",
    );
    assert_eq!(j["policies"], whole["policies"]);
}

#[test]
fn json_lines_with_raw_bytes_and_exponents_are_read_as_written() {
    // nginx's escape=json writes bytes of 0x80 and above as they came, on
    // the first line too; other servers write numbers with exponents.
    let mut log = Vec::new();
    log.extend_from_slice(
        b"{\"ts\":1700000000.5,\"ip\":\"10.0.0.1\",\"d\":1.2e-3,\"ua\":\"a\xffb\"}\n",
    );
    log.extend_from_slice(
        b"{\"ts\":1.7000000015e9,\"ip\":\"h\xfe\xff\",\"d\":2E-1,\"ua\":\"x\"}\n",
    );
    log.extend_from_slice(
        b"{\"ts\":17000000025e-1,\"ip\":\"h\\u00e9\xff\",\"d\":0,\"ua\":\"x\"}\n",
    );
    let tmp = Scratch::new();
    let path = tmp.write("access.json", &log);
    let decisions = tmp.join("d.csv");
    let out = Drip::audit()
        .args([s(&path), "--key-column", "ip", "--duration-column", "d"])
        .args(["-p", "gcra:rate=1/s,burst=1", "--format", "json", "--quiet"])
        .args(["--decisions", s(&decisions)])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let j = out.stdout_json();
    assert_eq!(j["input"]["rows"], 3);
    // Arrivals: each time less its duration, exactly.
    assert_eq!(j["input"]["first_ns"], 1_700_000_000_498_800_000u64);
    assert_eq!(j["input"]["last_ns"], 1_700_000_002_500_000_000u64);
    assert_eq!(j["policies"][0]["keys"], 3);
    let mut csv = csv::Reader::from_path(&decisions).unwrap();
    let keys: Vec<Vec<u8>> = csv.byte_records().map(|r| r.unwrap()[2].to_vec()).collect();
    let mut third = "h\u{e9}".as_bytes().to_vec();
    third.push(0xff);
    assert_eq!(keys, [b"10.0.0.1".to_vec(), b"h\xfe\xff".to_vec(), third]);
}
