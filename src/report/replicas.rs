//! The `--replicas` section of an audit's page: per policy, what its N
//! instances behind the balancer admitted against one instance seeing
//! every row (the policy as written), and the most one key and all rows
//! got in one window.

use super::page::{Block, Page, Shown, Table};
use super::{Column, Human, Report};
use crate::engine::outcome::{EdgeFigures, ReplicaReport};
use crate::time::{Nanos, human_wait};

/// One side of a policy's comparison: (policy, deployment, figures).
type Row = (String, String, EdgeFigures);

const SIDES: &[Column<Row>] = &[
    Column::text("policy", |r, _| r.0.clone()),
    Column::text("deployed", |r, _| r.1.clone()),
    Column::num("admitted", |r, _| r.2.admitted.to_string()),
    Column::num("peak_per_key", |r, _| r.2.peak_per_key.to_string()),
    Column::text("peak_key", |r, _| r.2.peak_key.clone().unwrap_or_default()),
    Column::num("peak_all", |r, _| r.2.peak_all.to_string()),
];

/// The figures for scripts: one row per policy.
const DATA: &[Column<(String, ReplicaReport)>] = &[
    Column::text("policy", |r, _| r.0.clone()),
    Column::num("replicas", |r, _| r.1.replicas.to_string()),
    Column::text("balance", |r, _| r.1.balance.clone()),
    Column::num("window_ms", |r, _| {
        (r.1.window_ns / Nanos::PER_MS).to_string()
    }),
    Column::num("written_admitted", |r, _| r.1.written.admitted.to_string()),
    Column::num("written_peak_per_key", |r, _| {
        r.1.written.peak_per_key.to_string()
    }),
    Column::num("written_peak_all", |r, _| r.1.written.peak_all.to_string()),
    Column::num("replicated_admitted", |r, _| {
        r.1.replicated.admitted.to_string()
    }),
    Column::num("replicated_peak_per_key", |r, _| {
        r.1.replicated.peak_per_key.to_string()
    }),
    Column::text("replicated_peak_key", |r, _| {
        r.1.replicated.peak_key.clone().unwrap_or_default()
    }),
    Column::num("replicated_peak_all", |r, _| {
        r.1.replicated.peak_all.to_string()
    }),
];

/// Adds the section (nothing without `--replicas`).
pub fn add(page: &mut Page, report: &Report) {
    let all: Vec<(String, ReplicaReport)> = (report.policies.iter())
        .filter_map(|p| p.replicas.clone().map(|r| (p.label.clone(), r)))
        .collect();
    let Some((_, first)) = all.first() else {
        return;
    };
    let window = human_wait(first.window_ns);
    page.add(
        Shown::ALL,
        Block::Heading(format!(
            "replicas: admitted per {window} at the edge, against the policy as written"
        )),
    );
    let mut rows: Vec<Row> = Vec::new();
    for (label, r) in &all {
        rows.push((
            label.clone(),
            "1 instance (as written)".into(),
            r.written.clone(),
        ));
        let n = r.replicas;
        let deployed = format!("{n} replicas, {}", r.balance);
        rows.push((label.clone(), deployed, r.replicated.clone()));
    }
    page.add(
        Shown::ALL,
        Block::Table(Table::from_columns(SIDES, &rows, Human::Yes)),
    );
    for (label, r) in &all {
        page.add(Shown::ALL, Block::Paragraph(verdict(label, r, &window)));
    }
    page.data.push(Table::from_columns(DATA, &all, Human::No));
}

/// What the replicas did to the limit, in one sentence.
fn verdict(label: &str, r: &ReplicaReport, window: &str) -> String {
    let (one, many) = (r.written.peak_per_key, r.replicated.peak_per_key);
    let factor = match one {
        0 => String::new(),
        _ => format!(
            " ({:.2}× the {one} one instance lets through)",
            many as f64 / one as f64
        ),
    };
    let who = match &r.replicated.peak_key {
        Some(k) => format!(" (key {k})"),
        None => String::new(),
    };
    format!(
        "{label}: behind {} replicas ({}) one key got up to {many} per {window}{who}{factor}; all rows together up to {} (one instance: {})",
        r.replicas, r.balance, r.replicated.peak_all, r.written.peak_all
    )
}
