//! The page model every report is written as: a title, blocks in reading
//! order (titles, headings, paragraphs, lists, tables, preformatted lines,
//! figures), the tables for scripts, and the report itself for JSON. The
//! audit and the size report build a [`Page`]; each format (table,
//! markdown, csv, json, html) writes one from a `&Page` and nothing else.
//!
//! Text in a page is plain text, as found: keys, labels, file names and
//! config names come from logs and configs and may hold anything. Each
//! format escapes all of it once, where it writes it; nothing is escaped
//! here.
//!
//! The formats for people do not say everything the same way (a terminal
//! gets a compact layout, HTML a few more headings and the plot), so each
//! block says which of them show it ([`Shown`]).

use super::{Column, Human};
use serde::Serialize;
use std::io::{self, Write};

/// The formats for people that show a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shown(u8);

impl Shown {
    /// The aligned plain-text report.
    pub const TEXT: Shown = Shown(1);
    pub const MARKDOWN: Shown = Shown(2);
    pub const HTML: Shown = Shown(4);
    pub const ALL: Shown = Shown(7);

    /// True when `self` includes every format of `format`.
    pub fn has(self, format: Shown) -> bool {
        self.0 & format.0 == format.0
    }
}

impl std::ops::BitOr for Shown {
    type Output = Shown;
    fn bitor(self, other: Shown) -> Shown {
        Shown(self.0 | other.0)
    }
}

/// A table: headers, which columns are numbers (right-aligned), and cells.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub headers: Vec<String>,
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The table of `rows` under a shared column list, cells written for
    /// people or for machines.
    pub fn from_columns<T>(cols: &[Column<T>], rows: &[T], human: Human) -> Table {
        Table {
            headers: cols.iter().map(|c| c.header.to_string()).collect(),
            numeric: cols.iter().map(|c| c.numeric).collect(),
            rows: rows
                .iter()
                .map(|r| cols.iter().map(|c| (c.cell)(r, human)).collect())
                .collect(),
        }
    }

    /// The table for machines of rows that each belong to a policy: a
    /// leading `policy` column, then `cols`.
    pub fn tagged<T>(cols: &[Column<T>], rows: &[(&str, &T)]) -> Table {
        let mut headers = vec!["policy".to_string()];
        headers.extend(cols.iter().map(|c| c.header.to_string()));
        let mut numeric = vec![false];
        numeric.extend(cols.iter().map(|c| c.numeric));
        let rows = rows
            .iter()
            .map(|(label, r)| {
                let mut cells = vec![label.to_string()];
                cells.extend(cols.iter().map(|c| (c.cell)(r, Human::No)));
                cells
            })
            .collect();
        Table {
            headers,
            numeric,
            rows,
        }
    }
}

/// One block of a page, in reading order.
pub enum Block {
    /// The report's own heading.
    Title(String),
    /// A section's heading.
    Heading(String),
    Paragraph(String),
    /// Short remarks, one per item.
    List(Vec<String>),
    /// Lines that need attention (thresholds crossed), set apart.
    Alert(Vec<String>),
    Table(Table),
    /// A table folded away until opened, under a summary.
    Folded {
        summary: String,
        table: Table,
    },
    /// Preformatted lines (configuration to paste).
    Pre(Vec<String>),
    /// An SVG document drawn inline, with a caption.
    Figure {
        svg: String,
        caption: String,
    },
}

/// A report as the formats see it.
pub struct Page<'a> {
    /// The document's title (HTML's `<title>`).
    pub title: String,
    /// What people read, each block with the formats that show it.
    pub blocks: Vec<(Shown, Block)>,
    /// The tables for scripts (CSV), in order.
    pub data: Vec<Table>,
    /// The report itself, for JSON.
    pub json: &'a dyn Json,
    /// What the report concludes, for a reader who reads one line (the
    /// first line of the markdown).
    pub verdict: Option<Verdict>,
}

/// A report's conclusion: passed or not, one line, and what backs it.
pub struct Verdict {
    pub pass: bool,
    pub line: String,
    pub details: Vec<String>,
}

impl<'a> Page<'a> {
    pub fn new(title: String, json: &'a dyn Json) -> Page<'a> {
        Page {
            title,
            blocks: Vec::new(),
            data: Vec::new(),
            json,
            verdict: None,
        }
    }

    /// Adds `block`, shown in `shown`.
    pub fn add(&mut self, shown: Shown, block: Block) {
        self.blocks.push((shown, block));
    }

    /// The blocks `format` shows, in order.
    pub fn blocks_for(&self, format: Shown) -> impl Iterator<Item = &Block> {
        self.blocks
            .iter()
            .filter(move |(s, _)| s.has(format))
            .map(|(_, b)| b)
    }
}

/// Data written as pretty-printed JSON (any [`Serialize`] type).
pub trait Json {
    fn write_json(&self, out: &mut dyn Write) -> io::Result<()>;
}

impl<T: Serialize> Json for T {
    fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(out, self)?;
        Ok(())
    }
}

/// `c` as text that shows on one line and is valid anywhere (XML included):
/// control characters as `\n`, `\r`, `\t` or `\u{1b}`, and the invisible
/// characters that reorder or hide text as `\u{202e}`; None for any other
/// character, which stands for itself.
pub fn visible(c: char) -> Option<String> {
    match c {
        '\n' => Some("\\n".into()),
        '\r' => Some("\\r".into()),
        '\t' => Some("\\t".into()),
        c if crate::quote::hides(c) => Some(format!("\\u{{{:x}}}", u32::from(c))),
        _ => None,
    }
}

/// `s` with every character `visible` rewrites rewritten, and every other
/// one passed to `plain` (which writes it, escaped as a format needs).
pub fn escape_with(s: &str, plain: impl Fn(&mut String, char)) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match visible(c) {
            Some(v) => out.push_str(&v),
            None => plain(&mut out, c),
        }
    }
    out
}

/// `s` on one line with nothing hidden: see [`visible`].
pub fn one_line(s: &str) -> String {
    escape_with(s, |out, c| out.push(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_invisible_characters_are_shown() {
        assert_eq!(one_line("a\tb\nc\r"), "a\\tb\\nc\\r");
        assert_eq!(one_line("\u{1b}[31mred\u{7f}"), "\\u{1b}[31mred\\u{7f}");
        assert_eq!(one_line("x\u{202e}y\u{85}"), "x\\u{202e}y\\u{85}");
        assert_eq!(one_line("café \\.gif$ ≤"), "café \\.gif$ ≤");
    }

    #[test]
    fn blocks_are_picked_per_format() {
        let data = 1u8;
        let mut page = Page::new("t".into(), &data);
        page.add(Shown::TEXT, Block::Heading("a".into()));
        page.add(Shown::MARKDOWN | Shown::HTML, Block::Heading("b".into()));
        page.add(Shown::ALL, Block::Paragraph("c".into()));
        let seen = |f| page.blocks_for(f).count();
        assert_eq!(seen(Shown::TEXT), 2);
        assert_eq!(seen(Shown::HTML), 2);
        assert!(Shown::ALL.has(Shown::MARKDOWN));
        assert!(!Shown::TEXT.has(Shown::HTML));
    }
}
