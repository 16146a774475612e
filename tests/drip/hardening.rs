//! Hostile but realistic use, end to end: nothing the user gave is lost
//! silently, no success hides a failure. Each test runs the built binary
//! with real files, pipes and devices.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use crate::common::{Drip, Out, Scratch, kill, lines, numbered, s, stderr_of, summary};

/// One error line, exit 2, no panic.
fn one_error_line(out: &Out) -> &str {
    assert_eq!(out.code, 2, "stderr: {}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {}", out.stderr);
    assert!(lines[0].starts_with("drip: "), "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    lines[0]
}

/// `rows` rows, ten per second, fifty clients; `edit` may change a row.
fn log(rows: usize, edit: impl Fn(usize, String) -> String) -> String {
    let mut text = String::from("ts,client,ua\n");
    for i in 0..rows {
        let row = format!("{},c{},curl/8\n", 1_700_000_000 + i / 10, i % 50);
        text.push_str(&edit(i, row));
    }
    text
}

// 1. An unclosed quote swallows the rest of the log.

#[test]
fn an_unclosed_quote_is_an_error_naming_its_line() {
    let dir = Scratch::new();
    let stray = dir.join("stray.csv");
    let text = log(100_000, |i, row| {
        if i == 10 {
            row.replace("curl/8", "\"oops")
        } else {
            row
        }
    });
    std::fs::write(&stray, &text).unwrap();
    let args = [
        "audit",
        s(&stray),
        "-p",
        "gcra:rate=1/s",
        "--key-column",
        "client",
        "-f",
        "json",
        "-q",
    ];
    let out = Drip::new().args(args).run();
    let line = one_error_line(&out);
    // Row 11 is line 12 (after the header).
    assert!(line.contains("stray.csv:12:"), "{line}");
    assert!(line.contains("quote"), "{line}");
    assert!(line.contains("--skip-bad"), "{line}");

    let mut skip = args.to_vec();
    skip.push("--skip-bad");
    let v = Drip::new().args(&skip).json();
    assert_eq!(v["input"]["rows"], 99_999);
    assert_eq!(v["input"]["bad_rows_skipped"], 1);

    // A short log: the quote is still open at the end of the input.
    let short = dir.join("short.csv");
    std::fs::write(
        &short,
        log(30, |i, row| {
            if i == 5 {
                row.replace("curl/8", "\"oops")
            } else {
                row
            }
        }),
    )
    .unwrap();
    let out = Drip::audit()
        .args([s(&short), "-p", "gcra:rate=1/s", "-f", "json", "-q"])
        .run();
    assert!(
        one_error_line(&out).contains("short.csv:7:"),
        "{}",
        out.stderr
    );
    let v = Drip::audit()
        .args([
            s(&short),
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
            "--skip-bad",
            "-q",
        ])
        .json();
    assert_eq!(v["input"]["rows"], 29);
    assert_eq!(v["input"]["bad_rows_skipped"], 1);
}

#[test]
fn quoted_fields_with_newlines_still_read() {
    let dir = Scratch::new();
    let f = dir.join("multi.csv");
    let text = log(1000, |i, row| {
        if i % 100 == 7 {
            row.replace("curl/8", "\"two\nlines, \"\"quoted\"\"\"")
        } else {
            row.replace('\n', "\r\n")
        }
    });
    std::fs::write(&f, text).unwrap();
    let v = Drip::audit()
        .args([s(&f), "-p", "gcra:rate=1/s", "-f", "json", "-q"])
        .json();
    assert_eq!(v["input"]["rows"], 1000);
    assert_eq!(v["input"]["bad_rows_skipped"], 0);
}

// 2. Outputs that are inputs.

#[test]
fn decisions_onto_the_log_is_refused_before_anything_is_written() {
    let dir = Scratch::new();
    let v = dir.join("v.csv");
    let text = log(100, |_, r| r);
    std::fs::write(&v, &text).unwrap();
    let link = dir.join("link.csv");
    std::os::unix::fs::symlink(&v, &link).unwrap();
    let hard = dir.join("hard.csv");
    std::fs::hard_link(&v, &hard).unwrap();
    for target in [&v, &link, &hard] {
        let out = Drip::audit()
            .args([s(&v), "-p", "gcra:rate=1/s", "--decisions", s(target)])
            .run();
        let line = one_error_line(&out);
        assert!(
            line.contains("--decisions") && line.contains("same file as the log"),
            "{line}"
        );
        assert_eq!(
            std::fs::read_to_string(&v).unwrap(),
            text,
            "the log is intact"
        );
    }
    // The policies file.
    let pol = dir.join("policies.txt");
    std::fs::write(&pol, "gcra:rate=1/s\n").unwrap();
    let out = Drip::audit()
        .args([s(&v), "--policies", s(&pol), "--decisions", s(&pol)])
        .run();
    assert!(
        one_error_line(&out).contains("--policies"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read_to_string(&pol).unwrap(), "gcra:rate=1/s\n");
}

#[test]
fn rejects_onto_stdin_or_stdout_is_refused() {
    let dir = Scratch::new();
    let input = dir.join("in.txt");
    std::fs::write(&input, "a\nb\nc\n").unwrap();
    // drip pace --rejects in.txt < in.txt
    let out = Drip::new()
        .command()
        .args(["pace", "--rate", "1000/s", "--rejects", s(&input)])
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--rejects") && err.contains("standard input"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&input).unwrap(), "a\nb\nc\n");

    // drip pace ... --rejects s.txt > s.txt
    let sent = dir.join("s.txt");
    std::fs::write(&sent, "kept\n").unwrap();
    let out = Drip::new()
        .command()
        .args(["pace", "--rate", "1000/s", "--rejects", s(&sent)])
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(
            std::fs::OpenOptions::new()
                .append(true)
                .open(&sent)
                .unwrap(),
        )
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("standard output") && err.contains("--rejects"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(std::fs::read_to_string(&sent).unwrap(), "kept\n");
}

// 3. A crossed threshold reported as success.

/// Runs `drip ARGS`, reads one line of its stdout and closes the pipe, as
/// `| head -1` does; returns (exit status, stderr).
fn head_1(args: &[&str]) -> (i32, String) {
    let mut child = Drip::new()
        .command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty());
    let err = stderr_of(&mut child);
    (child.wait().unwrap().code().unwrap_or(-1), err)
}

#[test]
fn a_crossed_threshold_exits_1_when_the_reader_stops_early() {
    let dir = Scratch::new();
    let f = dir.join("log.csv");
    // 20,000 seconds: the timeline is far larger than a pipe's buffer.
    std::fs::write(&f, log(200_000, |_, r| r)).unwrap();
    let base = [
        "audit",
        s(&f),
        "-p",
        "gcra:rate=1/min",
        "--key-column",
        "client",
        "--max-drops",
        "0",
        "-q",
    ];
    let mut timeline = base.to_vec();
    timeline.extend(["--timeline", "1s"]);
    let (code, err) = head_1(&timeline);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("crossed --max-drops"), "{err}");
    // 8. `--decisions - | head -1`: quiet, and the threshold still counts.
    let mut decisions = base.to_vec();
    decisions.extend(["--decisions", "-"]);
    let (code, err) = head_1(&decisions);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("Broken pipe"), "{err}");
    assert!(err.contains("crossed --max-drops"), "{err}");
}

