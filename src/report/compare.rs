//! The `--compare` section of a report (table and markdown): each policy
//! after the first against the first, then the keys newly hurt and the
//! keys relieved.

use super::{Column, CompareReport, KeyChange, Report};
use std::io::{self, Write};

pub const SUMMARY: &[Column<CompareReport>] = &[
    Column {
        header: "policy",
        numeric: false,
        cell: |r, _| r.policy.clone(),
    },
    Column {
        header: "against",
        numeric: false,
        cell: |r, _| r.against.clone(),
    },
    Column {
        header: "newly_dropped",
        numeric: true,
        cell: |r, _| r.newly_dropped.to_string(),
    },
    Column {
        header: "newly_admitted",
        numeric: true,
        cell: |r, _| r.newly_admitted.to_string(),
    },
    Column {
        header: "keys_newly_hurt",
        numeric: true,
        cell: |r, _| r.keys_newly_hurt.to_string(),
    },
    Column {
        header: "keys_relieved",
        numeric: true,
        cell: |r, _| r.keys_relieved.to_string(),
    },
];

/// A key of one comparison: (policy, change).
pub const KEYS: &[Column<(String, KeyChange)>] = &[
    Column {
        header: "policy",
        numeric: false,
        cell: |r, _| r.0.clone(),
    },
    Column {
        header: "key",
        numeric: false,
        cell: |r, _| r.1.key.clone(),
    },
    Column {
        header: "requests",
        numeric: true,
        cell: |r, _| r.1.requests.to_string(),
    },
    Column {
        header: "dropped_before",
        numeric: true,
        cell: |r, _| r.1.dropped_before.to_string(),
    },
    Column {
        header: "dropped_now",
        numeric: true,
        cell: |r, _| r.1.dropped_now.to_string(),
    },
];

/// The listed keys of every comparison, with the policy they belong to.
pub fn key_rows(
    report: &Report,
    pick: fn(&CompareReport) -> &Vec<KeyChange>,
) -> Vec<(String, KeyChange)> {
    report
        .compare
        .iter()
        .flat_map(|c| pick(c).iter().map(|k| (c.policy.clone(), k.clone())))
        .collect()
}

/// Writes the section as aligned text, or as markdown.
pub fn render(report: &Report, out: &mut dyn Write, markdown: bool) -> io::Result<()> {
    if report.compare.is_empty() {
        return Ok(());
    }
    fn table<T>(out: &mut dyn Write, cols: &[Column<T>], rows: &[T], md: bool) -> io::Result<()> {
        if md {
            super::markdown::write_md(out, cols, rows)
        } else {
            super::table::write_table(out, cols, rows)
        }
    }
    let heading = |out: &mut dyn Write, title: &str| -> io::Result<()> {
        writeln!(out)?;
        if markdown {
            writeln!(out, "#### {}", super::markdown::escape(title))?;
            writeln!(out)
        } else {
            writeln!(out, "{title}")
        }
    };
    heading(out, "compared with the first policy")?;
    table(out, SUMMARY, &report.compare, markdown)?;
    let hurt = key_rows(report, |c| &c.top_hurt);
    if !hurt.is_empty() {
        heading(out, "keys newly hurt (no drop before, some now)")?;
        table(out, KEYS, &hurt, markdown)?;
    }
    let relieved = key_rows(report, |c| &c.top_relieved);
    if !relieved.is_empty() {
        heading(out, "keys relieved (drops before, none now)")?;
        table(out, KEYS, &relieved, markdown)?;
    }
    Ok(())
}
