//! `drip pace -- COMMAND`: real commands started per record at their
//! slots, with the jobs cap, output passed through whole, exit statuses
//! (--failed, --retry, --pause-on) and signals.

use crate::common::*;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

/// The start (and end) instants the commands logged, ns since the epoch,
/// by record number: lines "start N NS" and "end N NS".
fn logged(path: &std::path::Path, what: &str) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut v: Vec<(u64, u64)> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() == 3 && f[0] == what).then(|| (f[1].parse().unwrap(), f[2].parse().unwrap()))
        })
        .collect();
    v.sort_by_key(|&(_, t)| t);
    v
}

/// The most instants of `starts` (ns) in any window of `w` ns.
fn most_in_window(starts: &[u64], w: u64) -> usize {
    let mut most = 0;
    let mut lo = 0;
    for hi in 0..starts.len() {
        while starts[hi] - starts[lo] >= w {
            lo += 1;
        }
        most = most.max(hi - lo + 1);
    }
    most
}

/// A command that logs its start and end into `log` around a sleep: the
/// record is "N SECONDS".
fn sleeper(log: &std::path::Path) -> String {
    format!(
        "set -- $1; echo \"start $1 $(date +%s%N)\" >> {0}; sleep $2; echo \"end $1 $(date +%s%N)\" >> {0}",
        log.display()
    )
}

/// Records "N SECONDS" with seeded random sleeps below `most_ms`.
fn sleeps(n: u64, most_ms: u64) -> Vec<u8> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut out = String::new();
    for i in 1..=n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let ms = x % most_ms;
        out.push_str(&format!("{i} {}.{:03}\n", ms / 1000, ms % 1000));
    }
    out.into_bytes()
}

#[test]
fn starts_keep_the_rate_whatever_the_commands_take() {
    let _alone = timed_alone();
    let tmp = Scratch::new();
    // 200 records at 10/s, each command sleeping 0-3 s: starts obey the
    // schedule, not the commands' durations. -j 40 leaves room for the
    // ~30 that can run at once, so the run keeps its 19.9 s schedule.
    let log = tmp.join("starts.log");
    let script = sleeper(&log);
    let out = run_sleepers("10/s", "40", &script, 200, 3000);
    let starts: Vec<u64> = logged(&log, "start").into_iter().map(|(_, t)| t).collect();
    assert_eq!(starts.len(), 200);
    // At most rate × 1 s + 1 starts in any 1 s window (burst 0).
    assert!(most_in_window(&starts, 1_000_000_000) <= 11, "{starts:?}");
    let span = (starts[199] - starts[0]) as f64 / 1e9;
    assert!(
        (span - 19.9).abs() <= 0.199,
        "first to last start {span:.3}s, not 19.9s ± 1%"
    );
    let s = summary(&out.stderr);
    assert_eq!(s["commands"]["started"], 200);
    assert_eq!(s["commands"]["succeeded"], 200);
    assert!(
        s["commands"]["duration_p99_ms"].as_f64().unwrap() > 2000.0,
        "{s}"
    );
}

/// The window an API counts holds after every stall: at 10/s with -j 4
/// and at 100/s with -j 16, commands mostly quick and one in four slow
/// (up to `most_ms`: the cap stalls the schedule, then frees at once), no
/// window of one second holds more starts than the rate, as each command
/// logged its own start. A start delayed by the cap moves the schedule; it
/// is never made up by a closer one (as `--lateness average` does, which
/// put 11 starts at 10/s in under a second here).
#[test]
fn with_a_command_no_window_holds_more_starts_than_the_rate() {
    for (rate, jobs, n, most_ms, per_s) in [
        ("10/s", "4", 100, 3000, 10),
        ("100/s", "16", 500, 2000, 100),
    ] {
        let tmp = Scratch::new();
        let log = tmp.join("strict.log");
        let out = run_records(rate, jobs, &sleeper(&log), mixed_sleeps(n, most_ms));
        let starts: Vec<u64> = logged(&log, "start").into_iter().map(|(_, t)| t).collect();
        assert_eq!(starts.len() as u64, n);
        // Measured by each command's own clock: a loaded host starts a
        // shell some ms late, so the window is 1 s less 20 ms (a made-up
        // start comes half an interval early).
        let most = most_in_window(&starts, 980_000_000);
        assert!(
            most <= per_s,
            "{most} starts within 980 ms at {rate} -j {jobs}"
        );
        let s = summary(&out.stderr);
        assert!(
            s["rebased_ms"].as_f64().unwrap() > 0.0,
            "the cap never stalled: {s}"
        );
    }
}