// 7, 8. stderr unwritable; a decisions file that cannot be written.

#[test]
fn an_unwritable_stderr_does_not_abort_the_run() {
    let dir = Scratch::new();
    let f = dir.join("x.csv");
    std::fs::write(&f, log(100, |_, r| r)).unwrap();
    // Not quiet: the detected time format is noted on stderr.
    let out = Drip::new()
        .command()
        .args(["audit", s(&f), "-p", "gcra:rate=1/s", "-f", "json"])
        .stderr(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["input"]["rows"], 100);
}

#[test]
fn a_full_decisions_file_is_named() {
    let dir = Scratch::new();
    let f = dir.join("x.csv");
    std::fs::write(&f, log(100_000, |_, r| r)).unwrap();
    let out = Drip::audit()
        .args([
            s(&f),
            "-p",
            "gcra:rate=1/s",
            "--decisions",
            "/dev/full",
            "-q",
        ])
        .run();
    let line = one_error_line(&out);
    assert!(line.contains("/dev/full"), "{line}");
}

// 4, 5, 6, 9: pace under faults.

/// Waits up to `secs` for the child to exit.
fn exit_within(child: &mut std::process::Child, secs: u64, what: &str) -> std::process::ExitStatus {
    let started = std::time::Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if started.elapsed() > std::time::Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("drip did not stop: {what}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn sigint_stops_a_stalled_write_at_a_million_lines_a_second() {
    let dir = Scratch::new();
    let rejects = dir.join("rejects");
    // A FIFO held open by a consumer that never reads.
    let fifo = dir.join("fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let consumer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::File::open(fifo).unwrap())
    };
    let stdout = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let held = consumer.join().unwrap();
    let mut child = Drip::pace()
        .command()
        .args(["--rate", "1000000/s", "--burst", "100000", "--stats=json"])
        .args(["--rejects", s(&rejects)])
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&numbered(300_000));
        stdin
    });
    std::thread::sleep(std::time::Duration::from_millis(1500));
    kill(child.id(), "INT");
    let status = exit_within(&mut child, 10, "one SIGINT while downstream was stalled");
    assert_eq!(status.code(), Some(130));
    let err = stderr_of(&mut child);
    let stats = summary(&err);
    assert_eq!(stats["ended"], "sigint");
    // What the pipe took, then the rejects: every line read, once, in order.
    drop(feeder.join().unwrap());
    let mut sent = Vec::new();
    let mut held = held;
    let nonblocking = std::thread::spawn(move || {
        held.read_to_end(&mut sent).unwrap();
        sent
    });
    let sent = lines(&nonblocking.join().unwrap());
    let unsent = lines(&std::fs::read(&rejects).unwrap());
    assert_eq!(stats["lines_out"], sent.len(), "{stats}");
    assert_eq!(stats["unsent"], unsent.len(), "{stats}");
    let all: Vec<String> = sent.into_iter().chain(unsent).collect();
    let n = stats["lines_in"].as_u64().unwrap() as usize;
    first_lines_in_order(&all, n, &stats);
}

