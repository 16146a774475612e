//! `--merge` end to end: logs of one period from several servers, each in
//! time order, read as one log merged by time, against the same rows
//! concatenated and sorted into one file.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::common::{Drip, Scratch, s};

/// A request: epoch milliseconds, client.
type Row = (u64, String);

/// `servers` logs of the same minutes, each in time order, with ties
/// inside a file and across files, and clients every server sees.
fn servers(servers: usize, rows: usize, step_ms: &[u64]) -> Vec<Vec<Row>> {
    // Seeded: the same logs every run.
    let mut rng = drip::testing::Rng(0x2545_f491_4f6c_dd1d);
    let mut next = move || rng.next();
    (0..servers)
        .map(|f| {
            let mut t = 1_714_521_600_000 + f as u64 * 7;
            (0..rows)
                .map(|_| {
                    t += step_ms[(next() % step_ms.len() as u64) as usize];
                    (t, format!("c{}", next() % 30))
                })
                .collect()
        })
        .collect()
}

/// The same rows as one log: stably sorted by time, so ties keep file
/// order, then line order (what `--merge` promises).
fn one_log(files: &[Vec<Row>]) -> Vec<Row> {
    let mut all: Vec<Row> = files.concat();
    all.sort_by_key(|r| r.0);
    all
}

fn csv(tmp: &Scratch, name: &str, rows: &[Row]) -> PathBuf {
    let mut text = String::from("ts,client\n");
    for (t, c) in rows {
        text.push_str(&format!("{t},{c}\n"));
    }
    let p = tmp.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn gz(tmp: &Scratch, name: &str, rows: &[Row]) -> PathBuf {
    let plain = std::fs::read(csv(tmp, name, rows)).unwrap();
    let p = tmp.join(format!("{name}.gz"));
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&p).unwrap(),
        flate2::Compression::default(),
    );
    enc.write_all(&plain).unwrap();
    enc.finish().unwrap();
    p
}

const POLICIES: [&str; 7] = [
    "--quiet",
    "--key-column",
    "client",
    "-p",
    "gcra:rate=5/s,burst=3",
    "-p",
    "shaper:rate=80/s,burst=40,key=none,label=global",
];

/// The JSON report without the input's file names, and the decisions file.
fn audit(files: &[&Path], extra: &[&str]) -> (serde_json::Value, String) {
    let (out, decisions) = Drip::audit()
        .args(files)
        .args(POLICIES)
        .args(extra)
        .args(["-f", "json", "--timeline", "10s"])
        .run_with_decisions();
    let mut report = out.json();
    report["input"]["files"] = serde_json::Value::Null;
    (report, decisions)
}

#[test]
fn four_sorted_files_merge_into_the_report_of_one_sorted_file() {
    let tmp = Scratch::new();
    let logs = servers(4, 2500, &[0, 0, 1, 3, 20, 90]);
    let one = csv(&tmp, "one.csv", &one_log(&logs));
    let parts: Vec<PathBuf> = logs
        .iter()
        .enumerate()
        .map(|(i, rows)| match i {
            // A gzip file among plain ones.
            2 => gz(&tmp, &format!("s{i}.csv"), rows),
            _ => csv(&tmp, &format!("s{i}.csv"), rows),
        })
        .collect();
    let refs: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
    let (merged, merged_decisions) = audit(&refs, &["--merge"]);
    let (single, single_decisions) = audit(&[&one], &[]);
    assert_eq!(merged, single);
    assert_eq!(merged["input"]["rows"], 10_000);
    assert!(merged_decisions.lines().count() > 20_000);
    // Byte for byte: rows are numbered in merged order.
    assert!(merged_decisions == single_decisions, "decisions differ");
    // Some requests were refused, so the order the rows met the policies
    // in mattered.
    let dropped = merged["policies"][0]["dropped"].as_u64().unwrap();
    assert!(dropped > 0, "{merged}");

    // The same files one after another (oldest first: s0, then s2, whose
    // first row is the next earliest): the second goes back in time.
    let mut args: Vec<&str> = refs.iter().map(|f| s(f)).collect();
    args.extend(POLICIES);
    let out = Drip::audit().args(&args).run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let line = out.stderr.trim_end();
    assert!(line.contains(&format!("{}:2: ", s(&parts[2]))), "{line}");
    assert!(
        line.contains(&format!("a row of {} read before it", s(&parts[0]))),
        "{line}"
    );
    assert!(line.contains("beyond the reorder window of 5s"), "{line}");
    assert!(
        line.contains("these overlap in time: pass --merge"),
        "{line}"
    );
}

