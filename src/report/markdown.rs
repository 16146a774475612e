//! GitHub-flavoured markdown, to paste into a pull-request comment: the
//! verdict first (`✅`/`❌` and its line, then what backs it), the first
//! table open, every later table folded in `<details>` under its heading.
//! Blocks are separated by one blank line.
//!
//! Every text is escaped ([`escape`]) so that what a log or a config holds
//! shows as the characters it is and never as markup: `&`, `<` and `>`
//! (HTML tags, autolinks), `]` (every link, image, reference or footnote
//! needs one to close its `[`, so `[` alone stays as it is), backticks
//! (code spans), `|` (table cells), `\` (which would escape what follows:
//! nginx's `~ \.gif$` would lose it) and `*`, `_`, `~` (emphasis,
//! strikethrough) are written as character references, which markdown
//! never reads as syntax; control characters as `\n` or `\u{1b}`, so a
//! text stays on its line. Preformatted lines go in a fence longer than
//! any run of backticks they hold.

use super::page::{self, Block, Page, Shown, Table, Verdict};
use std::io::{self, Write};

/// `s` as markdown text that is only text. An `_` between two letters
/// or digits stays as it is: markdown never reads one there.
pub fn escape(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let word = |i: usize| chars.get(i).is_some_and(|c| c.is_alphanumeric());
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        match page::visible(c) {
            Some(v) => out.push_str(&v),
            None if c == '_' && i > 0 && word(i - 1) && word(i + 1) => out.push('_'),
            None => markup(&mut out, c),
        }
    }
    out
}

/// `c`, written as a character reference when markdown could read it as
/// syntax.
fn markup(out: &mut String, c: char) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        ']' => out.push_str("&#93;"),
        '`' => out.push_str("&#96;"),
        '|' => out.push_str("&#124;"),
        '\\' => out.push_str("&#92;"),
        '*' => out.push_str("&#42;"),
        '_' => out.push_str("&#95;"),
        '~' => out.push_str("&#126;"),
        c => out.push(c),
    }
}

fn write_table(out: &mut dyn Write, t: &Table) -> io::Result<()> {
    let row = |out: &mut dyn Write, cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
        writeln!(out, "| {} |", cells.join(" | "))
    };
    row(out, &t.headers)?;
    let rule: Vec<&str> = t
        .numeric
        .iter()
        .map(|&n| if n { "---:" } else { "---" })
        .collect();
    writeln!(out, "|{}|", rule.join("|"))?;
    for r in &t.rows {
        row(out, r)?;
    }
    Ok(())
}

/// Lines in a fenced code block: no escaping inside but for control
/// characters, and a fence no line can close.
fn write_pre(out: &mut dyn Write, lines: &[String]) -> io::Result<()> {
    let longest_run = lines
        .iter()
        .flat_map(|l| l.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest_run.max(2) + 1);
    writeln!(out, "{fence}")?;
    for l in lines {
        writeln!(out, "{}", page::one_line(l))?;
    }
    writeln!(out, "{fence}")
}

/// The verdict, bold behind its mark, and what backs it as a list.
fn write_verdict(out: &mut dyn Write, v: &Verdict) -> io::Result<()> {
    let mark = if v.pass { "✅" } else { "❌" };
    writeln!(out, "{mark} **{}**", escape(&v.line))?;
    if !v.details.is_empty() {
        writeln!(out)?;
        for d in &v.details {
            writeln!(out, "- {}", escape(d))?;
        }
    }
    Ok(())
}

/// A table folded in `<details>` under `summary` (GitHub shows the
/// summary, the table on a click).
fn write_folded(out: &mut dyn Write, summary: &str, t: &Table) -> io::Result<()> {
    writeln!(out, "<details><summary>{}</summary>", escape(summary))?;
    writeln!(out)?;
    write_table(out, t)?;
    writeln!(out)?;
    writeln!(out, "</details>")
}

/// Writes the blocks of `page` markdown shows: the verdict first, the
/// first table open, every later table (with its heading) folded.
pub fn write(page: &Page, out: &mut dyn Write) -> io::Result<()> {
    let blocks: Vec<&Block> = page.blocks_for(Shown::MARKDOWN).collect();
    if let Some(v) = &page.verdict {
        write_verdict(out, v)?;
        writeln!(out)?;
    }
    let mut tables = 0;
    let mut i = 0;
    while i < blocks.len() {
        if i > 0 {
            writeln!(out)?;
        }
        let block = blocks[i];
        i += 1;
        if let (Block::Heading(h), Some(Block::Table(t))) = (block, blocks.get(i))
            && tables > 0
        {
            write_folded(out, h, t)?;
            tables += 1;
            i += 1;
            continue;
        }
        match block {
            Block::Title(s) => writeln!(out, "### {}", escape(s))?,
            Block::Heading(s) => writeln!(out, "#### {}", escape(s))?,
            Block::Paragraph(s) => writeln!(out, "{}", escape(s))?,
            Block::List(items) | Block::Alert(items) => {
                for item in items {
                    writeln!(out, "- {}", escape(item))?;
                }
            }
            Block::Table(t) if tables > 0 => write_folded(out, "Details", t)?,
            Block::Table(t) => write_table(out, t)?,
            Block::Folded { summary, table } => write_folded(out, summary, table)?,
            Block::Pre(lines) => write_pre(out, lines)?,
            Block::Figure { caption, .. } => writeln!(out, "{}", escape(caption))?,
        }
        if matches!(block, Block::Table(_) | Block::Folded { .. }) {
            tables += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_is_only_text() {
        assert_eq!(
            escape("<img src=x onerror=alert(1)>"),
            "&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(escape("[click](http://evil)"), "[click&#93;(http://evil)");
        assert_eq!(escape("a|b `c` &amp;"), "a&#124;b &#96;c&#96; &amp;amp;");
        assert_eq!(escape("\\[x\\](y)"), "&#92;[x&#92;&#93;(y)");
        assert_eq!(escape("line\nbreak\u{1b}"), "line\\nbreak\\u{1b}");
        assert_eq!(escape("_x_ drop_pct a_"), "&#95;x&#95; drop_pct a&#95;");
        assert_eq!(escape("\u{1b}_a_b"), "\\u{1b}&#95;a_b");
        assert_eq!(
            escape("location ~* \\.gif$ *a_b*"),
            "location &#126;&#42; &#92;.gif$ &#42;a_b&#42;"
        );
    }

    #[test]
    fn a_fence_outlasts_the_backticks_it_holds() {
        let mut out = Vec::new();
        write_pre(&mut out, &["a ```` b".into(), "c".into()]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "`````\na ```` b\nc\n`````\n"
        );
        let mut out = Vec::new();
        write_pre(&mut out, &["plain".into()]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "```\nplain\n```\n");
    }
}
