//! `drip audit` end to end: the built binary on files, gz, stdin and pipes.

mod haproxy_cfg;
mod haproxy_live;
mod nginx;
mod nginx_live;
mod replicas;
mod traefik_cfg;

use std::io::Write;
use std::path::Path;

use crate::common::{Drip, Scratch, s};

/// The decisions file as (admit, wait_ms, retry_after_ms) per row, for a
/// log in time order (rows come out in input order).
fn decisions(args: &[&str]) -> Vec<(String, String, String)> {
    let rows = decisions_with_rows(args);
    for (i, (row, _)) in rows.iter().enumerate() {
        assert_eq!(*row, i as u64 + 1, "rows in input order");
    }
    rows.into_iter().map(|(_, d)| d).collect()
}

/// The decisions file as (row, (admit, wait_ms, retry_after_ms)), in the
/// order decided.
fn decisions_with_rows(args: &[&str]) -> Vec<(u64, (String, String, String))> {
    let (_, text) = Drip::audit().args(args).arg("--quiet").run_with_decisions();
    assert!(text.starts_with("row,policy,key,cost,admit,wait_ms,retry_after_ms\n"));
    let mut r = csv::Reader::from_reader(text.as_bytes());
    r.records()
        .map(|rec| {
            let f = rec.unwrap();
            let row = f[0].parse().unwrap();
            (row, (f[4].to_string(), f[5].to_string(), f[6].to_string()))
        })
        .collect()
}

fn d(admit: &str, wait: &str, retry: &str) -> (String, String, String) {
    (admit.into(), wait.into(), retry.into())
}

// ---- seed vectors through the binary -------------------------------------

#[test]
fn decisions_seed_000_boundary() {
    for p in [
        "leaky-bucket:rate=3/s",
        "token-bucket:rate=3/s",
        "gcra:rate=3/s",
    ] {
        let got = decisions(&[
            "fixtures/seeds/seed000.csv",
            "--time-format",
            "epoch-ms",
            "-p",
            p,
        ]);
        assert_eq!(
            got,
            [d("1", "0", ""), d("0", "", "0.333334"), d("1", "0", "")],
            "{p}"
        );
    }
}

#[test]
fn decisions_seed_002_walk_and_004() {
    let got = decisions(&[
        "fixtures/seeds/seed002.csv",
        "--time-format",
        "epoch-ms",
        "-p",
        "leaky-bucket:rate=1/s,capacity=3",
    ]);
    let want = [
        d("1", "0", ""),
        d("1", "0", ""),
        d("1", "0", ""),
        d("0", "", "1000"),
        d("0", "", "1000"),
        d("1", "0", ""),
    ];
    assert_eq!(got, want);
    let got = decisions(&[
        "fixtures/seeds/seed004.csv",
        "--time-format",
        "epoch-s",
        "--time-column",
        "tick",
        "-p",
        "leaky-bucket:rate=1/s,capacity=3",
    ]);
    assert_eq!(
        got,
        [
            d("1", "0", ""),
            d("1", "0", ""),
            d("1", "0", ""),
            d("0", "", "1000"),
            d("1", "0", "")
        ]
    );
}

#[test]
fn decisions_seed_003_shaper() {
    let got = decisions(&[
        "fixtures/seeds/seed003.csv",
        "--time-format",
        "epoch-ms",
        "--key-column",
        "client",
        "-p",
        "shaper:rate=1/2s,burst=2",
    ]);
    let want = [
        d("1", "0", ""),
        d("1", "2000", ""),
        d("1", "4000", ""),
        d("0", "", "2000"), // release 6 s − burst·interval 4 s − now 0
        d("0", "", "1000"), // a refusal did not move the schedule
        d("1", "4000", ""), // at 2 s: released at 6 s
        d("1", "0", ""),    // idle time is not banked
        d("1", "2000", ""),
    ];
    assert_eq!(got, want);
}

#[test]
fn decisions_nginx_vocabulary_matches_core() {
    let tmp = Scratch::new();
    let log = tmp.write("ten.csv", &format!("ts\n{}", "1000\n".repeat(10)));
    let got = decisions(&[
        s(&log),
        "--time-format",
        "epoch-ms",
        "-p",
        "nginx:rate=5r/s,burst=5",
    ]);
    let waits: Vec<&str> = got.iter().map(|(_, w, _)| w.as_str()).collect();
    assert_eq!(
        waits,
        ["0", "200", "400", "600", "800", "1000", "", "", "", ""]
    );
    assert_eq!(got[6].2, "200"); // the first rejected may retry when one unit has leaked
}

// ---- time formats ----------------------------------------------------------

/// The same three instants in each format give the same report.
#[test]
fn every_time_format_reads_the_same_instants() {
    let tmp = Scratch::new();
    // 2024-05-01T12:00:00Z + 0, 0.25, 1.5 s
    let forms: [(&str, &str, [&str; 3]); 9] = [
        (
            "auto",
            "rfc3339",
            [
                "2024-05-01T12:00:00Z",
                "2024-05-01T14:00:00.25+02:00",
                "2024-05-01T12:00:01.500000000Z",
            ],
        ),
        (
            "rfc3339",
            "rfc3339",
            [
                "2024-05-01 12:00:00",
                "2024-05-01T07:30:00.250-0430",
                "2024-05-01t12:00:01.5z",
            ],
        ),
        (
            "epoch-s",
            "epoch-s",
            ["1714564800", "1714564800.25", "1714564801.5"],
        ),
        (
            "auto",
            "epoch-ms",
            ["1714564800000", "1714564800250", "1714564801500"],
        ),
        (
            "epoch-us",
            "epoch-us",
            ["1714564800000000", "1714564800250000", "1714564801500000"],
        ),
        (
            "epoch-ns",
            "epoch-ns",
            [
                "1714564800000000000",
                "1714564800250000000",
                "1714564801500000000",
            ],
        ),
        (
            "auto",
            "clf",
            [
                "[01/May/2024:12:00:00 +0000]",
                "[01/May/2024:14:00:00.25 +0200]",
                "[01/May/2024:12:00:01.5 +0000]",
            ],
        ),
        (
            "clf",
            "clf",
            [
                "01/May/2024:05:00:00 -0700",
                "01/May/2024:12:00:00.250",
                "01/May/2024:12:00:01.500 +0000",
            ],
        ),
        (
            "%d.%m.%Y %H:%M:%S%.f",
            "'%d.%m.%Y %H:%M:%S%.f'",
            [
                "01.05.2024 12:00:00",
                "01.05.2024 12:00:00.25",
                "01.05.2024 12:00:01.5",
            ],
        ),
    ];
    for (flag, picked, values) in forms {
        let log = tmp.write(
            "fmt.csv",
            &format!("time\n{}\n{}\n{}\n", values[0], values[1], values[2]),
        );
        let out = Drip::audit()
            .args([
                s(&log),
                "--time-format",
                flag,
                "-p",
                "gcra:rate=1/s",
                "-f",
                "json",
            ])
            .run();
        let j = out.json();
        assert_eq!(
            j["input"]["first_ns"], 1_714_564_800_000_000_000u64,
            "{flag}: {}",
            out.stdout
        );
        assert_eq!(
            j["input"]["last_ns"], 1_714_564_801_500_000_000u64,
            "{flag}"
        );
        assert_eq!(j["input"]["time_format"], picked, "{flag}");
        assert_eq!(j["policies"][0]["admitted"], 2, "{flag}");
        if flag == "auto" {
            assert!(
                out.stderr.contains(&format!("as {picked}")),
                "{}",
                out.stderr
            );
        }
    }
}

