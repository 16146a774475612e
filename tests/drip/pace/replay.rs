//! `drip pace --replay` end to end: the built binary, real pipes, the NASA
//! fixture.
//!
//! Timing checks are lower bounds (a busy machine can make drip late, never
//! early); how close the offsets come to the log's is measured in
//! BENCHMARKS.md, not asserted here.

use std::io::Read;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::{Drip, Scratch, summary};

/// Runs `drip pace --replay ARGS` with `input` on stdin.
fn replay(args: &[&str], input: &[u8]) -> Output {
    Drip::pace()
        .arg("--replay")
        .args(args)
        .stdin(input)
        .output()
}

/// The first `n` lines of the NASA log (header included), and the span of
/// their `time` column in seconds.
fn nasa(n: usize) -> (Vec<u8>, u64) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/nasa_19950801.tsv"
    ))
    .unwrap();
    let lines: Vec<&str> = text.lines().take(n + 1).collect();
    let times: Vec<u64> = lines[1..]
        .iter()
        .map(|l| l.split('\t').nth(2).unwrap().parse().unwrap())
        .collect();
    let span = times.iter().max().unwrap() - times[0];
    let mut bytes = lines.join("\n").into_bytes();
    bytes.push(b'\n');
    (bytes, span)
}

#[test]
fn the_nasa_log_at_speed_1000_comes_out_whole_and_no_faster() {
    let (input, span) = nasa(400);
    let started = Instant::now();
    let out = replay(
        &["--speed", "1000", "--input-format", "tsv", "--stats=json"],
        &input,
    );
    let took = started.elapsed();
    assert!(out.status.success(), "{out:?}");
    // Byte for byte, header included, in log order (the slice is sorted).
    assert_eq!(out.stdout, input);
    // The log's span divided by 1000, at least.
    assert!(
        took >= Duration::from_millis(span),
        "{took:?} for {span} s of log"
    );
    let stats = summary(&out.stderr);
    assert_eq!(stats["lines_in"], 401);
    assert_eq!(stats["lines_out"], 401);
    assert_eq!(stats["target"], "replay at 1000x");
}

#[test]
fn lines_within_the_window_are_sorted_and_one_beyond_it_is_an_error() {
    let input = "ts,n\n1000,a\n3500,c\n2000,b\n9000,d\n";
    let started = Instant::now();
    let out = replay(
        &["--time-format", "epoch-ms", "--speed", "4"],
        input.as_bytes(),
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "ts,n\n1000,a\n2000,b\n3500,c\n9000,d\n"
    );
    // 8 s of log at 4x.
    assert!(started.elapsed() >= Duration::from_millis(2_000));
    let dir = Scratch::new();
    let rejects = dir.join("rejects");
    let late = "ts,n\n1000,a\n9000,b\n2000,c\n";
    let out = replay(
        &[
            "--time-format",
            "epoch-ms",
            "--reorder-window",
            "2s",
            "--rejects",
            rejects.to_str().unwrap(),
        ],
        late.as_bytes(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // One error line, last, after the summary of what was left unsent.
    let last = err.lines().last().unwrap();
    assert_eq!(
        err.lines().filter(|l| l.starts_with("drip: ")).count(),
        1,
        "{err}"
    );
    assert!(
        last.starts_with("drip: ") && last.contains("stdin:4: "),
        "{err}"
    );
    assert!(
        last.contains("7s earlier") && last.contains("--reorder-window 2s"),
        "{err}"
    );
    assert!(err.contains("unsent 4"), "{err}");
    // Nothing is lost: what was read and not written is in the rejects.
    let mut kept = String::new();
    std::fs::File::open(&rejects)
        .unwrap()
        .read_to_string(&mut kept)
        .unwrap();
    let written = String::from_utf8_lossy(&out.stdout);
    let mut all: Vec<&str> = written.lines().chain(kept.lines()).collect();
    all.sort_unstable();
    let mut want = vec!["ts,n", "1000,a", "9000,b", "2000,c"];
    want.sort_unstable();
    assert_eq!(all, want);
}

#[test]
fn max_gap_cuts_an_idle_hour() {
    // An hour between two lines, at speed 1, with at most 300 ms waited.
    let input =
        "2026-01-01T10:00:00Z GET /a\n2026-01-01T11:00:00Z GET /b\n2026-01-01T11:00:01Z GET /c\n";
    let started = Instant::now();
    let out = replay(
        &[
            "--max-gap",
            "300ms",
            "--no-header",
            "--delimiter",
            " ",
            "--time-column",
            "0",
            "--stamp",
            "epoch",
        ],
        input.as_bytes(),
    );
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let stamps: Vec<f64> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap().parse().unwrap())
        .collect();
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap())
        .collect();
    assert_eq!(lines, input.lines().collect::<Vec<_>>());
    // 300 ms, then the next 300 ms (a second, cut too), at least. Each line
    // has its place on the timetable from the first: a second line written
    // late does not move the third, so measure both from the first.
    assert!(stamps[1] - stamps[0] >= 0.299, "{stamps:?}");
    assert!(stamps[2] - stamps[0] >= 0.599, "{stamps:?}");
    assert!(started.elapsed() >= Duration::from_millis(600));
    // Not the hour: the test would hang; a minute is far more than enough.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn replay_mistakes_exit_2_with_one_clear_line() {
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--speed", "0"], "ts\n1\n", "invalid speed '0'"),
        (vec!["--speed", "fast"], "ts\n1\n", "invalid speed 'fast'"),
        (vec!["--rate", "5/s"], "ts\n1\n", "--rate"),
        (
            vec!["--time-column", "when"],
            "ts,x\n1,2\n",
            "no time column 'when'",
        ),
        (
            vec!["--time-format", "epoch-s"],
            "ts,x\n1,a\nsoon,b\n",
            "stdin:3: bad timestamp 'soon'",
        ),
        (vec!["--input-format", "nginx"], "x\n", "--log-format"),
        (vec!["--tz", "Mars/Olympus"], "ts\n1\n", "--tz"),
    ];
    for (args, input, needle) in cases {
        let out = replay(&args, input.as_bytes());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        // One error line (after the summary when lines were read).
        let errors: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("drip: ") && !l.contains("detected"))
            .collect();
        assert_eq!(errors.len(), 1, "{args:?}: {err}");
        assert_eq!(Some(errors[0]), err.lines().last(), "{args:?}: {err}");
        assert!(
            errors[0].contains(needle),
            "{args:?}: want {needle:?} in {err}"
        );
        assert!(!err.contains("panicked"));
    }
}

/// A compressed log on stdin is named in one printable line with the
/// command that decompresses it, not quoted as raw bytes; a
/// tab-separated one is read without being told.
#[test]
fn replay_names_compressed_input_and_reads_tabs() {
    let gz = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/nasa_19950801.log.gz"
    ))
    .unwrap();
    let out = replay(&["--speed", "100000"], &gz);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.contains("standard input is gzip-compressed") && last.contains("zcat"),
        "{err}"
    );
    assert!(
        err.chars().all(|c| c == '\n' || !c.is_control()) && !err.contains('\u{fffd}'),
        "{err:?}"
    );
    assert!(err.len() < 1000, "{err}");

    let (input, _) = nasa(20);
    let out = replay(&["--speed", "1000000"], &input);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("reading stdin as tab-separated"), "{err}");
    assert_eq!(out.stdout, input);
}
