//! `--share` end to end: several built binaries on one state file, and on a
//! real `redis-server` each test starts on a free port (never 6379) and
//! stops by its PID.
//!
//! Lines are timed by drip's own `--stamp epoch` (the wall clock just
//! before each write), so a slow test reader cannot bunch them. Bounds:
//! in any window W, at most `rate·W + max(burst, 1)` lines (the fencepost
//! line plus one burst).

mod one_host;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::{Drip, Scratch};

fn wall() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// One `drip pace` fed `n` numbered lines tagged with `tag`.
struct Pacer {
    tag: usize,
    child: Child,
    feeder: thread::JoinHandle<()>,
}

fn spawn_pacer(tag: usize, n: usize, args: &[&str]) -> Pacer {
    let mut child = Drip::pace()
        .command()
        .args(args)
        .args(["--stamp", "epoch", "--stats=json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = thread::spawn(move || {
        let text: String = (1..=n).map(|i| format!("{tag} {i}\n")).collect();
        let _ = stdin.write_all(text.as_bytes());
    });
    Pacer { tag, child, feeder }
}

/// What one pacer wrote: (stamp, line number), its stats and stderr.
struct Run {
    lines: Vec<(f64, usize)>,
    stats: serde_json::Value,
    stderr: String,
    code: Option<i32>,
}

impl Pacer {
    fn finish(self) -> Run {
        let out = self.child.wait_with_output().unwrap();
        self.feeder.join().unwrap();
        parse_run(self.tag, &out)
    }
}

fn parse_run(tag: usize, out: &Output) -> Run {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let mut lines = Vec::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let (stamp, rest) = l.split_once('\t').unwrap_or_else(|| panic!("{l:?}"));
        let (t, i) = rest.split_once(' ').unwrap();
        assert_eq!(
            t.parse::<usize>().unwrap(),
            tag,
            "a line of another process"
        );
        lines.push((stamp.parse().unwrap(), i.parse().unwrap()));
    }
    let stats = stderr
        .lines()
        .find(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap_or(serde_json::Value::Null);
    Run {
        lines,
        stats,
        stderr,
        code: out.status.code(),
    }
}

/// Every line, in order, once: the written lines are 1..=k.
fn assert_in_order(run: &Run, n: usize) {
    for (k, (_, i)) in run.lines.iter().enumerate() {
        assert_eq!(*i, k + 1, "lost, duplicated or reordered: {:?}", run.stderr);
    }
    assert!(run.lines.len() <= n);
    let s = &run.stats;
    if !s.is_null() {
        assert_eq!(s["lines_out"], run.lines.len() as u64, "{}", run.stderr);
        let (i, o, d, u) = (&s["lines_in"], &s["lines_out"], &s["dropped"], &s["unsent"]);
        assert_eq!(
            i.as_u64().unwrap(),
            o.as_u64().unwrap() + d.as_u64().unwrap() + u.as_u64().unwrap()
        );
    }
}

/// The most lines stamped in any window of `w` seconds.
fn max_in_window(stamps: &mut [f64], w: f64) -> usize {
    stamps.sort_by(f64::total_cmp);
    let mut best = 0;
    let mut j = 0;
    for i in 0..stamps.len() {
        while j < stamps.len() && stamps[j] <= stamps[i] + w {
            j += 1;
        }
        best = best.max(j - i);
    }
    best
}

/// N processes each given `per` lines at `rate`/s shared with `burst`:
/// every line out once and in order, the window bound, and the rate.
fn accuracy(share: &str, procs: usize, per: usize, rate: f64, burst: usize) -> Vec<Run> {
    let args = [
        "--rate",
        &format!("{rate}/s"),
        "--burst",
        &burst.to_string(),
        "--share",
        share,
    ];
    let pacers: Vec<Pacer> = (0..procs).map(|t| spawn_pacer(t, per, &args)).collect();
    let runs: Vec<Run> = pacers.into_iter().map(Pacer::finish).collect();
    let mut stamps = Vec::new();
    for r in &runs {
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(r.lines.len(), per, "{}", r.stderr);
        assert_in_order(r, per);
        assert_eq!(r.stats["share"]["errors"], 0, "{}", r.stderr);
        stamps.extend(r.lines.iter().map(|l| l.0));
    }
    let total = stamps.len();
    let most = max_in_window(&mut stamps, 1.0);
    assert!(
        most as f64 <= rate + burst.max(1) as f64,
        "{most} lines in one second, bound {rate} + {burst}"
    );
    // At least 95% of the rate while all were running (the first process
    // to finish ends the saturated span).
    let first_end = runs
        .iter()
        .map(|r| r.lines.last().unwrap().0)
        .fold(f64::INFINITY, f64::min);
    let start = stamps[0];
    let during = stamps.iter().filter(|&&t| t <= first_end).count();
    let achieved = (during - 1) as f64 / (first_end - start);
    assert!(
        achieved >= 0.95 * rate,
        "{achieved:.1}/s of {rate}/s ({total} lines)"
    );
    runs
}

