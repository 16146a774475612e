//! `drip pace --journal FILE`: runs stopped by a real SIGINT or SIGKILL and
//! run again on the same input with the same journal do every record, none
//! twice after SIGINT, at most the records in flight twice after SIGKILL;
//! a journal from another input is refused; a torn last line is tolerated.

use crate::common::*;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::process::{Child, Stdio};
use std::thread;
use std::time::Duration;

/// A command that appends its record to `log`, then sleeps `secs`.
fn appender(log: &Path, secs: &str) -> String {
    format!("echo \"$1\" >> {}; sleep {secs}", log.display())
}

/// How many times each record was logged.
fn counts(log: &Path) -> BTreeMap<u64, u32> {
    let mut m = BTreeMap::new();
    for l in std::fs::read_to_string(log).unwrap_or_default().lines() {
        *m.entry(l.parse().unwrap()).or_default() += 1;
    }
    m
}

/// `drip pace ARGS` reading `input` (a file argument), its stdout to `out`.
fn start(args: &[&str], out: &Path) -> Child {
    Drip::pace()
        .command()
        .args(args)
        .stdin(Stdio::null())
        .stdout(File::create(out).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A run of `pace -- COMMAND` on 40 records, at 20/s with 4 jobs.
fn command_run(input: &Path, journal: &Path, log: &Path, out: &Path) -> Child {
    let script = appender(log, "0.3");
    start(
        &[
            "--rate",
            "20/s",
            "-j",
            "4",
            "--journal",
            s(journal),
            "--stats=json",
            s(input),
            "--",
            "sh",
            "-c",
            &script,
            "_",
        ],
        out,
    )
}

#[test]
fn a_run_stopped_by_sigint_and_rerun_runs_every_record_once() {
    let dir = Scratch::new();
    let input = dir.join("in.txt");
    std::fs::write(&input, numbered(40)).unwrap();
    let (journal, log, out) = (dir.join("j"), dir.join("log"), dir.join("out"));
    let child = command_run(&input, &journal, &log, &out);
    thread::sleep(Duration::from_millis(800));
    kill(child.id(), "INT");
    let first = child.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(130));
    let ran = counts(&log).len() as u64;
    assert!((4..40).contains(&ran), "{ran} ran before the stop");
    let rerun = command_run(&input, &journal, &log, &out)
        .wait_with_output()
        .unwrap();
    assert_eq!(rerun.status.code(), Some(0));
    let c = counts(&log);
    assert_eq!(
        c.keys().copied().collect::<Vec<_>>(),
        (1..=40).collect::<Vec<_>>()
    );
    assert!(c.values().all(|&n| n == 1), "a record ran twice: {c:?}");
    let sum = summary(&rerun.stderr);
    assert_eq!(sum["journal_skipped"].as_u64(), Some(ran));
    assert_eq!(sum["lines_in"].as_u64(), Some(40 - ran));
}

#[test]
fn a_run_killed_by_sigkill_and_rerun_runs_at_most_the_jobs_in_flight_twice() {
    let dir = Scratch::new();
    let input = dir.join("in.txt");
    std::fs::write(&input, numbered(40)).unwrap();
    let (journal, log, out) = (dir.join("j"), dir.join("log"), dir.join("out"));
    let mut child = command_run(&input, &journal, &log, &out);
    thread::sleep(Duration::from_millis(900));
    kill(child.id(), "KILL");
    child.wait().unwrap();
    // The commands it left running finish on their own.
    thread::sleep(Duration::from_millis(800));
    assert!(counts(&log).len() >= 4, "{:?}", counts(&log));
    let rerun = command_run(&input, &journal, &log, &out)
        .wait_with_output()
        .unwrap();
    assert_eq!(rerun.status.code(), Some(0));
    let c = counts(&log);
    assert_eq!(
        c.keys().copied().collect::<Vec<_>>(),
        (1..=40).collect::<Vec<_>>()
    );
    let twice = c.values().filter(|&&n| n == 2).count();
    assert!(c.values().all(|&n| n <= 2), "{c:?}");
    assert!(twice <= 4, "{twice} records ran twice (-j 4): {c:?}");
}

/// Plain pace (no command) reading stdin, stopped by signal `sig`, then
/// run again: both outputs together are the input, byte for byte.
fn plain_pace_stopped_then_rerun(sig: &str, status: i32) {
    let dir = Scratch::new();
    let journal = dir.join("j");
    let input = numbered(300);
    let mut child = Drip::pace()
        .args(["--rate", "100/s", "--journal", s(&journal)])
        .spawn();
    let mut stdin = child.stdin.take().unwrap();
    let fed = input.clone();
    thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(&fed);
        thread::sleep(Duration::from_secs(30));
    });
    thread::sleep(Duration::from_millis(700));
    kill(child.id(), sig);
    let first = child.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(status));
    assert!(!first.stdout.is_empty() && first.stdout.len() < input.len());
    let rerun = Drip::pace()
        .args(["--rate", "10k/s", "--journal", s(&journal)])
        .stdin(&input)
        .output();
    assert_eq!(rerun.status.code(), Some(0));
    let mut both = first.stdout;
    both.extend_from_slice(&rerun.stdout);
    assert!(both == input, "{}", String::from_utf8_lossy(&both));
}

