//! The `haproxy` policy against a real HAProxy: each test starts its own
//! haproxy (never the packaged service) in the foreground on a free
//! loopback port, logging `option httplog` lines to its stdout, sends
//! requests from several loopback addresses with curl, and checks that
//! drip, replaying HAProxy's own log, refuses exactly the rows HAProxy
//! denied. haproxy must be installed (Debian: `apt-get install haproxy`);
//! without it these tests fail and say so.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{Drip, Scratch, s};

/// An haproxy of our own, killed on drop.
struct Haproxy {
    port: u16,
    dir: Scratch,
    child: Child,
}

fn haproxy_binary() -> PathBuf {
    for p in [
        "/usr/sbin/haproxy",
        "/usr/local/sbin/haproxy",
        "/usr/bin/haproxy",
    ] {
        if std::path::Path::new(p).is_file() {
            return PathBuf::from(p);
        }
    }
    PathBuf::from("haproxy")
}

impl Haproxy {
    /// Starts haproxy with `frontend` (the lines of `frontend fe` after its
    /// `bind`), answering 200 to whatever it does not deny.
    fn start(frontend: &str) -> Haproxy {
        Haproxy::launch(|port, _| {
            format!(
                "frontend fe\n  bind 127.0.0.1:{port}\n{frontend}\n\
                   http-request return status 200 content-type text/plain string ok\n"
            )
        })
    }

    /// Starts haproxy with the proxies `proxies(port, origin)` writes:
    /// `port` is the one tests send to, `origin` a free one for a frontend
    /// that answers as a server would.
    fn launch(proxies: impl Fn(u16, u16) -> String) -> Haproxy {
        let dir = Scratch::new();
        let free = || {
            TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        };
        let (port, origin) = (free(), free());
        let cfg = format!(
            "global\n  log stdout format raw local0\n\
             defaults\n  mode http\n  log global\n  option httplog\n  option dontlognull\n\
               timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n  timeout tarpit 100ms\n\
             {}",
            proxies(port, origin)
        );
        let conf = dir.write("haproxy.cfg", &cfg);
        let log = std::fs::File::create(dir.join("access.log")).unwrap();
        let child = Command::new(haproxy_binary())
            .args(["-db", "-f", s(&conf)])
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start haproxy ({e}): install it (Debian: apt-get install haproxy); the live HAProxy tests need a real haproxy"
                )
            });
        let h = Haproxy { port, dir, child };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "haproxy did not start: {cfg}");
            thread::sleep(Duration::from_millis(20));
        }
        h
    }

    /// One GET of `path` from the loopback address `from`: its status.
    fn get(&self, from: &str, path: &str) -> u16 {
        self.get_with(from, path, &[])
    }

    /// The same with request headers (`Name: value`).
    fn get_with(&self, from: &str, path: &str, headers: &[&str]) -> u16 {
        let mut curl = Command::new("curl");
        for h in headers {
            curl.args(["-H", h]);
        }
        let out = curl
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--interface",
                from,
            ])
            .arg(format!("http://127.0.0.1:{}{path}", self.port))
            .output()
            .expect("curl runs");
        String::from_utf8_lossy(&out.stdout).parse().unwrap_or(0)
    }

    /// The log, once haproxy has logged `n` requests.
    fn logged(&self, n: usize) -> PathBuf {
        let log = self.dir.join("access.log");
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let got = text.lines().filter(|l| l.contains("\"GET ")).count();
            if got >= n {
                return log;
            }
            assert!(
                Instant::now() < deadline,
                "haproxy logged {got} of {n}:\n{text}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_haproxy_policy_denies_what_a_stick_table_rate_denies() {
    // http_req_rate(1s) per source, denied above 3: bursts, a gap inside
    // the next period (the previous one fades), and idle gaps of two
    // periods (the entry starts again).
    let h = Haproxy::start(
        "  stick-table type ip size 1k expire 30s store http_req_rate(1s)\n\
           http-request track-sc0 src\n\
           http-request deny deny_status 429 if { sc_http_req_rate(0) gt 3 }",
    );
    let clients = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
    let mut sent = 0;
    let mut denied = 0;
    let plan: [(usize, u64); 8] = [
        (6, 0),
        (3, 0),
        (2, 600),
        (4, 250),
        (5, 1200),
        (2, 0),
        (3, 2100),
        (6, 400),
    ];
    for (round, &(n, pause_ms)) in plan.iter().enumerate() {
        thread::sleep(Duration::from_millis(pause_ms));
        for (i, from) in clients.iter().enumerate() {
            // Each client a different share of the round.
            for _ in 0..n.saturating_sub((i + round) % 3) {
                denied += u64::from(h.get(from, "/api") == 429);
                sent += 1;
            }
        }
    }
    let log = h.logged(sent);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        denied > 0 && denied < sent as u64,
        "{denied} of {sent} denied:\n{text}"
    );
    let (out, decisions) = Drip::audit()
        .args([s(&log), "--key-column", "client", "-q", "-f", "json"])
        .args(["-p", "haproxy:limit=3,window=1s,expire=30s"])
        .run_with_decisions();
    let logged: Vec<bool> = text
        .lines()
        .filter(|l| l.contains("\"GET "))
        .map(|l| l.split(' ').nth(5) == Some("200"))
        .collect();
    let decided: Vec<bool> = decisions
        .lines()
        .skip(1)
        // row,policy,key,cost,admit,wait_ms,retry_after_ms
        .map(|l| l.rsplit(',').nth(2) == Some("1"))
        .collect();
    assert_eq!(logged.len(), sent, "{text}");
    let hits = hits(&text);
    let wrong: Vec<usize> = (0..sent)
        .filter(|&i| logged[i] != decided[i])
        .filter(|&i| !jitter_explains(&hits, i, logged[i]))
        .collect();
    assert!(
        wrong.is_empty(),
        "rows {wrong:?} disagree\nlog:\n{text}\ndecisions:\n{decisions}\n{}",
        out.stdout
    );
}

