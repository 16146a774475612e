//! The table report fits the terminal: at `COLUMNS=80` and `120` no line
//! of any command's default output is longer (fixtures, NASA, the size and
//! nginx-conf examples of the README), every cell of the wide report is
//! still in it, and `--wide` gives the lines whole.

use crate::common::{Drip, heavy};

const TSV: &str = "fixtures/nasa_19950801.tsv";
const LOG: &str = "fixtures/nasa_19950801.log.gz";
const CONF: &str = "fixtures/nginx/discourse/discourse.conf";

/// Each command's default report, as arguments after `drip`.
fn reports() -> Vec<Vec<&'static str>> {
    let policies = ["--policies", "fixtures/policies.txt"];
    vec![
        [&["audit", TSV, "--key-column", "host"][..], &policies].concat(),
        [
            &["audit", TSV, "--key-column", "host", "--timeline", "1h"][..],
            &policies,
        ]
        .concat(),
        vec![
            "audit",
            "fixtures/small.csv",
            "-p",
            "gcra:rate=1/s,burst=2,label=a-rather-long-label-for-a-policy-spec",
        ],
        vec!["audit", LOG, "--nginx-conf", CONF],
        vec![
            "size",
            TSV,
            "--key-column",
            "host",
            "-p",
            "nginx",
            "--max-drop-rate",
            "0.1",
        ],
        vec![
            "size",
            TSV,
            "--key-column",
            "host",
            "-p",
            "gcra",
            "--max-drop-rate",
            "1",
            "--current",
            "gcra:rate=1/s,burst=5",
        ],
        vec![
            "size",
            LOG,
            "--max-drop-rate",
            "0.1",
            "--tighten",
            "--max-change",
            "100",
            "--nginx-conf",
            CONF,
        ],
    ]
}

/// The cells of a report's lines, as words: what a reader can find in it.
fn words(text: &str) -> Vec<String> {
    let mut w: Vec<String> = text.split_whitespace().map(String::from).collect();
    w.sort();
    w
}

#[test]
fn every_default_report_fits_80_and_120_columns() {
    let _heavy = heavy();
    let mut widest = 0;
    for args in reports() {
        let wide = Drip::new()
            .args(&args)
            .arg("--wide")
            .env("COLUMNS", "80")
            .run();
        assert!(
            wide.code == 0 || wide.code == 1,
            "{args:?}: {}",
            wide.stderr
        );
        let longest = wide
            .stdout
            .lines()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0);
        for columns in [80, 120] {
            let out = Drip::new()
                .args(&args)
                .env("COLUMNS", columns.to_string())
                .run();
            assert_eq!(out.code, wide.code, "{args:?}: {}", out.stderr);
            let over: Vec<&str> = (out.stdout.lines())
                .filter(|l| l.chars().count() > columns)
                .collect();
            assert!(over.is_empty(), "{args:?} at {columns}: {over:#?}");
            // Nothing left out: the words of the wide report, a cut word
            // aside (the fitted lines rejoined), each header per group.
            let mut fitted = words(&out.stdout);
            fitted.dedup();
            let mut all = words(&wide.stdout);
            all.dedup();
            let missing: Vec<&String> = (all.iter())
                .filter(|w| fitted.binary_search(w).is_err())
                .filter(|w| !out.stdout.replace(['\n', ' '], "").contains(w.as_str()))
                .collect();
            assert!(missing.is_empty(), "{args:?} at {columns}: {missing:?}");
        }
        widest = widest.max(longest);
    }
    // The reports need fitting: --wide is not fitted.
    assert!(widest > 120, "{widest}");
}

/// A table too wide for its first column and any other is a record per
/// row; not a terminal and no $COLUMNS: 80.
#[test]
fn a_narrow_terminal_gets_records_and_no_terminal_gets_80() {
    let label = "x".repeat(70);
    let spec = format!("gcra:rate=1/s,burst=2,label={label}");
    let out = Drip::audit()
        .args(["fixtures/small.csv", "-p", &spec])
        .env("COLUMNS", "60")
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.lines().all(|l| l.chars().count() <= 60),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.lines().any(|l| l.starts_with("requests ")),
        "{}",
        out.stdout
    );
    let out = Drip::audit()
        .args(["fixtures/small.csv", "-p", &spec])
        .env_remove("COLUMNS")
        .run();
    let longest = out.stdout.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(longest <= 80, "{}", out.stdout);
    assert!(longest > 60, "{}", out.stdout);
}