#[test]
fn four_processes_share_one_state_file() {
    let dir = Scratch::new();
    let state = dir.join("api.share");
    let runs = accuracy(state.to_str().unwrap(), 4, 200, 200.0, 8);
    let reservations: u64 = runs
        .iter()
        .map(|r| r.stats["share"]["reservations"].as_u64().unwrap())
        .sum();
    assert_eq!(reservations, 800);
    let record = std::fs::read_to_string(&state).unwrap();
    assert!(
        record.starts_with("v1 ") && record.len() == 45,
        "{record:?}"
    );
}

#[test]
fn usage_errors_name_what_can_be_shared() {
    let dir = Scratch::new();
    let state = dir.join("s");
    let state = state.to_str().unwrap();
    let bashrc = dir.join("notes.txt");
    std::fs::write(&bashrc, "keep me\n").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "--policy",
                "sliding-log:limit=5,window=1s",
                "--share",
                state,
            ],
            "only the shaper (--rate) and the bucket family",
        ),
        (
            vec![
                "--policy",
                "gcra:rate=5/s+gcra:rate=50/min",
                "--share",
                state,
            ],
            "stack",
        ),
        (
            vec!["--rate", "5/s", "--share", "redis://127.0.0.1:1"],
            "--share-key NAME",
        ),
        (
            vec!["--rate", "5/s", "--share", state, "--share-key", "k"],
            "one schedule",
        ),
        (
            vec![
                "--rate",
                "5/s",
                "--share",
                state,
                "--on-share-error",
                "local",
            ],
            "--fallback-rate",
        ),
        (
            vec!["--rate", "5/s", "--share", state, "--fallback-rate", "1/s"],
            "--on-share-error local",
        ),
        (
            vec!["--rate", "5/s", "--share", bashrc.to_str().unwrap()],
            "not a drip share state file",
        ),
        (
            vec!["--rate", "5/s", "--share", dir.to_str().unwrap()],
            "is a directory",
        ),
        (
            vec!["--rate", "5/s", "--share", state, "--key-field", "1"],
            "cannot be combined with --key",
        ),
        (
            vec!["--rate", "5/s", "--share", "http://host/x"],
            "unknown scheme",
        ),
        (
            vec!["--rate", "5/s", "--share", "redis://u:hunter2@[::1#k"],
            "not a Redis URL",
        ),
    ];
    for (args, needle) in cases {
        let mut child = Drip::pace().args(&args).spawn();
        let _ = child.stdin.take().unwrap().write_all(b"x\n");
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: want {needle:?} in {err}");
        assert!(!err.contains("hunter2"), "a password in a message: {err}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "keep me\n");
}

#[test]
fn the_environment_configures_sharing() {
    let dir = Scratch::new();
    let state = dir.join("env.share");
    let out = Drip::pace()
        .command()
        .env("DRIP_SHARE", &state)
        .args(["--rate", "100/s", "--stats=json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"share\""), "{err}");
    assert!(state.exists());
}

#[test]
fn a_bucket_shares_its_burst() {
    // gcra burst 3 at 2/s: three lines at once, then one per 500 ms,
    // across two processes on one file.
    let dir = Scratch::new();
    let state = dir.join("gcra.share");
    let args = [
        "--policy",
        "gcra:rate=2/s,burst=3",
        "--share",
        state.to_str().unwrap(),
    ];
    let a = spawn_pacer(0, 3, &args);
    let b = spawn_pacer(1, 3, &args);
    let (a, b) = (a.finish(), b.finish());
    let mut stamps: Vec<f64> = a.lines.iter().chain(&b.lines).map(|l| l.0).collect();
    assert_eq!(stamps.len(), 6, "{} {}", a.stderr, b.stderr);
    stamps.sort_by(f64::total_cmp);
    // The last three leave 0.5 s apart after the first three.
    assert!(stamps[5] - stamps[0] >= 1.49, "{stamps:?}");
    assert!(max_in_window(&mut stamps, 0.49) <= 3, "{stamps:?}");
}

// ---- Redis -------------------------------------------------------------

/// A `redis-server` of our own on a free port, stopped by PID on drop.
struct Redis {
    port: u16,
    child: Option<Child>,
    dir: Scratch,
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Redis {
    fn start() -> Redis {
        let mut r = Redis {
            port: free_port(),
            child: None,
            dir: Scratch::new(),
        };
        r.restart();
        r
    }

    fn url(&self, name: &str) -> String {
        format!("redis://127.0.0.1:{}#{name}", self.port)
    }

    /// Starts the server (again, empty) on the same port.
    fn restart(&mut self) {
        assert!(self.child.is_none());
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--unixsocket", "redis.sock"])
            .args(["--daemonize", "no"])
            .current_dir(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}): install it (Debian: apt-get install redis-server); the Redis tests need a real server"
                )
            });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.try_cmd(&["PING"]).as_deref() != Some("PONG") {
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer PING"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server by its PID and waits for it.
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn try_cmd(&self, args: &[&str]) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(req.as_bytes()).ok()?;
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).ok()?;
        let line = line.trim_end().to_string();
        match line.chars().next()? {
            '$' if line == "$-1" => Some("(nil)".into()),
            '$' => {
                let n: usize = line[1..].parse().ok()?;
                let mut buf = vec![0; n + 2];
                r.read_exact(&mut buf).ok()?;
                Some(String::from_utf8_lossy(&buf[..n]).into())
            }
            // An array of integers (a script's reply), space-separated.
            '*' => {
                let n: usize = line[1..].parse().ok()?;
                let mut items = Vec::new();
                for _ in 0..n {
                    let mut item = String::new();
                    r.read_line(&mut item).ok()?;
                    items.push(item.trim_end()[1..].to_string());
                }
                Some(items.join(" "))
            }
            _ => Some(line[1..].to_string()),
        }
    }

    fn cmd(&self, args: &[&str]) -> String {
        self.try_cmd(args).expect("redis answers")
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn redis_four_processes_share_one_key_which_then_expires() {
    let redis = Redis::start();
    accuracy(&redis.url("acc"), 4, 200, 200.0, 8);
    // The precision trap: plain digits, microseconds on the server clock.
    let value = redis.cmd(&["GET", "drip:{acc}"]);
    assert!(
        value.len() == 16 && value.bytes().all(|b| b.is_ascii_digit()),
        "{value:?}"
    );
    let pttl: i64 = redis.cmd(&["PTTL", "drip:{acc}"]).parse().unwrap();
    assert!(pttl > 0 && pttl <= 1_100, "PTTL {pttl}");
    thread::sleep(Duration::from_millis(1_300));
    assert_eq!(redis.cmd(&["EXISTS", "drip:{acc}"]), "0");
}

#[test]
fn the_script_and_reserve_agree_on_the_same_sequences() {
    use drip::share::SCRIPT;
    use drip::share::{Outcome, Params, reserve};
    // The script with its clock read replaced by a given `now` (ARGV[4]);
    // every other line runs as shipped.
    let clock =
        "local t = redis.call('TIME')\nlocal now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n";
    assert!(SCRIPT.starts_with(clock));
    let script = SCRIPT.replacen(clock, "local now = tonumber(ARGV[4])\n", 1);
    let redis = Redis::start();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    for seq in 0..6 {
        let key = format!("drip:{{seq{seq}}}");
        let mut state = 0u64;
        let mut now = 1_795_975_200_000_000u64;
        for step in 0..300 {
            now += match next(10) {
                0..=3 => 0,
                4..=7 => next(3_000),
                8 => next(100_000),
                _ => next(2_000_000),
            };
            let interval = [1, 1_000, 3_334, 5_000, 600_000][next(5) as usize];
            let p = Params {
                interval,
                max_delay: interval * next(10),
                slots: 1 + next(3),
            };
            if step % 50 == 49 {
                // Garbage and far-future values, as a stepped clock leaves.
                let v = if step % 100 == 49 {
                    "junk".to_string()
                } else {
                    (now + 9_000_000_000).to_string()
                };
                redis.cmd(&["SET", &key, &v]);
                state = v.parse().unwrap_or(0);
            }
            let (want_state, want) = reserve(state, now, p);
            let args = [p.interval, p.max_delay, p.slots, now].map(|v| v.to_string());
            let got = redis.cmd(&[
                "EVAL", &script, "1", &key, &args[0], &args[1], &args[2], &args[3],
            ]);
            let want_reply = match want {
                Outcome::Granted { delay } => format!("1 {delay} {now}"),
                Outcome::Refused { retry_after } => format!("0 {retry_after} {now}"),
            };
            assert_eq!(
                got, want_reply,
                "sequence {seq} step {step}: {p:?} at {now} on {state}"
            );
            if matches!(want, Outcome::Granted { .. }) {
                let stored = redis.cmd(&["GET", &key]);
                assert_eq!(stored, want_state.to_string(), "sequence {seq} step {step}");
            }
            state = want_state;
        }
    }
}

#[test]
fn redis_over_a_unix_socket() {
    let redis = Redis::start();
    let url = format!("redis+unix://{}/redis.sock#unix", redis.dir.display());
    let run = spawn_pacer(0, 3, &["--rate", "20/s", "--share", &url]).finish();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.lines.len(), 3);
    assert_eq!(run.stats["share"]["reservations"], 3);
    assert!(
        redis
            .cmd(&["GET", "drip:{unix}"])
            .bytes()
            .all(|b| b.is_ascii_digit())
    );
}

