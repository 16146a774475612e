//! GitHub-flavoured markdown, to paste into a pull-request comment. Blocks
//! are separated by one blank line.
//!
//! Every text is escaped ([`escape`]) so that what a log or a config holds
//! shows as the characters it is and never as markup: `&`, `<` and `>`
//! (HTML tags, autolinks), `]` (every link, image, reference or footnote
//! needs one to close its `[`, so `[` alone stays as it is), backticks
//! (code spans) and `|` (table cells) are written as character references,
//! which markdown never reads as syntax and a preceding `\` cannot undo; control
//! characters as `\n` or `\u{1b}`, so a text stays on its line. Emphasis
//! characters (`*`, `_`, `~`) and `\` are left as they are: at worst they
//! change how a text is emphasised, and nginx locations (`~ \.gif$`) read
//! as written in the source. Preformatted lines go in a fence longer than
//! any run of backticks they hold.

use super::page::{self, Block, Page, Shown, Table};
use std::io::{self, Write};

/// `s` as markdown text that is only text.
pub fn escape(s: &str) -> String {
    page::escape_with(s, |out, c| match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        ']' => out.push_str("&#93;"),
        '`' => out.push_str("&#96;"),
        '|' => out.push_str("&#124;"),
        c => out.push(c),
    })
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

/// Writes the blocks of `page` markdown shows.
pub fn write(page: &Page, out: &mut dyn Write) -> io::Result<()> {
    for (i, block) in page.blocks_for(Shown::MARKDOWN).enumerate() {
        if i > 0 {
            writeln!(out)?;
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
            Block::Table(t) => write_table(out, t)?,
            Block::Folded { summary, table } => {
                writeln!(out, "#### {}", escape(summary))?;
                writeln!(out)?;
                write_table(out, table)?;
            }
            Block::Pre(lines) => write_pre(out, lines)?,
            Block::Figure { caption, .. } => writeln!(out, "{}", escape(caption))?,
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
        assert_eq!(escape("\\[x\\](y)"), "\\[x\\&#93;(y)");
        assert_eq!(escape("line\nbreak\u{1b}"), "line\\nbreak\\u{1b}");
        assert_eq!(escape("location ~ \\.gif$ a_b"), "location ~ \\.gif$ a_b");
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
