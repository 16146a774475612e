//! Logs out of order, end to end: access-log lines late by their request's
//! duration read without reruns, one message with the window a whole log
//! needs, a far-future row blamed alone, and rotated logs named newest
//! first read oldest first.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::common::{Drip, Out, Scratch, s};

/// The first 60 lines of elastic/examples' Apache log: line 4 is 35 s
/// behind line 3, line 48 is 59 s behind the newest line before it.
const APACHE: &str = "fixtures/logs/apache-elastic-examples-60.log";
/// Filebeat's ALB test log: line 2's request_creation_time is 28 s ahead
/// of line 3's (a request that took 10 s, logged when it completed).
const ALB: &str = "fixtures/logs/alb-application-lb-http.log";
const POLICY: [&str; 2] = ["-p", "token-bucket:rate=1/s,burst=5"];

/// `drip audit` under [`POLICY`].
fn audit(args: &[&str]) -> Out {
    Drip::audit().args(POLICY).args(args).run()
}

#[test]
fn access_logs_late_by_their_request_times_read_without_a_window_given() {
    for (log, rows, reordered) in [(APACHE, 60, 55), (ALB, 10, 2)] {
        let v = audit(&[log, "-f", "json"]).json();
        assert_eq!(v["input"]["rows"], rows, "{log}");
        assert_eq!(v["input"]["rows_reordered"], reordered, "{log}");
    }
    let out = audit(&[APACHE]);
    assert!(
        out.stderr
            .contains("re-sorted (--reorder-window 60s, the default for combined lines)"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_window_too_small_is_named_once_with_what_the_whole_log_needs() {
    for (log, needs, skip) in [
        (
            APACHE,
            "the log needs --reorder-window 59s (its latest row, fixtures/logs/apache-elastic-examples-60.log:48, is 59s behind)",
            ":4: ",
        ),
        // The valid row before the late one is not blamed.
        (ALB, "the log needs --reorder-window 28s", ":3: "),
    ] {
        let out = audit(&[log, "--reorder-window", "5s", "-q"]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(needs), "{}", out.stderr);
        assert!(
            out.stderr.contains(&format!("{log}{skip}")),
            "{}",
            out.stderr
        );
        assert!(!out.stderr.contains("--skip-bad"), "{}", out.stderr);
    }
    // The window named reads the log.
    let v = audit(&[APACHE, "--reorder-window", "59s", "-f", "json"]).json();
    assert_eq!(v["input"]["rows"], 60);
    // A pipe cannot be read twice: the row's own lateness is named.
    let text = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(APACHE)).unwrap();
    let out = Drip::audit()
        .args([POLICY[0], POLICY[1], "-", "--reorder-window", "5s", "-q"])
        .stdin(&text)
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("<stdin>:4: ")
            && out.stderr.contains("raise --reorder-window above 35s"),
        "{}",
        out.stderr
    );
}

#[test]
fn only_a_row_no_window_explains_is_offered_to_skip() {
    let tmp = Scratch::new();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(APACHE)).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    // Line 30 written in 2099: no row after it comes near its time.
    lines[29] = lines[29].replace("17/May/2015", "17/May/2099");
    let log = tmp.write("future.log", &(lines.join("\n") + "\n"));
    let out = audit(&[s(&log), "-q"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("future.log:30: this row's time 2099-05-17"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("no row after it comes back to its time"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--skip-bad"), "{}", out.stderr);
    let v = audit(&[s(&log), "--skip-bad", "-f", "json"]).json();
    assert_eq!(
        (
            v["input"]["rows"].as_u64(),
            v["input"]["bad_rows_skipped"].as_u64()
        ),
        (Some(59), Some(1))
    );
}

/// The NASA log (common lines) cut into three rotated files: the oldest
/// gzipped, as logrotate leaves them.
fn rotated(tmp: &Scratch) -> (PathBuf, [PathBuf; 3]) {
    let gz =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nasa_19950801.log.gz"))
            .unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let part = |r: std::ops::Range<usize>| lines[r].join("\n") + "\n";
    let dir = tmp.join("rotated");
    std::fs::create_dir_all(&dir).unwrap();
    let oldest = dir.join("access.log.2.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&oldest).unwrap(),
        flate2::Compression::default(),
    );
    enc.write_all(part(0..10_000).as_bytes()).unwrap();
    enc.finish().unwrap();
    let middle = dir.join("access.log.1");
    std::fs::write(&middle, part(10_000..20_000)).unwrap();
    let newest = dir.join("access.log");
    std::fs::write(&newest, part(20_000..lines.len())).unwrap();
    let all = dir.join("all.log");
    std::fs::write(&all, part(0..lines.len())).unwrap();
    (all, [newest, middle, oldest])
}

#[test]
fn rotated_logs_named_newest_first_read_as_the_log_oldest_first() {
    let tmp = Scratch::new();
    let (all, [newest, middle, oldest]) = rotated(&tmp);
    let d = tmp.join("decisions.csv");
    let audit_files = |files: &[&Path]| {
        let mut args: Vec<&str> = files.iter().map(|f| s(f)).collect();
        args.extend([
            "-p",
            "gcra:rate=2/s,burst=4",
            "--key-column",
            "remote_addr",
            "-f",
            "json",
            "--decisions",
            s(&d),
        ]);
        let out = Drip::audit().args(&args).run();
        let mut v = out.json();
        v["input"]["files"] = serde_json::Value::Null;
        (v, std::fs::read_to_string(&d).unwrap(), out.stderr)
    };
    let (glob, glob_decisions, said) = audit_files(&[&newest, &middle, &oldest]);
    let (one, one_decisions, _) = audit_files(&[&all]);
    assert_eq!(glob, one);
    assert_eq!(one["input"]["rows"], 30_969);
    assert!(glob_decisions == one_decisions, "decisions differ");
    assert!(
        said.contains(&format!(
            "drip: reading the files oldest first, by the times of their first rows: {}, {}, {}",
            s(&oldest),
            s(&middle),
            s(&newest)
        )),
        "{said}"
    );
}

#[test]
fn files_of_one_period_read_one_after_another_are_said_to_overlap() {
    let tmp = Scratch::new();
    let (all, _) = rotated(&tmp);
    let text = std::fs::read_to_string(&all).unwrap();
    let (mut odd, mut even) = (String::new(), String::new());
    for (i, l) in text.lines().enumerate() {
        let to = if i % 2 == 0 { &mut odd } else { &mut even };
        to.push_str(l);
        to.push('\n');
    }
    let a = tmp.write("server-a.log", &odd);
    let b = tmp.write("server-b.log", &even);
    let out = audit(&[s(&b), s(&a), "-q"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("server-b.log:1: "), "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("than a row of {} read before it", s(&a))),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("these overlap in time: pass --merge"),
        "{}",
        out.stderr
    );
    let v = audit(&[s(&b), s(&a), "--merge", "-f", "json"]).json();
    assert_eq!(v["input"]["rows"], 30_969);
}
