//! `drip pace --key`: per-key pacing end to end, with the built binary and
//! real pipes.
//!
//! Timing checks are lower bounds and orders only: a busy machine can make
//! drip late, never early. A late write (a hiccup shorter than the stall
//! threshold) is made up, so an observed gap can be shorter than the
//! interval by up to that threshold; spans over several intervals cannot.

use std::io::{Read, Write};
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{Drip, Scratch, kill, lines, spawn_timed, stderr_of, summary};

/// Lines for `hosts`, `n` each, interleaved: a URL per line.
fn urls(hosts: &[&str], n: usize) -> String {
    (1..=n)
        .flat_map(|i| hosts.iter().map(move |h| format!("https://{h}/page/{i}\n")))
        .collect()
}

const HOST: &str = "^https?://([^/:]+)";

#[test]
fn three_hosts_at_2_per_s_under_a_global_5_per_s() {
    let mut t = spawn_timed(&[
        "--key",
        HOST,
        "-p",
        "shaper:rate=2/s + shaper:rate=5/s,key=none",
        "--stats=json",
    ]);
    let hosts = ["a.example", "b.example", "c.example"];
    t.child
        .stdin
        .take()
        .unwrap()
        .write_all(urls(&hosts, 4).as_bytes())
        .unwrap();
    let got = t.reader.join().unwrap();
    assert!(t.child.wait().unwrap().success());
    assert_eq!(got.len(), 12);
    // Global: 11 intervals of 200 ms at least; no two lines within a
    // quarter interval (the global shaper keeps half of one).
    assert!(got[11].0 - got[0].0 >= Duration::from_millis(2_195));
    for w in got.windows(2) {
        assert!(w[1].0 - w[0].0 >= Duration::from_millis(50), "{w:?}");
    }
    for h in hosts {
        let mine: Vec<&(Instant, String)> = got.iter().filter(|(_, l)| l.contains(h)).collect();
        let pages: Vec<String> = mine
            .iter()
            .map(|(_, l)| l.rsplit('/').next().unwrap().to_string())
            .collect();
        assert_eq!(pages, ["1", "2", "3", "4"], "{h} keeps its order");
        // Three intervals of 500 ms for each host, and no two of its lines
        // closer than the interval less the 200 ms a hiccup may take back.
        assert!(mine[3].0 - mine[0].0 >= Duration::from_millis(1_495), "{h}");
        for w in mine.windows(2) {
            assert!(w[1].0 - w[0].0 >= Duration::from_millis(250), "{h}: {w:?}");
        }
    }
    let stats = summary(stderr_of(&mut t.child));
    assert_eq!(stats["lines_out"], 12);
    assert_eq!(stats["keys"]["seen"], 3);
    assert_eq!(stats["keys"]["without_key"], 0);
    assert_eq!(stats["keys"]["busiest"][0]["lines"], 4);
}

#[test]
fn a_waiting_host_never_blocks_an_idle_one() {
    let mut t = spawn_timed(&["--key", HOST, "--rate", "2/s"]);
    let mut stdin = t.child.stdin.take().unwrap();
    // Six lines for a busy host: 2.5 s of waiting at 2/s.
    stdin
        .write_all(urls(&["busy.example"], 6).as_bytes())
        .unwrap();
    thread::sleep(Duration::from_millis(200));
    stdin.write_all(b"https://idle.example/now\n").unwrap();
    drop(stdin);
    let got = t.reader.join().unwrap();
    assert!(t.child.wait().unwrap().success());
    let order: Vec<&str> = got.iter().map(|(_, l)| l.as_str()).collect();
    let idle = order.iter().position(|l| l.contains("idle")).unwrap();
    // Written at 0.2 s, it leaves before busy's third line (due at 1 s),
    // not after all six (2.5 s).
    assert!(idle <= 2, "{order:?}");
    assert_eq!(got.len(), 7);
}

#[test]
fn keep_order_keeps_input_order() {
    let input = "a 1\na 2\nb 1\na 3\nc 1\n";
    let started = Instant::now();
    let out = Drip::pace()
        .args(["--key-field", "1", "--rate", "5/s", "--keep-order"])
        .stdin(input.as_bytes())
        .output();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(lines(&out.stdout), ["a 1", "a 2", "b 1", "a 3", "c 1"]);
    // a's three lines are two intervals apart at least.
    assert!(started.elapsed() >= Duration::from_millis(395));
    // Without it, b and c overtake a.
    let out = Drip::pace()
        .args(["--key-field", "1", "--rate", "5/s"])
        .stdin(input.as_bytes())
        .output();
    assert_eq!(lines(&out.stdout), ["a 1", "b 1", "c 1", "a 2", "a 3"]);
}

#[test]
fn key_fields_split_on_a_separator_and_lines_without_a_key_are_paced_together() {
    let input = "x,k1\ny,k2\nz\nw\n";
    let started = Instant::now();
    let out = Drip::pace()
        .args([
            "--key-field",
            "2",
            "--field-sep",
            ",",
            "--rate",
            "4/s",
            "--stats=json",
        ])
        .stdin(input.as_bytes())
        .output();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(lines(&out.stdout), ["x,k1", "y,k2", "z", "w"]);
    // z and w have no second field: one bucket, 250 ms apart.
    assert!(started.elapsed() >= Duration::from_millis(245));
    let stats = summary(&out.stderr);
    assert_eq!(stats["keys"]["seen"], 2);
    assert_eq!(stats["keys"]["without_key"], 2);
}