// ---- inputs ------------------------------------------------------------------

#[test]
fn gz_stdin_and_several_files_are_one_log() {
    let tmp = Scratch::new();
    let plain = std::fs::read("fixtures/small.csv").unwrap();
    let gz = tmp.join("small.csv.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&plain).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let args = |src: &str| {
        vec![
            src.to_string(),
            "--key-column".into(),
            "client".into(),
            "--cost-column".into(),
            "cost".into(),
            "--policies".into(),
            "fixtures/policies.txt".into(),
            "-f".into(),
            "csv".into(),
        ]
    };
    let audit = |a: Vec<String>, stdin: Option<&[u8]>| {
        let mut run = Drip::audit().args(a);
        if let Some(data) = stdin {
            run = run.stdin(data);
        }
        run.run().ok()
    };
    let from_file = audit(args("fixtures/small.csv"), None);
    assert_eq!(audit(args(s(&gz)), None), from_file);
    assert_eq!(audit(args("-"), Some(&plain)), from_file);
    // stdin gzipped too
    let gz_bytes = std::fs::read(&gz).unwrap();
    assert_eq!(audit(args("-"), Some(&gz_bytes)), from_file);

    // Two halves, each with its header, read in order as one log.
    let text = String::from_utf8(plain).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let a = tmp.write("a.csv", &format!("{}\n", lines[..9].join("\n")));
    let b = tmp.write(
        "b.csv",
        &format!("{}\n{}\n", lines[0], lines[9..].join("\n")),
    );
    let mut two = args(s(&a));
    two.insert(1, s(&b).to_string());
    assert_eq!(audit(two, None), from_file);
}

#[test]
fn tab_separated_by_flag_or_name() {
    let tmp = Scratch::new();
    let tsv = "ts\tclient\n1714564800\ta\n1714564800\ta\n1714564800\tb\n";
    let as_txt = tmp.write("log.txt", tsv);
    let out = Drip::audit()
        .args([
            s(&as_txt),
            "--delimiter",
            "tab",
            "--key-column",
            "client",
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
        ])
        .run();
    let j = out.json();
    assert_eq!(j["policies"][0]["dropped"], 1);
    assert_eq!(j["policies"][0]["keys"], 2);
    let as_tsv = tmp.write("log.tsv", tsv);
    let j2 = Drip::audit()
        .args([
            s(&as_tsv),
            "--key-column",
            "1",
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
        ])
        .json();
    assert_eq!(j2["policies"][0]["dropped"], 1);
}

#[test]
fn the_nasa_fixture_audits() {
    let out = Drip::audit()
        .args([
            "fixtures/nasa_19950801.tsv",
            "--key-column",
            "host",
            "-p",
            "gcra:rate=1/s,burst=10",
            "-f",
            "json",
            "--quiet",
        ])
        .run();
    let j = out.json();
    assert_eq!(j["input"]["rows"], 30969);
    assert_eq!(j["input"]["time_format"], "epoch-s");
    let p = &j["policies"][0];
    assert_eq!(p["requests"], 30969);
    assert_eq!(
        p["admitted"].as_u64().unwrap() + p["dropped"].as_u64().unwrap(),
        30969
    );
    assert!(p["keys"].as_u64().unwrap() > 1000);
    assert!(out.stderr.is_empty(), "--quiet: {}", out.stderr);
}

// ---- order -----------------------------------------------------------------

#[test]
fn rows_out_of_order_within_the_window_are_resorted() {
    let tmp = Scratch::new();
    // 1/s meter: sorted, 0 and 1 s are admitted, 0.5 s refused.
    let log = tmp.write("ooo.csv", "ts\n1000\n0\n500\n");
    let j = Drip::audit()
        .args([
            s(&log),
            "--time-format",
            "epoch-ms",
            "-p",
            "leaky-bucket:rate=1/s",
            "-f",
            "json",
        ])
        .json();
    assert_eq!(j["input"]["rows_reordered"], 2);
    assert_eq!(j["policies"][0]["admitted"], 2);
    // Decided in time order; `row` still names each row's place in the file.
    let got = decisions_with_rows(&[
        s(&log),
        "--time-format",
        "epoch-ms",
        "-p",
        "leaky-bucket:rate=1/s",
    ]);
    assert_eq!(
        got,
        [
            (2, d("1", "0", "")),
            (3, d("0", "", "500")),
            (1, d("1", "0", ""))
        ]
    );
}

