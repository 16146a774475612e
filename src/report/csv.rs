//! CSV for scripts: the per-policy summary; then, each after one blank
//! line and with its own header, the top keys and the timeline when there
//! are any. Waits are decimal milliseconds, exact; instants are ns since
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
    Ok(())
}