/// Records "N SECONDS": one in four sleeps up to `most_ms`, the others up
/// to a fortieth of it (seeded).
fn mixed_sleeps(n: u64, most_ms: u64) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = String::new();
    for i in 1..=n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let most = if x.is_multiple_of(4) {
            most_ms
        } else {
            most_ms / 40
        };
        let ms = (x >> 8) % (most + 1);
        out.push_str(&format!("{i} {}.{:03}\n", ms / 1000, ms % 1000));
    }
    out.into_bytes()
}

/// `pace --rate RATE -j JOBS --stats=json -- sh -c SCRIPT` over `n`
/// records of sleeps up to `most_ms`, which must succeed.
fn run_sleepers(
    rate: &str,
    jobs: &str,
    script: &str,
    n: u64,
    most_ms: u64,
) -> std::process::Output {
    run_records(rate, jobs, script, sleeps(n, most_ms))
}

/// `pace --rate RATE -j JOBS --stats=json -- sh -c SCRIPT` over
/// `records`, which must succeed.
fn run_records(rate: &str, jobs: &str, script: &str, records: Vec<u8>) -> std::process::Output {
    let out = Drip::pace()
        .args([
            "--rate",
            rate,
            "-j",
            jobs,
            "--stats=json",
            "--",
            "sh",
            "-c",
            script,
            "_",
        ])
        .stdin(records)
        .output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn at_the_jobs_cap_the_schedule_waits_then_moves_on_without_a_burst() {
    let tmp = Scratch::new();
    let log = tmp.join("cap.log");
    let script = sleeper(&log);
    let out = run_sleepers("20/s", "3", &script, 24, 1000);
    let starts = logged(&log, "start");
    let ends = logged(&log, "end");
    assert_eq!((starts.len(), ends.len()), (24, 24));
    // Never more than 3 running: at each start, starts so far minus ends.
    for &(_, t) in &starts {
        let started = starts.iter().filter(|&&(_, s)| s <= t).count();
        let ended = ends.iter().filter(|&&(_, e)| e < t).count();
        assert!(started - ended <= 3, "{} running at {t}", started - ended);
    }
    // After a stall, starts resume at the rate: never two within 20 ms
    // (the interval is 50 ms; a burst would put them within a few ms of
    // each other, while a loaded host may delay one shell's first `date`
    // by a few tens of ms).
    let times: Vec<u64> = starts.iter().map(|&(_, t)| t).collect();
    let closest = times.windows(2).map(|w| w[1] - w[0]).min().unwrap();
    assert!(closest >= 20_000_000, "two starts {closest} ns apart");
    let s = summary(&out.stderr);
    assert!(
        s["rebased_ms"].as_f64().unwrap() > 0.0,
        "the cap never stalled: {s}"
    );
}

#[test]
fn braces_take_the_record_and_no_shell_is_involved() {
    let out = Drip::pace()
        .args([
            "--rate",
            "1000/s",
            "-j",
            "1",
            "--",
            "printf",
            "<%s>[%s]\\n",
            "{}",
            "x{}y",
        ])
        .stdin(b"a b\n$(echo no)\n")
        .output();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "<a b>[xa by]\n<$(echo no)>[x$(echo no)y]\n"
    );
    // Without braces the record is the last argument.
    let out = Drip::pace()
        .args(["--rate", "1000/s", "-j", "1", "--", "echo", "got"])
        .stdin(b"one\ntwo\n")
        .output();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got one\ngot two\n");
}

