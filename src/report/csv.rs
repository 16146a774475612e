//! CSV for scripts: the per-policy summary; then, each after one blank
//! line and with its own header, the top keys and the timeline when there
//! are any, each nginx.conf's locations and verification (with a leading
//! `policy` column), and the `--compare` tables. Waits are decimal milliseconds, exact; instants are ns since
//! the epoch.

use super::{Column, Human, Report};
use std::io::{self, Write};

pub(crate) fn section<T>(out: &mut dyn Write, cols: &[Column<T>], rows: &[T]) -> io::Result<()> {
    let mut w = ::csv::Writer::from_writer(out);
    w.write_record(cols.iter().map(|c| c.header))?;
    for r in rows {
        w.write_record(cols.iter().map(|c| (c.cell)(r, Human::No)))?;
    }
    w.flush()
}

pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    section(out, super::SUMMARY, &report.policies)?;
    let top = report.top_rows();
    if !top.is_empty() {
        writeln!(out)?;
        section(out, super::TOP, &top)?;
    }
    if let Some(t) = &report.timeline {
        writeln!(out)?;
        section(out, super::TIMELINE, &t.rows)?;
    }
    let configs: Vec<(&str, &super::NginxReport)> = report
        .policies
        .iter()
        .filter_map(|p| p.nginx.as_ref().map(|n| (p.label.as_str(), n)))
        .collect();
    let mut locations = Vec::new();
    let mut verify = Vec::new();
    let mut confusion = Vec::new();
    let mut first = Vec::new();
    for (label, n) in &configs {
        locations.extend(n.locations.iter().map(|r| (*label, r)));
        if let Some(v) = &n.verify {
            verify.push((*label, v));
            confusion.extend(v.confusion.iter().map(|r| (*label, r)));
            first.extend(v.first_disagreements.iter().map(|r| (*label, r)));
        }
    }
    tagged(out, super::nginx::LOCATIONS, &locations)?;
    if !verify.is_empty() {
        writeln!(out)?;
        let mut w = ::csv::Writer::from_writer(&mut *out);
        w.write_record([
            "policy",
            "verify_column",
            "rows",
            "agreed",
            "disagreed",
            "agreement_pct",
        ])?;
        for (label, v) in &verify {
            w.write_record([
                label.to_string(),
                v.column.clone(),
                v.rows.to_string(),
                v.agreed.to_string(),
                v.disagreed.to_string(),
                v.agreement_pct.to_string(),
            ])?;
        }
        w.flush()?;
    }
    tagged(out, super::nginx::CONFUSION, &confusion)?;
    tagged(out, super::nginx::DISAGREEMENTS, &first)?;
    if !report.compare.is_empty() {
        writeln!(out)?;
        section(out, super::compare::SUMMARY, &report.compare)?;
        for rows in [
            super::compare::key_rows(report, |c| &c.top_hurt),
            super::compare::key_rows(report, |c| &c.top_relieved),
        ] {
            if !rows.is_empty() {
                writeln!(out)?;
                section(out, super::compare::KEYS, &rows)?;
            }
        }
    }
    Ok(())
}

/// A section of rows belonging to policies: a leading `policy` column,
/// after a blank line; nothing when there are no rows.
fn tagged<T>(out: &mut dyn Write, cols: &[Column<T>], rows: &[(&str, &T)]) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    let mut w = ::csv::Writer::from_writer(out);
    w.write_record(std::iter::once("policy").chain(cols.iter().map(|c| c.header)))?;
    for (label, r) in rows {
        w.write_record(
            std::iter::once(label.to_string()).chain(cols.iter().map(|c| (c.cell)(r, Human::No))),
        )?;
    }
    w.flush()
}