/// `all` is exactly the lines 1..=n, in order; the last may be cut where
/// reading stopped (the rest of it was never read).
fn first_lines_in_order(all: &[String], n: usize, stats: &serde_json::Value) {
    let mut want: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    if let (Some(last), Some(got)) = (want.last_mut(), all.get(n.wrapping_sub(1)))
        && last.starts_with(got.as_str())
    {
        *last = got.clone();
    }
    if let Some(i) = (0..all.len().max(n)).find(|&i| all.get(i) != want.get(i)) {
        panic!(
            "line {i}: got {:?}, want {:?} ({} lines, {n} read); {stats}",
            &all[i.saturating_sub(2)..(i + 3).min(all.len())],
            want.get(i),
            all.len()
        );
    }
}

#[test]
fn a_full_stdout_keeps_every_line_in_rejects_and_prints_the_summary() {
    let dir = Scratch::new();
    let rejects = dir.join("rejects");
    let out = Drip::pace()
        .command()
        .args([
            "--rate",
            "100000/s",
            "--stats=json",
            "--rejects",
            s(&rejects),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            let mut stdin = c.stdin.take().unwrap();
            let _ = stdin.write_all(&numbered(1000));
            drop(stdin);
            c.wait_with_output()
        })
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let stats = summary(&*err);
    assert_eq!(stats["ended"], "write-error");
    assert_eq!(stats["lines_in"], 1000);
    assert_eq!(stats["lines_out"], 0);
    assert_eq!(stats["unsent"], 1000);
    assert_eq!(std::fs::read(&rejects).unwrap(), numbered(1000));
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with("drip: cannot write standard output"),
        "{err}"
    );
    assert!(last.contains("1000 line(s)"), "{err}");
}

#[test]
fn lines_the_pipe_took_are_sent_not_rejected() {
    // drip pace --rate 1000000000/s --rejects r ... | head -c 150000
    let dir = Scratch::new();
    let rejects = dir.join("r");
    let mut child = Drip::pace()
        .args([
            "--rate",
            "1000000000/s",
            "--stats=json",
            "--rejects",
            s(&rejects),
        ])
        .spawn();
    let head = Command::new("head")
        .args(["-c", "150000"])
        .stdin(child.stdout.take().unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&numbered(300_000));
    });
    let got = head.wait_with_output().unwrap().stdout;
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let stats = summary(&*err);
    assert_eq!(stats["ended"], "broken-pipe");
    // The consumer's whole lines (its last one may be cut).
    let received: Vec<usize> = lines(&got[..=got.iter().rposition(|&b| b == b'\n').unwrap()])
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    let rejected = lines(&std::fs::read(&rejects).unwrap());
    let out_n = stats["lines_out"].as_u64().unwrap() as usize;
    // The consumer got lines 1, 2, ... of those the pipe took.
    assert!(out_n >= received.len(), "{stats}");
    assert!(received.iter().zip(1..).all(|(&r, i)| r == i));
    assert_eq!(rejected.len() as u64, stats["unsent"].as_u64().unwrap());
    // Rejects start right after the last line sent: nothing twice.
    let all: Vec<String> = (1..=out_n).map(|i| i.to_string()).chain(rejected).collect();
    first_lines_in_order(&all, stats["lines_in"].as_u64().unwrap() as usize, &stats);
}