/// `{}` inside a shell's script would make each record shell code: the
/// run is refused before any command starts, with the safe form, which
/// then runs hostile records as plain arguments.
#[test]
fn braces_inside_a_shell_script_are_refused_and_the_safe_form_runs_records_as_data() {
    let tmp = Scratch::new();
    let pwned = tmp.join("pwned");
    let hostile = format!("x; touch {0}\n$(touch {0})\n`touch {0}`\n", pwned.display());
    for shell in [
        vec!["sh", "-c"],
        vec!["bash", "-ec"],
        vec!["/bin/dash", "-c"],
    ] {
        let mut args = vec!["--rate", "1000/s", "--"];
        args.extend(&shell);
        args.extend(["echo {}", "_"]);
        let out = Drip::pace().args(&args).stdin(hostile.as_bytes()).output();
        assert_eq!(out.status.code(), Some(2), "{shell:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("-c 'echo \"$1\"' _ {}"), "{err}");
        assert!(!pwned.exists(), "{shell:?} ran a record as code");
    }
    let out = Drip::pace()
        .args([
            "--rate",
            "1000/s",
            "-j",
            "1",
            "--",
            "sh",
            "-c",
            "echo \"$1\"",
            "_",
            "{}",
        ])
        .stdin(hostile.as_bytes())
        .output();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), hostile);
    assert!(!pwned.exists());
}

#[test]
fn lines_of_commands_running_together_never_mix() {
    // Each command writes its line in three pieces with pauses between:
    // passed through as they come, lines would interleave.
    let script = "printf '%s-aaaaaaaa' $1; sleep 0.05; printf 'bbbbbbbb'; sleep 0.05; printf 'cccc\\n'; printf 'no newline %s' $1";
    let out = Drip::pace()
        .args(["--rate", "200/s", "-j", "8", "--", "sh", "-c", script, "_"])
        .stdin(numbered(16))
        .output();
    assert_eq!(out.status.code(), Some(0));
    let got = lines(&out.stdout);
    assert_eq!(got.len(), 32, "{got:?}");
    for l in &got {
        let whole = l.ends_with("-aaaaaaaabbbbbbbbcccc") || l.starts_with("no newline ");
        assert!(whole, "a mixed line: {l:?}");
    }
}

#[test]
fn keep_order_prints_outputs_in_input_order_and_tag_names_the_record() {
    let out = Drip::pace()
        .args([
            "--rate",
            "100/s",
            "--keep-order",
            "--tag",
            "--",
            "sh",
            "-c",
            "sleep 0.$((6 - $1)); echo done",
            "_",
        ])
        .stdin(numbered(5))
        .output();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "1\tdone\n2\tdone\n3\tdone\n4\tdone\n5\tdone\n"
    );
}

#[test]
fn failed_records_are_kept_and_retries_take_fresh_slots_after_a_backoff() {
    let dir = Scratch::new();
    let failed = dir.join("failed.txt");
    let log = dir.join("tries.log");
    // Record 2 always fails (7); record 3 fails once (5), then succeeds.
    let script = format!(
        "echo \"start $1 $(date +%s%N)\" >> {0}; [ $1 = 2 ] && exit 7; if [ $1 = 3 ]; then [ -e {1}/once ] && exit 0; touch {1}/once; exit 5; fi",
        log.display(),
        dir.display()
    );
    let out = Drip::pace()
        .args([
            "--rate",
            "20/s",
            "--retry",
            "2",
            "--retry-delay",
            "200ms",
            "--failed",
            s(&failed),
            "--stats=json",
            "--",
            "sh",
            "-c",
            &script,
            "_",
        ])
        .stdin(numbered(4))
        .output();
    assert_eq!(out.status.code(), Some(1), "a failure exits 1");
    assert_eq!(std::fs::read_to_string(&failed).unwrap(), "2\n");
    let c = &summary(&out.stderr)["commands"];
    assert_eq!(
        (c["started"].as_u64(), c["succeeded"].as_u64()),
        (Some(4), Some(3))
    );
    assert_eq!(
        (c["failed"].as_u64(), c["retried"].as_u64()),
        (Some(1), Some(3))
    );
    // Record 2's attempts: 200 ms, then 400 ms apart (at least).
    let twos: Vec<u64> = logged(&log, "start")
        .into_iter()
        .filter(|&(n, _)| n == 2)
        .map(|(_, t)| t)
        .collect();
    assert_eq!(twos.len(), 3);
    assert!(
        twos[1] - twos[0] >= 200_000_000 && twos[2] - twos[1] >= 400_000_000,
        "{twos:?}"
    );
    // --retry-on limits which statuses are retried: 7 is not.
    let out = Drip::pace()
        .args([
            "--rate",
            "50/s",
            "--retry",
            "3",
            "--retry-on",
            "5",
            "--stats=json",
            "--",
            "sh",
            "-c",
            "exit 7",
        ])
        .stdin(b"x\n")
        .output();
    assert_eq!(summary(&out.stderr)["commands"]["retried"], 0);
}