#[test]
fn plain_pace_stopped_by_sigint_then_rerun_writes_the_input_exactly_once() {
    plain_pace_stopped_then_rerun("INT", 130);
}

#[test]
fn plain_pace_stopped_by_sigterm_then_rerun_writes_the_input_exactly_once() {
    plain_pace_stopped_then_rerun("TERM", 143);
}

#[test]
fn keys_and_retries_keep_the_record_positions_across_a_stop() {
    // Per-key pacing sends lines out of input order, and a failing record
    // is retried in a slot of its own: the journal still names each by
    // its position. Records 3, 13, 23... fail once, then succeed.
    let dir = Scratch::new();
    let input = dir.join("in.txt");
    let text: String = (1..=30).map(|i| format!("k{} {i}\n", i % 3)).collect();
    std::fs::write(&input, &text).unwrap();
    let (journal, log, out) = (dir.join("j"), dir.join("log"), dir.join("out"));
    let script = format!(
        "set -- $1; n=$2; case $n in *3) [ -e {d}/seen$n ] || {{ touch {d}/seen$n; exit 1; }};; esac; echo $n >> {log}; sleep 0.2",
        d = dir.display(),
        log = log.display()
    );
    let args = |j: &Path| -> Vec<String> {
        [
            "--rate",
            "10/s",
            "--key-field",
            "1",
            "--journal",
            s(j),
            "--retry",
            "1",
            "--retry-delay",
            "50ms",
            "-j",
            "3",
            "--stats=json",
            s(&input),
            "--",
            "sh",
            "-c",
            &script,
            "_",
        ]
        .map(String::from)
        .to_vec()
    };
    let a = args(&journal);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let child = start(&a, &out);
    thread::sleep(Duration::from_millis(900));
    kill(child.id(), "INT");
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(130));
    let rerun = start(&a, &out).wait_with_output().unwrap();
    assert_eq!(
        rerun.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
    let c = counts(&log);
    assert_eq!(
        c.keys().copied().collect::<Vec<_>>(),
        (1..=30).collect::<Vec<_>>()
    );
    assert!(
        c.values().all(|&n| n == 1),
        "a record succeeded twice: {c:?}"
    );
}

#[test]
fn a_journal_from_another_input_is_refused() {
    let tmp = Scratch::new();
    let journal = tmp.join("j");
    let done = Drip::pace()
        .args(["--rate", "10k/s", "--journal", s(&journal)])
        .stdin(numbered(20))
        .output();
    assert_eq!(done.status.code(), Some(0));
    let before = std::fs::read(&journal).unwrap();
    let other: Vec<u8> = (100..120)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    let out = Drip::pace()
        .args(["--rate", "10k/s", "--journal", s(&journal)])
        .stdin(&other)
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--journal") && err.contains("another input"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        before,
        "the journal changed"
    );
}

#[test]
fn a_torn_last_journal_line_is_tolerated() {
    let tmp = Scratch::new();
    let journal = tmp.join("j");
    let input = numbered(10);
    let done = Drip::pace()
        .args(["--rate", "10k/s", "--journal", s(&journal)])
        .stdin(&input)
        .output();
    assert_eq!(done.status.code(), Some(0));
    // As a crash would leave it: 1-5 done, the write of 6-10 cut short.
    let text = std::fs::read_to_string(&journal).unwrap();
    let head = text.lines().next().unwrap();
    std::fs::write(&journal, format!("{head}\n1-5\n6-1")).unwrap();
    let rerun = Drip::pace()
        .args(["--rate", "10k/s", "--journal", s(&journal)])
        .stdin(&input)
        .output();
    let err = String::from_utf8_lossy(&rerun.stderr);
    assert_eq!(rerun.status.code(), Some(0), "{err}");
    assert_eq!(lines(&rerun.stdout), ["6", "7", "8", "9", "10"]);
    // The torn line is gone and the journal reads whole again.
    let again = Drip::pace()
        .args(["--rate", "10k/s", "--journal", s(&journal)])
        .stdin(&input)
        .output();
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(again.stdout, b"");
}

