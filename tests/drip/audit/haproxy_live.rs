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
        let dir = Scratch::new();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cfg = format!(
            "global\n  log stdout format raw local0\n\
             defaults\n  mode http\n  log global\n  option httplog\n  option dontlognull\n\
               timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n\
             frontend fe\n  bind 127.0.0.1:{port}\n{frontend}\n\
               http-request return status 200 content-type text/plain string ok\n"
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
        let out = Command::new("curl")
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
    let wrong: Vec<usize> = (0..sent).filter(|&i| logged[i] != decided[i]).collect();
    assert!(
        wrong.is_empty(),
        "rows {wrong:?} disagree\nlog:\n{text}\ndecisions:\n{decisions}\n{}",
        out.stdout
    );
}