#[test]
fn sighup_keeps_the_backlog_and_prints_the_summary() {
    let dir = Scratch::new();
    let rejects = dir.join("rejects");
    let mut child = Drip::pace()
        .command()
        .args(["--rate", "5/s", "--burst", "100", "--stats=json"])
        .args(["--rejects", s(&rejects)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&numbered(50)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    kill(child.id(), "HUP");
    let status = exit_within(&mut child, 10, "SIGHUP");
    drop(stdin);
    assert_eq!(status.code(), Some(129));
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    let err = stderr_of(&mut child);
    let stats = summary(&err);
    assert_eq!(stats["ended"], "sighup");
    let all: Vec<String> = lines(&out)
        .into_iter()
        .chain(lines(&std::fs::read(&rejects).unwrap()))
        .collect();
    assert_eq!(all, lines(&numbered(50)));
}

#[test]
fn a_read_error_still_prints_the_summary() {
    // A directory on stdin: read(2) fails with EISDIR.
    let out = Drip::pace()
        .command()
        .args(["--rate", "100/s", "--stats=json"])
        .stdin(std::fs::File::open("/").unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(summary(&*err)["ended"], "read-error");
    assert!(
        err.lines()
            .last()
            .unwrap()
            .starts_with("drip: reading standard input"),
        "{err}"
    );
}

#[test]
fn each_refused_line_is_in_rejects_at_once() {
    let dir = Scratch::new();
    let rejects = dir.join("rejects");
    let mut child = Drip::pace()
        .args([
            "--rate",
            "1/min",
            "--on-full",
            "drop",
            "--rejects",
            s(&rejects),
        ])
        .spawn();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&numbered(10)).unwrap();
    // The first line goes out, the other nine are refused; look while
    // drip is still running, then kill it without a chance to flush.
    let started = std::time::Instant::now();
    while std::fs::read(&rejects).map_or(0, |r| r.len()) < 18
        && started.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    assert_eq!(
        lines(&std::fs::read(&rejects).unwrap()),
        (2..=10).map(|i| i.to_string()).collect::<Vec<_>>()
    );
}

/// Runs `drip pace ARGS` on `input` with stdin left open (the run must
/// end on its own); returns the exit status, stdout and stderr.
fn pace_open_stdin(args: &[&str], input: &[u8]) -> (i32, Vec<u8>, String) {
    let mut child = Drip::pace().args(args).spawn();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    let status = exit_within(&mut child, 20, "pace with a full rejects file");
    drop(stdin);
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    (status.code().unwrap_or(-1), out, stderr_of(&mut child))
}

/// The summary's lines add up and the error line names the rejects file.
fn check_full_rejects(err: &str) -> serde_json::Value {
    let stats = summary(err);
    assert_eq!(stats["ended"], "rejects-error", "{err}");
    let n = |k: &str| stats[k].as_u64().unwrap();
    assert_eq!(
        n("lines_in"),
        n("lines_out") + n("dropped") + n("unsent"),
        "{err}"
    );
    assert!(n("dropped") >= 1, "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| !l.starts_with('{')).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].starts_with("drip: "), "{err}");
    assert!(
        errors[0].contains("rejects file '/dev/full'"),
        "{}",
        errors[0]
    );
    assert!(!err.contains("panicked"), "{err}");
    stats
}

#[test]
fn a_full_rejects_file_still_sends_what_was_admitted_and_accounts_for_every_line() {
    // Stdin stays open: the failure, not the end of input, ends the run.
    let (code, out, err) = pace_open_stdin(
        &[
            "-p",
            "sliding-log:limit=3,window=1h",
            "--on-full",
            "drop",
            "--rejects",
            "/dev/full",
            "--stats=json",
        ],
        &numbered(10),
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(lines(&out), ["1", "2", "3"], "{err}");
    let stats = check_full_rejects(&err);
    assert_eq!(stats["lines_out"], 3, "{err}");
}

#[test]
fn a_full_rejects_file_lets_the_admitted_backlog_go_out_on_time() {
    // Line 1 goes out, 2 and 3 wait in the burst, 4 is refused and
    // cannot be kept: 2 and 3 still go out, one interval apart.
    let started = std::time::Instant::now();
    let (code, out, err) = pace_open_stdin(
        &[
            "--rate",
            "4/s",
            "--burst",
            "2",
            "--on-full",
            "drop",
            "--rejects",
            "/dev/full",
            "--stats=json",
        ],
        &numbered(10),
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(lines(&out), ["1", "2", "3"], "{err}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(500));
    let stats = check_full_rejects(&err);
    assert_eq!(stats["lines_out"], 3, "{err}");
}

#[test]
fn unsent_lines_a_full_rejects_file_cannot_keep_make_a_closed_downstream_an_error() {
    // Downstream is gone before the first write: every line is unsent,
    // and the rejects file cannot take them.
    let mut child = Drip::pace()
        .args(["--rate", "1/min", "--rejects", "/dev/full", "--stats=json"])
        .spawn();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&numbered(10)).unwrap();
    let status = exit_within(&mut child, 20, "pace with a closed stdout");
    drop(stdin);
    let err = stderr_of(&mut child);
    assert_eq!(status.code(), Some(2), "{err}");
    let stats = summary(&err);
    assert_eq!(stats["ended"], "broken-pipe", "{err}");
    assert_eq!(stats["lines_out"], 0, "{err}");
    assert_eq!(stats["lines_in"], stats["unsent"], "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| !l.starts_with('{')).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains("rejects file '/dev/full'"), "{err}");
}

// 17. The reorder window is not quadratic.

#[test]
fn a_day_long_reorder_window_over_interleaved_copies_is_not_quadratic() {
    // 32 servers' logs of the same hour, one after the other: every row of
    // copies 2..32 lands in the middle of the rows held. Held in a sorted
    // array this takes minutes; in O(log n) per row, seconds.
    let dir = Scratch::new();
    let f = dir.join("copies.csv");
    let mut text = String::from("ts,client\n");
    for copy in 0..32 {
        for i in 0..50_000u64 {
            text.push_str(&format!(
                "{},c{}\n",
                1_700_000_000_000 + i * 72,
                (i + copy) % 97
            ));
        }
    }
    std::fs::write(&f, text).unwrap();
    let mut child = Drip::new()
        .command()
        .args([
            "audit",
            s(&f),
            "-p",
            "gcra:rate=10/s,burst=20",
            "--key-column",
            "client",
        ])
        .args([
            "--time-format",
            "epoch-ms",
            "--reorder-window",
            "24h",
            "-q",
            "-f",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).unwrap();
        out
    });
    let status = exit_within(
        &mut child,
        120,
        "1,600,000 rows through a 24h reorder window",
    );
    assert_eq!(status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&reader.join().unwrap()).unwrap();
    assert_eq!(v["input"]["rows"], 1_600_000);
    // Each later copy's last row ties the newest and stays in place.
    assert_eq!(v["input"]["rows_reordered"], 1_549_969);
}

// 10. Messages stay short; compressed files are named as such.

#[test]
fn a_huge_header_gives_a_short_error_and_compressed_files_are_named() {
    let dir = Scratch::new();
    // 3 MB and no newline: one enormous header field.
    let long = dir.join("long.csv");
    std::fs::write(&long, "x".repeat(3_000_000)).unwrap();
    let out = Drip::audit().args([s(&long), "-p", "gcra:rate=1/s"]).run();
    let line = one_error_line(&out);
    assert!(line.len() < 1000, "{} bytes", line.len());
    assert!(
        line.contains("long.csv:1: the line is longer than 1048576 bytes (--max-line)"),
        "{line}"
    );
    // Under the limit, the one field is a header without a time column.
    let out = Drip::audit()
        .args([s(&long), "-p", "gcra:rate=1/s", "--max-line", "4M"])
        .run();
    assert!(
        one_error_line(&out).contains("no time column"),
        "{}",
        out.stderr
    );
    // Control characters in a header are escaped, not sent to the terminal.
    let esc = dir.join("esc.csv");
    std::fs::write(&esc, "a\x1b[31m,b\n1,2\n").unwrap();
    let out = Drip::audit().args([s(&esc), "-p", "gcra:rate=1/s"]).run();
    assert!(!one_error_line(&out).contains('\x1b'), "{}", out.stderr);
    for (magic, kind) in [
        (&b"\xfd7zXZ\x00rest"[..], "xz"),
        (b"BZh91AY&SY", "bzip2"),
        (b"\x28\xb5\x2f\xfd\x00", "zstd"),
    ] {
        let f = dir.join(format!("log.csv.{kind}"));
        std::fs::write(&f, magic).unwrap();
        let out = Drip::audit().args([s(&f), "-p", "gcra:rate=1/s"]).run();
        let line = one_error_line(&out);
        assert!(
            line.contains(&format!("looks compressed ({kind})")),
            "{line}"
        );
    }
}

// 12. Zero padding after gzip data is accepted; trailing garbage is named.

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut child = Command::new("gzip")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip");
    child.stdin.take().unwrap().write_all(data).unwrap();
    child.wait_with_output().unwrap().stdout
}

#[test]
fn gzip_padding_is_accepted_and_trailing_garbage_named() {
    let dir = Scratch::new();
    let mut padded = gzip(log(10, |_, r| r).as_bytes());
    padded.extend_from_slice(&[0u8; 4096]);
    let f = dir.join("padded.csv.gz");
    std::fs::write(&f, &padded).unwrap();
    let v = Drip::audit()
        .args([s(&f), "-p", "gcra:rate=1/s", "-f", "json", "-q"])
        .json();
    assert_eq!(v["input"]["rows"], 10);
    // Two members, then padding: both members are read.
    let mut two = gzip(log(10, |_, r| r).as_bytes());
    two.extend(gzip(
        log(5, |_, r| r)
            .as_bytes()
            .split_inclusive(|&b| b == b'\n')
            .skip(1)
            .flatten()
            .copied()
            .collect::<Vec<u8>>()
            .as_slice(),
    ));
    two.extend_from_slice(&[0u8; 512]);
    std::fs::write(&f, &two).unwrap();
    let v = Drip::audit()
        .args([
            s(&f),
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
            "-q",
            "--reorder-window",
            "1h",
        ])
        .json();
    assert_eq!(v["input"]["rows"], 15);
    let mut garbage = gzip(log(10, |_, r| r).as_bytes());
    garbage.extend_from_slice(b"this is not gzip\n");
    std::fs::write(&f, &garbage).unwrap();
    let out = Drip::audit()
        .args([s(&f), "-p", "gcra:rate=1/s", "-q"])
        .run();
    assert!(
        one_error_line(&out).contains("trailing garbage after the gzip data"),
        "{}",
        out.stderr
    );
}

// 13. `#` starts a comment only at the start of a line or after whitespace.

#[test]
fn a_hash_inside_a_label_is_kept() {
    let dir = Scratch::new();
    let f = dir.join("x.csv");
    std::fs::write(&f, log(10, |_, r| r)).unwrap();
    let pol = dir.join("policies.txt");
    std::fs::write(
        &pol,
        "# limits\ngcra:rate=1/s,label=team#1  # the first team\n",
    )
    .unwrap();
    let v = Drip::audit()
        .args([s(&f), "--policies", s(&pol), "-f", "json", "-q"])
        .json();
    assert_eq!(v["policies"][0]["label"], "team#1");
}

// 15. Gates on an empty input.

#[test]
fn a_gate_on_an_empty_input_is_an_error() {
    let dir = Scratch::new();
    let f = dir.join("empty.csv");
    std::fs::write(&f, "").unwrap();
    let out = Drip::audit()
        .args([s(&f), "-p", "gcra:rate=1/s", "--max-drops", "0"])
        .run();
    assert!(one_error_line(&out).contains("no rows"), "{}", out.stderr);
    // Without a gate an empty log is a report of zeros.
    let out = Drip::audit()
        .args([s(&f), "-p", "gcra:rate=1/s", "-q"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A header names the columns, so a missing one is said even with no rows.
    let h = dir.join("header.csv");
    std::fs::write(&h, "ts,client\n").unwrap();
    let out = Drip::audit()
        .args([s(&h), "-p", "gcra:rate=1/s", "--key-column", "nope"])
        .run();
    assert!(
        one_error_line(&out).contains("no key column 'nope'"),
        "{}",
        out.stderr
    );
}

// 16. A policy that fails stops the run at once.

#[test]
fn a_failing_policy_stops_the_run_before_the_input_ends() {
    // Rows arrive on a pipe that stays open: the second policy's timeline
    // passes its cap early on, and drip must stop then, not at EOF.
    let mut child = Drip::new()
        .command()
        .args(["audit", "-", "--time-format", "epoch-ms", "-q"])
        .args([
            "-p",
            "gcra:rate=1/s",
            "-p",
            "shaper:rate=1/min,burst=100000",
        ])
        .args(["--timeline", "1s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut rows = String::from("ts,client\n");
    for i in 0..50_000u64 {
        rows.push_str(&format!("{},c{}\n", 1_700_000_000_000 + i, i % 7));
    }
    // drip may stop reading before the end: that is the point.
    let _ = stdin.write_all(rows.as_bytes());
    let status = exit_within(
        &mut child,
        30,
        "a policy failed while the input stayed open",
    );
    drop(stdin);
    assert_eq!(status.code(), Some(2));
    let err = stderr_of(&mut child);
    assert!(err.contains("more than 1000000 intervals"), "{err}");
}

// 11. One far-future row.

#[test]
fn a_far_future_row_is_named_or_skipped() {
    let dir = Scratch::new();
    let f = dir.join("future.csv");
    let mut text = String::from("ts,client\n");
    for i in 0..1000 {
        if i == 500 {
            text.push_str("2099-01-01T00:00:00Z,c1\n");
        } else {
            text.push_str(&format!(
                "2024-05-01T00:{:02}:{:02}Z,c{}\n",
                i / 60,
                i % 60,
                i % 7
            ));
        }
    }
    std::fs::write(&f, text).unwrap();
    let out = Drip::audit()
        .args([s(&f), "-p", "gcra:rate=1/s", "-q"])
        .run();
    let line = one_error_line(&out);
    // Row 501 is line 502: that row is named, not the good one after it.
    assert!(line.contains("future.csv:502:"), "{line}");
    assert!(line.contains("out of place"), "{line}");
    assert!(!line.contains("--reorder-window"), "{line}");
    let v = Drip::audit()
        .args([
            s(&f),
            "-p",
            "gcra:rate=1/s",
            "-q",
            "--skip-bad",
            "-f",
            "json",
        ])
        .json();
    assert_eq!(v["input"]["rows"], 999);
    assert_eq!(v["input"]["bad_rows_skipped"], 1);
    assert!(v["input"]["last_ns"].as_u64().unwrap() < 1_800_000_000_000_000_000);
}

// 14. Keys are escaped in every format.

#[test]
fn keys_with_newlines_escapes_and_bad_utf8_are_escaped_and_distinct() {
    let dir = Scratch::new();
    let f = dir.join("keys.csv");
    let mut data = b"ts,client\n".to_vec();
    for i in 0..40u64 {
        let key: &[u8] = match i % 4 {
            0 => b"\"multi\nline\"",
            1 => b"\x1b[31mred",
            2 => b"bad\xff",
            _ => b"bad\xfe",
        };
        data.extend_from_slice(format!("{},", 1_700_000_000 + i / 8).as_bytes());
        data.extend_from_slice(key);
        data.push(b'\n');
    }
    std::fs::write(&f, data).unwrap();
    let base = [
        "audit",
        s(&f),
        "-p",
        "gcra:rate=1/min",
        "--key-column",
        "client",
        "-q",
    ];
    for format in ["table", "markdown", "csv"] {
        let mut args = base.to_vec();
        args.extend(["-f", format]);
        let out = Drip::new().args(&args).run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        let text = &out.stdout;
        assert!(!text.contains('\x1b'), "{format}: {text}");
        assert!(!text.contains('\u{fffd}'), "{format}: {text}");
        for key in ["multi\\nline", "\\u{1b}[31mred", "bad\\xff", "bad\\xfe"] {
            // Markdown writes the escape's `\` as a character reference.
            let key = match format {
                "markdown" => key.replace('\\', "&#92;"),
                _ => key.to_string(),
            };
            assert!(text.contains(&key), "{format}: no {key} in {text}");
        }
        // No line of the report starts inside a key.
        assert!(
            !text.lines().any(|l| l.starts_with("line")),
            "{format}: {text}"
        );
    }
    let mut args = base.to_vec();
    args.extend(["-f", "json"]);
    let v = Drip::new().args(&args).json();
    let mut keys: Vec<&str> = v["policies"][0]["top_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap())
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        ["\\u{1b}[31mred", "bad\\xfe", "bad\\xff", "multi\\nline"]
    );
}

// A line longer than --max-line stops at its line, before it is held.

#[test]
fn a_line_longer_than_max_line_stops_with_its_line_number() {
    let dir = Scratch::new();
    let mut text = log(30, |_, r| r);
    text.push_str(&"y".repeat(5000));
    let f = dir.join("long-line.csv");
    std::fs::write(&f, &text).unwrap();
    let out = Drip::audit()
        .args([s(&f), "-p", "gcra:rate=1/s", "--max-line", "4K"])
        .run();
    let line = one_error_line(&out);
    assert!(
        line.contains("long-line.csv:32: the line is longer than 4096 bytes (--max-line)"),
        "{line}"
    );
    let out = Drip::audit()
        .args([s(&f), "-p", "gcra:rate=1/s", "--max-line", "4 parsecs"])
        .run();
    assert!(
        one_error_line(&out).contains("invalid --max-line '4 parsecs'"),
        "{}",
        out.stderr
    );
}

// An access-log line longer than --max-line stops at its line, or with
// --skip-bad is skipped and counted; the lines after it are read.

#[test]
fn an_access_log_line_longer_than_max_line_is_named_or_skipped() {
    let dir = Scratch::new();
    let line = |i: usize, ua: &str| {
        format!(
            "10.0.0.{} - - [10/Oct/2000:13:55:{:02} -0700] \"GET /a HTTP/1.1\" 200 5 \"-\" \"{ua}\"\n",
            i % 5,
            i
        )
    };
    let mut text: String = (0..20).map(|i| line(i, "curl/8")).collect();
    text.push_str(&line(20, &"y".repeat(5000)));
    text.extend((21..40).map(|i| line(i, "curl/8")));
    let f = dir.join("access.log");
    std::fs::write(&f, &text).unwrap();
    let args = [
        "audit",
        s(&f),
        "-p",
        "gcra:rate=1/s",
        "--max-line",
        "4K",
        "-q",
    ];
    let out = Drip::new().args(args).run();
    let err = one_error_line(&out);
    assert!(
        err.contains(
            "access.log:21: combined line: the line is longer than 4096 bytes (--max-line)"
        ),
        "{err}"
    );
    let mut skip = args.to_vec();
    skip.extend(["--skip-bad", "-f", "json"]);
    let v = Drip::new().args(&skip).json();
    assert_eq!(v["input"]["rows"], 39);
    assert_eq!(v["input"]["bad_rows_skipped"], 1);
    // A higher limit reads the long line.
    let v = Drip::audit()
        .args([
            s(&f),
            "-p",
            "gcra:rate=1/s",
            "--max-line",
            "8K",
            "-f",
            "json",
            "-q",
        ])
        .json();
    assert_eq!(v["input"]["rows"], 40);
}

// A gzip file cut short is named; gzip inside gzip is refused as binary.

#[test]
fn a_truncated_gzip_is_named_and_gzip_in_gzip_is_refused() {
    let dir = Scratch::new();
    let packed = gzip(log(20_000, |_, r| r).as_bytes());
    let cut = dir.join("cut.csv.gz");
    std::fs::write(&cut, &packed[..packed.len() / 2]).unwrap();
    let out = Drip::audit()
        .args([s(&cut), "-p", "gcra:rate=1/s", "-q"])
        .run();
    let line = one_error_line(&out);
    assert!(
        line.contains("'") && line.contains("cut.csv.gz' is a truncated gzip file"),
        "{line}"
    );
    let twice = dir.join("twice.csv.gz");
    std::fs::write(&twice, gzip(&packed)).unwrap();
    let out = Drip::audit().args([s(&twice), "-p", "gcra:rate=1/s"]).run();
    let line = one_error_line(&out);
    assert!(
        line.contains(
            "twice.csv.gz' is binary data, not a text log: decompressed, it is gzip data again"
        ),
        "{line}"
    );
}

// Naive local times across a clock change: the repeated hour in order, a
// time in the skipped hour named.

#[test]
fn local_times_across_a_clock_change_are_read_in_order_or_named() {
    let dir = Scratch::new();
    // New York fell back at 02:00 EDT on 3 November 2024: 01:00-01:59 twice.
    let fall = dir.join("fall.csv");
    std::fs::write(
        &fall,
        "ts,client\n2024-11-03 00:59:00,a\n2024-11-03 01:30:00,a\n2024-11-03 01:59:59,a\n\
         2024-11-03 01:00:30,a\n2024-11-03 01:30:00,a\n2024-11-03 02:10:00,a\n",
    )
    .unwrap();
    let args = [
        "audit",
        s(&fall),
        "-p",
        "gcra:rate=1/s",
        "--tz",
        "America/New_York",
        "-f",
        "json",
    ];
    let v = Drip::new().args(args).json();
    assert_eq!(v["input"]["rows"], 6);
    assert_eq!(v["input"]["rows_reordered"], 0);
    // 00:59 EDT is 04:59Z; 02:10 EST is 07:10Z.
    assert_eq!(v["input"]["first_ns"], 1_730_609_940_000_000_000u64);
    assert_eq!(v["input"]["last_ns"], 1_730_617_800_000_000_000u64);
    // It sprang forward at 02:00 EST on 10 March 2024: 02:30 never was.
    let spring = dir.join("spring.csv");
    std::fs::write(
        &spring,
        "ts,client\n2024-03-10 01:59:00,a\n2024-03-10 02:30:00,a\n",
    )
    .unwrap();
    let out = Drip::audit()
        .args([
            s(&spring),
            "-p",
            "gcra:rate=1/s",
            "--tz",
            "America/New_York",
            "-q",
        ])
        .run();
    let line = one_error_line(&out);
    assert!(
        line.contains("spring.csv:3: bad timestamp '2024-03-10 02:30:00'")
            && line.contains("2024-03-10T02:30:00 does not exist in America/New_York")
            && line.contains("spring-forward gap"),
        "{line}"
    );
}