#[test]
fn a_file_that_is_not_a_journal_is_refused_unchanged() {
    let tmp = Scratch::new();
    let cases: [&[u8]; 3] = [
        b"important\ndata\nno newline at end",
        b"no newline at all",
        b"important\ndata\n",
    ];
    for text in cases {
        let notes = tmp.write("notes.txt", text);
        let out = Drip::pace()
            .args(["--rate", "1000/s", "--journal", s(&notes)])
            .stdin(b"1\n")
            .output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("not a pace journal line"), "{err}");
        assert!(out.stdout.is_empty());
        assert_eq!(std::fs::read(&notes).unwrap(), text, "the file changed");
    }
}

#[test]
fn a_journal_that_is_an_input_a_device_or_in_use_is_refused() {
    let tmp = Scratch::new();
    let input = tmp.write("in.txt", &numbered(3));
    let journal = tmp.join("j");
    let cases: [&[&str]; 2] = [
        &["--journal", s(&input), s(&input)],
        &["--journal", "/dev/full"],
    ];
    for args in cases {
        let out = Drip::pace()
            .args([&["--rate", "10/s"], args].concat())
            .stdin(b"1\n")
            .output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("--journal") && err.lines().count() == 1,
            "{err}"
        );
    }
    assert_eq!(std::fs::read(&input).unwrap(), numbered(3));
    // One run at a time: a second run on the same journal is refused.
    let mut first = Drip::pace()
        .args(["--rate", "10/s", "--journal", s(&journal)])
        .spawn();
    thread::sleep(Duration::from_millis(300));
    let second = Drip::pace()
        .args(["--rate", "10/s", "--journal", s(&journal)])
        .stdin(b"1\n")
        .output();
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(err.contains("in use"), "{err}");
    drop(first.stdin.take());
    assert_eq!(first.wait().unwrap().code(), Some(0));
}

#[test]
fn records_of_a_slow_input_are_in_the_journal_before_its_head_is_read() {
    let tmp = Scratch::new();
    // Three lines arrive, go out, and drip is killed: the journal already
    // names them (its head then covers those three), so the rerun on the
    // whole input starts at the fourth.
    let journal = tmp.join("j");
    let mut child = Drip::pace()
        .command()
        .args(["--rate", "100/s", "--journal", s(&journal)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    {
        use std::io::Write;
        stdin.write_all(b"1\n2\n3\n").unwrap();
    }
    thread::sleep(Duration::from_millis(500));
    kill(child.id(), "KILL");
    let first = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(first.stdout, b"1\n2\n3\n");
    let rerun = Drip::pace()
        .args(["--rate", "10k/s", "--journal", s(&journal)])
        .stdin(numbered(20))
        .output();
    assert_eq!(rerun.status.code(), Some(0));
    assert_eq!(
        lines(&rerun.stdout),
        (4..=20).map(|i| i.to_string()).collect::<Vec<_>>()
    );
    // The head grew to 16 records; another input is still told apart.
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.contains("input head: 16 records"), "{text}");
    let other = Drip::pace()
        .args(["--rate", "10k/s", "--journal", s(&journal)])
        .stdin(b"1\n2\n3\n9\n")
        .output();
    assert_eq!(other.status.code(), Some(2));
}

#[test]
fn a_full_backlog_on_a_resumed_run_names_the_input_line_counting_the_skipped() {
    let dir = Scratch::new();
    let journal = dir.join("j");
    let args = [
        "--rate",
        "1/s",
        "--burst",
        "2",
        "--on-full",
        "fail",
        "--journal",
        s(&journal),
    ];
    let input = numbered(10);
    // Line 1 goes out, 2 and 3 wait, 4 finds no room.
    let first = Drip::pace().args(args).stdin(&input).output();
    assert_eq!(first.status.code(), Some(3));
    assert_eq!(lines(&first.stdout), ["1"]);
    let err = String::from_utf8_lossy(&first.stderr);
    assert!(err.contains("backlog full at input line 4:"), "{err}");
    // Line 1 is skipped: 2 goes out, 3 and 4 wait, 5 finds no room.
    let rerun = Drip::pace().args(args).stdin(&input).output();
    assert_eq!(rerun.status.code(), Some(3));
    assert_eq!(lines(&rerun.stdout), ["2"]);
    let err = String::from_utf8_lossy(&rerun.stderr);
    assert!(err.contains("backlog full at input line 5:"), "{err}");
}

#[test]
fn a_last_record_without_its_newline_is_sent_again_once_the_input_grew() {
    for first in [20, 5] {
        // A journal of its own each time.
        let tmp = Scratch::new();
        let journal = tmp.join("j");
        let mut text = numbered(first);
        text.extend_from_slice(b"partial-rec");
        let input = tmp.write("grows.txt", &text);
        let args = ["--rate", "10k/s", "--journal", s(&journal), s(&input)];
        let out = Drip::pace().args(args).stdin(b"").output();
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stdout.ends_with(b"\npartial-rec"));
        text.extend_from_slice(b"ord-completed\nnext\n");
        std::fs::write(&input, &text).unwrap();
        let out = Drip::pace().args(args).stdin(b"").output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(lines(&out.stdout), ["partial-record-completed", "next"]);
        let again = Drip::pace().args(args).stdin(b"").output();
        assert_eq!(again.stdout, b"");
    }
}

