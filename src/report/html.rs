//! One self-contained HTML file: the tables and the plots inline, styled by
//! an inline style sheet, with no scripts and no reference to anything
//! outside the file (no fonts, images or style sheets to fetch), so it reads
//! the same opened from disk, from a CI artifact, or offline.
//!
//! A [`Page`] is plain data (headings, paragraphs, tables, SVG figures);
//! [`render_audit`] builds the audit's page, and other reports build their
//! own from the same blocks.

use super::{Column, Human, Report};
use crate::time::span;
use std::io::{self, Write};

/// A table: headers, which columns are numbers (right-aligned), and cells.
pub struct Table {
    pub headers: Vec<String>,
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The table of `rows` under a shared column list, cells as people read them.
    pub fn from_columns<T>(cols: &[Column<T>], rows: &[T]) -> Table {
        Table {
            headers: cols.iter().map(|c| c.header.to_string()).collect(),
            numeric: cols.iter().map(|c| c.numeric).collect(),
            rows: rows
                .iter()
                .map(|r| cols.iter().map(|c| (c.cell)(r, Human::Yes)).collect())
                .collect(),
        }
    }
}

/// One block of a page, in reading order.
pub enum Block {
    Heading(String),
    Paragraph(String),
    /// Lines that need attention (thresholds crossed), set apart.
    Alert(Vec<String>),
    Table(Table),
    /// A table folded away until opened (no script needed).
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

/// A whole report page.
pub struct Page {
    pub title: String,
    pub blocks: Vec<Block>,
}

/// Text made safe inside an element or a quoted attribute.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
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

/// Writes `page` as one HTML document.
pub fn write_page(page: &Page, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "<!DOCTYPE html>")?;
    writeln!(out, "<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">")?;
    writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    )?;
    writeln!(out, "<title>{}</title>", escape(&page.title))?;
    writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>")?;
    writeln!(out, "<h1>{}</h1>", escape(&page.title))?;
    for block in &page.blocks {
        match block {
            Block::Heading(h) => writeln!(out, "<h2>{}</h2>", escape(h))?,
            Block::Paragraph(p) => writeln!(out, "<p>{}</p>", escape(p))?,
            Block::Alert(lines) => {
                write!(out, "<div class=\"alert\"><ul>")?;
                for l in lines {
                    write!(out, "<li>{}</li>", escape(l))?;
                }
                writeln!(out, "</ul></div>")?;
            }
            Block::Table(t) => write_table(out, t)?,
            Block::Pre(lines) => writeln!(out, "<pre>{}</pre>", escape(&lines.join("\n")))?,
            Block::Folded { summary, table } => {
                writeln!(out, "<details><summary>{}</summary>", escape(summary))?;
                write_table(out, table)?;
                writeln!(out, "</details>")?;
            }
            Block::Figure { svg, caption } => {
                writeln!(out, "<figure>")?;
                writeln!(out, "{}", inline_svg(svg))?;
                writeln!(
                    out,
                    "<figcaption>{}</figcaption>\n</figure>",
                    escape(caption)
                )?;
            }
        }
    }
    writeln!(
        out,
        "<footer>drip {}</footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION")
    )
}

