//! `drip pace` end to end: the built binary, real pipes, real signals.
//!
//! Timing checks are lower bounds only (gaps, elapsed time): a busy machine
//! can make drip late, never early.

mod adaptive;
mod control;
mod inputs;
mod journal;
mod keys;
mod replay;
mod run;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{Drip, Scratch, gaps, kill, lines, numbered, spawn_timed, stderr_of, summary};

#[test]
fn lines_are_spaced_by_the_interval() {
    let mut t = spawn_timed(&["--rate", "5/s"]);
    let started = Instant::now();
    t.child
        .stdin
        .take()
        .unwrap()
        .write_all(&numbered(6))
        .unwrap();
    let got = t.reader.join().unwrap();
    assert!(t.child.wait().unwrap().success());
    let texts: Vec<&str> = got.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(texts, ["1", "2", "3", "4", "5", "6"]);
    // Five intervals of 200 ms at least; never two lines within half an
    // interval (the reader's own delays can only shrink an observed gap a
    // little, so the bound is a quarter interval).
    assert!(got[5].0 - got[0].0 >= Duration::from_millis(995));
    assert!(started.elapsed() >= Duration::from_millis(995));
    for g in gaps(&got) {
        assert!(g >= Duration::from_millis(50), "gap {g:?}");
    }
}

#[test]
fn fractional_and_slow_rates() {
    // 30/min is one line per 2 s: the second line waits 2 s.
    let started = Instant::now();
    let out = Drip::pace()
        .args(["--rate", "30/min"])
        .stdin(b"a\nb\n")
        .output();
    assert!(out.status.success());
    assert_eq!(out.stdout, b"a\nb\n");
    assert!(started.elapsed() >= Duration::from_millis(1990));
    // 1/200ms: four intervals.
    let started = Instant::now();
    let out = Drip::pace()
        .args(["--rate", "1/200ms"])
        .stdin(numbered(5))
        .output();
    assert_eq!(lines(&out.stdout), ["1", "2", "3", "4", "5"]);
    assert!(started.elapsed() >= Duration::from_millis(795));
    // 2/h: one line is released at once (idle time is not banked, but the
    // first line never waits).
    let out = Drip::pace()
        .args(["--rate", "2/h"])
        .stdin(b"only\n")
        .output();
    assert!(out.status.success());
    assert_eq!(out.stdout, b"only\n");
}

#[test]
fn idle_then_burst_is_not_banked() {
    let mut t = spawn_timed(&["--rate", "10/s", "--burst", "10"]);
    let mut stdin = t.child.stdin.take().unwrap();
    stdin.write_all(b"first\n").unwrap();
    thread::sleep(Duration::from_millis(1_000));
    stdin.write_all(&numbered(6)).unwrap();
    drop(stdin);
    let got = t.reader.join().unwrap();
    assert!(t.child.wait().unwrap().success());
    assert_eq!(got.len(), 7);
    // After a second idle, one line goes at once and the rest follow one
    // per 100 ms: five intervals, not a burst.
    let burst = &got[1..];
    assert!(burst[5].0 - burst[0].0 >= Duration::from_millis(495));
    for g in gaps(burst) {
        assert!(g >= Duration::from_millis(25), "gap {g:?}");
    }
}

#[test]
fn drop_mode_accounts_for_every_line() {
    let dir = Scratch::new();
    let rejects = dir.join("rejects");
    let n = 300;
    let out = Drip::pace()
        .args([
            "--rate",
            "100/s",
            "--burst",
            "3",
            "--on-full",
            "drop",
            "--rejects",
            rejects.to_str().unwrap(),
            "--stats=json",
        ])
        .stdin(numbered(n))
        .output();
    assert!(out.status.success(), "{out:?}");
    let sent = lines(&out.stdout);
    let dropped = lines(&std::fs::read(&rejects).unwrap());
    let stats = summary(&out.stderr);
    assert_eq!(stats["lines_in"], n);
    assert_eq!(stats["lines_out"], sent.len());
    assert_eq!(stats["dropped"], dropped.len());
    assert_eq!(stats["unsent"], 0);
    // All at once at 100/s with 3 waiting: most are refused, some go.
    assert!(sent.len() >= 4 && !dropped.is_empty());
    // Out + rejects = in: every number exactly once, each side in order.
    let mut all: Vec<usize> = sent
        .iter()
        .chain(&dropped)
        .map(|l| l.parse().unwrap())
        .collect();
    let is_sorted = |v: &[String]| {
        v.windows(2)
            .all(|w| w[0].parse::<usize>().unwrap() < w[1].parse().unwrap())
    };
    assert!(is_sorted(&sent) && is_sorted(&dropped));
    all.sort_unstable();
    assert_eq!(all, (1..=n).collect::<Vec<_>>());
}