#[test]
fn replay_with_a_journal_is_refused_in_one_line() {
    let tmp = Scratch::new();
    let journal = tmp.join("j");
    let csv = tmp.write("log.csv", "time,path\n2024-01-01T00:00:00Z,/a\n");
    let out = Drip::pace()
        .args(["--replay", "--journal", s(&journal), s(&csv)])
        .stdin(b"")
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--journal") && err.contains("--replay"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    assert!(!journal.exists());
}

#[test]
fn a_write_cut_by_a_closed_downstream_is_not_done() {
    let tmp = Scratch::new();
    // 3000-byte lines; downstream reads 70,000 bytes (23 whole lines),
    // stops reading, and closes the pipe half a second later.
    let input: String = (1..200)
        .map(|i| format!("{i:05} {}\n", "x".repeat(2994)))
        .collect();
    let input = tmp.write("wide.txt", &input);
    let journal = tmp.join("j");
    let script = format!(
        "{} pace --no-progress -r 100k/s --journal {} {} | {{ head -c 70000 >/dev/null; sleep 0.5; }}",
        env!("CARGO_BIN_EXE_drip"),
        s(&journal),
        s(&input)
    );
    let st = std::process::Command::new("sh")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert!(st.success());
    let rerun = Drip::pace()
        .args(["--rate", "100k/s", "--journal", s(&journal), s(&input)])
        .stdin(b"")
        .output();
    assert_eq!(rerun.status.code(), Some(0));
    let first: u64 = String::from_utf8_lossy(&rerun.stdout[..5]).parse().unwrap();
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(first <= 24, "the rerun starts at {first}: {text}");
}

/// Positions count records from 1: a done line `0` (or `0-3`) is no
/// journal line, and says which line it is.
#[test]
fn a_done_position_of_zero_is_refused_with_its_line() {
    let tmp = Scratch::new();
    let journal = tmp.join("j");
    let input = numbered(3);
    let done = Drip::pace()
        .args(["--rate", "10k/s", "--journal", s(&journal)])
        .stdin(&input)
        .output();
    assert_eq!(done.status.code(), Some(0));
    let text = std::fs::read_to_string(&journal).unwrap();
    let head = text.lines().next().unwrap();
    for bad in ["0", "0-3"] {
        std::fs::write(&journal, format!("{head}\n1-2\n{bad}\n")).unwrap();
        let out = Drip::pace()
            .args(["--rate", "10k/s", "--journal", s(&journal)])
            .stdin(&input)
            .output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("line 3 is not a pace journal line"), "{err}");
        assert!(out.stdout.is_empty());
    }
}

/// With a command, a last record without its newline ran whole: a rerun
/// on the same input does not run it again, while one whose input grew
/// that record longer runs the longer one.
#[test]
fn a_command_on_an_unterminated_last_record_does_not_run_twice() {
    let tmp = Scratch::new();
    let journal = tmp.join("j");
    let run = |input: &[u8]| {
        Drip::pace()
            .args(["--rate", "10k/s", "-j", "1", "--journal", s(&journal)])
            .args(["--", "echo", "got"])
            .stdin(input)
            .output()
    };
    let first = run(b"a\nb\nlast");
    assert_eq!(first.status.code(), Some(0));
    assert_eq!(lines(&first.stdout), ["got a", "got b", "got last"]);
    let again = run(b"a\nb\nlast");
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(again.stdout, b"");
    let grown = run(b"a\nb\nlast but longer\n");
    assert_eq!(lines(&grown.stdout), ["got last but longer"]);
}