#[test]
fn drop_mode_per_key_accounts_for_every_line() {
    let dir = Scratch::new();
    let rejects = dir.join("rejects");
    let out = Drip::pace()
        .args([
            "--key-field",
            "1",
            "--rate",
            "1/s",
            "--on-full",
            "drop",
            "--rejects",
            rejects.to_str().unwrap(),
            "--stats=json",
        ])
        .stdin(b"a 1\na 2\nb 1\na 3\nb 2\nc 1\n")
        .output();
    assert!(out.status.success(), "{out:?}");
    // Each key's first line goes; the others find their key busy.
    assert_eq!(lines(&out.stdout), ["a 1", "b 1", "c 1"]);
    assert_eq!(
        lines(&std::fs::read(&rejects).unwrap()),
        ["a 2", "a 3", "b 2"]
    );
    let stats = summary(&out.stderr);
    assert_eq!(stats["lines_in"], 6);
    assert_eq!(stats["dropped"], 3);
    assert_eq!(stats["keys"]["busiest"][0]["key"], "a");
    assert_eq!(stats["keys"]["busiest"][0]["lines"], 3);
}

#[test]
fn max_pending_stops_reading_and_a_signal_accounts_for_every_line() {
    let dir = Scratch::new();
    let rejects = dir.join("rejects");
    let mut child = Drip::pace()
        .command()
        .args(["--key-field", "1", "--rate", "2/s", "--max-pending", "10"])
        .args(["--stats=json", "--rejects", rejects.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let total = 20_000; // ~2 MB for two keys: far more than pipe and inbox hold.
    let feeder = thread::spawn(move || {
        let pad = "x".repeat(90);
        for i in 0..total {
            let key = if i % 2 == 0 { "even" } else { "odd" };
            if stdin
                .write_all(format!("{key} {i} {pad}\n").as_bytes())
                .is_err()
            {
                return i;
            }
        }
        total
    });
    let drain = thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    thread::sleep(Duration::from_millis(1_500));
    assert!(!feeder.is_finished(), "the writer was never blocked");
    kill(child.id(), "TERM");
    assert_eq!(child.wait().unwrap().code(), Some(143));
    let written = feeder.join().unwrap();
    let out = lines(&drain.join().unwrap());
    let stats = summary(stderr_of(&mut child));
    let unsent = lines(&std::fs::read(&rejects).unwrap());
    let lines_in = stats["lines_in"].as_u64().unwrap();
    assert_eq!(stats["lines_out"], out.len());
    assert_eq!(stats["unsent"], unsent.len());
    assert_eq!(lines_in as usize, out.len() + unsent.len());
    // Read: the pending ten, the inbox (64 KiB) and a chunk; not 2 MB.
    assert!(lines_in < 1_500, "read {lines_in} lines");
    assert!(written < total);
    // The unsent lines are in input order: resubmitting them keeps order.
    let numbers: Vec<u64> = unsent
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
}

#[test]
fn bad_key_options_exit_2_with_one_clear_line() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--rate", "5/s", "--key", "(unclosed"],
            "invalid --key '(unclosed'",
        ),
        (vec!["--rate", "5/s", "--key-field", "0"], "--key-field"),
        (
            vec!["--rate", "5/s", "--key-field", "1", "--field-sep", "ab"],
            "invalid --field-sep 'ab'",
        ),
        (vec!["--rate", "5/s", "--field-sep", ","], "--key-field"),
        (vec!["--rate", "5/s", "--keep-order"], "--keep-order"),
        (
            vec!["--rate", "5/s", "--key", "(.)", "--key-field", "1"],
            "--key-field",
        ),
        (
            vec!["--rate", "5/s", "--key-field", "1", "--max-pending", "0"],
            "--max-pending",
        ),
        (
            vec!["--key", "(.)", "-p", "gcra:rate=5/s,key=client"],
            "key=client",
        ),
    ];
    for (args, needle) in cases {
        let out = Drip::pace().args(&args).stdin(b"x\n").output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("drip: "), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: want {needle:?} in {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_last_record_without_its_newline_is_never_glued_to_the_next() {
    let out = Drip::pace()
        .args(["--rate", "50/s", "--key-field", "1"])
        .stdin(b"a 1\na 2\na 3\nb 4")
        .output();
    assert_eq!(out.status.code(), Some(0));
    // b's record goes out second: it gets a newline, as another follows.
    assert_eq!(out.stdout, b"a 1\nb 4\na 2\na 3\n");
    // Written last, it goes out as it came.
    let out = Drip::pace()
        .args(["--rate", "50/s", "--key-field", "1"])
        .stdin(b"a 1\nb 4")
        .output();
    assert_eq!(out.stdout, b"a 1\nb 4");
}
