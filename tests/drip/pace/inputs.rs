//! What `drip pace` reads: files named as arguments (as cat reads them),
//! keys from JSON lines, a key that matches nothing, and an output that is
//! the input's own pipe.

use crate::common::*;

#[test]
fn files_are_read_in_order_with_stdin_as_dash() {
    let tmp = Scratch::new();
    let a = tmp.write("in-a.txt", "a1\na2");
    let b = tmp.write("in-b.txt", "b1\n");
    let out = Drip::pace()
        .args(["--rate", "1000/s", s(&a), "-", s(&b)])
        .stdin(b"s1\n")
        .output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A file's last line without a newline ends at the file's end.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a1\na2\ns1\nb1\n");
    // A command still comes after --.
    let out = Drip::pace()
        .args(["--rate", "1000/s", "-j", "1", s(&b), "--", "echo", "got"])
        .stdin(b"")
        .output();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got b1\n");
}

#[test]
fn a_missing_file_or_an_output_onto_an_input_stops_before_anything_is_sent() {
    let tmp = Scratch::new();
    let out = Drip::pace()
        .args(["--rate", "10/s", "/nonexistent/in.txt"])
        .stdin(b"")
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open '/nonexistent/in.txt'"));
    let a = tmp.write("in-c.txt", "x\n");
    let out = Drip::pace()
        .args(["--rate", "10/s", s(&a), "--rejects", s(&a)])
        .stdin(b"")
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "x\n");
}

#[test]
fn an_output_that_is_the_input_pipe_is_refused() {
    for path in ["/dev/stdin", "/proc/self/fd/0"] {
        let mut child = Drip::pace()
            .args(["--rate", "10/s", "--rejects", path])
            .spawn();
        // The input is a pipe that stays open: a run that took this
        // output would hang, feeding itself.
        let stdin = child.stdin.take().unwrap();
        let t0 = std::time::Instant::now();
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        assert_eq!(out.status.code(), Some(2), "{path}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("same file as standard input"), "{path}: {err}");
    }
}

#[test]
fn keys_come_from_a_json_path_whatever_the_spacing_and_order() {
    let input = concat!(
        "{\"customer\": \"a\", \"n\": 1}\n",
        "{\"n\":2,\"customer\":\"b\"}\n",
        "{ \"customer\" : \"a\" , \"n\" : 3 }\n",
        "{\"n\":4}\n",
    );
    let out = Drip::pace()
        .args(["--rate", "1000/s", "--key-json", "customer", "--stats=json"])
        .stdin(input.as_bytes())
        .output();
    assert_eq!(out.status.code(), Some(0));
    let k = &summary(&out.stderr)["keys"];
    assert_eq!(k["seen"], 2);
    assert_eq!(
        (k["with_key"].as_u64(), k["without_key"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(k["busiest"][0]["key"], "a");
    assert_eq!(k["busiest"][0]["lines"], 2);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
}

#[test]
fn a_key_that_matches_nothing_is_reported_once() {
    // 1500 lines: the warning comes at the 1000th, once.
    let input = "{\"n\": 1}\n".repeat(1500);
    let out = Drip::pace()
        .args(["--rate", "100k/s", "--key-json", "customer"])
        .stdin(input.as_bytes())
        .output();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("found no key in the first 1000 line(s)")
            .count(),
        1,
        "{err}"
    );
    // A shorter run is told at its end.
    let out = Drip::pace()
        .args(["--rate", "1000/s", "--key", "^id=(\\d+)"])
        .stdin(b"x\ny\n")
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--key '^id=(\\d+)' found no key in the first 2 line(s)"),
        "{err}"
    );
    assert!(err.contains("--key-json"), "{err}");
}

/// Records read from files were all there at the start: the summary's
/// waits are each record's lateness against its slot (small), not its
/// place in the file (the last of 20 at 20/s would have waited 950 ms);
/// from stdin they stay the time since each line was read.
#[test]
fn file_input_reports_lateness_against_the_slot() {
    let tmp = Scratch::new();
    let input = tmp.join("in.txt");
    std::fs::write(&input, numbered(20)).unwrap();
    let out = Drip::pace()
        .args(["--rate", "20/s", "--stats=json"])
        .arg(&input)
        .output();
    assert_eq!(out.status.code(), Some(0));
    let s = summary(&out.stderr);
    assert_eq!(s["wait_from"], "slot", "{s}");
    assert!(s["wait_max_ms"].as_f64().unwrap() < 200.0, "{s}");
    let piped = Drip::pace()
        .args(["--rate", "20/s", "--stats=json"])
        .stdin(numbered(20))
        .output();
    let s = summary(&piped.stderr);
    assert!(s.get("wait_from").is_none(), "{s}");
    assert!(s["wait_max_ms"].as_f64().unwrap() >= 900.0, "{s}");
    let text = Drip::pace()
        .arg(&input)
        .args(["--rate", "20/s", "--stats"])
        .output();
    let err = String::from_utf8_lossy(&text.stderr);
    assert!(
        err.contains("  late     p50 ") && err.contains("behind each record's slot"),
        "{err}"
    );
}