#[test]
fn a_rate_limited_status_pauses_the_whole_schedule() {
    let tmp = Scratch::new();
    let log = tmp.join("pause.log");
    let script = format!(
        "echo \"start $1 $(date +%s%N)\" >> {}; [ $1 = 2 ] && exit 75; exit 0",
        log.display()
    );
    let out = Drip::pace()
        .args([
            "--rate",
            "20/s",
            "--pause-on",
            "75",
            "--pause-for",
            "700ms",
            "--",
            "sh",
            "-c",
            &script,
            "_",
        ])
        .stdin(numbered(4))
        .output();
    assert_eq!(out.status.code(), Some(1));
    let t: Vec<u64> = logged(&log, "start").into_iter().map(|(_, t)| t).collect();
    assert_eq!(t.len(), 4);
    // Record 3 was due 50 ms after 2; the pause held it ~700 ms.
    assert!(t[3] - t[1] >= 700_000_000, "{t:?}");
}

/// 20 records of commands sleeping 1 s at 10/s (`-j` and the like in
/// `extra`), stopped by `signals` (each after its delay, ms): the summary
/// and how long the stop took, the commands started and ended, and the
/// records kept in --rejects.
struct Stopped {
    out: std::process::Output,
    stop_took: Duration,
    started: usize,
    ended: usize,
    kept: usize,
}

fn sleepers_stopped_by(extra: &[&str], signals: &[(&str, u64)]) -> Stopped {
    let dir = Scratch::new();
    let rejects = dir.join("rejects.txt");
    let log = dir.join("run.log");
    let script = sleeper(&log);
    let input: Vec<u8> = (1..=20)
        .map(|i| format!("{i} 1\n"))
        .collect::<String>()
        .into_bytes();
    let mut child = Drip::pace()
        .args(["--rate", "10/s", "--rejects", s(&rejects), "--stats=json"])
        .args(extra)
        .args(["--", "sh", "-c", &script, "_"])
        .spawn();
    let mut stdin = child.stdin.take().unwrap();
    thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(&input);
        thread::sleep(Duration::from_secs(30));
    });
    let mut t0 = Instant::now();
    for &(sig, after_ms) in signals {
        thread::sleep(Duration::from_millis(after_ms));
        kill(child.id(), sig);
        t0 = Instant::now();
    }
    let out = child.wait_with_output().unwrap();
    let stop_took = t0.elapsed();
    let kept = std::fs::read_to_string(&rejects).unwrap().lines().count();
    Stopped {
        out,
        stop_took,
        started: logged(&log, "start").len(),
        ended: logged(&log, "end").len(),
        kept,
    }
}

#[test]
fn sigint_waits_for_running_commands_and_keeps_the_rest_in_rejects() {
    let r = sleepers_stopped_by(&["-j", "4"], &[("INT", 250)]);
    assert_eq!(r.out.status.code(), Some(130));
    // It waited for the commands running (they sleep 1 s).
    assert!(
        r.stop_took >= Duration::from_millis(600),
        "{:?}",
        r.stop_took
    );
    assert_eq!(r.started, r.ended, "a command was cut short");
    assert_eq!(r.started + r.kept, 20);
    let c = &summary(&r.out.stderr)["commands"];
    assert_eq!(c["running_at_stop"].as_u64(), Some(r.started as u64));
}