#[test]
fn a_row_beyond_the_window_is_an_error_with_the_fix() {
    let tmp = Scratch::new();
    let log = tmp.write("late.csv", "ts\n10000\n20000\n3000\n");
    let out = Drip::audit()
        .args([s(&log), "--time-format", "epoch-ms", "-p", "gcra:rate=1/s"])
        .run();
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("late.csv:4:"), "{}", out.stderr);
    assert!(
        out.stderr.contains("1970-01-01T00:00:03Z"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("1970-01-01T00:00:20Z"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--reorder-window"), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let ok = Drip::audit()
        .args([
            s(&log),
            "--time-format",
            "epoch-ms",
            "-p",
            "gcra:rate=1/s",
            "--reorder-window",
            "20s",
        ])
        .run();
    assert_eq!(ok.code, 0, "{}", ok.stderr);
}

// ---- bad input ---------------------------------------------------------------

fn fails(args: &[&str], needles: &[&str]) {
    let out = Drip::audit().args(args).run();
    assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
    // The note saying which time format auto-detection picked is not an error.
    let errors: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| {
            !l.starts_with("drip: reading column") && !l.starts_with("drip: timestamps in column")
        })
        .collect();
    assert_eq!(errors.len(), 1, "one line: {}", out.stderr);
    assert!(out.stderr.starts_with("drip: "), "{}", out.stderr);
    for n in needles {
        assert!(
            out.stderr.contains(n),
            "{args:?}: missing {n:?} in {}",
            out.stderr
        );
    }
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

#[test]
fn bad_rows_name_file_line_and_text() {
    let tmp = Scratch::new();
    let log = tmp.write(
        "bad.csv",
        "ts,client,cost\n1714564800,a,1\nyesterday,a,1\n1714564802,a,x\n",
    );
    fails(
        &[s(&log), "-p", "gcra:rate=1/s"],
        &["bad.csv:3:", "'yesterday'", "--skip-bad"],
    );
    fails(
        &[
            s(&log),
            "-p",
            "gcra:rate=1/s",
            "--time-format",
            "epoch-s",
            "--cost-column",
            "cost",
            "--reorder-window",
            "1h",
        ],
        &["bad.csv:3:", "'yesterday'"],
    );
    let log2 = tmp.write(
        "badcost.csv",
        "ts,client,cost\n1714564800,a,1\n1714564802,a,0\n",
    );
    fails(
        &[s(&log2), "-p", "gcra:rate=1/s", "--cost-column", "cost"],
        &["badcost.csv:3:", "bad cost '0'"],
    );
    let short = tmp.write("short.csv", "ts,client\n1714564800,a\n1714564801\n");
    fails(
        &[s(&short), "-p", "gcra:rate=1/s", "--key-column", "client"],
        &["short.csv:3:", "1 field(s)"],
    );
}

#[test]
fn skip_bad_counts_in_every_format() {
    let tmp = Scratch::new();
    let log = tmp.write(
        "bad2.csv",
        "ts,client\n1714564800,a\nnope,a\n1714564801,a\n,a\n",
    );
    for f in ["table", "json", "csv", "markdown"] {
        let out = Drip::audit()
            .args([
                s(&log),
                "-p",
                "gcra:rate=1/s",
                "--skip-bad",
                "-f",
                f,
                "--time-format",
                "epoch-s",
            ])
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        match f {
            "json" => assert_eq!(out.json()["input"]["bad_rows_skipped"], 2),
            "csv" => {
                let mut r = csv::Reader::from_reader(out.stdout.as_bytes());
                let h = r.headers().unwrap().clone();
                let i = h
                    .iter()
                    .position(|c| c == "skipped_bad")
                    .expect("skipped_bad column");
                assert_eq!(&r.records().next().unwrap().unwrap()[i], "2");
            }
            _ => assert!(
                out.stdout.contains("2 skipped as bad"),
                "{f}: {}",
                out.stdout
            ),
        }
    }
}

#[test]
fn missing_columns_list_what_exists() {
    let tmp = Scratch::new();
    fails(
        &[
            "fixtures/small.csv",
            "-p",
            "gcra:rate=1/s",
            "--key-column",
            "user",
        ],
        &["no key column 'user'", "0:ts", "1:client", "3:cost"],
    );
    fails(
        &[
            "fixtures/small.csv",
            "-p",
            "gcra:rate=1/s",
            "--time-column",
            "9",
        ],
        &["no time column #9", "4 columns"],
    );
    let log = tmp.write("notime.csv", "a,b\n1,2\n");
    fails(
        &[s(&log), "-p", "gcra:rate=1/s"],
        &["no time column found", "0:a, 1:b", "--time-column"],
    );
}

#[test]
fn usage_errors_are_one_line_and_exit_2() {
    let tmp = Scratch::new();
    fails(&["fixtures/small.csv"], &["no policy given", "--policy"]);
    fails(
        &["fixtures/small.csv", "-p", "gcra:rate=fast"],
        &["invalid rate 'fast'"],
    );
    fails(
        &["fixtures/small.csv", "-p", "bucket"],
        &["unknown policy 'bucket'", "token-bucket"],
    );
    fails(
        &["nope.csv", "-p", "gcra:rate=1/s"],
        &["cannot open 'nope.csv'"],
    );
    fails(
        &["fixtures", "-p", "gcra:rate=1/s"],
        &["'fixtures' is a directory"],
    );
    fails(
        &[
            "fixtures/small.csv",
            "-p",
            "gcra:rate=1/s",
            "--format",
            "yaml",
        ],
        &["valid: table, json, csv, markdown"],
    );
    fails(
        &[
            "fixtures/small.csv",
            "-p",
            "gcra:rate=1/s",
            "--max-drop-rate",
            "x=5",
        ],
        &["no policy labelled 'x'"],
    );
    fails(
        &[
            "fixtures/small.csv",
            "-p",
            "gcra:rate=1/s",
            "--max-drop-rate",
            "lots",
        ],
        &["invalid value 'lots'"],
    );
    fails(
        &[
            "fixtures/small.csv",
            "-p",
            "gcra:rate=1/s",
            "--delimiter",
            "ab",
        ],
        &["--delimiter 'ab'"],
    );
    fails(
        &[
            "fixtures/small.csv",
            "-p",
            "gcra:rate=1/s",
            "-p",
            "gcra:rate=1/s",
        ],
        &["labelled 'gcra:rate=1/s'"],
    );
    let pf = tmp.write("p.txt", "gcra:rate=1/s\n# fine\nleaky:rate=2/s\n");
    fails(
        &["fixtures/small.csv", "--policies", s(&pf)],
        &["p.txt:3:", "unknown policy 'leaky'"],
    );
}

#[test]
fn empty_input_is_a_report_of_zeros() {
    let tmp = Scratch::new();
    for contents in ["", "ts,client\n"] {
        let log = tmp.write("empty.csv", contents);
        let j = Drip::audit()
            .args([
                s(&log),
                "-p",
                "gcra:rate=1/s",
                "-p",
                "shaper:rate=1/s",
                "-f",
                "json",
            ])
            .json();
        assert_eq!(j["input"]["rows"], 0);
        assert_eq!(j["policies"][0]["requests"], 0);
        assert_eq!(j["policies"][0]["drop_pct"], 0.0);
        assert_eq!(j["policies"][1]["wait"]["max_ns"], 0);
    }
}

// ---- thresholds ----------------------------------------------------------------

#[test]
fn thresholds_exit_0_or_1_with_a_message_per_crossing() {
    let base = [
        "fixtures/small.csv",
        "--key-column",
        "client",
        "--cost-column",
        "cost",
        "--policies",
        "fixtures/policies.txt",
        "--quiet",
    ];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend(extra);
        Drip::audit().args(&a).run()
    };
    assert_eq!(with(&["--max-drop-rate", "30"]).code, 0);
    assert_eq!(with(&["--max-drops", "5"]).code, 0);
    assert_eq!(with(&["--max-wait", "1s"]).code, 0);
    let o = with(&["--max-drop-rate", "20"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .contains("'egress' crossed --max-drop-rate: measured 29.41% (5 of 17), limit 20%"),
        "{}",
        o.stderr
    );
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
    assert!(o.stdout.contains("policy"), "the report is still printed");
    let o = with(&[
        "--max-drop-rate",
        "per-client=17.64",
        "--max-drops",
        "nginx-edge=2",
        "--max-wait",
        "999ms",
    ]);
    assert_eq!(o.code, 1);
    assert_eq!(o.stderr.lines().count(), 4, "{}", o.stderr);
    assert!(o.stderr.contains("'per-client' crossed --max-drop-rate"));
    assert!(
        o.stderr
            .contains("'nginx-edge' crossed --max-drops: measured 3, limit 2")
    );
    assert!(
        o.stderr
            .contains("'egress' crossed --max-wait: measured 1s, limit 999ms")
    );
    assert!(o.stderr.contains("'nginx-edge' crossed --max-wait"));
    assert_eq!(with(&["--max-drop-rate", "per-client=17.65"]).code, 0);
}

// ---- golden outputs ------------------------------------------------------------

#[test]
fn golden_outputs_for_every_format() {
    for (format, ext) in [
        ("table", "txt"),
        ("json", "json"),
        ("csv", "csv"),
        ("markdown", "md"),
    ] {
        let out = Drip::audit()
            .args([
                "fixtures/small.csv",
                "--key-column",
                "client",
                "--cost-column",
                "cost",
                "--policies",
                "fixtures/policies.txt",
                "--timeline",
                "1s",
                "--top",
                "3",
                "-f",
                format,
                "--quiet",
            ])
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        let path = format!("fixtures/golden/small.{ext}");
        if std::env::var_os("DRIP_BLESS").is_some() {
            std::fs::write(
                Path::new(env!("CARGO_MANIFEST_DIR")).join(&path),
                &out.stdout,
            )
            .unwrap();
        }
        let want = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(&path))
            .unwrap_or_else(|e| panic!("{path}: {e} (run with DRIP_BLESS=1 to create)"));
        assert!(
            out.stdout == want,
            "{format} differs from {path}\n--- want\n{want}\n--- got\n{}",
            out.stdout
        );
    }
}

#[test]
fn decisions_to_stdout_replace_the_report() {
    let out = Drip::audit()
        .args([
            "fixtures/seeds/seed000.csv",
            "--time-format",
            "epoch-ms",
            "-p",
            "gcra:rate=3/s",
            "--decisions",
            "-",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "row,policy,key,cost,admit,wait_ms,retry_after_ms\n1,gcra:rate=3/s,,1,1,0,\n2,gcra:rate=3/s,,1,0,,0.333334\n3,gcra:rate=3/s,,1,1,0,\n"
    );
}

#[test]
fn policies_decided_on_two_threads_report_as_on_one() {
    let tmp = Scratch::new();
    // With a decisions file every policy is decided on one thread; without,
    // they are split over two. The reports must be identical.
    let base = [
        "fixtures/nasa_19950801.tsv",
        "--key-column",
        "host",
        "-q",
        "-f",
        "json",
        "--timeline",
        "1h",
        "-p",
        "gcra:rate=1/s,burst=5",
        "-p",
        "shaper:rate=3/s,burst=30,key=none",
        "-p",
        "sliding-log:limit=20,window=10s",
        "-p",
        "nginx:rate=1r/s,burst=3",
        "-p",
        "fixed-window:limit=30,window=1m,align=first-hit,count=all",
    ];
    let split = Drip::audit().args(base).run();
    let d = tmp.join("d.csv");
    let mut one = base.to_vec();
    one.extend(["--decisions", s(&d)]);
    let single = Drip::audit().args(&one).run();
    assert_eq!(split.code, 0, "{}", split.stderr);
    assert_eq!(single.code, 0, "{}", single.stderr);
    assert_eq!(split.stdout, single.stdout);
    assert!(split.json()["policies"][1]["dropped"].as_u64().unwrap() > 0);
}

/// A log of `n` rows over many clients, a few busy, some with no client
/// (exempt), a few rows out of order, with a cost column: seeded, so the
/// same every run.
fn generated_log(tmp: &Scratch, n: u64) -> std::path::PathBuf {
    let mut rng = drip::testing::Rng(0x9e37_79b9_7f4a_7c15);
    let mut next = move || rng.next();
    let mut text = String::from("ts,client,path,cost\n");
    let mut t = 1_714_521_600_000u64; // ms
    for _ in 0..n {
        t += next() % 40;
        let r = next();
        // Client 0..3 take half the rows; the rest spread over 2000.
        let client = match r % 20 {
            0 => String::new(),
            1..=9 => format!("c{}", r % 4),
            _ => format!("c{}", r % 2000),
        };
        let path = format!("/p{}", (r >> 20) % 7);
        // Now and then a row a little behind its neighbours.
        let at = if r % 97 == 0 { t - 300 } else { t };
        let (secs, ms) = (at / 1000, at % 1000);
        let cost = 1 + (r >> 40) % 3;
        text.push_str(&format!("{secs}.{ms:03},{client},{path},{cost}\n"));
    }
    tmp.write("generated.csv", &text)
}

#[test]
fn threads_split_keys_and_report_the_same() {
    let tmp = Scratch::new();
    // Every kind of run: keyed policies (split by key), a global one and a
    // stack over two key columns (decided whole), a stack over one column
    // (split), shaping policies (waits merge), a timeline and the keys with
    // most drops; in every format.
    let log = generated_log(&tmp, 60_000);
    let policies = [
        "gcra:rate=2/s,burst=5",
        "shaper:rate=1/s,burst=8",
        "sliding-log:limit=10,window=10s",
        "nginx:rate=1r/s,burst=3",
        "token-bucket:rate=3/s,burst=4,key=none",
        "fixed-window:limit=20,window=1m+gcra:rate=1/s,burst=2,key=path",
        "leaky-bucket:rate=2/s,capacity=3+sliding-window:limit=30,window=1m",
    ];
    let mut base = vec![s(&log), "--key-column", "client", "--cost-column", "cost"];
    base.extend(["-q", "--timeline", "10m", "--top", "25"]);
    for p in &policies {
        base.extend(["-p", p]);
    }
    let nasa = [
        "fixtures/nasa_19950801.tsv",
        "--key-column",
        "host",
        "-q",
        "-p",
        "gcra:rate=1/s,burst=5",
        "-p",
        "shaper:rate=3/s,burst=30",
        "-p",
        "sliding-log:limit=20,window=10s+nginx:rate=1r/s,burst=3",
        "-p",
        "fixed-window:limit=30,window=1m,align=first-hit,count=all",
    ];
    for args in [base.clone(), nasa.to_vec()] {
        for format in ["json", "table", "csv", "markdown"] {
            let mut outs = Vec::new();
            for threads in ["1", "2", "3"] {
                let mut a = args.clone();
                a.extend(["-f", format, "--threads", threads]);
                let out = Drip::audit().args(&a).run();
                assert_eq!(out.code, 0, "{}", out.stderr);
                outs.push(out.stdout);
            }
            assert_eq!(outs[0], outs[1], "--threads 2, {format}");
            assert_eq!(outs[0], outs[2], "--threads 3, {format}");
        }
    }
    // The generated log exercises what it should: drops on many keys,
    // waits, exempt rows.
    let mut a = base.clone();
    a.extend(["-f", "json", "--threads", "2"]);
    let v = Drip::audit().args(&a).json();
    let p = &v["policies"];
    assert!(p[0]["keys_with_drops"].as_u64().unwrap() > 25, "{v}");
    assert!(p[1]["wait"]["p99_ns"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["input"]["rows"], 60_000);
    assert!(v["input"]["rows_reordered"].as_u64().unwrap() > 0);
    // A thread count of zero is a usage error.
    let out = Drip::audit()
        .args([s(&log), "-p", "gcra:rate=1/s", "--threads", "0"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
}

#[test]
fn no_header_names_columns_by_index() {
    let tmp = Scratch::new();
    let log = tmp.write("nohdr.csv", "1714564800,a\n1714564800,a\n1714564800,b\n");
    let j = Drip::audit()
        .args([
            s(&log),
            "--no-header",
            "--time-column",
            "0",
            "--key-column",
            "1",
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
        ])
        .json();
    assert_eq!(j["input"]["rows"], 3);
    assert_eq!(j["policies"][0]["dropped"], 1);
    assert_eq!(j["input"]["time_column"], "#0");
    fails(
        &[s(&log), "--no-header", "-p", "gcra:rate=1/s"],
        &["--no-header", "--time-column"],
    );
    fails(
        &[
            s(&log),
            "--no-header",
            "--time-column",
            "ts",
            "-p",
            "gcra:rate=1/s",
        ],
        &["by 0-based index"],
    );
}

#[test]
fn split_date_and_time_columns_are_joined() {
    let tmp = Scratch::new();
    // CloudFront's standard logs: tab-separated, date and time in two columns, UTC.
    let log = tmp.write(
        "cf.tsv",
        "date\ttime\tx-edge-location\tc-ip\n2019-12-04\t21:02:31\tLAX1\t192.0.2.10\n2019-12-04\t21:02:31\tLAX1\t192.0.2.10\n2019-12-04\t21:02:32\tLAX1\t192.0.2.10\n",
    );
    let out = Drip::audit()
        .args([
            s(&log),
            "--time-column",
            "date,time",
            "--key-column",
            "c-ip",
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
        ])
        .run();
    let j = out.json();
    assert_eq!(j["input"]["first_ns"], 1_575_493_351_000_000_000u64);
    assert_eq!(j["input"]["time_column"], "date+time");
    assert_eq!(j["policies"][0]["dropped"], 1);
    assert!(out.stderr.contains("as rfc3339"), "{}", out.stderr);
    fails(
        &[
            s(&log),
            "--time-column",
            "date,time,x",
            "-p",
            "gcra:rate=1/s",
        ],
        &["DATE,TIME"],
    );
}

#[test]
fn review_cases_are_one_line_errors() {
    let tmp = Scratch::new();
    fails(
        &[
            "fixtures/small.csv",
            "-p",
            "gcra:rate=5/s",
            "--timeline",
            "0s",
        ],
        &["--timeline", "is zero"],
    );
    // An unbalanced quote would pull the rest of the log into one field: the
    // message names the line where it opened, in one line.
    let q = tmp.write("quote.csv", "ts,client\n\"2024-05-01T12:00:00Z,a\nb,c\n");
    fails(&[s(&q), "-p", "gcra:rate=5/s"], &["quote.csv:2:", "quote"]);
    // Before 1970 in RFC 3339 form: recognised as RFC 3339, and said why it fails.
    let old = tmp.write("old.csv", "ts\n1960-01-01T00:00:00Z\n");
    fails(
        &[s(&old), "-p", "gcra:rate=5/s"],
        &["old.csv:2:", "before 1970"],
    );
    // Every row bad: nothing to report on, so not a silent pass.
    fails(
        &[
            "fixtures/small.csv",
            "-p",
            "gcra:rate=5/s",
            "--skip-bad",
            "--time-format",
            "epoch-s",
        ],
        &["all 17 rows were bad"],
    );
    fails(
        &[
            "fixtures/small.csv",
            "-p",
            "gcra:rate=5/s",
            "--max-drop-rate",
            "150",
        ],
        &["from 0 to 100"],
    );
    // A huge cost and an nginx wait far beyond u64 nanoseconds saturate.
    let big = tmp.write(
        "big.csv",
        "ts,k,cost\n1700000000,a,1000000000\n1700000000,a,1\n",
    );
    let out = Drip::audit()
        .args([
            s(&big),
            "--cost-column",
            "cost",
            "-p",
            "nginx:rate=1r/m,burst=1000000000",
            "--decisions",
            "-",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // 62.5 million seconds and more: beyond the u64 ns clock, so the release
    // saturates at its end instead of wrapping round to a small wait.
    let mut r = csv::Reader::from_reader(out.stdout.as_bytes());
    for rec in r.records() {
        let wait: f64 = rec.unwrap()[5].parse().unwrap();
        assert!(wait > 1.6e13, "{}", out.stdout);
    }
}

#[test]
fn naive_local_times_take_tz() {
    let tmp = Scratch::new();
    // HAProxy-style: CLF with milliseconds and no zone, the box's local time.
    let log = tmp.write(
        "haproxy.csv",
        "ts,client\n01/Jul/2024:12:00:00.250,a\n01/Jul/2024:12:00:01.000,a\n",
    );
    let utc = Drip::audit()
        .args([s(&log), "-p", "gcra:rate=1/s", "-f", "json"])
        .run();
    assert!(
        utc.stderr
            .contains("no UTC offset; reading them as UTC (set --tz"),
        "{}",
        utc.stderr
    );
    assert_eq!(
        utc.json()["input"]["first_ns"],
        1_719_835_200_250_000_000u64
    );
    let ny = Drip::audit()
        .args([
            s(&log),
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
            "--tz",
            "America/New_York",
        ])
        .run();
    assert!(!ny.stderr.contains("no UTC offset"), "{}", ny.stderr);
    assert_eq!(ny.json()["input"]["first_ns"], 1_719_849_600_250_000_000u64);
    fails(
        &[s(&log), "-p", "gcra:rate=1/s", "--tz", "Mars/Olympus"],
        &["--tz", "unknown time zone 'Mars/Olympus'"],
    );
}

#[test]
fn strip_port_counts_clients_not_connections() {
    let tmp = Scratch::new();
    let log = tmp.write(
        "alb.csv",
        "time,client\n2024-05-01T12:00:00Z,10.0.0.1:2817\n2024-05-01T12:00:00Z,10.0.0.1:2818\n2024-05-01T12:00:00Z,[2001:db8::1]:443\n",
    );
    let with = Drip::audit()
        .args([
            s(&log),
            "--key-column",
            "client",
            "--strip-port",
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
            "-q",
        ])
        .json();
    assert_eq!(with["policies"][0]["keys"], 2);
    assert_eq!(with["policies"][0]["dropped"], 1);
    assert_eq!(with["policies"][0]["top_keys"][0]["key"], "10.0.0.1");
    let without = Drip::audit()
        .args([
            s(&log),
            "--key-column",
            "client",
            "-p",
            "gcra:rate=1/s",
            "-f",
            "json",
            "-q",
        ])
        .json();
    assert_eq!(without["policies"][0]["keys"], 3);
    assert_eq!(without["policies"][0]["dropped"], 0);
}

/// The column list of docs/output.md is the CSV header, and each column is
/// in the JSON under its own name or the name the guide gives it there.
#[test]
fn documented_column_list_matches_csv_and_json() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/output.md")).unwrap();
    let start = readme
        .find("column list:\n\n| column | meaning |")
        .expect("the column list of docs/output.md");
    let table: Vec<&str> = readme[start..]
        .lines()
        .skip(4)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let mut names: Vec<String> = Vec::new();
    for row in table {
        let cell = row.split('|').nth(1).unwrap();
        let listed: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
        if cell.contains("..") {
            let (a, b) = (listed[0], listed[1]);
            assert_eq!((a, b), ("wait_p50", "wait_max"));
            names.extend(["wait_p50", "wait_p95", "wait_p99", "wait_max"].map(String::from));
        } else {
            names.extend(listed.iter().map(|s| s.to_string()));
        }
    }
    let json_para = &readme[readme
        .find("JSON (`policies[]`)")
        .expect("the JSON paragraph")..];
    let json_para = &json_para[..json_para.find("\n\n").unwrap()];
    let audit = |f: &str| {
        let out = Drip::audit()
            .args([
                "fixtures/small.csv",
                "-p",
                "shaper:rate=1/s,burst=2",
                "-q",
                "-f",
                f,
            ])
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        out
    };
    let csv = audit("csv");
    assert_eq!(csv.stdout.lines().next().unwrap(), names.join(","));
    let v = audit("json").json();
    let p = &v["policies"][0];
    for n in &names {
        if let Some(w) = n.strip_prefix("wait_") {
            assert!(p["wait"][format!("{w}_ns")].is_u64(), "{n}: {p}");
            continue;
        }
        if p.get(n.as_str()).is_some() {
            continue;
        }
        // Otherwise the README says what JSON names it.
        let said = format!("`{n}` is\nnamed `");
        let said2 = format!("`{n}` is named `");
        let at = json_para
            .find(&said)
            .map(|i| i + said.len())
            .or_else(|| json_para.find(&said2).map(|i| i + said2.len()))
            .unwrap_or_else(|| {
                panic!(
                    "column {n} is not in the JSON, and docs/output.md does not say its JSON name: {p}"
                )
            });
        let other = &json_para[at..at + json_para[at..].find('`').unwrap()];
        assert!(p.get(other).is_some(), "{n} as {other}: {p}");
    }
    keys_column_list_matches_csv_and_json(&readme);
}

/// The key column list of docs/output.md (the keys with the most drops and
/// with the longest waits) is the header of those CSV tables, and each
/// column is in the JSON's `top_keys[]` and `top_waits[]`.
fn keys_column_list_matches_csv_and_json(doc: &str) {
    let start = doc
        .find("key column list:\n\n| column | table | meaning |")
        .expect("the key column list of docs/output.md");
    let (mut drops, mut waits) = (Vec::new(), Vec::new());
    for row in doc[start..]
        .lines()
        .skip(4)
        .take_while(|l| l.starts_with('|'))
    {
        let cells: Vec<&str> = row.split('|').collect();
        let names = cells[1].split('`').skip(1).step_by(2);
        for n in names {
            match cells[2].trim() {
                "both" => {
                    drops.push(n);
                    waits.push(n);
                }
                "most drops" => drops.push(n),
                "longest waits" => waits.push(n),
                other => panic!("table '{other}' in {row}"),
            }
        }
    }
    // Drops and waits, on one policy that delays.
    let audit = |f: &str| {
        let args = ["fixtures/small.csv", "--key-column", "client"];
        Drip::audit()
            .args([&args[..], &["-p", "nginx:rate=2r/s,burst=1", "-q", "-f", f]].concat())
            .run()
    };
    let csv = audit("csv");
    let headers: Vec<&str> = csv
        .stdout
        .split("\n\n")
        .map(|t| t.lines().next().unwrap())
        .collect();
    assert_eq!(headers[1], drops.join(","), "{}", csv.stdout);
    assert_eq!(headers[2], waits.join(","), "{}", csv.stdout);
    let v = audit("json").json();
    let p = &v["policies"][0];
    for (list, names) in [("top_keys", &drops), ("top_waits", &waits)] {
        let row = &p[list][0];
        for n in names.iter().filter(|n| **n != "policy") {
            let named = if *n == "wait_max" { "wait_max_ns" } else { n };
            assert!(row.get(named).is_some(), "{n} in {list}: {p}");
        }
    }
}

/// A wait in decimal milliseconds as the decisions file writes it, in ns.
fn wait_ns(ms: &str) -> u64 {
    let (int, frac) = ms.split_once('.').unwrap_or((ms, ""));
    let frac = format!("{frac:0<6}");
    int.parse::<u64>().unwrap() * 1_000_000 + frac.parse::<u64>().unwrap()
}

/// A wait of whole milliseconds as the table writes it: `950ms`, `2.5s`.
fn human_ms(ns: u64) -> String {
    assert_eq!(ns % 1_000_000, 0, "whole milliseconds");
    let ms = ns / 1_000_000;
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let frac = format!("{:03}", ms % 1000);
    match frac.trim_end_matches('0') {
        "" => format!("{}s", ms / 1000),
        f => format!("{}.{f}s", ms / 1000),
    }
}

#[test]
fn the_keys_with_the_longest_waits_are_those_of_the_decisions_file() {
    let tmp = Scratch::new();
    // Two policies that delay (nginx without nodelay, a shaper whose
    // waits often reach its cap: ties), one that never does.
    let log = generated_log(&tmp, 20_000);
    let d = tmp.join("waits-decisions.csv");
    let mut args = vec![s(&log), "--key-column", "client", "--cost-column", "cost"];
    args.extend([
        "-p",
        "nginx:rate=1r/s,burst=3",
        "-p",
        "shaper:rate=1/s,burst=8",
    ]);
    args.extend(["-p", "gcra:rate=2/s,burst=5", "--top", "6", "-q"]);
    let mut with_file = args.clone();
    with_file.extend(["--decisions", s(&d), "-f", "json"]);
    let v = Drip::audit().args(&with_file).json();
    // Per (policy, key): rows, delayed rows, longest wait.
    let mut per: std::collections::BTreeMap<(String, String), (u64, u64, u64)> = Default::default();
    let text = std::fs::read_to_string(&d).unwrap();
    for rec in csv::Reader::from_reader(text.as_bytes()).records() {
        let f = rec.unwrap();
        if f[2].is_empty() {
            continue;
        }
        let e = per.entry((f[1].to_string(), f[2].to_string())).or_default();
        e.0 += 1;
        let w = if &f[4] == "1" { wait_ns(&f[5]) } else { 0 };
        if w > 0 {
            e.1 += 1;
            e.2 = e.2.max(w);
        }
    }
    let policies = v["policies"].as_array().unwrap();
    let mut table_rows = Vec::new();
    for p in policies {
        let label = p["label"].as_str().unwrap();
        if !p["shapes"].as_bool().unwrap() {
            assert!(p.get("top_waits").is_none(), "{p}");
            continue;
        }
        // Longest wait first, then most delayed, then the key's bytes.
        let mut want: Vec<(&String, &(u64, u64, u64))> = per
            .iter()
            .filter(|((l, _), w)| l == label && w.1 > 0)
            .map(|((_, k), w)| (k, w))
            .collect();
        want.sort_by(|a, b| (b.1.2, b.1.1, a.0).cmp(&(a.1.2, a.1.1, b.0)));
        want.truncate(6);
        let got = p["top_waits"].as_array().unwrap();
        assert_eq!(got.len(), 6, "{p}");
        for (g, &(key, &(rows, delayed, max))) in got.iter().zip(&want) {
            assert_eq!(g["key"].as_str().unwrap(), key.as_str(), "{label}: {got:?}");
            assert_eq!(g["requests"], rows, "{label} {key}");
            assert_eq!(g["limited"], rows, "{label} {key}");
            assert_eq!(g["delayed"], delayed, "{label} {key}");
            assert_eq!(g["wait_max_ns"], max, "{label} {key}");
            let pct = g["delayed_pct"].as_f64().unwrap();
            assert!((pct - delayed as f64 * 100.0 / rows as f64).abs() < 1e-9);
            table_rows.push(vec![
                label.to_string(),
                key.to_string(),
                rows.to_string(),
                rows.to_string(),
                human_ms(max),
                delayed.to_string(),
                format!("{:.2}", delayed as f64 * 100.0 / rows as f64),
            ]);
        }
        // The longest of all is the policy's longest wait.
        assert_eq!(got[0]["wait_max_ns"], p["wait"]["max_ns"], "{p}");
    }
    assert_eq!(table_rows.len(), 12);
    // The shaper's waits tie at its cap: the order then follows the
    // delayed rows.
    assert_eq!(table_rows[6][4], table_rows[7][4], "{table_rows:?}");

    // The table lists the same keys, after the keys with the most drops.
    args.extend(["-f", "table"]);
    let out = Drip::audit().args(&args).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let drops = out.stdout.find("\nkeys with the most drops\n").unwrap();
    let at = out.stdout.find("\nkeys with the longest waits\n").unwrap();
    assert!(drops < at, "{}", out.stdout);
    let mut lines = out.stdout[at..].lines().skip(2);
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "policy",
            "key",
            "requests",
            "limited",
            "wait_max",
            "delayed",
            "delayed_pct"
        ]
    );
    let got: Vec<Vec<String>> = lines
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    assert_eq!(got, table_rows, "{}", out.stdout);
}

#[test]
fn keys_hurt_and_what_a_change_makes_worse_are_thresholds_for_policies_too() {
    let tmp = Scratch::new();
    // a: 4 rows at once, b: 2, c: 1. burst=3 drops 1 row of a; burst=1
    // drops 3 of a and 1 of b.
    let mut text = String::from("ts,client\n");
    for (k, n) in [("a", 4), ("b", 2), ("c", 1)] {
        for _ in 0..n {
            text.push_str(&format!("2024-05-01T12:00:00Z,{k}\n"));
        }
    }
    let log = tmp.write("hurt-thresholds.csv", &text);
    let audit = |extra: &[&str]| {
        let mut args = vec![s(&log), "--key-column", "client", "-q"];
        args.extend(["-p", "gcra:rate=1/s,burst=3,label=old"]);
        args.extend(["-p", "gcra:rate=1/s,burst=1,label=new"]);
        args.extend(extra);
        Drip::audit().args(&args).run()
    };
    let crossed = |extra: &[&str], want: &str| {
        let out = audit(extra);
        assert_eq!(out.code, 1, "{extra:?}: {}", out.stderr);
        assert!(out.stderr.contains(want), "{extra:?}: {}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    };
    // Keys hurt: old 1 of 3, new 2 of 3.
    assert_eq!(audit(&["--max-keys-hurt", "2"]).code, 0);
    assert_eq!(audit(&["--max-keys-hurt", "old=34%"]).code, 0);
    crossed(
        &["--max-keys-hurt", "1"],
        "'new' crossed --max-keys-hurt: measured 2 of 3, limit 1",
    );
    crossed(
        &["--max-keys-hurt", "new=66%"],
        "'new' crossed --max-keys-hurt: measured 2 of 3, limit 66%",
    );
    // Against old, new drops 3 more rows of 7 and hurts 1 more key of 3.
    fn compare<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        [&["--compare"][..], extra].concat()
    }
    assert_eq!(audit(&compare(&["--max-newly-dropped", "3"])).code, 0);
    assert_eq!(audit(&compare(&["--max-newly-dropped", "43%"])).code, 0);
    assert_eq!(audit(&compare(&["--max-keys-newly-hurt", "new=1"])).code, 0);
    crossed(
        &compare(&["--max-newly-dropped", "42%"]),
        "'new' crossed --max-newly-dropped: measured 3 of 7, limit 42%",
    );
    crossed(
        &compare(&["--max-keys-newly-hurt", "0"]),
        "'new' crossed --max-keys-newly-hurt: measured 1 of 3, limit 0",
    );
    // They need --compare, and a label that is there.
    let out = audit(&["--max-newly-dropped", "1"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--compare"), "{}", out.stderr);
    let out = audit(&compare(&["--max-keys-newly-hurt", "nope=1"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("no policy labelled 'nope'"),
        "{}",
        out.stderr
    );
}

/// A log of whole seconds is said to be one (its requests of a second
/// are taken as simultaneous); a log with milliseconds is not.
#[test]
fn whole_second_times_are_noted() {
    let note = "the log's times are whole seconds";
    let nasa = Drip::audit()
        .args([crate::common::NASA, "--key-column", "host"])
        .args(["-p", "gcra:rate=1/s,burst=5"])
        .run();
    assert_eq!(nasa.code, 0, "{}", nasa.stderr);
    assert_eq!(nasa.stderr.matches(note).count(), 1, "{}", nasa.stderr);
    let ms = Drip::audit()
        .args(["fixtures/small.csv", "--key-column", "client"])
        .args(["-p", "gcra:rate=2/s,burst=3"])
        .run();
    assert_eq!(ms.code, 0, "{}", ms.stderr);
    assert!(!ms.stderr.contains(note), "{}", ms.stderr);
    let quiet = Drip::audit()
        .args([crate::common::NASA, "--key-column", "host", "-q"])
        .args(["-p", "gcra:rate=1/s,burst=5"])
        .run();
    assert!(!quiet.stderr.contains(note), "{}", quiet.stderr);
}

#[test]
fn policies_keyed_by_more_columns_than_a_row_holds_are_refused_in_one_line() {
    let tmp = Scratch::new();
    let cols: Vec<String> = (1..=9).map(|i| format!("c{i}")).collect();
    let mut csv = format!("t,{}\n", cols.join(","));
    for r in 0..4 {
        let vals: Vec<String> = (1..=9).map(|i| format!("v{}", (r + i) % 3)).collect();
        csv.push_str(&format!("2026-01-01T00:00:0{r}Z,{}\n", vals.join(",")));
    }
    let log = tmp.write("wide.csv", &csv);
    let policy = |c: &str| format!("token-bucket:rate=1/s,burst=1,key={c}");
    let eight: Vec<String> = cols[..8].iter().map(|c| policy(c)).collect();
    let mut args = vec![s(&log).to_string(), "-q".into(), "-f".into(), "json".into()];
    for p in &eight {
        args.extend(["-p".to_string(), p.clone()]);
    }
    // Eight columns fit, and each policy counts by its own.
    let v = Drip::audit().args(&args).json();
    assert_eq!(v["policies"][7]["keys"], 3, "{v}");
    args.extend(["-p".to_string(), policy("c9")]);
    let out = Drip::audit().args(&args).run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("the policies count by 9 distinct key columns ('c1',"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("audit the policies in two runs"),
        "{}",
        out.stderr
    );
}

#[test]
fn kong_periods_are_a_stack_of_epoch_windows_that_count_admitted_hits() {
    // Kong's rate-limiting plugin (kong/plugins/rate-limiting/handler.lua):
    // every configured period is checked (`remaining = limit − usage`, a
    // stop when ≤ 0), a stopped request returns 429 before `increment`,
    // and an admitted one increments every period; periods start on UTC
    // seconds, minutes, hours and days (kong/tools/timestamp.lua). With
    // `second: 2, minute: 3` that is the stack below.
    let tmp = Scratch::new();
    let times = [
        "00:00.0", "00:00.5", "00:00.9", "00:01.0", "00:02.0", "00:59.9", "01:00.0",
    ];
    let mut csv = String::from("t,client\n");
    for t in times {
        csv.push_str(&format!("2026-01-01T00:{t}Z,k\n"));
    }
    let log = tmp.write("kong.csv", &csv);
    let (_, decisions) = Drip::audit()
        .args([s(&log), "--key-column", "client", "-q", "-f", "json"])
        .args([
            "-p",
            "fixed-window:limit=2,window=1s+fixed-window:limit=3,window=1m",
        ])
        .run_with_decisions();
    let admitted: Vec<bool> = (decisions.lines().skip(1))
        .map(|l| l.rsplit(',').nth(2) == Some("1"))
        .collect();
    // Two in the first second, the third refused by the second's limit
    // (and not counted), the fourth the minute's last, then refused by the
    // minute until 01:00.
    assert_eq!(
        admitted,
        [true, true, false, true, false, false, true],
        "{decisions}"
    );
}

#[test]
fn a_stack_charging_each_member_refunds_none_before_a_refusal() {
    // Envoy's local rate limit (LocalRateLimiterImpl::requestAllowed in
    // source/extensions/filters/common/local_ratelimit/): a request's
    // descriptors are consumed in order (fewest tokens a second first), a
    // bucket out of tokens ends it, and the tokens taken before stay
    // taken. Per client 2 a minute, all together 1 a second: the second
    // request is refused by the global limit, and under charge=each it
    // has used the client's second token, so the third, a second later,
    // is refused by the client's limit; under the default it is admitted.
    let tmp = Scratch::new();
    let log = tmp.write(
        "log.csv",
        "t,client\n1700000000,y\n1700000000.2,y\n1700000001.5,y\n",
    );
    let stack = "fixed-window:limit=2,window=1m + fixed-window:limit=1,window=1s,key=none";
    let run = |spec: &str| {
        let (_, decisions) = Drip::audit()
            .args([s(&log), "--key-column", "client", "-q", "-p", spec])
            .run_with_decisions();
        (decisions.lines().skip(1))
            .map(|l| l.rsplit(',').nth(2) == Some("1"))
            .collect::<Vec<bool>>()
    };
    assert_eq!(run(stack), [true, false, true]);
    assert_eq!(run(&format!("{stack},charge=each")), [true, false, false]);
    let bad = Drip::audit()
        .args([s(&log), "-p", "gcra:rate=1/s,charge=each"])
        .run();
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("a single policy has one"),
        "{}",
        bad.stderr
    );
}

#[test]
fn kong_months_are_utc_calendar_months() {
    // Kong's `month` period starts on the first of the UTC month
    // (kong/tools/timestamp.lua): two a month, a third on January 31 is
    // refused until February 1 00:00 UTC, whatever the month's length.
    let tmp = Scratch::new();
    let log = tmp.write(
        "log.csv",
        "t,client\n2026-01-01T00:00:00Z,k\n2026-01-31T23:59:59Z,k\n2026-01-31T23:59:59.900Z,k\n\
         2026-02-01T00:00:00Z,k\n2026-02-28T12:00:00Z,k\n2026-02-28T23:00:00Z,k\n2026-03-01T00:00:00Z,k\n",
    );
    let (_, decisions) = Drip::audit()
        .args([s(&log), "--key-column", "client", "-q"])
        .args(["-p", "fixed-window:limit=2,window=month"])
        .run_with_decisions();
    let cells: Vec<(String, String)> = (decisions.lines().skip(1))
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (c[c.len() - 3].to_string(), c[c.len() - 1].to_string())
        })
        .collect();
    let admitted: Vec<&str> = cells.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(admitted, ["1", "1", "0", "1", "1", "0", "1"], "{decisions}");
    // The refused one may retry at February 1, 00:00 UTC: 100 ms later.
    assert_eq!(cells[2].1, "100", "{decisions}");
    let pace = Drip::pace()
        .args(["-p", "fixed-window:limit=2,window=month"])
        .stdin("a\n")
        .run();
    assert_eq!(pace.code, 2, "{}", pace.stderr);
    assert!(
        pace.stderr.contains("calendar windows of a log's times"),
        "{}",
        pace.stderr
    );
}

#[test]
fn a_block_refuses_a_refused_key_for_its_duration() {
    // A penalty box (Cloudflare's mitigation timeout, fail2ban's ban): one
    // a second, and a key refused once is refused for 10 s, though the
    // bucket would admit it a second later; a blocked request charges
    // nothing, so the first after the block is admitted.
    let tmp = Scratch::new();
    let log = tmp.write(
        "log.csv",
        "t,client\n1700000000,k\n1700000000.5,k\n1700000002,k\n1700000010.6,k\n1700000002,q\n",
    );
    let (_, decisions) = Drip::audit()
        .args([
            s(&log),
            "--key-column",
            "client",
            "-q",
            "--reorder-window",
            "20s",
        ])
        .args(["-p", "gcra:rate=1/s,burst=1,block=10s"])
        .run_with_decisions();
    let rows: Vec<(String, String, String)> = (decisions.lines().skip(1))
        .map(|l| {
            // row,policy,key,cost,admit,wait_ms,retry_after_ms (the
            // policy quoted, with commas): counted from the end.
            let c: Vec<&str> = l.split(',').collect();
            let n = c.len();
            (
                c[n - 5].to_string(),
                c[n - 3].to_string(),
                c[n - 1].to_string(),
            )
        })
        .collect();
    let k: Vec<(&str, &str)> = (rows.iter())
        .filter(|r| r.0 == "k")
        .map(|r| (r.1.as_str(), r.2.as_str()))
        .collect();
    // Refused at 0.5 s: blocked until 10.5 s (retry in 10 s); at 2 s still
    // blocked (8.5 s to go); at 10.6 s admitted. Another key is not blocked.
    assert_eq!(
        k,
        [("1", ""), ("0", "10000"), ("0", "8500"), ("1", "")],
        "{decisions}"
    );
    assert!(rows.iter().any(|r| r.0 == "q" && r.1 == "1"), "{decisions}");
}