#[test]
fn block_mode_stops_reading_so_the_upstream_blocks() {
    let mut child = Drip::pace().args(["--rate", "4/s", "--stats=json"]).spawn();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let line = format!("{}\n", "x".repeat(999));
    let total = 2_000; // 2 MB: far more than the pipe and drip's inbox hold.
    let feeder = thread::spawn(move || {
        let mut written = 0;
        for _ in 0..total {
            if stdin.write_all(line.as_bytes()).is_err() {
                break;
            }
            written += 1;
        }
        written
    });
    let drain = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    thread::sleep(Duration::from_millis(1_500));
    // The upstream is still blocked: drip has not read 2 MB in 1.5 s.
    assert!(!feeder.is_finished(), "the writer was never blocked");
    kill(child.id(), "TERM");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    let written = feeder.join().unwrap();
    let out = drain.join().unwrap();
    let err = stderr_of(&mut child);
    let stats = summary(err.as_bytes());
    let lines_in = stats["lines_in"].as_u64().unwrap();
    let lines_out = stats["lines_out"].as_u64().unwrap();
    assert_eq!(
        lines_out as usize,
        out.iter().filter(|&&b| b == b'\n').count()
    );
    assert_eq!(lines_in, lines_out + stats["unsent"].as_u64().unwrap());
    // It read only what fits in its inbox and a chunk, not the whole input.
    assert!(lines_in < 200, "read {lines_in} lines");
    assert!(written < total);
}

#[test]
fn nul_separated_records() {
    let input = b"a b\0c\nd\0last".to_vec();
    let out = Drip::pace()
        .args(["-0", "--rate", "1000/s", "--stats=json"])
        .stdin(&input)
        .output();
    assert!(out.status.success());
    assert_eq!(out.stdout, input);
    assert_eq!(summary(&out.stderr)["lines_out"], 3);
    // Stamps go before each NUL-separated record.
    let out = Drip::pace()
        .args(["-0", "--rate", "1000/s", "--stamp", "epoch"])
        .stdin(b"x\0y\0")
        .output();
    let records: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
    assert_eq!(records.len(), 3);
    assert!(records[0].ends_with(b"\tx") && records[1].ends_with(b"\ty"));
}

#[test]
fn binary_and_non_utf8_bytes_pass_through() {
    // Every byte value, invalid UTF-8 included, in lines of varying length.
    let mut input = Vec::new();
    let mut x: u32 = 12345;
    for _ in 0..3_000 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let b = (x >> 16) as u8;
        input.push(b);
    }
    input.extend_from_slice(&[0xff, 0xfe, b'\n', 0xc3, 0x28, b'\r', b'\n', 0x80]);
    let n = input.iter().filter(|&&b| b == b'\n').count() + 1;
    let out = Drip::pace()
        .args(["--rate", "100000/s", "--stats=json"])
        .stdin(&input)
        .output();
    assert!(out.status.success());
    assert_eq!(out.stdout, input);
    assert_eq!(summary(&out.stderr)["lines_out"], n);
}

