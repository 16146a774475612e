//! The aligned plain-text report, for people at a terminal. Every text is
//! written on one line with nothing hidden ([`page::one_line`]): a label or
//! a file name holding a terminal escape or a newline shows it as `\u{1b}`
//! or `\n` instead of acting on the terminal.
//!
//! Lines fit the terminal's width ([`fit`]): prose wraps, a wide table
//! is cut into groups of columns behind its first, or shown a record per
//! row; `--wide` writes every line whole.
//!
//! Layout: a heading follows a blank line; a table follows its heading
//! directly, or a blank line after prose; preformatted lines follow a blank
//! line; list items are indented two spaces.

use super::fit;
use super::page::{self, Block, Page, Shown, Table};
use std::io::{self, Write};

/// Writes rows under aligned headers: text columns left, numbers right;
/// fitted to `width` (see [`fit`]) when given.
fn write_table(out: &mut dyn Write, t: &Table, width: Option<usize>) -> io::Result<()> {
    let cells: Vec<Vec<String>> = std::iter::once(&t.headers)
        .chain(&t.rows)
        .map(|r| r.iter().map(|c| page::one_line(c)).collect())
        .collect();
    let widths: Vec<usize> = (0..t.headers.len())
        .map(|i| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let all = || vec![(0..widths.len()).collect::<Vec<usize>>()];
    let groups = match width {
        None => all(),
        Some(w) => match fit::groups(&widths, w) {
            Some(g) => g,
            None => return write_records(out, &cells, w),
        },
    };
    for (n, group) in groups.iter().enumerate() {
        if n > 0 {
            writeln!(out)?;
        }
        for row in &cells {
            writeln!(out, "{}", aligned(t, row, &widths, group))?;
        }
    }
    Ok(())
}

/// The cells of `row` in columns `group`, padded to `widths`.
fn aligned(t: &Table, row: &[String], widths: &[usize], group: &[usize]) -> String {
    let mut s = String::new();
    for (n, &i) in group.iter().enumerate() {
        if n > 0 {
            s.push_str("  ");
        }
        let text = &row[i];
        let pad = " ".repeat(widths[i].saturating_sub(text.chars().count()));
        if t.numeric[i] {
            s.push_str(&pad);
            s.push_str(text);
        } else {
            s.push_str(text);
            s.push_str(&pad);
        }
    }
    s.trim_end().to_string()
}

/// A table too wide for two columns: each row as `header  value` lines
/// (a blank line between rows), values wrapped.
fn write_records(out: &mut dyn Write, cells: &[Vec<String>], width: usize) -> io::Result<()> {
    let headers = &cells[0];
    let hw = headers.iter().map(|h| h.chars().count()).max().unwrap_or(0);
    let hw = hw.min(width / 2);
    for (n, row) in cells[1..].iter().enumerate() {
        if n > 0 {
            writeln!(out)?;
        }
        for (h, v) in headers.iter().zip(row) {
            let pad = " ".repeat(hw.saturating_sub(h.chars().count()));
            for l in fit::wrap(&format!("{h}{pad}  {v}"), width) {
                writeln!(out, "{}", l.trim_end())?;
            }
        }
    }
    Ok(())
}

/// Writes the blocks of `page` the terminal shows, fitted to `width`
/// (`None`: every line as long as it is).
pub fn write(page: &Page, width: Option<usize>, out: &mut dyn Write) -> io::Result<()> {
    let mut after_prose = false;
    for block in page.blocks_for(Shown::TEXT) {
        let line = |out: &mut dyn Write, s: &str| {
            let s = page::one_line(s);
            match width {
                None => writeln!(out, "{s}"),
                Some(w) => fit::wrap(&s, w)
                    .iter()
                    .try_for_each(|l| writeln!(out, "{}", l.trim_end())),
            }
        };
        match block {
            Block::Title(s) | Block::Paragraph(s) => line(out, s)?,
            Block::Heading(s) => {
                writeln!(out)?;
                line(out, s)?;
            }
            Block::List(items) => {
                for i in items {
                    line(out, &format!("  {i}"))?;
                }
            }
            Block::Alert(lines) => {
                for l in lines {
                    line(out, l)?;
                }
            }
            Block::Table(t) => {
                if after_prose {
                    writeln!(out)?;
                }
                write_table(out, t, width)?;
            }
            Block::Folded { summary, table } => {
                writeln!(out)?;
                line(out, summary)?;
                write_table(out, table, width)?;
            }
            Block::Pre(lines) => {
                writeln!(out)?;
                for l in lines {
                    line(out, l)?;
                }
            }
            // A terminal shows no picture: the --plot file has it.
            Block::Figure { .. } => {}
        }
        after_prose = !matches!(block, Block::Heading(_) | Block::Table(_));
    }
    Ok(())
}