/// Each logged request's source address and accept time (ms of the day).
fn hits(log: &str) -> Vec<(String, u64)> {
    (log.lines().filter(|l| l.contains("\"GET ")))
        .map(|l| {
            let mut w = l.split(' ');
            let client = w.next().unwrap().rsplit_once(':').unwrap().0.to_string();
            // [06/Dec/2026:20:42:13.484]
            let date = w.next().unwrap().trim_matches(['[', ']']);
            let hms: Vec<f64> = date
                .split_once(':')
                .unwrap()
                .1
                .split(':')
                .map(|x| x.parse().unwrap())
                .collect();
            let ms = (hms[0] * 3_600_000.0 + hms[1] * 60_000.0 + hms[2] * 1000.0).round();
            (client, ms as u64)
        })
        .collect()
}

/// HAProxy counts a request on its own clock when the request's headers
/// are in, which can be a millisecond past (or, cached per loop, before)
/// the logged accept date; near a period's turn that decides which
/// period an earlier hit fell in. True when moving one hit of row `r`'s
/// source (`r` or one before it) by 1 ms gives row `r` the logged
/// outcome (the test's table: 3 per 1 s, entries expire after 30 s).
fn jitter_explains(hits: &[(String, u64)], r: usize, admitted: bool) -> bool {
    use drip_core::policy::haproxy::{HaproxyRate, HaproxyRateState};
    let mine: Vec<usize> = (0..=r).filter(|&i| hits[i].0 == hits[r].0).collect();
    let c = HaproxyRate::counter(1000, Some(30_000));
    let outcome = |moved: usize, by: i64| {
        let mut state = HaproxyRateState::default();
        let (mut rate, mut last) = (0, 0);
        for &i in &mine {
            let by = if i == moved { by } else { 0 };
            let at = hits[i].1.saturating_add_signed(by).max(last);
            last = at;
            c.hit(&mut state, at);
            rate = c.read(&state, at);
        }
        rate <= 3
    };
    (mine.iter()).any(|&m| [-1, 1].iter().any(|&by| outcome(m, by) == admitted))
}