/// A user and password (percent-escaped in the URL) and a database other
/// than 0; the script goes by its SHA1, its text sent once.
#[test]
fn redis_with_a_password_and_a_database() {
    let redis = Redis::start();
    let acl = [
        "ACL",
        "SETUSER",
        "pacer",
        "on",
        ">p@ss:w/rd",
        "~drip:*",
        "+@all",
    ];
    assert_eq!(redis.cmd(&acl), "OK");
    let url = |pass: &str| format!("redis://pacer:{pass}@127.0.0.1:{}/3#acl", redis.port);
    let run = spawn_pacer(
        0,
        4,
        &["--rate", "50/s", "--share", &url("p%40ss%3Aw%2Frd")],
    )
    .finish();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stats["share"]["reservations"], 4, "{}", run.stderr);
    assert_eq!(
        redis.cmd(&["EXISTS", "drip:{acl}"]),
        "0",
        "not in database 0"
    );
    let info = redis.cmd(&["INFO", "commandstats"]);
    let calls = |cmd: &str| -> u64 {
        let line = info
            .lines()
            .find(|l| l.starts_with(&format!("cmdstat_{cmd}:")));
        let line = line.unwrap_or_else(|| panic!("no {cmd} in {info}"));
        line.split(['=', ',']).nth(1).unwrap().parse().unwrap()
    };
    // The first EVALSHA finds no script, EVAL loads it, the rest (a
    // reservation each, and any refused tries) hit.
    assert_eq!(calls("eval"), 1, "{info}");
    assert!(calls("evalsha") >= 4, "{info}");
    let mut args = vec!["--rate", "50/s", "--on-share-error", "fail"];
    let wrong = url("nope");
    args.extend(["--share", &wrong]);
    let run = spawn_pacer(0, 2, &args).finish();
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("WRONGPASS"), "{}", run.stderr);
    assert!(!run.stderr.contains("nope"), "{}", run.stderr);
}

