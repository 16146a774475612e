//! `size --replicas`' report: the per-replica value that holds the total
//! at the edge, and the next one up, which does not.

use super::page::{Block, Page, Shown, Table, Verdict};
use super::{Column, Human, pct};
use crate::time::human_wait;
use serde::Serialize;

/// What `size --replicas N --total RATE` found.
#[derive(Clone, Debug, Serialize)]
pub struct ReplicaSizing {
    pub replicas: u64,
    pub balance: String,
    pub total: String,
    /// The total's period: what a key gets is counted per this window.
    pub window_ns: u64,
    /// The total is per key (the `--key-column`), else for all rows.
    pub per_key: bool,
    /// The largest per-replica value that holds the total (none: even the
    /// smallest lets more through).
    pub pick: Option<Candidate>,
    /// The next value up, which lets more through (none: the largest holds).
    pub over: Option<Candidate>,
}

/// One per-replica value, replayed as N instances behind the balancer.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    /// The per-replica spec, as `audit -p` takes it.
    pub spec: String,
    /// The step that differs between candidates (`limit=4`, `rate=10/3s`).
    pub per_replica: String,
    /// The most one key (or all rows) got in one window.
    pub edge_peak: u64,
    pub peak_key: Option<String>,
    pub admitted: u64,
    pub dropped: u64,
    pub drop_pct: f64,
}

impl ReplicaSizing {
    /// The line that says the run failed, if it did.
    pub fn verdict(&self) -> Option<String> {
        match (&self.pick, &self.over) {
            (None, Some(o)) => Some(format!(
                "no per-replica value holds --total {}: even {} lets one key through {} per {}",
                self.total,
                o.spec,
                o.edge_peak,
                human_wait(self.window_ns)
            )),
            _ => None,
        }
    }

    fn lead(&self) -> String {
        let who = if self.per_key {
            "one key gets"
        } else {
            "all rows together get"
        };
        let window = human_wait(self.window_ns);
        match (&self.pick, &self.over) {
            (Some(p), Some(o)) => format!(
                "per replica: {} — behind {} replicas ({}) {who} at most {} per {window} (total {}); the next step, {}, lets through {}",
                p.spec,
                self.replicas,
                self.balance,
                p.edge_peak,
                self.total,
                o.per_replica,
                o.edge_peak
            ),
            (Some(p), None) => format!(
                "per replica: {} — behind {} replicas ({}) {who} at most {} per {window} (total {}): the largest step tried, the total itself in each replica, holds",
                p.spec, self.replicas, self.balance, p.edge_peak, self.total
            ),
            _ => self.verdict().unwrap_or_default(),
        }
    }

    fn rows(&self) -> Vec<(String, Candidate)> {
        let mut rows = Vec::new();
        if let Some(p) = &self.pick {
            rows.push(("pick".to_string(), p.clone()));
        }
        if let Some(o) = &self.over {
            rows.push(("next step".to_string(), o.clone()));
        }
        rows
    }
}

const CANDIDATES: &[Column<(String, Candidate)>] = &[
    Column::text("candidate", |r, _| r.0.clone()),
    Column::text("per_replica_spec", |r, _| r.1.spec.clone()),
    Column::num("edge_peak", |r, _| r.1.edge_peak.to_string()),
    Column::text("peak_key", |r, _| r.1.peak_key.clone().unwrap_or_default()),
    Column::num("admitted", |r, _| r.1.admitted.to_string()),
    Column::num("dropped", |r, _| r.1.dropped.to_string()),
    Column::num("drop_pct", |r, h| match h {
        Human::Yes => pct(r.1.drop_pct),
        Human::No => r.1.drop_pct.to_string(),
    }),
];

/// The report as a page.
pub fn page(s: &ReplicaSizing) -> Page<'_> {
    let mut page = Page::new("drip size --replicas".into(), s);
    page.add(Shown::ALL, Block::Paragraph(s.lead()));
    let rows = s.rows();
    page.add(
        Shown::ALL,
        Block::Table(Table::from_columns(CANDIDATES, &rows, Human::Yes)),
    );
    if let Some(p) = &s.pick {
        page.add(Shown::ALL, Block::Pre(vec![p.spec.clone()]));
    }
    page.data
        .push(Table::from_columns(CANDIDATES, &rows, Human::No));
    page.verdict = Some(Verdict {
        pass: s.pick.is_some(),
        line: match &s.pick {
            Some(p) => format!("per replica: {}", p.spec),
            None => "no per-replica value holds the total".into(),
        },
        details: Vec::new(),
    });
    page
}