#[test]
fn a_second_sigint_sends_the_running_commands_sigterm() {
    let mut child = Drip::pace()
        .command()
        .args(["--rate", "10/s", "--", "sleep"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(b"30\n30\n");
        thread::sleep(Duration::from_secs(40));
    });
    thread::sleep(Duration::from_millis(400));
    kill(child.id(), "INT");
    thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    kill(child.id(), "INT");
    let status = child.wait().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(status.code(), Some(130));
}

#[test]
fn a_command_that_cannot_run_stops_the_run_with_one_message() {
    let tmp = Scratch::new();
    let out = Drip::pace()
        .args(["--rate", "100/s", "--", "/nonexistent/cmd"])
        .stdin(b"a\nb\n")
        .output();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot run '/nonexistent/cmd'"), "{err}");
    assert!(err.contains("check the command after --"), "{err}");
    // Nothing is lost: the record whose command could not start is kept
    // with the ones after it.
    let rejects = tmp.join("cannot-run.rejects");
    let out = Drip::pace()
        .args([
            "--rate",
            "100/s",
            "--rejects",
            rejects.to_str().unwrap(),
            "--",
            "/nonexistent/cmd",
        ])
        .stdin(b"a\nb\nc\n")
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(&rejects).unwrap(), b"a\nb\nc\n");
}

#[test]
fn one_thread_relays_the_output_of_every_running_command() {
    let mut child = Drip::pace()
        .args([
            "--rate",
            "1000/s",
            "-j",
            "40",
            "--",
            "sh",
            "-c",
            "echo $1; sleep 1",
            "_",
        ])
        .spawn();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, &numbered(40)).unwrap();
    drop(stdin);
    // All 40 run at once by now; drip's own threads stay a handful.
    thread::sleep(Duration::from_millis(600));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let threads: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(lines(&out.stdout).len(), 40);
    assert!(threads <= 8, "{threads} threads for 40 commands");
}

#[test]
fn a_command_that_closes_its_output_early_is_waited_for() {
    let script = "echo $1; exec >&- 2>&-; sleep 0.4; exit 3";
    let out = Drip::pace()
        .args([
            "--rate",
            "100/s",
            "--stats=json",
            "--",
            "sh",
            "-c",
            script,
            "_",
        ])
        .stdin(b"a\n")
        .output();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(lines(&out.stdout), ["a"]);
    let v = summary(&out.stderr);
    assert_eq!(v["commands"]["failed"], 1, "{v}");
    assert!(
        v["commands"]["duration_p50_ms"].as_f64().unwrap() >= 399.0,
        "{v}"
    );
}

#[test]
fn a_command_found_on_path_sees_its_name_as_given() {
    let out = Drip::pace()
        .args([
            "--rate",
            "100/s",
            "--",
            "sh",
            "-c",
            "tr '\\0' ' ' < /proc/$$/cmdline",
            "_",
        ])
        .stdin(b"x\n")
        .output();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        lines(&out.stdout),
        ["sh -c tr '\\0' ' ' < /proc/$$/cmdline _ x "]
    );
}

#[test]
fn sigint_waits_for_the_commands_not_for_pipes_their_background_children_hold() {
    // Each command leaves a child behind holding its output pipes for 8 s.
    let mut child = Drip::pace()
        .args([
            "--rate",
            "100/s",
            "--stats=json",
            "--",
            "sh",
            "-c",
            "sleep 8 & sleep 0.5; echo started $1",
            "_",
        ])
        .spawn();
    let mut stdin = child.stdin.take().unwrap();
    thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(b"1\n2\n");
        thread::sleep(Duration::from_secs(20));
    });
    thread::sleep(Duration::from_millis(200));
    kill(child.id(), "INT");
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(130));
    let mut got = lines(&out.stdout);
    got.sort();
    assert_eq!(got, ["started 1", "started 2"]);
    let c = &summary(&out.stderr)["commands"];
    assert_eq!(c["succeeded"], 2, "{c}");
    let p99 = c["duration_p99_ms"].as_f64().unwrap();
    assert!((400.0..3000.0).contains(&p99), "{c}");
}

