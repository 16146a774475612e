//! Reports are data: the audit fills a [`Report`], `drip size` a
//! [`size::SizeReport`]. Each is written as one [`page::Page`] ([`audit`],
//! [`size`], with the [`nginx`] and [`compare`] sections), and each format
//! ([`table`], [`markdown`], [`csv`], [`json`], [`html`]) is a function
//! from a `&Page` to a writer that escapes the page's text its own way.
//! The formats share one column list per table ([`SUMMARY`], [`TOP`],
//! [`TOP_WAITS`], [`TIMELINE`]) so they never drift apart; JSON carries the same fields
//! as numbers.

pub mod audit;
pub mod compare;
pub mod csv;
pub mod fit;
pub mod html;
pub mod json;
pub mod markdown;
pub mod nginx;
pub mod page;
pub mod plot;
pub mod replicas;
pub mod size;
pub mod size_conf;
pub mod size_haproxy;
pub mod size_outliers;
pub mod size_replicas;
pub mod table;

use crate::time::{Nanos, fmt_millis, human_wait, instant};
use serde::Serialize;

pub use crate::engine::outcome::{
    CompareReport, KeyChange, KeyRow, NginxLocationRow, NginxReport, PolicyReport, Timeline,
    TimelineRow, VerifyReport, VerifyRow, WaitKeyRow,
};

/// Everything an audit found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub input: InputInfo,
    pub policies: Vec<PolicyReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// Threshold crossings (exit status 1 when any).
    pub crossings: Vec<Crossing>,
    /// With `--compare`: each policy after the first against the first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compare: Vec<CompareReport>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct InputInfo {
    pub files: Vec<String>,
    /// Data rows replayed.
    pub rows: u64,
    /// Rows skipped with --skip-bad.
    pub bad_rows_skipped: u64,
    /// Lines kept though the line's end cut their last quoted field off.
    #[serde(skip_serializing_if = "is_zero")]
    pub truncated: u64,
    /// Lines the server wrote about itself, not requests (HAProxy's
    /// notices and connection errors).
    #[serde(skip_serializing_if = "is_zero")]
    pub notices: u64,
    /// Lines read as another variant of their file's format, by variant
    /// (`{"common": 12}` in a Combined log).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub lines_read_as: std::collections::BTreeMap<String, u64>,
    /// Rows that arrived out of order and were re-sorted.
    pub rows_reordered: u64,
    pub time_column: String,
    pub time_format: String,
    /// First and last timestamp, ns since the epoch.
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Clone, Debug, Serialize)]
pub struct Crossing {
    pub policy: String,
    pub threshold: String,
    pub limit: String,
    pub measured: String,
}

impl std::fmt::Display for Crossing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "'{}' crossed {}: measured {}, limit {}",
            self.policy, self.threshold, self.measured, self.limit
        )
    }
}

/// Percent with two decimals.
pub fn pct(p: f64) -> String {
    format!("{p:.2}")
}

/// A column: header, and the cell for a row, for the human formats.
pub struct Column<T> {
    pub header: &'static str,
    pub cell: fn(&T, Human) -> String,
    /// Right-aligned in the table.
    pub numeric: bool,
}

// A column is a name and a function: copied as it is, whatever `T` is.
impl<T> Clone for Column<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Column<T> {}

impl<T> Column<T> {
    /// A column of text, left-aligned.
    pub const fn text(header: &'static str, cell: fn(&T, Human) -> String) -> Column<T> {
        Column {
            header,
            cell,
            numeric: false,
        }
    }

    /// A column of numbers, right-aligned.
    pub const fn num(header: &'static str, cell: fn(&T, Human) -> String) -> Column<T> {
        Column {
            header,
            cell,
            numeric: true,
        }
    }
}

/// How a cell is written: for people (table, markdown) or for machines (csv).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Human {
    Yes,
    No,
}

/// A wait (ns) for people (`1.5s`, `-` when none) or as decimal
/// milliseconds, exact (empty when none).
pub fn wait_cell(ns: Option<u64>, h: Human) -> String {
    match (ns, h) {
        (None, Human::Yes) => "-".into(),
        (None, Human::No) => String::new(),
        (Some(w), Human::Yes) => human_wait(w),
        (Some(w), Human::No) => fmt_millis(Nanos(w)),
    }
}