/// The audit as a page: input, thresholds crossed, the summary, the keys
/// with the most drops, each nginx.conf's locations and verification, the
/// comparison with the first policy (`--compare`), the
/// timeline plot (`plot`, an SVG document), and the timeline table when one
/// was asked for.
pub fn render_audit(report: &Report, plot: Option<&str>, out: &mut dyn Write) -> io::Result<()> {
    let mut blocks = vec![Block::Paragraph(report.input_line())];
    if !report.crossings.is_empty() {
        blocks.push(Block::Heading("Thresholds crossed".into()));
        blocks.push(Block::Alert(
            report.crossings.iter().map(|c| c.to_string()).collect(),
        ));
    }
    blocks.push(Block::Heading("Policies".into()));
    blocks.push(Block::Table(Table::from_columns(
        super::SUMMARY,
        &report.policies,
    )));
    let top = report.top_rows();
    if !top.is_empty() {
        blocks.push(Block::Heading("Keys with the most drops".into()));
        blocks.push(Block::Table(Table::from_columns(super::TOP, &top)));
    }
    for p in &report.policies {
        let Some(n) = &p.nginx else {
            continue;
        };
        blocks.push(Block::Heading(format!(
            "{}: locations of {}",
            p.label, n.config
        )));
        blocks.push(Block::Table(Table::from_columns(
            super::nginx::LOCATIONS,
            &n.locations,
        )));
        for note in &n.notes {
            blocks.push(Block::Paragraph(format!("note: {note}")));
        }
        if let Some(v) = &n.verify {
            blocks.push(Block::Heading(format!(
                "{}: $limit_req_status against column '{}': {} of {} rows agree ({}%), {} disagree",
                p.label,
                v.column,
                v.agreed,
                v.rows,
                super::pct(v.agreement_pct),
                v.disagreed
            )));
            blocks.push(Block::Table(Table::from_columns(
                super::nginx::CONFUSION,
                &v.confusion,
            )));
            if !v.first_disagreements.is_empty() {
                blocks.push(Block::Paragraph("First disagreements:".into()));
                blocks.push(Block::Table(Table::from_columns(
                    super::nginx::DISAGREEMENTS,
                    &v.first_disagreements,
                )));
            }
        }
    }
    if !report.compare.is_empty() {
        blocks.push(Block::Heading("Compared with the first policy".into()));
        blocks.push(Block::Table(Table::from_columns(
            super::compare::SUMMARY,
            &report.compare,
        )));
        for (title, rows) in [
            (
                "Keys newly hurt (no drop before, some now)",
                super::compare::key_rows(report, |c| &c.top_hurt),
            ),
            (
                "Keys relieved (drops before, none now)",
                super::compare::key_rows(report, |c| &c.top_relieved),
            ),
        ] {
            if !rows.is_empty() {
                blocks.push(Block::Heading(title.into()));
                blocks.push(Block::Table(Table::from_columns(
                    super::compare::KEYS,
                    &rows,
                )));
            }
        }
    }
    if let Some(svg) = plot {
        blocks.push(Block::Heading("Timeline".into()));
        blocks.push(Block::Figure {
            svg: svg.to_string(),
            caption: "Per policy: requests arrived, sent (at release) and dropped per interval; \
                      below, the peak backlog or level against the policy's bound."
                .into(),
        });
    }
    if let Some(t) = &report.timeline {
        blocks.push(Block::Folded {
            summary: format!(
                "Timeline table, every {} ({} rows)",
                span(t.interval_ns),
                t.rows.len()
            ),
            table: Table::from_columns(super::TIMELINE, &t.rows),
        });
    }
    let title = if report.input.files.is_empty() {
        "drip audit".to_string()
    } else {
        format!("drip audit: {}", report.input.files.join(", "))
    };
    write_page(&Page { title, blocks }, out)
}

/// A `drip size` report as a page: the verdict when nothing meets the
/// targets, the recommendation, the frontier, the per-key need, notes and
/// the sizing plot (`plot`, an SVG document).
pub fn render_size(
    r: &super::size::SizeReport,
    plot: Option<&str>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut blocks = vec![Block::Paragraph(super::size::input_line(r))];
    if let Some(v) = &r.verdict {
        blocks.push(Block::Alert(vec![v.clone()]));
    }
    blocks.push(Block::Heading("Recommendation".into()));
    blocks.push(Block::Pre(super::size::summary_lines(r)));
    blocks.push(Block::Heading("Frontier".into()));
    blocks.push(Block::Table(Table::from_columns(
        super::size::FRONTIER,
        &r.frontier,
    )));
    for row in r.frontier.iter().filter(|f| f.note.is_some()) {
        blocks.push(Block::Paragraph(format!(
            "{}: {}",
            row.point(),
            row.note.as_deref().unwrap_or("")
        )));
    }
    if !r.per_key.is_empty() {
        blocks.push(Block::Heading("Per-key need".into()));
        blocks.push(Block::Table(Table::from_columns(
            super::size::NEED,
            &r.per_key,
        )));
    }
    if let Some(svg) = plot {
        blocks.push(Block::Heading("Plot".into()));
        blocks.push(Block::Figure {
            svg: svg.to_string(),
            caption: "The smallest size per rate or window that meets the targets (the \
                      recommendation ringed, misses crossed out); below, the zero-drop size \
                      of each key as quantiles across keys."
                .into(),
        });
    }
    for n in &r.notes {
        blocks.push(Block::Paragraph(format!("note: {n}")));
    }
    write_page(
        &Page {
            title: super::size::heading(r),
            blocks,
        },
        out,
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
    }

    #[test]
    fn an_xml_declaration_is_dropped_inline() {
        assert_eq!(inline_svg("<?xml version=\"1.0\"?>\n<svg/>"), "<svg/>");
        assert_eq!(inline_svg("<svg/>"), "<svg/>");
    }
}