#[test]
fn a_signal_with_share_accounts_for_every_line() {
    let dir = Scratch::new();
    let state = dir.join("sig.share");
    let rejects = dir.join("rejects");
    let p = spawn_pacer(
        0,
        100,
        &[
            "--rate",
            "20/s",
            "--share",
            state.to_str().unwrap(),
            "--rejects",
            rejects.to_str().unwrap(),
        ],
    );
    thread::sleep(Duration::from_millis(500));
    let st = Command::new("kill")
        .args(["-TERM", &p.child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let run = p.finish();
    assert_eq!(run.code, Some(143), "{}", run.stderr);
    assert_in_order(&run, 100);
    let sent = run.lines.len();
    assert!((5..100).contains(&sent), "{sent}");
    let unsent: Vec<String> = std::fs::read_to_string(&rejects)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let want: Vec<String> = (sent + 1..=100).map(|i| format!("0 {i}")).collect();
    assert_eq!(unsent, want);
}

#[test]
fn redis_a_far_future_value_is_clamped() {
    let redis = Redis::start();
    redis.cmd(&["SET", "drip:{clamp}", "99999999999999999"]);
    let started = wall();
    let p = spawn_pacer(0, 2, &["--rate", "2/s", "--share", &redis.url("clamp")]);
    let run = p.finish();
    assert_eq!(run.lines.len(), 2, "{}", run.stderr);
    // Delay 0 for the first line, 500 ms for the second: not 3000 years.
    assert!(run.lines[0].0 - started < 1.0, "{:?}", run.lines);
    assert!(run.lines[1].0 - run.lines[0].0 >= 0.499);
    let value: u64 = redis.cmd(&["GET", "drip:{clamp}"]).parse().unwrap();
    assert!(value < 99999999999999999 / 10, "{value}");
}

#[test]
fn redis_script_flush_mid_run_is_handled() {
    let redis = Redis::start();
    let p = spawn_pacer(0, 40, &["--rate", "50/s", "--share", &redis.url("flush")]);
    thread::sleep(Duration::from_millis(300));
    assert_eq!(redis.cmd(&["SCRIPT", "FLUSH"]), "OK");
    let run = p.finish();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.lines.len(), 40);
    assert_in_order(&run, 40);
    assert_eq!(run.stats["share"]["errors"], 0, "{}", run.stderr);
    assert_eq!(run.stats["share"]["reservations"], 40);
}

/// Two processes at 100/s (burst 4) sharing one key; the server is killed
/// at +0.6 s and restarted empty at +1.4 s.
fn outage(mode: &[&str], name: &str) -> (Vec<Run>, f64, f64) {
    let mut redis = Redis::start();
    let url = redis.url(name);
    let mut args = vec!["--rate", "100/s", "--burst", "4", "--share", &url];
    args.extend_from_slice(mode);
    let pacers: Vec<Pacer> = (0..2).map(|t| spawn_pacer(t, 100, &args)).collect();
    thread::sleep(Duration::from_millis(600));
    let down = wall();
    redis.stop();
    thread::sleep(Duration::from_millis(800));
    let up = wall();
    redis.restart();
    let runs = pacers.into_iter().map(Pacer::finish).collect();
    (runs, down, up)
}

#[test]
fn redis_outage_under_wait_sends_nothing_while_down() {
    let (runs, down, up) = outage(&[], "wait");
    let mut stamps = Vec::new();
    for r in &runs {
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(r.lines.len(), 100, "{}", r.stderr);
        assert_in_order(r, 100);
        assert!(r.stderr.contains("unreachable"), "{}", r.stderr);
        assert!(r.stderr.contains("answers again"), "{}", r.stderr);
        stamps.extend(r.lines.iter().map(|l| l.0));
    }
    // A slot granted just before the kill leaves at most D = 40 ms later.
    let during: Vec<f64> = stamps
        .iter()
        .copied()
        .filter(|&t| t > down + 0.045 && t < up)
        .collect();
    assert!(during.is_empty(), "{} lines while down", during.len());
    assert!(max_in_window(&mut stamps, 1.0) <= 104);
    assert!(max_in_window(&mut stamps, 0.1) <= 14);
}

#[test]
fn redis_outage_under_fail_stops_and_reports_unsent() {
    let (runs, down, _) = outage(&["--on-share-error", "fail"], "fail");
    for r in &runs {
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert_in_order(r, 100);
        assert!(r.lines.len() < 100);
        assert!(r.lines.iter().all(|l| l.0 < down + 0.045));
        assert!(
            r.stderr.contains("unreachable") && r.stderr.contains("not written"),
            "{}",
            r.stderr
        );
        assert!(r.stats["unsent"].as_u64().unwrap() > 0);
        assert_eq!(r.stats["ended"], "share-error");
    }
}

#[test]
fn redis_outage_under_local_falls_back_and_returns() {
    let (runs, down, up) = outage(
        &["--on-share-error", "local", "--fallback-rate", "20/s"],
        "local",
    );
    let mut stamps = Vec::new();
    for r in &runs {
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(r.lines.len(), 100, "{}", r.stderr);
        assert_in_order(r, 100);
        assert!(r.stderr.contains("fallback-rate 20/s"), "{}", r.stderr);
        assert!(r.stderr.contains("answers again"), "{}", r.stderr);
        assert!(r.stats["share"]["fallback_grants"].as_u64().unwrap() > 0);
        // While down, each process sends at its own fallback rate.
        let mut local: Vec<f64> = r
            .lines
            .iter()
            .map(|l| l.0)
            .filter(|&t| t > down + 0.045 && t < up)
            .collect();
        assert!(!local.is_empty(), "nothing sent while down");
        assert!(max_in_window(&mut local, 0.5) <= 11 + 4);
        stamps.extend(r.lines.iter().map(|l| l.0));
    }
    let mut after: Vec<f64> = stamps.into_iter().filter(|&t| t > up + 0.3).collect();
    assert!(max_in_window(&mut after, 1.0) <= 104);
}

#[test]
fn redis_unreachable_under_each_mode() {
    let url = "redis://127.0.0.1:1#nobody";
    // wait: gives up after --share-timeout, the lines reported unsent.
    let started = Instant::now();
    let p = spawn_pacer(
        0,
        5,
        &["--rate", "10/s", "--share", url, "--share-timeout", "1s"],
    );
    let r = p.finish();
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert!(r.lines.is_empty());
    assert_eq!(r.stats["unsent"], 5, "{}", r.stderr);
    assert!(r.stderr.contains("--share-timeout"), "{}", r.stderr);
    // fail: at once.
    let started = Instant::now();
    let p = spawn_pacer(
        0,
        5,
        &["--rate", "10/s", "--share", url, "--on-share-error", "fail"],
    );
    let r = p.finish();
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(started.elapsed() < Duration::from_millis(900));
    // The summary first (--stats=json asked for it), then one error line.
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", r.stderr);
    assert_eq!(r.stats["ended"], "share-error", "{}", r.stderr);
    assert_eq!(r.stats["lines_out"], 0, "{}", r.stderr);
    assert_eq!(r.stats["share"]["errors"], 1, "{}", r.stderr);
    assert!(lines[1].contains("Connection refused"), "{}", r.stderr);
    assert!(lines[1].contains("not written"), "{}", r.stderr);
    // local: every line, at the fallback rate.
    let p = spawn_pacer(
        0,
        5,
        &[
            "--rate",
            "10/s",
            "--share",
            url,
            "--on-share-error",
            "local",
            "--fallback-rate",
            "20/s",
        ],
    );
    let r = p.finish();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.lines.len(), 5);
    assert!(r.lines[4].0 - r.lines[0].0 >= 0.199, "{:?}", r.lines);
    let share = &r.stats["share"];
    assert_eq!(share["fallback_grants"], 5, "{share}");
    // Redis never answered: errors, not refusals; the fallback's own
    // refusals (its schedule was busy) are counted apart.
    assert!(share["errors"].as_u64().unwrap() >= 1, "{share}");
    assert_eq!(share["refusals"], 0, "{share}");
    assert_eq!(share["reservations"], 0, "{share}");
    assert!(share["fallback_refusals"].as_u64().unwrap() >= 4, "{share}");
}

