//! The aligned plain-text report, for people at a terminal. Every text is
//! written on one line with nothing hidden ([`page::one_line`]): a label or
//! a file name holding a terminal escape or a newline shows it as `\u{1b}`
//! or `\n` instead of acting on the terminal.
//!
//! Layout: a heading follows a blank line; a table follows its heading
//! directly, or a blank line after prose; preformatted lines follow a blank
//! line; list items are indented two spaces.

use super::page::{self, Block, Page, Shown, Table};
use std::io::{self, Write};

/// Writes rows under aligned headers: text columns left, numbers right.
fn write_table(out: &mut dyn Write, t: &Table) -> io::Result<()> {
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
    for row in &cells {
        let mut s = String::new();
        for (i, text) in row.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = " ".repeat(widths[i].saturating_sub(text.chars().count()));
            if t.numeric[i] {
                s.push_str(&pad);
                s.push_str(text);
            } else {
                s.push_str(text);
                if i + 1 < row.len() {
                    s.push_str(&pad);
                }
            }
        }
        writeln!(out, "{}", s.trim_end())?;
    }
    Ok(())
}

/// Writes the blocks of `page` the terminal shows.
pub fn write(page: &Page, out: &mut dyn Write) -> io::Result<()> {
    let mut after_prose = false;
    for block in page.blocks_for(Shown::TEXT) {
        let line = |out: &mut dyn Write, s: &str| writeln!(out, "{}", page::one_line(s));
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
                write_table(out, t)?;
            }
            Block::Folded { summary, table } => {
                writeln!(out)?;
                line(out, summary)?;
                write_table(out, table)?;
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
