//! One self-contained HTML file: the tables and the plots inline, styled by
//! an inline style sheet, with no scripts and no reference to anything
//! outside the file (no fonts, images or style sheets to fetch), so it reads
//! the same opened from disk, from a CI artifact, or offline.
//!
//! [`write`] writes any [`Page`]; every text is escaped ([`escape`]), and
//! the figures are SVG documents drawn inline as they are (the plots escape
//! their own text).

use super::page::{self, Block, Page, Shown, Table};
use std::io::{self, Write};

/// Text made safe inside an element or a quoted attribute, control
/// characters shown as `\n` or `\u{1b}`.
pub fn escape(s: &str) -> String {
    page::escape_with(s, |out, c| match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '"' => out.push_str("&quot;"),
        '\'' => out.push_str("&#39;"),
        c => out.push(c),
    })
}

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2rem auto;max-width:1240px;padding:0 1rem;color:#1d2330;background:#fff}\
h1{font-size:1.5rem;margin:0 0 .3rem}h2{font-size:1.15rem;margin:2rem 0 .6rem;border-bottom:1px solid #d8dde6;padding-bottom:.2rem}\
p{margin:.4rem 0}table{border-collapse:collapse;font-size:.85rem;margin:.4rem 0}\
th,td{padding:.25rem .6rem;border-bottom:1px solid #e3e7ee;white-space:nowrap}\
th{text-align:left;background:#f3f5f9;font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\
tbody tr:nth-child(even){background:#fafbfd}.scroll{overflow-x:auto}\
.alert{border-left:4px solid #d22;background:#fff3f3;padding:.5rem 1rem;margin:1rem 0}.alert li{margin:.2rem 0}\
pre{background:#f3f5f9;padding:.6rem 1rem;overflow-x:auto}figure{margin:.5rem 0}figure svg{max-width:100%;height:auto;border:1px solid #e3e7ee}figcaption{font-size:.85rem;color:#556}\
details{margin:.6rem 0}summary{cursor:pointer;font-weight:600}footer{margin-top:2.5rem;font-size:.8rem;color:#778}";

fn write_table(out: &mut dyn Write, t: &Table) -> io::Result<()> {
    let class = |i: usize| {
        if t.numeric.get(i).copied().unwrap_or(false) {
            " class=\"n\""
        } else {
            ""
        }
    };
    write!(out, "<div class=\"scroll\"><table>\n<thead><tr>")?;
    for (i, h) in t.headers.iter().enumerate() {
        write!(out, "<th{}>{}</th>", class(i), escape(h))?;
    }
    writeln!(out, "</tr></thead>\n<tbody>")?;
    for row in &t.rows {
        write!(out, "<tr>")?;
        for (i, cell) in row.iter().enumerate() {
            write!(out, "<td{}>{}</td>", class(i), escape(cell))?;
        }
        writeln!(out, "</tr>")?;
    }
    writeln!(out, "</tbody></table></div>")
}

/// An SVG document as an inline element: without an XML declaration.
fn inline_svg(svg: &str) -> &str {
    let s = svg.trim_start();
    match s.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or(s, |(_, r)| r.trim_start()),
        None => s,
    }
}

/// One block as HTML.
fn write_block(out: &mut dyn Write, block: &Block) -> io::Result<()> {
    let list = |out: &mut dyn Write, class: &str, items: &[String]| -> io::Result<()> {
        write!(out, "{class}<ul>")?;
        for l in items {
            write!(out, "<li>{}</li>", escape(l))?;
        }
        let end = if class.is_empty() { "" } else { "</div>" };
        writeln!(out, "</ul>{end}")
    };
    match block {
        Block::Title(t) => writeln!(out, "<h1>{}</h1>", escape(t)),
        Block::Heading(h) => writeln!(out, "<h2>{}</h2>", escape(h)),
        Block::Paragraph(p) => writeln!(out, "<p>{}</p>", escape(p)),
        Block::List(items) => list(out, "", items),
        Block::Alert(lines) => list(out, "<div class=\"alert\">", lines),
        Block::Table(t) => write_table(out, t),
        Block::Pre(lines) => {
            let lines: Vec<String> = lines.iter().map(|l| escape(l)).collect();
            writeln!(out, "<pre>{}</pre>", lines.join("\n"))
        }
        Block::Folded { summary, table } => {
            writeln!(out, "<details><summary>{}</summary>", escape(summary))?;
            write_table(out, table)?;
            writeln!(out, "</details>")
        }
        Block::Figure { svg, caption } => {
            writeln!(out, "<figure>")?;
            writeln!(out, "{}", inline_svg(svg))?;
            writeln!(
                out,
                "<figcaption>{}</figcaption>\n</figure>",
                escape(caption)
            )
        }
    }
}

/// Writes `page` as one HTML document.
pub fn write(page: &Page, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "<!DOCTYPE html>")?;
    writeln!(out, "<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">")?;
    writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(out, "<title>{}</title>", escape(&page.title))?;
    writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>")?;
    for block in page.blocks_for(Shown::HTML) {
        write_block(out, block)?;
    }
    writeln!(
        out,
        "<footer>drip {}</footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("a\u{1b}[2Jb\n"), "a\\u{1b}[2Jb\\n");
    }

    #[test]
    fn an_xml_declaration_is_dropped_inline() {
        assert_eq!(inline_svg("<?xml version=\"1.0\"?>\n<svg/>"), "<svg/>");
        assert_eq!(inline_svg("<svg/>"), "<svg/>");
    }
}