// ---- drip gate -----------------------------------------------------------

/// Starts `n` gates at once with `args`, each running `date` at its slot;
/// returns (exit status, the wall time its command ran, stdout, stderr).
fn gates(n: usize, args: &[&str]) -> Vec<(Option<i32>, Option<f64>, String)> {
    let children: Vec<Child> = (0..n)
        .map(|_| {
            Drip::new()
                .command()
                .arg("gate")
                .args(args)
                .args(["--", "date", "+%s.%N"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            (
                out.status.code(),
                text.trim().parse().ok(),
                String::from_utf8_lossy(&out.stderr).to_string(),
            )
        })
        .collect()
}

/// The k-th command (in time) ran no earlier than k intervals after
/// `start` (before any gate was spawned): running late is possible, early
/// is not.
fn assert_gates_spaced(start: f64, runs: &[(Option<i32>, Option<f64>, String)], interval: f64) {
    let mut times: Vec<f64> = runs
        .iter()
        .map(|(code, t, err)| {
            assert_eq!(*code, Some(0), "{err}");
            t.unwrap()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    for (k, t) in times.iter().enumerate() {
        assert!(
            *t >= start + k as f64 * interval - 0.001,
            "slot {k} at +{:.4}s: {times:?}",
            t - start
        );
    }
}

#[test]
fn gates_take_one_slot_each_from_a_state_file() {
    let dir = Scratch::new();
    let state = dir.join("gate.share");
    let state = state.to_str().unwrap();
    let start = wall();
    let runs = gates(6, &["--rate", "4/s", "--burst", "8", "--share", state]);
    assert_gates_spaced(start, &runs, 0.25);
}

#[test]
fn gates_and_pacers_share_one_redis_key() {
    let redis = Redis::start();
    let url = redis.url("gate");
    let start = wall();
    let p = spawn_pacer(0, 6, &["--rate", "4/s", "--burst", "8", "--share", &url]);
    let runs = gates(4, &["--rate", "4/s", "--burst", "8", "--share", &url]);
    let run = p.finish();
    assert_eq!(run.lines.len(), 6, "{}", run.stderr);
    let mut all: Vec<(Option<i32>, Option<f64>, String)> = runs;
    all.extend(
        run.lines
            .iter()
            .map(|l| (Some(0), Some(l.0), String::new())),
    );
    // Ten slots at 4/s, whoever took them.
    assert_gates_spaced(start, &all, 0.25);
}

#[test]
fn a_gate_exits_3_when_the_wait_would_exceed_max_wait() {
    let dir = Scratch::new();
    let state = dir.join("max.share");
    let state = state.to_str().unwrap();
    let started = Instant::now();
    let runs = gates(
        6,
        &[
            "--rate",
            "2/s",
            "--burst",
            "8",
            "--share",
            state,
            "--max-wait",
            "1200ms",
        ],
    );
    let ran = runs.iter().filter(|r| r.0 == Some(0)).count();
    let refused: Vec<_> = runs.iter().filter(|r| r.0 == Some(3)).collect();
    assert_eq!(ran + refused.len(), 6, "{runs:?}");
    // Slots 0, 0.5 and 1.0 s are within 1.2 s; 1.5, 2 and 2.5 s are not.
    assert!(ran >= 2 && refused.len() >= 2, "{runs:?}");
    for r in &refused {
        assert!(r.1.is_none(), "the command ran: {r:?}");
        assert!(r.2.contains("more than --max-wait 1s 200ms"), "{}", r.2);
    }
    // Nobody waited for a slot it would not take.
    assert!(started.elapsed() < Duration::from_millis(2_000));
}

#[test]
fn gate_exit_status_wait_and_errors() {
    let dir = Scratch::new();
    let state = dir.join("g.share");
    let state = state.to_str().unwrap();
    let gate = |args: &[&str]| {
        Drip::new()
            .command()
            .arg("gate")
            .args(args)
            .output()
            .unwrap()
    };
    // The command's status is the gate's.
    let out = gate(&[
        "--rate", "10/s", "--share", state, "--", "sh", "-c", "exit 7",
    ]);
    assert_eq!(out.status.code(), Some(7));
    // --print-wait: seconds on stdout without a command...
    let out = gate(&["--rate", "1/s", "--share", state, "--print-wait"]);
    assert!(out.status.success());
    let waited: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!((0.0..2.0).contains(&waited), "{waited}");
    // A full disk is one line saying what could not be written.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Drip::new()
        .command()
        .arg("gate")
        .args(["--rate", "100/s", "--share", &format!("{state}.full")])
        .arg("--print-wait")
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot write the wait (--print-wait) to standard output: No space left"),
        "{err}"
    );
    // ... and on stderr with one, whose stdout stays its own.
    let out = gate(&[
        "--rate",
        "1/s",
        "--share",
        state,
        "--print-wait",
        "--",
        "echo",
        "hi",
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("drip gate: waited "));
    let out = gate(&[
        "--rate",
        "10/s",
        "--share",
        state,
        "--",
        "no-such-command-here",
    ]);
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run"));
    for (args, needle) in [
        (vec!["--rate", "10/s"], "needs --share"),
        (vec!["--share", state], "--rate"),
        (
            vec![
                "--rate",
                "10/s",
                "--share",
                "redis://127.0.0.1:1#g",
                "--on-share-error",
                "fail",
            ],
            "unreachable",
        ),
    ] {
        let out = gate(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // wait: gives up at --share-timeout, not a backoff later.
    let started = Instant::now();
    let out = gate(&[
        "--rate",
        "10/s",
        "--share",
        "redis://127.0.0.1:1#g",
        "--share-timeout",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(990) && took < Duration::from_millis(1_500),
        "{took:?}"
    );
}

/// Another process holds the state file's lock (as a stopped holder
/// would) for `hold` seconds, with `flock(1)` from util-linux.
// The child is returned to the caller, which kills and waits for it.
#[allow(clippy::zombie_processes)]
fn lock_holder(state: &std::path::Path, hold: &str) -> Child {
    // The shell takes the lock on its own descriptor and becomes `sleep`,
    // so the process we stop by PID is the one holding the lock.
    let mut child = Command::new("sh")
        .args(["-c", "exec 9>>\"$0\" && flock 9 && exec sleep \"$1\""])
        .arg(state)
        .arg(hold)
        .spawn()
        .unwrap();
    // Until the lock is taken: the file appears, then a try-lock fails.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(f) = std::fs::File::open(state)
            && f.try_lock().is_err()
        {
            return child;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("flock did not take the lock");
        }
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_held_lock_is_a_share_error_after_a_deadline() {
    let dir = Scratch::new();
    let state = dir.join("held.share");
    let mut holder = lock_holder(&state, "30");
    let s = state.to_str().unwrap();
    // fail: after the 2 s lock deadline, not never.
    let started = Instant::now();
    let run = spawn_pacer(
        0,
        3,
        &["--rate", "10/s", "--share", s, "--on-share-error", "fail"],
    )
    .finish();
    let took = started.elapsed();
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("held by another process"),
        "{}",
        run.stderr
    );
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(run.lines.is_empty());
    assert_eq!(run.stats["unsent"], 3, "{}", run.stderr);
    let _ = holder.kill();
    let _ = holder.wait();
    // wait: the lines go once the holder lets go.
    let mut holder = lock_holder(&state, "3");
    let run = spawn_pacer(0, 3, &["--rate", "10/s", "--share", s]).finish();
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.lines.len(), 3);
    assert!(
        run.stderr.contains("held by another process"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("answers again"), "{}", run.stderr);
}

#[test]
fn a_held_lock_gives_up_at_the_share_timeout() {
    let dir = Scratch::new();
    let state = dir.join("budget.share");
    let mut holder = lock_holder(&state, "30");
    let s = state.to_str().unwrap();
    let args = ["--rate", "10/s", "--share", s, "--share-timeout", "1s"];
    let started = Instant::now();
    let run = spawn_pacer(0, 3, &args).finish();
    let took = started.elapsed();
    let gate_started = Instant::now();
    let gate = Drip::new()
        .command()
        .arg("gate")
        .args(args)
        .output()
        .unwrap();
    let gate_took = gate_started.elapsed();
    let _ = holder.kill();
    let _ = holder.wait();
    // The lock's own 2 s deadline does not outlast the 1 s timeout.
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_millis(1_900),
        "{took:?}: {}",
        run.stderr
    );
    assert_eq!(run.stats["unsent"], 3, "{}", run.stderr);
    let last = run.stderr.lines().last().unwrap();
    assert!(last.contains("unreachable for 1s"), "{last}");
    let elapsed = run.stats["elapsed_s"].as_f64().unwrap();
    assert!((1.0..1.9).contains(&elapsed), "{}", run.stderr);
    let err = String::from_utf8_lossy(&gate.stderr);
    assert_eq!(gate.status.code(), Some(2), "{err}");
    assert!(
        gate_took >= Duration::from_secs(1) && gate_took < Duration::from_millis(1_900),
        "{gate_took:?}: {err}"
    );
    assert!(err.contains("unreachable for 1s"), "{err}");
    assert!(err.contains("held by another process for 1s"), "{err}");
}

/// `drip pace` with `DRIP_SHARE=value` in its environment, `input` on stdin.
fn pace_with_env(value: &std::ffi::OsStr, args: &[&str], input: &[u8]) -> Output {
    Drip::pace()
        .env("DRIP_SHARE", value)
        .args(args)
        .stdin(input)
        .output()
}

#[test]
fn an_inherited_drip_share_never_breaks_a_run_that_cannot_share() {
    let dir = Scratch::new();
    let state = dir.join("inherited.share");
    let env = state.as_os_str();
    let stamped = b"time,msg\n2026-01-01T00:00:00Z,a\n2026-01-01T00:00:00Z,b\n";
    // Runs that cannot share go on alone, with a note naming the variable.
    for (args, input, why) in [
        (
            vec!["--rate", "100/s", "--key", "[0-9]"],
            &b"1\n2\n"[..],
            "--key",
        ),
        (
            vec!["--replay", "--time-format", "rfc3339"],
            &stamped[..],
            "--replay",
        ),
        (
            vec!["-p", "sliding-log:limit=5,window=1s"],
            &b"1\n2\n"[..],
            "sliding-log",
        ),
    ] {
        let out = pace_with_env(env, &args, input);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert_eq!(out.stdout, input, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("DRIP_SHARE is set"), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(err.contains("--share none"), "{args:?}: {err}");
        assert!(!state.exists(), "{args:?} touched the schedule");
    }
    // --share none: no note, no schedule.
    let out = pace_with_env(
        env,
        &["--rate", "100/s", "--key", "[0-9]", "--share", "none"],
        b"1\n",
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = pace_with_env(
        env,
        &["--rate", "100/s", "--share", "none", "--stats=json"],
        b"1\n",
    );
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("\"share\""), "{err}");
    assert!(!state.exists());
    // An empty DRIP_SHARE is unset.
    let out = pace_with_env(std::ffi::OsStr::new(""), &["--rate", "100/s"], b"1\n");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A bad DRIP_SHARE is an error that names it and says what to do.
    for (value, needle) in [
        (
            "http://host/x",
            "DRIP_SHARE 'http://host/x': unknown scheme",
        ),
        (
            "redis://127.0.0.1:1",
            "DRIP_SHARE redis://127.0.0.1:1: give",
        ),
        (dir.to_str().unwrap(), "is a directory"),
    ] {
        let out = pace_with_env(std::ffi::OsStr::new(value), &["--rate", "100/s"], b"1\n");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{value}: {err}");
        assert!(
            err.contains(
                "DRIP_SHARE is set in the environment: correct it, unset it, or pass --share none"
            ),
            "{value}: {err}"
        );
    }
    // Typed on the command line, the same combination is still an error.
    let out = Drip::pace()
        .command()
        .args(["--rate", "100/s", "--key", "x", "--share"])
        .arg(&state)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--share keeps one schedule"));
    // DRIP_SHARE_KEY is a default for Redis schedules: a state file, given
    // either way, goes on without it.
    let out = Drip::pace()
        .command()
        .env("DRIP_SHARE_KEY", "partner-api")
        .args(["--rate", "100/s", "--share"])
        .arg(&state)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(state.exists());
}

#[test]
fn a_server_that_never_answers_is_given_up_at_the_share_timeout() {
    // Accepts connections and never replies: connect, write and read all
    // count against --share-timeout.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    let url = format!("redis://127.0.0.1:{port}");
    let t0 = std::time::Instant::now();
    let out = Drip::pace()
        .args([
            "--rate",
            "10/s",
            "--share",
            &url,
            "--share-key",
            "t",
            "--share-timeout",
            "2s",
        ])
        .stdin(b"a\n")
        .output();
    let took = t0.elapsed().as_secs_f64();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        (1.9..=2.2).contains(&took),
        "gave up after {took:.3}s, not 2 s"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--share-timeout") && err.contains("no answer"),
        "{err}"
    );
}

/// Three processes sharing 10/s through one state file, each starting
/// commands (mostly quick, some slow, -j 2: the cap stalls each now and
/// then): no window of one second holds more than 10 starts of all three,
/// as the commands logged them. The window is 1 s less 100 ms: the shell
/// logs its start after it is up, and a host loaded by the rest of the test
/// suite starts one shell tens of ms later than the next (the slots
/// themselves are reserved 100 ms apart; a burst would put several in one).
#[test]
fn commands_of_three_sharing_processes_keep_the_shared_window() {
    let tmp = Scratch::new();
    let state = tmp.join("api.share");
    let log = tmp.join("starts.log");
    let script = format!(
        "echo \"start $1 $(date +%s%N)\" >> {}; sleep $2",
        log.display()
    );
    let children: Vec<_> = (0..3)
        .map(|p| {
            let records: String = (0..25)
                .map(|i| format!("{p}-{i} {}\n", if i % 5 == 0 { "0.8" } else { "0.02" }))
                .collect();
            let mut child = Drip::pace()
                .args([
                    "--rate",
                    "10/s",
                    "-j",
                    "2",
                    "--share",
                    state.to_str().unwrap(),
                ])
                .args(["--", "sh", "-c", &format!("set -- $1; {script}"), "_"])
                .spawn();
            let mut stdin = child.stdin.take().unwrap();
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = stdin.write_all(records.as_bytes());
            });
            child
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut starts: Vec<f64> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').nth(2).unwrap().parse::<f64>().unwrap() / 1e9)
        .collect();
    assert_eq!(starts.len(), 75);
    let most = max_in_window(&mut starts, 0.9);
    assert!(
        most <= 10,
        "{most} starts of three processes within 900 ms at a shared 10/s"
    );
}
