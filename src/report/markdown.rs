//! GitHub-flavoured markdown, to paste into a pull-request comment.

use super::{Column, Human, Report};
use std::io::{self, Write};

pub(super) fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}

pub(super) fn write_md<T>(out: &mut dyn Write, cols: &[Column<T>], rows: &[T]) -> io::Result<()> {
    let head: Vec<&str> = cols.iter().map(|c| c.header).collect();
    writeln!(out, "| {} |", head.join(" | "))?;
    let rule: Vec<&str> = cols
        .iter()
        .map(|c| if c.numeric { "---:" } else { "---" })
        .collect();
    writeln!(out, "|{}|", rule.join("|"))?;
    for r in rows {
        let cells: Vec<String> = cols
            .iter()
            .map(|c| escape(&(c.cell)(r, Human::Yes)))
            .collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    Ok(())
}

pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "### drip audit")?;
    writeln!(out)?;
    writeln!(out, "{}", escape(&report.input_line()))?;
    writeln!(out)?;
    write_md(out, super::SUMMARY, &report.policies)?;
    let top = report.top_rows();
    if !top.is_empty() {
        writeln!(out)?;
        writeln!(out, "#### Keys with the most drops")?;
        writeln!(out)?;
        write_md(out, super::TOP, &top)?;
    }
    super::nginx::render(report, out, true)?;
    super::compare::render(report, out, true)?;
    if let Some(t) = &report.timeline {
        writeln!(out)?;
        writeln!(out, "#### Timeline, every {}", crate::time::span(t.interval_ns))?;
        writeln!(out)?;
        write_md(out, super::TIMELINE, &t.rows)?;
    }
    if !report.crossings.is_empty() {
        writeln!(out)?;
        writeln!(out, "#### Thresholds crossed")?;
        writeln!(out)?;
        for c in &report.crossings {
            writeln!(out, "- {}", escape(&c.to_string()))?;
        }
    }
    Ok(())
}
