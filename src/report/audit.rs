//! The audit's page: the input, the thresholds crossed, the summary, the
//! keys with the most drops and with the longest waits, each nginx.conf's
//! locations and verification, the comparison with the first policy
//! (`--compare`), the timeline plot (HTML) and the timeline table. Its
//! tables for scripts: the summary, the top keys, the longest waits and
//! the timeline, then the nginx and compare tables.

use super::page::{Block, Page, Shown, Table, Verdict};
use super::{Column, Human, Report, TIMELINE};
use crate::time::span;
use std::io::{self, Write};

/// What the timeline plot shows, said under it.
const PLOT_CAPTION: &str = "Per policy: requests arrived, sent (at release) and dropped per \
                            interval; below, the peak backlog or level against the policy's bound.";

/// The audit as a page; `plot` is the timeline plot (an SVG document),
/// drawn in HTML.
pub fn page<'a>(report: &'a Report, plot: Option<&str>) -> Page<'a> {
    let title = if report.input.files.is_empty() {
        "drip audit".to_string()
    } else {
        format!("drip audit: {}", report.input.files.join(", "))
    };
    let mut page = Page::new(title, report);
    add_lead(&mut page, report);
    add_policies(&mut page, report);
    super::nginx::add(&mut page, report);
    super::replicas::add(&mut page, report);
    super::compare::add(&mut page, report);
    add_timeline(&mut page, report, plot);
    // The terminal hears of crossings on stderr, from the audit itself;
    // markdown leads with them.
    let n = report.crossings.len();
    page.verdict = Some(Verdict {
        pass: n == 0,
        line: match n {
            0 => "pass: no threshold crossed".into(),
            1 => "1 threshold crossed".into(),
            n => format!("{n} thresholds crossed"),
        },
        details: crossed(report),
    });
    page
}

fn crossed_heading() -> Block {
    Block::Heading("Thresholds crossed".into())
}

fn crossed(report: &Report) -> Vec<String> {
    report.crossings.iter().map(|c| c.to_string()).collect()
}

/// The title, the input, and (in HTML, first) the thresholds crossed.
fn add_lead(page: &mut Page, report: &Report) {
    let input = report.input.line();
    page.add(Shown::TEXT, Block::Title(format!("drip audit: {input}")));
    page.add(Shown::MARKDOWN, Block::Title("drip audit".into()));
    page.add(Shown::HTML, Block::Title(page.title.clone()));
    page.add(Shown::MARKDOWN | Shown::HTML, Block::Paragraph(input));
    if !report.crossings.is_empty() {
        page.add(Shown::HTML, crossed_heading());
        page.add(Shown::HTML, Block::Alert(crossed(report)));
    }
}

/// The per-policy summary, the keys with the most drops and, for policies
/// that delay, those with the longest waits; for scripts, the timeline too.
fn add_policies(page: &mut Page, report: &Report) {
    page.add(Shown::HTML, Block::Heading("Policies".into()));
    let table = |h| Table::from_columns(super::SUMMARY, &report.policies, h);
    page.add(Shown::ALL, Block::Table(table(Human::Yes)));
    page.data.push(table(Human::No));
    add_keys(
        page,
        "keys with the most drops",
        super::TOP,
        &report.top_rows(),
    );
    let waits = report.wait_rows();
    add_keys(
        page,
        "keys with the longest waits",
        super::TOP_WAITS,
        &waits,
    );
    if let Some(t) = &report.timeline {
        page.data
            .push(Table::from_columns(TIMELINE, &t.rows, Human::No));
    }
}

/// A table of keys under its heading (nothing when there are none), and
/// for scripts.
fn add_keys<T>(page: &mut Page, heading: &str, cols: &[Column<T>], rows: &[T]) {
    if rows.is_empty() {
        return;
    }
    page.add(Shown::TEXT, Block::Heading(heading.into()));
    let mut titled = heading.to_string();
    titled[..1].make_ascii_uppercase();
    page.add(Shown::MARKDOWN | Shown::HTML, Block::Heading(titled));
    let table = |h| Table::from_columns(cols, rows, h);
    page.add(Shown::ALL, Block::Table(table(Human::Yes)));
    page.data.push(table(Human::No));
}

/// The timeline plot (HTML) and the timeline table (folded in HTML).
fn add_timeline(page: &mut Page, report: &Report, plot: Option<&str>) {
    if let Some(svg) = plot {
        page.add(Shown::HTML, Block::Heading("Timeline".into()));
        let figure = Block::Figure {
            svg: svg.to_string(),
            caption: PLOT_CAPTION.into(),
        };
        page.add(Shown::HTML, figure);
    }
    let Some(t) = &report.timeline else {
        return;
    };
    let every = span(t.interval_ns);
    let table = Table::from_columns(TIMELINE, &t.rows, Human::Yes);
    page.add(
        Shown::TEXT,
        Block::Heading(format!("timeline, every {every}")),
    );
    page.add(
        Shown::MARKDOWN,
        Block::Heading(format!("Timeline, every {every}")),
    );
    let summary = format!("Timeline table, every {every} ({} rows)", t.rows.len());
    page.add(Shown::TEXT | Shown::MARKDOWN, Block::Table(table.clone()));
    page.add(Shown::HTML, Block::Folded { summary, table });
}

pub fn render_table(report: &Report, width: Option<usize>, out: &mut dyn Write) -> io::Result<()> {
    super::table::write(&page(report, None), width, out)
}

pub fn render_markdown(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    super::markdown::write(&page(report, None), out)
}

pub fn render_csv(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    super::csv::write(&page(report, None), out)
}

pub fn render_json(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    super::json::write(&page(report, None), out)
}

pub fn render_html(report: &Report, plot: Option<&str>, out: &mut dyn Write) -> io::Result<()> {
    super::html::write(&page(report, plot), out)
}