#[test]
fn a_row_out_of_order_in_one_file_beyond_the_window_names_that_file() {
    let tmp = Scratch::new();
    let mut logs = servers(3, 400, &[0, 5, 40]);
    // Line 302 of the second file (its header is line 1) is 6 s behind
    // the rows before it in that file.
    let late = logs[1][299].0 - 6_000;
    logs[1][300].0 = late;
    let parts: Vec<PathBuf> = logs
        .iter()
        .enumerate()
        .map(|(i, rows)| csv(&tmp, &format!("o{i}.csv"), rows))
        .collect();
    let mut args: Vec<&str> = parts.iter().map(|f| s(f)).collect();
    args.extend(POLICIES);
    args.push("--merge");
    let out = Drip::audit().args(&args).run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let line = out.stderr.trim_end();
    assert!(line.contains(&format!("{}:302: ", s(&parts[1]))), "{line}");
    // The whole file was read for the window it needs.
    assert!(line.contains("the log needs --reorder-window 6s"), "{line}");
    // Within the window, the file's rows are re-sorted before the merge.
    args.extend(["--reorder-window", "10s", "-f", "json"]);
    let out = Drip::audit().args(&args).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["input"]["rows"], 1200);
    assert!(v["input"]["rows_reordered"].as_u64().unwrap() >= 1, "{v}");
}

#[test]
fn bad_rows_name_their_file_or_are_skipped_and_counted() {
    let tmp = Scratch::new();
    let logs = servers(3, 300, &[0, 10, 30]);
    let mut parts: Vec<PathBuf> = logs
        .iter()
        .enumerate()
        .map(|(i, rows)| csv(&tmp, &format!("b{i}.csv"), rows))
        .collect();
    // Line 101 of the third file is not a time.
    let mut text = std::fs::read_to_string(&parts[2]).unwrap();
    let at = text.match_indices('\n').nth(99).unwrap().0 + 1;
    text.insert_str(at, "yesterday,c1\n");
    parts[2] = tmp.join("b2.csv");
    std::fs::write(&parts[2], text).unwrap();
    let refs: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
    let mut args: Vec<&str> = refs.iter().map(|f| s(f)).collect();
    args.extend(POLICIES);
    args.push("--merge");
    let out = Drip::audit().args(&args).run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("{}:101: ", s(&parts[2]))),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("yesterday"), "{}", out.stderr);
    // Skipped, the rest is the one sorted log of the good rows.
    let (merged, merged_decisions) = audit(&refs, &["--merge", "--skip-bad"]);
    let one = csv(&tmp, "good.csv", &one_log(&logs));
    let (mut single, single_decisions) = audit(&[&one], &[]);
    assert_eq!(merged["input"]["bad_rows_skipped"], 1);
    // The only difference: the skipped row is counted.
    single["input"]["bad_rows_skipped"] = 1.into();
    for p in single["policies"].as_array_mut().unwrap() {
        p["skipped_bad"] = 1.into();
    }
    assert_eq!(merged, single);
    assert!(merged_decisions == single_decisions, "decisions differ");
}