/// The config of the live test of `--haproxy-cfg`: a frontend denying
/// above 12 requests per 10 s per client, a path ACL sending /api to a
/// backend that denies above 5 per 10 s per API key, and a web backend
/// tarpitting /admin above 6 per 10 s per client.
fn two_backends(port: u16, origin: u16) -> String {
    format!(
        "frontend fe
  bind 127.0.0.1:{port}
  capture request header X-Api-Key len 32
  stick-table type ip size 1k expire 60s store http_req_rate(10s)
  acl is_api path_beg /api
  http-request track-sc0 src
  http-request deny deny_status 429 if {{ sc_http_req_rate(0) gt 12 }}
  use_backend api if is_api
  default_backend web
backend api
  stick-table type string len 32 size 1k expire 60s store http_req_rate(10s)
  http-request track-sc1 req.hdr(x-api-key)
  http-request deny deny_status 429 if {{ sc_http_req_rate(1) gt 5 }}
  server s1 127.0.0.1:{origin}
backend web
  http-request tarpit if {{ path_beg /admin }} {{ sc_http_req_rate(0) gt 6 }}
  server s1 127.0.0.1:{origin}
frontend origin
  bind 127.0.0.1:{origin}
  no log
  http-request return status 200 content-type text/plain string ok
"
    )
}

#[test]
fn a_haproxy_cfg_is_decided_as_haproxy_decided_every_logged_request() {
    let h = Haproxy::launch(two_backends);
    let cfg = h.dir.join("haproxy.cfg");
    let clients = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
    // (requests per client, pause before the round in ms): bursts, a gap
    // inside the 10 s period, one into the next period (the previous one
    // fades in), and an idle gap of two periods (entries start again).
    let plan: [(usize, u64); 6] = [(8, 0), (6, 0), (5, 3000), (6, 8000), (4, 21000), (9, 0)];
    let mut sent = 0;
    let mut refused = 0;
    for (round, &(n, pause_ms)) in plan.iter().enumerate() {
        thread::sleep(Duration::from_millis(pause_ms));
        for (c, from) in clients.iter().enumerate() {
            for i in 0..n.saturating_sub((c + round) % 3) {
                let (path, key) = match (i + c) % 4 {
                    0 | 1 => ("/api/items", ["X-Api-Key: k1", "X-Api-Key: k2"][c % 2]),
                    2 => ("/admin/panel", ""),
                    _ => ("/page", ""),
                };
                let headers: Vec<&str> = [key].into_iter().filter(|k| !k.is_empty()).collect();
                let status = h.get_with(from, path, &headers);
                refused += u64::from(status == 429 || status == 500);
                sent += 1;
            }
        }
    }
    let log = h.logged(sent);
    let text = std::fs::read_to_string(&log).unwrap();
    let count = |state: &str| text.lines().filter(|l| l.contains(state)).count();
    assert!(
        count(" PR-- ") > 0 && count(" PT-- ") > 0 && text.contains(" api/<NOSRV> "),
        "the frontend, the api backend and the tarpit each refuse some:\n{text}"
    );
    let out = Drip::audit()
        .args([s(&log), "--haproxy-cfg", s(&cfg), "-q", "-f", "json"])
        .args(["--verify-column", "termination_state"])
        .run();
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let p = &report["policies"][0];
    let v = &p["haproxy"]["verify"];
    assert_eq!(v["rows"], sent as u64, "{}", out.stdout);
    assert_eq!(
        v["agreed"], v["rows"],
        "every logged request decided as HAProxy did:\n{}\nlog:\n{text}",
        out.stdout
    );
    assert_eq!(p["dropped"], refused, "{}", out.stdout);
    let proxies: Vec<&str> = (p["haproxy"]["locations"].as_array().unwrap().iter())
        .map(|l| l["location"].as_str().unwrap())
        .collect();
    assert_eq!(proxies, ["frontend fe", "backend api", "backend web"]);
}
