//! The nginx.conf sections of an audit's page: per config, its locations,
//! then the verification against the logged `$limit_req_status`. Scripts
//! get each kind of table once for every config, with a leading `policy`
//! column.

use super::page::{Block, Page, Shown, Table};
use super::{Column, Human, NginxLocationRow, NginxReport, Report, VerifyReport, VerifyRow, pct};

pub const LOCATIONS: &[Column<NginxLocationRow>] = &[
    Column::text("location", |r, _| r.location.clone()),
    Column::text("limit_req", |r, _| r.limits.clone()),
    Column::num("requests", |r, _| r.requests.to_string()),
    Column::num("passed", |r, _| r.passed.to_string()),
    Column::num("delayed", |r, _| r.delayed.to_string()),
    Column::num("rejected", |r, _| r.rejected.to_string()),
    Column::num("no limit", |r, _| r.unlimited.to_string()),
];

/// A confusion-table row: drip's status, the logged one, rows.
pub const CONFUSION: &[Column<(String, String, u64)>] = &[
    Column::text("drip", |r, _| r.0.clone()),
    Column::text("logged", |r, _| r.1.clone()),
    Column::num("rows", |r, _| r.2.to_string()),
];

pub const DISAGREEMENTS: &[Column<VerifyRow>] = &[
    Column::text("where", |r, _| r.at.clone()),
    Column::text("drip", |r, _| r.emulated.clone()),
    Column::text("logged", |r, _| r.logged.clone()),
];

/// The verification's figures, for scripts.
const VERIFY: &[Column<VerifyReport>] = &[
    Column::text("verify_column", |v, _| v.column.clone()),
    Column::num("rows", |v, _| v.rows.to_string()),
    Column::num("agreed", |v, _| v.agreed.to_string()),
    Column::num("disagreed", |v, _| v.disagreed.to_string()),
    Column::num("within_clock", |v, _| v.within_clock.to_string()),
    Column::num("reordered", |v, _| v.reordered.to_string()),
    Column::num("agreement_pct", |v, _| v.agreement_pct.to_string()),
];

/// A table for people.
fn table<T>(cols: &[Column<T>], rows: &[T]) -> Block {
    Block::Table(Table::from_columns(cols, rows, Human::Yes))
}

/// Adds a section per nginx.conf audited, and the tables for scripts.
pub fn add(page: &mut Page, report: &Report) {
    let configs: Vec<(&str, &NginxReport)> = report
        .policies
        .iter()
        .filter_map(|p| p.nginx.as_ref().map(|n| (p.label.as_str(), n)))
        .collect();
    for (label, n) in &configs {
        add_config(page, label, n);
    }
    add_data(page, &configs);
}

/// One config's locations, notes and verification, for people.
fn add_config(page: &mut Page, label: &str, n: &NginxReport) {
    let heading = format!("{label}: locations of {}", n.config);
    page.add(Shown::ALL, Block::Heading(heading));
    page.add(Shown::ALL, table(LOCATIONS, &n.locations));
    for note in &n.notes {
        page.add(Shown::ALL, Block::Paragraph(format!("note: {note}")));
    }
    let Some(v) = &n.verify else {
        return;
    };
    let mut heading = format!(
        "{label}: $limit_req_status against column '{}': {} of {} rows agree ({}%)",
        v.column,
        v.agreed,
        v.rows,
        pct(v.agreement_pct),
    );
    if v.reordered > 0 {
        heading.push_str(&format!(
            " ({} in another order of their millisecond: nginx logs a delayed request when it completes)",
            v.reordered
        ));
    }
    heading.push_str(&format!(", {} disagree", v.disagreed));
    if v.within_clock > 0 {
        heading.push_str(&format!(
            " ({} within nginx's clock granularity: a 1 ms move decides them as logged)",
            v.within_clock
        ));
    }
    page.add(Shown::ALL, Block::Heading(heading));
    page.add(Shown::ALL, table(CONFUSION, &v.confusion));
    if !v.first_disagreements.is_empty() {
        let heading = Block::Heading("first disagreements".into());
        page.add(Shown::TEXT | Shown::MARKDOWN, heading);
        let paragraph = Block::Paragraph("First disagreements:".into());
        page.add(Shown::HTML, paragraph);
        page.add(Shown::ALL, table(DISAGREEMENTS, &v.first_disagreements));
    }
}

/// Every config's locations, verifications, confusion tables and first
/// disagreements, a table of each kind (when there are rows).
fn add_data(page: &mut Page, configs: &[(&str, &NginxReport)]) {
    let mut locations = Vec::new();
    let mut verify = Vec::new();
    let mut confusion = Vec::new();
    let mut first = Vec::new();
    for &(label, n) in configs {
        locations.extend(n.locations.iter().map(|r| (label, r)));
        if let Some(v) = &n.verify {
            verify.push((label, v));
            confusion.extend(v.confusion.iter().map(|r| (label, r)));
            first.extend(v.first_disagreements.iter().map(|r| (label, r)));
        }
    }
    if !locations.is_empty() {
        page.data.push(Table::tagged(LOCATIONS, &locations));
    }
    if !verify.is_empty() {
        page.data.push(Table::tagged(VERIFY, &verify));
    }
    if !confusion.is_empty() {
        page.data.push(Table::tagged(CONFUSION, &confusion));
    }
    if !first.is_empty() {
        page.data.push(Table::tagged(DISAGREEMENTS, &first));
    }
}