/// The per-policy summary columns (csv writes waits as decimal ms).
pub const SUMMARY: &[Column<PolicyReport>] = &[
    Column::text("policy", |p, _| p.label.clone()),
    Column::num("requests", |p, _| p.requests.to_string()),
    Column::num("admitted", |p, _| p.admitted.to_string()),
    Column::num("delayed", |p, _| p.delayed.to_string()),
    Column::num("dropped", |p, _| p.dropped.to_string()),
    Column::num("drop_pct", |p, _| pct(p.drop_pct)),
    Column::num("wait_p50", |p, h| wait_cell(p.wait.map(|w| w.p50_ns), h)),
    Column::num("wait_p95", |p, h| wait_cell(p.wait.map(|w| w.p95_ns), h)),
    Column::num("wait_p99", |p, h| wait_cell(p.wait.map(|w| w.p99_ns), h)),
    Column::num("wait_max", |p, h| wait_cell(p.wait.map(|w| w.max_ns), h)),
    Column::num("peak", |p, _| p.peak.to_string()),
    Column::text("peak_kind", |p, _| p.peak_kind.to_string()),
    Column::num("keys", |p, _| p.keys_seen.to_string()),
    Column::num("keys_with_drops", |p, _| p.keys_with_drops.to_string()),
    Column::num("skipped_bad", |p, _| p.skipped_bad.to_string()),
];

/// The top-keys columns; a row is (policy label, key row).
pub const TOP: &[Column<(String, KeyRow)>] = &[
    Column::text("policy", |(p, _), _| p.clone()),
    Column::text("key", |(_, k), _| k.key.clone()),
    Column::num("requests", |(_, k), _| k.requests.to_string()),
    Column::num("limited", |(_, k), _| k.limited.to_string()),
    Column::num("dropped", |(_, k), _| k.dropped.to_string()),
    Column::num("drop_pct", |(_, k), _| pct(k.drop_pct)),
];

/// The longest-waits columns (policies that delay); a row is (policy
/// label, key row).
pub const TOP_WAITS: &[Column<(String, WaitKeyRow)>] = &[
    Column::text("policy", |(p, _), _| p.clone()),
    Column::text("key", |(_, k), _| k.key.clone()),
    Column::num("requests", |(_, k), _| k.requests.to_string()),
    Column::num("limited", |(_, k), _| k.limited.to_string()),
    Column::num("wait_max", |(_, k), h| wait_cell(Some(k.wait_max_ns), h)),
    Column::num("delayed", |(_, k), _| k.delayed.to_string()),
    Column::num("delayed_pct", |(_, k), _| pct(k.delayed_pct)),
];

/// The timeline columns.
pub const TIMELINE: &[Column<TimelineRow>] = &[
    Column::text("interval_start", |r, h| match h {
        Human::Yes => instant(r.start_ns),
        Human::No => r.start_ns.to_string(),
    }),
    Column::text("policy", |r, _| r.policy.clone()),
    Column::num("arrived", |r, _| r.arrived.to_string()),
    Column::num("sent", |r, _| r.sent.to_string()),
    Column::num("dropped", |r, _| r.dropped.to_string()),
    Column::num("level", |r, _| r.level.to_string()),
];

impl Report {
    /// (policy, key row) pairs for the top-keys tables.
    pub fn top_rows(&self) -> Vec<(String, KeyRow)> {
        self.policies
            .iter()
            .flat_map(|p| p.top_keys.iter().map(|k| (p.label.clone(), k.clone())))
            .collect()
    }

    /// (policy, key row) pairs for the longest-waits tables.
    pub fn wait_rows(&self) -> Vec<(String, WaitKeyRow)> {
        self.policies
            .iter()
            .flat_map(|p| {
                let rows = p.top_waits.iter().flatten();
                rows.map(|k| (p.label.clone(), k.clone()))
            })
            .collect()
    }
}

impl InputInfo {
    /// Rows, span and rows skipped or re-sorted, on one line.
    pub fn line(&self) -> String {
        let span = match (self.first_ns, self.last_ns) {
            (Some(a), Some(b)) => format!(", {} to {}", instant(a), instant(b)),
            _ => String::new(),
        };
        // Only a log with cut lines says so: other reports stay as they were.
        let truncated = match self.truncated {
            0 => String::new(),
            n => format!(", {n} with a cut last field (kept)"),
        };
        let mut line = format!(
            "{} rows{span}; {} skipped as bad{truncated}, {} re-sorted",
            self.rows, self.bad_rows_skipped, self.rows_reordered
        );
        for (variant, n) in &self.lines_read_as {
            let lines = if *n == 1 { "line" } else { "lines" };
            line.push_str(&format!("; {n} {lines} read as {variant}"));
        }
        match self.notices {
            0 => {}
            1 => line.push_str("; 1 notice (the server's own line, not a request)"),
            n => line.push_str(&format!(
                "; {n} notices (the server's own lines, not requests)"
            )),
        }
        line
    }
}
