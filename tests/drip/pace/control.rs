//! `drip pace --control FIFO` and SIGUSR1 end to end: the built binary, a
//! real FIFO, real signals.
//!
//! Timing checks are lower bounds only (gaps, spans): a busy machine can
//! make drip late, never early.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{Drip, Scratch, kill, numbered, s, spawn_timed, summary};

/// Waits until drip has made its FIFO, then writes `command` to it.
fn send(fifo: &Path, command: &str) {
    send_bare(fifo, &format!("{command}\n"));
}

#[test]
fn a_pause_leaves_a_hole_and_then_no_burst() {
    let dir = Scratch::new();
    let fifo = dir.join("ctl");
    let t = spawn_timed(&[
        "--rate",
        "10/s",
        "--control",
        fifo.to_str().unwrap(),
        "--stats=json",
    ])
    .fed(numbered(20));
    thread::sleep(Duration::from_millis(450));
    send(&fifo, "pause 1s");
    let (got, code, err) = t.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(got.len(), 20);
    assert!(
        err.contains("drip: paused for 1s: a control command"),
        "{err}"
    );
    // One hole of the pause plus most of an interval; every other gap is
    // at least a quarter interval: no burst after the pause.
    let gaps: Vec<Duration> = got.windows(2).map(|w| w[1].0 - w[0].0).collect();
    let (hole_at, hole) = gaps
        .iter()
        .enumerate()
        .max_by_key(|(_, g)| **g)
        .map(|(i, g)| (i, *g))
        .unwrap();
    assert!(hole >= Duration::from_millis(1_000), "hole {hole:?}");
    for (i, g) in gaps.iter().enumerate() {
        if i != hole_at {
            assert!(*g >= Duration::from_millis(25), "gap {i}: {g:?}");
        }
    }
    // The lines after the hole keep the rate: n − 1 intervals at least.
    let after = &got[hole_at + 1..];
    assert!(after.len() >= 5, "paused too late: {}", after.len());
    let span = after.last().unwrap().0 - after[0].0;
    assert!(
        span >= Duration::from_millis(100 * (after.len() as u64 - 1) - 5),
        "{span:?}"
    );
    // 19 intervals plus the pause, at least.
    assert!(got[19].0 - got[0].0 >= Duration::from_millis(2_895));
    let stats = summary(&err);
    assert_eq!(stats["paused_ms"], 1000.0);
    assert_eq!(stats["lines_out"], 20);
    // The FIFO drip made is gone.
    assert!(!fifo.exists());
}

#[test]
fn pause_until_resume_and_a_slower_rate() {
    let dir = Scratch::new();
    let fifo = dir.join("ctl");
    let t = spawn_timed(&["--rate", "20/s", "--control", fifo.to_str().unwrap()]).fed(numbered(20));
    thread::sleep(Duration::from_millis(300));
    send(&fifo, "pause");
    thread::sleep(Duration::from_millis(600));
    send(&fifo, "rate 4/s");
    send(&fifo, "resume");
    let (got, code, err) = t.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(got.len(), 20);
    assert!(err.contains("shaper now rate=4/s,burst=0"), "{err}");
    assert!(err.contains("drip: control: resumed"), "{err}");
    let gaps: Vec<Duration> = got.windows(2).map(|w| w[1].0 - w[0].0).collect();
    let hole_at = gaps
        .iter()
        .enumerate()
        .max_by_key(|(_, g)| **g)
        .map(|(i, _)| i)
        .unwrap();
    assert!(gaps[hole_at] >= Duration::from_millis(550), "{gaps:?}");
    // After the resume: 4/s, 250 ms apart (a hiccup can take back at most
    // half of one, and the reader's own delays a little more: the bound is
    // a quarter interval), and n − 1 intervals in all.
    let after = &got[hole_at + 1..];
    for g in &gaps[hole_at + 1..] {
        assert!(*g >= Duration::from_millis(62), "{g:?} in {gaps:?}");
    }
    let span = after.last().unwrap().0 - after[0].0;
    assert!(span >= Duration::from_millis(250 * (after.len() as u64 - 1) - 5));
}