/// `n` commands sleeping `secs`, `-j jobs` at once, under an open-file
/// limit of `limit` (soft and hard, set by the shell).
fn under_open_file_limit(limit: u32, n: u32, jobs: u32, secs: &str) -> std::process::Output {
    let script = format!(
        "ulimit -n {limit} && seq 1 {n} | {} pace --no-progress -r 10k/s -j {jobs} --stats=json -- sh -c 'sleep {secs}' _",
        env!("CARGO_BIN_EXE_drip")
    );
    std::process::Command::new("sh")
        .args(["-c", &script])
        .output()
        .unwrap()
}

#[test]
fn as_many_commands_run_at_once_as_their_pipes_fit_under_the_open_file_limit() {
    // 90 commands at once hold 180 pipes under a limit of 256: a pidfd
    // for each as well would not fit.
    let out = under_open_file_limit(256, 90, 90, "0.5");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(summary(&out.stderr)["commands"]["succeeded"], 90, "{err}");
}

/// A record no command can take (a NUL byte) fails alone, kept in
/// --failed, with one line naming it; the run goes on, exits 1 as for any
/// failed record, and a resumed run does not stop at it either.
#[test]
fn a_record_holding_a_nul_byte_fails_alone_and_the_run_goes_on() {
    let tmp = Scratch::new();
    let failed = tmp.join("failed.txt");
    let journal = tmp.join("journal");
    let input: &[u8] = b"a\nb\0c\nd\n";
    let run = || {
        Drip::pace()
            .args(["--rate", "1000/s", "-j", "1", "--journal"])
            .arg(&journal)
            .arg("--failed")
            .arg(&failed)
            .args(["--", "echo", "{}"])
            .stdin(input)
            .output()
    };
    let out = run();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a\nd\n");
    assert_eq!(std::fs::read(&failed).unwrap(), b"b\0c\n");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("input line 2 holds a NUL byte") && err.contains("--failed"),
        "{err}"
    );
    // Rerun: every record is done (the NUL one failed for good).
    let out = run();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"");
}

/// A -j beyond the open-file limit runs fewer at once, with one note,
/// instead of ending the run at the first EMFILE.
#[test]
fn a_jobs_cap_beyond_the_open_file_limit_runs_fewer_at_once() {
    let out = under_open_file_limit(200, 150, 150, "0.3");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("-j 150 is more than the open-file limit allows (200"),
        "{err}"
    );
    assert_eq!(summary(&out.stderr)["commands"]["succeeded"], 150, "{err}");
}

/// `--` with nothing after it names no command: one line, exit 2, and
/// nothing is written.
#[test]
fn a_double_dash_without_a_command_is_an_error() {
    let tmp = Scratch::new();
    let input = tmp.join("in.txt");
    std::fs::write(&input, "a\nb\n").unwrap();
    let out = Drip::pace()
        .args(["--rate", "100/s"])
        .arg(&input)
        .arg("--")
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("nothing follows --"), "{err}");
    assert_eq!(out.stdout, b"");
}

/// GNU timeout (without --foreground) sends its SIGTERM to drip and then
/// to drip's process group: one signal, delivered twice within a few ms.
/// It counts once, so the running commands finish (they are not sent
/// SIGTERM, as after a second signal) and every record is either done or
/// kept, exactly once.
#[test]
fn a_signal_delivered_twice_within_a_few_ms_counts_once() {
    let r = sleepers_stopped_by(&[], &[("TERM", 450), ("TERM", 3)]);
    assert_eq!(r.out.status.code(), Some(143));
    assert!(r.started > 0);
    assert_eq!(r.started, r.ended, "a command was cut short");
    assert_eq!(r.started + r.kept, 20);
}