#[test]
fn files_of_different_formats_are_each_detected_and_merged() {
    let tmp = Scratch::new();
    // Access logs write whole seconds: many ties, kept in file order.
    let logs = servers(2, 600, &[0, 0, 0, 1000]);
    let clf = |ms: u64| {
        let secs = ms / 1000 - 1_714_521_600;
        format!(
            "01/May/2024:{:02}:{:02}:{:02} +0000",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    };
    let combined = tmp.join("web1.log");
    let mut text = String::new();
    for (t, c) in &logs[0] {
        text.push_str(&format!(
            "{c} - - [{}] \"GET / HTTP/1.1\" 200 10 \"-\" \"test\"\n",
            clf(*t)
        ));
    }
    std::fs::write(&combined, text).unwrap();
    let as_csv = |name: &str, rows: &[Row]| {
        let mut text = String::from("time_local,remote_addr\n");
        for (t, c) in rows {
            text.push_str(&format!("{},{c}\n", clf(*t)));
        }
        let p = tmp.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let plain = as_csv("web2.csv", &logs[1]);
    let one = as_csv("web.csv", &one_log(&logs));
    let policies = [
        "--key-column",
        "remote_addr",
        "-p",
        "gcra:rate=1/s,burst=2",
        "-f",
        "json",
        "--quiet",
    ];
    let mut args = vec![s(&combined), s(&plain), "--merge"];
    args.extend(policies);
    let merged = Drip::audit().args(&args).run();
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    let mut args = vec![s(&one)];
    args.extend(policies);
    let single = Drip::audit().args(&args).run();
    assert_eq!(single.code, 0, "{}", single.stderr);
    let mut a: serde_json::Value = serde_json::from_str(&merged.stdout).unwrap();
    let mut b: serde_json::Value = serde_json::from_str(&single.stdout).unwrap();
    a["input"]["files"] = serde_json::Value::Null;
    b["input"]["files"] = serde_json::Value::Null;
    assert_eq!(a["input"]["rows"], 1200);
    assert!(a["policies"][0]["dropped"].as_u64().unwrap() > 0, "{a}");
    assert_eq!(a, b);
}

#[test]
fn size_merges_and_pace_replay_refuses_with_one_line() {
    let tmp = Scratch::new();
    let logs = servers(3, 800, &[0, 2, 50]);
    let parts: Vec<PathBuf> = logs
        .iter()
        .enumerate()
        .map(|(i, rows)| csv(&tmp, &format!("z{i}.csv"), rows))
        .collect();
    let one = csv(&tmp, "z.csv", &one_log(&logs));
    let size = |files: &[&str], extra: &[&str]| {
        let mut args = files.to_vec();
        args.extend([
            "--key-column",
            "client",
            "-p",
            "gcra",
            "--max-drop-rate",
            "1",
            // The log spans 15 s.
            "--horizon",
            "1s",
            "-f",
            "json",
            "--quiet",
        ]);
        args.extend(extra);
        let mut all = vec!["size"];
        all.extend(args);
        let out = Drip::new().args(&all).run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        let mut v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        v["input"]["files"] = serde_json::Value::Null;
        v
    };
    let names: Vec<&str> = parts.iter().map(|p| s(p)).collect();
    assert_eq!(size(&names, &["--merge"]), size(&[s(&one)], &[]));

    let out = Drip::new()
        .args(["pace", "--replay", "--merge", "--no-progress"])
        .stdin(b"ts\n1\n")
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("--merge"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
}

#[test]
fn standard_input_is_merged_once_at_most() {
    let tmp = Scratch::new();
    let log = csv(&tmp, "in.csv", &servers(1, 10, &[5])[0]);
    let out = Drip::audit()
        .args(["-", s(&log), "-", "--merge", "-p", "gcra:rate=1/s"])
        .stdin(b"ts\n1\n")
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("standard input"), "{}", out.stderr);
    // Once is fine: stdin is one of the servers.
    let rows = servers(2, 50, &[0, 7]);
    let piped = std::fs::read(csv(&tmp, "piped.csv", &rows[0])).unwrap();
    let file = csv(&tmp, "file.csv", &rows[1]);
    let out = Drip::audit()
        .args([
            "-",
            s(&file),
            "--merge",
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
            "--quiet",
        ])
        .stdin(&piped)
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["input"]["rows"], 100);
}

#[test]
fn a_log_given_twice_is_refused_not_counted_twice() {
    let dir = Scratch::new();
    let log = dir.join("web.csv");
    std::fs::write(&log, "ts,client\n1714521600,a\n1714521601,b\n").unwrap();
    let link = dir.join("link.csv");
    std::fs::hard_link(&log, &link).unwrap();
    let policy = ["--key-column", "client", "-p", "gcra:rate=5/s,burst=2"];
    for (merge, other) in [(false, &log), (true, &log), (false, &link), (true, &link)] {
        let mut args = vec![s(&log), s(other)];
        if merge {
            args.push("--merge");
        }
        args.extend_from_slice(&policy);
        let out = Drip::audit().args(&args).run();
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{args:?}");
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(
            out.stderr
                .contains("are the same file: its rows would be counted twice"),
            "{}",
            out.stderr
        );
    }
    // The same for sizing.
    let out = Drip::size()
        .args([s(&log), s(&link), "--key-column", "client", "-p", "gcra"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("counted twice"), "{}", out.stderr);
}