#[test]
fn a_final_line_without_newline_is_kept_as_it_came() {
    let out = Drip::pace()
        .args(["--rate", "1000/s"])
        .stdin(b"one\ntwo")
        .output();
    assert_eq!(out.stdout, b"one\ntwo");
    let out = Drip::pace().args(["--rate", "1000/s"]).stdin(b"").output();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[test]
fn stamp_formats() {
    let out = Drip::pace()
        .args(["--rate", "1000/s", "--stamp", "rfc3339"])
        .stdin(b"a\nb\n")
        .output();
    for (l, body) in lines(&out.stdout).iter().zip(["a", "b"]) {
        // 2026-11-29T18:00:00.000123Z<TAB>a
        let (stamp, rest) = l.split_once('\t').unwrap();
        assert_eq!(rest, body);
        assert_eq!(stamp.len(), 27, "{stamp}");
        let b = stamp.as_bytes();
        assert_eq!(
            (b[4], b[7], b[10], b[13], b[16], b[19], b[26]),
            (b'-', b'-', b'T', b':', b':', b'.', b'Z')
        );
        assert!(digits(&stamp[20..26]) && digits(&stamp[..4]));
    }
    let out = Drip::pace()
        .args(["--rate", "1000/s", "--stamp", "epoch"])
        .stdin(b"a\n")
        .output();
    let l = &lines(&out.stdout)[0];
    let (stamp, rest) = l.split_once('\t').unwrap();
    assert_eq!(rest, "a");
    let (secs, micros) = stamp.split_once('.').unwrap();
    assert!(
        digits(secs) && digits(micros) && micros.len() == 6,
        "{stamp}"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let secs: u64 = secs.parse().unwrap();
    assert!(secs <= now && secs + 60 > now, "{secs} vs {now}");
    let out = Drip::pace()
        .args(["--rate", "1000/s", "--stamp", "http-date"])
        .stdin(b"a\n")
        .output();
    let l = &lines(&out.stdout)[0];
    // Sun, 29 Nov 2026 18:00:00 GMT<TAB>a
    let (stamp, rest) = l.split_once('\t').unwrap();
    assert_eq!(rest, "a");
    let parts: Vec<&str> = stamp.split(' ').collect();
    assert_eq!(parts.len(), 6, "{stamp}");
    assert!(["Mon,", "Tue,", "Wed,", "Thu,", "Fri,", "Sat,", "Sun,"].contains(&parts[0]));
    assert!(digits(parts[1]) && parts[1].len() == 2);
    assert_eq!(parts[2].len(), 3);
    assert!(digits(parts[3]) && parts[3].len() == 4);
    assert_eq!(parts[4].len(), 8);
    assert_eq!(parts[5], "GMT");
}

#[test]
fn downstream_closing_stops_quietly_and_reports_unsent() {
    let mut drip = Drip::pace()
        .args(["--rate", "50/s", "--stats=json"])
        .spawn();
    let head = Command::new("head")
        .args(["-n", "3"])
        .stdin(drip.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = drip.stdin.take().unwrap();
    let feeder = thread::spawn(move || {
        let _ = stdin.write_all(&numbered(40));
    });
    let head_out = head.wait_with_output().unwrap();
    assert_eq!(lines(&head_out.stdout), ["1", "2", "3"]);
    let out = drip.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stats = summary(&out.stderr);
    assert_eq!(stats["ended"], "broken-pipe");
    let (i, o, u) = (
        stats["lines_in"].as_u64().unwrap(),
        stats["lines_out"].as_u64().unwrap(),
        stats["unsent"].as_u64().unwrap(),
    );
    assert_eq!(i, o + u);
    assert!(o >= 3 && u >= 1, "{stats}");
    // Nothing but the summary on stderr: a broken pipe is not an error.
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

fn signal_accounting(sig: &str, code: i32) {
    let dir = Scratch::new();
    let rejects = dir.join("rejects");
    let mut t = spawn_timed(&[
        "--rate",
        "10/s",
        "--burst",
        "5",
        "--rejects",
        rejects.to_str().unwrap(),
        "--stats=json",
    ]);
    let mut stdin = t.child.stdin.take().unwrap();
    stdin.write_all(&numbered(50)).unwrap();
    // Keep stdin open: the stop comes from the signal, not EOF.
    thread::sleep(Duration::from_millis(600));
    kill(t.child.id(), sig);
    let status = t.child.wait().unwrap();
    assert_eq!(status.code(), Some(code));
    let sent: Vec<String> = t
        .reader
        .join()
        .unwrap()
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    let mut err = String::new();
    t.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let stats = summary(err.as_bytes());
    let unsent = lines(&std::fs::read(&rejects).unwrap());
    assert_eq!(stats["lines_out"], sent.len());
    assert_eq!(stats["unsent"], unsent.len());
    assert_eq!(stats["dropped"], 0);
    // At 10/s for 0.6 s, some went and a backlog was left.
    assert!(!sent.is_empty() && unsent.len() >= 5, "{stats}");
    // Sent then unsent is exactly the first lines_in lines, in order.
    let all: Vec<String> = sent.into_iter().chain(unsent).collect();
    let n = stats["lines_in"].as_u64().unwrap() as usize;
    let want: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    assert_eq!(all, want);
    drop(stdin);
}

#[test]
fn sigint_writes_the_backlog_to_rejects_and_exits_130() {
    signal_accounting("INT", 130);
}

#[test]
fn sigterm_writes_the_backlog_to_rejects_and_exits_143() {
    signal_accounting("TERM", 143);
}

/// Pauses drip (SIGSTOP) for a second while it paces, then resumes it.
fn paused_run(extra: &[&str]) -> (Vec<(Instant, String)>, serde_json::Value) {
    let mut args = vec!["--rate", "10/s", "--burst", "3", "--stats=json"];
    args.extend_from_slice(extra);
    let mut t = spawn_timed(&args);
    let mut stdin = t.child.stdin.take().unwrap();
    stdin.write_all(&numbered(15)).unwrap();
    drop(stdin);
    thread::sleep(Duration::from_millis(300));
    kill(t.child.id(), "STOP");
    thread::sleep(Duration::from_millis(1_000));
    kill(t.child.id(), "CONT");
    assert!(t.child.wait().unwrap().success());
    let got = t.reader.join().unwrap();
    let mut err = String::new();
    t.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let texts: Vec<String> = got.iter().map(|(_, l)| l.clone()).collect();
    let want: Vec<String> = (1..=15).map(|i| i.to_string()).collect();
    assert_eq!(texts, want);
    (got, summary(err.as_bytes()))
}

#[test]
fn after_a_pause_lines_resume_at_the_rate() {
    let (got, stats) = paused_run(&[]);
    // The schedule moved by about the pause; no two lines came together.
    assert!(stats["rebased_ms"].as_f64().unwrap() >= 500.0, "{stats}");
    for g in gaps(&got) {
        assert!(g >= Duration::from_millis(25), "gap {g:?}");
    }
}

#[test]
fn catch_up_keeps_the_schedule_after_a_pause() {
    let (_, stats) = paused_run(&["--catch-up"]);
    assert_eq!(stats["rebased_ms"].as_f64(), Some(0.0), "{stats}");
}

#[test]
fn stats_json_fields() {
    let out = Drip::pace()
        .args(["--rate", "200/s", "--stats=json"])
        .stdin(numbered(5))
        .output();
    assert!(out.status.success());
    let v = summary(&out.stderr);
    for field in [
        "lines_in",
        "lines_out",
        "dropped",
        "unsent",
        "elapsed_s",
        "rate_per_s",
        "target",
        "wait_p50_ms",
        "wait_p99_ms",
        "wait_max_ms",
        "ended",
    ] {
        assert!(v.get(field).is_some(), "missing {field}: {v}");
    }
    assert_eq!(v["lines_in"], 5);
    assert_eq!(v["lines_out"], 5);
    assert_eq!(v["target"], "200/s");
    assert_eq!(v["ended"], "eof");
    // Four intervals of 5 ms: the last line waited at least 20 ms.
    assert!(v["elapsed_s"].as_f64().unwrap() >= 0.0199);
    assert!(v["wait_max_ms"].as_f64().unwrap() >= 19.9);
    // Text is the default format.
    let out = Drip::pace()
        .args(["--rate", "200/s", "--stats"])
        .stdin(b"x\n")
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in 1, out 1, dropped 0, unsent 0"), "{err}");
}

#[test]
fn fail_mode_exits_3_with_a_clear_message() {
    let out = Drip::pace()
        .args(["--rate", "1/s", "--burst", "2", "--on-full", "fail"])
        .stdin(numbered(10))
        .output();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(lines(&out.stdout), ["1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("backlog full at input line 4"), "{err}");
    assert!(err.contains("--on-full"), "{err}");
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn a_policy_spec_replaces_the_shaper() {
    // A token bucket of 3 releases 3 at once; the fourth waits a second.
    let started = Instant::now();
    let out = Drip::pace()
        .args(["--policy", "token-bucket:rate=1/s,burst=3"])
        .stdin(numbered(4))
        .output();
    assert!(out.status.success());
    assert_eq!(lines(&out.stdout), ["1", "2", "3", "4"]);
    assert!(started.elapsed() >= Duration::from_millis(995));
    // A meter in drop mode refuses beyond its capacity.
    let out = Drip::pace()
        .args([
            "--policy",
            "leaky-bucket:rate=1/s,capacity=2",
            "--on-full",
            "drop",
            "--stats=json",
        ])
        .stdin(numbered(5))
        .output();
    assert_eq!(lines(&out.stdout), ["1", "2"]);
    assert_eq!(summary(&out.stderr)["dropped"], 3);
}

#[test]
fn catch_up_and_max_wait_run() {
    let out = Drip::pace()
        .args(["--rate", "100/s", "--max-wait", "30ms", "--catch-up"])
        .stdin(numbered(5))
        .output();
    assert!(out.status.success());
    assert_eq!(lines(&out.stdout), ["1", "2", "3", "4", "5"]);
}

#[test]
fn bad_arguments_exit_2_with_one_clear_line() {
    let dir = Scratch::new();
    let missing = dir.join("no/such/dir/rejects");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--rate", "0/s"], "invalid rate '0/s'"),
        (vec!["--rate", "fast"], "invalid rate 'fast'"),
        (vec!["--rate", "5/fortnight"], "unknown unit"),
        (
            vec![],
            "--rate RATE (for example --rate 5/s) or --policy SPEC",
        ),
        (
            vec!["--rate", "5/s", "--burst", "2", "--max-wait", "1s"],
            "--max-wait",
        ),
        (
            vec!["--rate", "5/s", "--max-wait", "soon"],
            "invalid duration 'soon'",
        ),
        (vec!["--rate", "5/s", "--on-full", "explode"], "explode"),
        (vec!["--rate", "5/s", "--stamp", "iso"], "iso"),
        (vec!["--rate", "5/s", "--stats=xml"], "xml"),
        (
            vec!["--policy", "bucket:rate=5/s"],
            "unknown policy 'bucket'",
        ),
        (vec!["--policy", "gcra:rate=5/s,key=client"], "key=client"),
        (
            vec!["--rate", "5/s", "--policy", "gcra:rate=5/s"],
            "--policy",
        ),
        (
            vec!["--rate", "5/s", "--rejects", missing.to_str().unwrap()],
            "rejects file",
        ),
    ];
    for (args, needle) in cases {
        let out = Drip::pace().args(&args).stdin(b"x\n").output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("drip: "), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: want {needle:?} in {err}");
        assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"));
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_record_without_separator_cannot_fill_memory() {
    // 65 MiB with no newline (say, `find -print0` output without -0): drip
    // stops with one line naming the fix instead of holding it all.
    let input = vec![b'x'; 65 * 1024 * 1024];
    let out = Drip::pace()
        .args(["--rate", "1/s", "--stats=json"])
        .stdin(&input)
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no newline in its first 64 MiB"), "{err}");
    assert!(err.contains("-0"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn stats_takes_its_format_after_a_space_too() {
    let out = Drip::pace()
        .args(["--rate", "1000/s", "--stats", "json"])
        .stdin(b"a\nb\n")
        .output();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(summary(&out.stderr)["lines_out"], 2);
}

#[test]
fn a_signal_stops_a_write_to_a_downstream_that_stopped_reading() {
    // Downstream never reads: the pipe fills and drip's write would block.
    // One SIGTERM must still stop it, with every line accounted for.
    let dir = Scratch::new();
    let rejects = dir.join("rejects");
    let mut child = Drip::pace()
        .command()
        .args(["--rate", "100000/s", "--burst", "100000", "--stats=json"])
        .args(["--rejects", rejects.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = numbered(100_000);
    let feeder = thread::spawn(move || {
        let _ = stdin.write_all(&input);
        stdin
    });
    // Long enough for the 64 KiB pipe to fill; nothing reads stdout yet.
    thread::sleep(Duration::from_millis(800));
    kill(child.id(), "TERM");
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("drip did not stop on one SIGTERM while its stdout was full");
        }
        thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(143));
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let err = stderr_of(&mut child);
    let stats = summary(err.as_bytes());
    let sent = lines(&out);
    let unsent = lines(&std::fs::read(&rejects).unwrap());
    assert_eq!(stats["lines_out"], sent.len(), "{stats}");
    assert_eq!(stats["unsent"], unsent.len(), "{stats}");
    assert!(!sent.is_empty() && !unsent.is_empty(), "{stats}");
    // Whole lines only, in order: sent then unsent is the first lines_in.
    let all: Vec<String> = sent.into_iter().chain(unsent).collect();
    let n = stats["lines_in"].as_u64().unwrap() as usize;
    let want: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    assert_eq!(all, want);
    drop(feeder.join().unwrap());
}
