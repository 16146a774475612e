//! The `--compare` section of an audit's page: each policy after the first
//! against the first, then the keys newly hurt and the keys relieved.

use super::page::{Block, Page, Shown, Table};
use super::{Column, CompareReport, Human, KeyChange, Report};

pub const SUMMARY: &[Column<CompareReport>] = &[
    Column::text("policy", |r, _| r.policy.clone()),
    Column::text("against", |r, _| r.against.clone()),
    Column::num("newly_dropped", |r, _| r.newly_dropped.to_string()),
    Column::num("newly_admitted", |r, _| r.newly_admitted.to_string()),
    Column::num("keys_newly_hurt", |r, _| r.keys_newly_hurt.to_string()),
    Column::num("keys_relieved", |r, _| r.keys_relieved.to_string()),
];

/// A key of one comparison: (policy, change).
pub const KEYS: &[Column<(String, KeyChange)>] = &[
    Column::text("policy", |r, _| r.0.clone()),
    Column::text("key", |r, _| r.1.key.clone()),
    Column::num("requests", |r, _| r.1.requests.to_string()),
    Column::num("dropped_before", |r, _| r.1.dropped_before.to_string()),
    Column::num("dropped_now", |r, _| r.1.dropped_now.to_string()),
];

/// The listed keys of every comparison, with the policy they belong to.
pub fn key_rows(
    report: &Report,
    pick: fn(&CompareReport) -> &Vec<KeyChange>,
) -> Vec<(String, KeyChange)> {
    report
        .compare
        .iter()
        .flat_map(|c| pick(c).iter().map(|k| (c.policy.clone(), k.clone())))
        .collect()
}

/// A heading as the terminal and markdown say it, and as HTML does
/// (capitalised).
fn heading(page: &mut Page, text: &str) {
    page.add(Shown::TEXT | Shown::MARKDOWN, Block::Heading(text.into()));
    let mut titled = text.to_string();
    titled[..1].make_ascii_uppercase();
    page.add(Shown::HTML, Block::Heading(titled));
}

/// Adds the section (nothing without `--compare`): its blocks, and its
/// tables for scripts.
pub fn add(page: &mut Page, report: &Report) {
    if report.compare.is_empty() {
        return;
    }
    heading(page, "compared with the first policy");
    let table = |h| Table::from_columns(SUMMARY, &report.compare, h);
    page.add(Shown::ALL, Block::Table(table(Human::Yes)));
    page.data.push(table(Human::No));
    for (title, rows) in [
        (
            "keys newly hurt (no drop before, some now)",
            key_rows(report, |c| &c.top_hurt),
        ),
        (
            "keys relieved (drops before, none now)",
            key_rows(report, |c| &c.top_relieved),
        ),
    ] {
        if !rows.is_empty() {
            heading(page, title);
            let table = |h| Table::from_columns(KEYS, &rows, h);
            page.add(Shown::ALL, Block::Table(table(Human::Yes)));
            page.data.push(table(Human::No));
        }
    }
}
