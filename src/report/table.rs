//! The aligned plain-text report, for people.

use super::{Column, Human, Report};
use std::io::{self, Write};

/// Writes rows under aligned headers: text columns left, numbers right.
pub fn write_table<T>(out: &mut dyn Write, cols: &[Column<T>], rows: &[T]) -> io::Result<()> {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| cols.iter().map(|c| (c.cell)(r, Human::Yes)).collect())
        .collect();
    let widths: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([c.header.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |out: &mut dyn Write, texts: &[String]| -> io::Result<()> {
        let mut s = String::new();
        for (i, (t, c)) in texts.iter().zip(cols).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = widths[i].saturating_sub(t.chars().count());
            if c.numeric {
                s.push_str(&" ".repeat(pad));
                s.push_str(t);
            } else {
                s.push_str(t);
                if i + 1 < cols.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    let headers: Vec<String> = cols.iter().map(|c| c.header.to_string()).collect();
    line(out, &headers)?;
    for r in &cells {
        line(out, r)?;
    }
    Ok(())
}

pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "drip audit: {}", report.input_line())?;
    writeln!(out)?;
    write_table(out, super::SUMMARY, &report.policies)?;
    let top = report.top_rows();
    if !top.is_empty() {
        writeln!(out)?;
        writeln!(out, "keys with the most drops")?;
        write_table(out, super::TOP, &top)?;
    }
    super::nginx::render(report, out, false)?;
    super::compare::render(report, out, false)?;
    if let Some(t) = &report.timeline {
        writeln!(out)?;
        writeln!(out, "timeline, every {}", crate::time::span(t.interval_ns))?;
        write_table(out, super::TIMELINE, &t.rows)?;
    }
    Ok(())
}
