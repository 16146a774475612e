//! The nginx.conf sections of a report (table and markdown): per location,
//! then the verification against the logged `$limit_req_status`.

use super::{Column, NginxLocationRow, Report, VerifyRow};
use std::io::{self, Write};

pub const LOCATIONS: &[Column<NginxLocationRow>] = &[
    Column {
        header: "location",
        numeric: false,
        cell: |r, _| r.location.clone(),
    },
    Column {
        header: "limit_req",
        numeric: false,
        cell: |r, _| r.limits.clone(),
    },
    Column {
        header: "requests",
        numeric: true,
        cell: |r, _| r.requests.to_string(),
    },
    Column {
        header: "passed",
        numeric: true,
        cell: |r, _| r.passed.to_string(),
    },
    Column {
        header: "delayed",
        numeric: true,
        cell: |r, _| r.delayed.to_string(),
    },
    Column {
        header: "rejected",
        numeric: true,
        cell: |r, _| r.rejected.to_string(),
    },
    Column {
        header: "no limit",
        numeric: true,
        cell: |r, _| r.unlimited.to_string(),
    },
];

/// A confusion-table row: drip's status, the logged one, rows.
pub const CONFUSION: &[Column<(String, String, u64)>] = &[
    Column {
        header: "drip",
        numeric: false,
        cell: |r, _| r.0.clone(),
    },
    Column {
        header: "logged",
        numeric: false,
        cell: |r, _| r.1.clone(),
    },
    Column {
        header: "rows",
        numeric: true,
        cell: |r, _| r.2.to_string(),
    },
];

pub const DISAGREEMENTS: &[Column<VerifyRow>] = &[
    Column {
        header: "where",
        numeric: false,
        cell: |r, _| r.at.clone(),
    },
    Column {
        header: "drip",
        numeric: false,
        cell: |r, _| r.emulated.clone(),
    },
    Column {
        header: "logged",
        numeric: false,
        cell: |r, _| r.logged.clone(),
    },
];

/// Writes the sections as aligned text, or as markdown.
pub fn render(report: &Report, out: &mut dyn Write, markdown: bool) -> io::Result<()> {
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
    for p in &report.policies {
        let Some(n) = &p.nginx else {
            continue;
        };
        heading(out, &format!("{}: locations of {}", p.label, n.config))?;
        table(out, LOCATIONS, &n.locations, markdown)?;
        for note in &n.notes {
            if markdown {
                writeln!(out)?;
            }
            writeln!(out, "note: {note}")?;
        }
        if let Some(v) = &n.verify {
            heading(
                out,
                &format!(
                    "{}: $limit_req_status against column '{}': {} of {} rows agree ({}%), {} disagree",
                    p.label,
                    v.column,
                    v.agreed,
                    v.rows,
                    super::pct(v.agreement_pct),
                    v.disagreed
                ),
            )?;
            table(out, CONFUSION, &v.confusion, markdown)?;
            if !v.first_disagreements.is_empty() {
                heading(out, "first disagreements")?;
                table(out, DISAGREEMENTS, &v.first_disagreements, markdown)?;
            }
        }
    }
    Ok(())
}