#[test]
fn sigusr1_prints_a_stats_line_and_the_run_goes_on() {
    let t = spawn_timed(&["--rate", "10/s", "--stats=json"]).fed(numbered(10));
    thread::sleep(Duration::from_millis(350));
    kill(t.child.id(), "USR1");
    let (got, code, err) = t.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(got.len(), 10);
    let line = err
        .lines()
        .find(|l| l.starts_with("drip pace: 10 in, "))
        .unwrap_or_else(|| panic!("no stats line: {err}"));
    assert!(line.contains(" out, 0 dropped, "), "{line}");
    assert!(
        line.contains(" waiting; ") && line.contains("wait p50"),
        "{line}"
    );
    assert_eq!(summary(&err)["lines_out"], 10);
}

#[test]
fn control_mistakes_are_reported_and_the_run_goes_on() {
    let dir = Scratch::new();
    let fifo = dir.join("ctl");
    // An existing FIFO is used, and left in place.
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    let t = spawn_timed(&[
        "--policy",
        "token-bucket:rate=10/s,burst=1",
        "--control",
        fifo.to_str().unwrap(),
    ])
    .fed(numbered(8));
    thread::sleep(Duration::from_millis(100));
    send(&fifo, "faster please");
    send(&fifo, "rate 1/s");
    send(&fifo, "stats");
    let (got, code, err) = t.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(got.len(), 8);
    assert!(
        err.contains("unknown command 'faster please'; valid: "),
        "{err}"
    );
    assert!(err.contains("rate and burst apply to the shaper"), "{err}");
    assert!(err.contains(" in, "), "{err}");
    assert!(!err.contains("panicked"));
    assert!(fifo.exists());
}

#[test]
fn a_control_path_that_is_not_a_fifo_is_refused() {
    let dir = Scratch::new();
    let file = dir.join("plain");
    std::fs::write(&file, "x").unwrap();
    let out = Drip::new()
        .command()
        .args(["pace", "--rate", "5/s", "--control"])
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("is not a FIFO"), "{err}");
    // A directory that does not exist: one line too.
    let out = Drip::new()
        .command()
        .args(["pace", "--rate", "5/s", "--control"])
        .arg(dir.join("no/such/ctl"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot create the control FIFO"), "{err}");
}

/// Writes `command` to the FIFO as it stands, with no newline, and closes it.
fn send_bare(fifo: &Path, command: &str) {
    let started = Instant::now();
    while !fifo.exists() {
        assert!(started.elapsed() < Duration::from_secs(10), "no FIFO");
        thread::sleep(Duration::from_millis(5));
    }
    let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
    f.write_all(command.as_bytes()).unwrap();
}

#[test]
fn a_command_without_a_newline_ends_when_its_writer_closes() {
    let dir = Scratch::new();
    let fifo = dir.join("ctl");
    let t = spawn_timed(&["--rate", "10/s", "--control", fifo.to_str().unwrap()]).fed(numbered(12));
    thread::sleep(Duration::from_millis(100));
    // `printf 'stats' > ctl` twice: two commands, never one 'statsstats'.
    send_bare(&fifo, "stats");
    thread::sleep(Duration::from_millis(200));
    send_bare(&fifo, "stats");
    let (got, code, err) = t.finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(got.len(), 12);
    assert!(!err.contains("unknown command"), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains(" in, ")).count(),
        2,
        "{err}"
    );
}

#[test]
fn a_removed_fifo_is_reported_once_and_created_again() {
    use std::os::unix::fs::FileTypeExt;
    let dir = Scratch::new();
    let ctl = dir.join("ctl");
    let mut child = Drip::pace()
        .args(["--rate", "10/s", "--control", s(&ctl)])
        .spawn();
    let fifo =
        |p: &std::path::Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_fifo());
    let t0 = std::time::Instant::now();
    while !fifo(&ctl) && t0.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::remove_file(&ctl).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    assert!(fifo(&ctl), "the FIFO was not created again");
    // A plain file in its place (a writer that found no FIFO) ends live
    // control with a message, and is left alone.
    std::fs::remove_file(&ctl).unwrap();
    std::fs::write(&ctl, "pause\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("was removed; created it again").count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("was replaced by something that is not a FIFO"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&ctl).unwrap(), "pause\n");
}
