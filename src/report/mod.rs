//! Reports are data: the audit fills a [`Report`]; each renderer (table,
//! json, csv, markdown) is a function from `&Report` to a writer. The
//! text formats share one column list ([`SUMMARY`], [`TOP`], [`TIMELINE`])
//! so they never drift apart; JSON carries the same fields as numbers.

pub mod compare;
pub mod csv;
pub mod html;
pub mod json;
pub mod markdown;
pub mod nginx;
pub mod plot;
pub mod size;
pub mod table;

use crate::time::{Nanos, fmt_millis, human_wait, instant};
use serde::Serialize;

pub use crate::engine::outcome::{
    CompareReport, KeyChange, KeyRow, NginxLocationRow, NginxReport, PolicyReport, Timeline,
    TimelineRow, VerifyRow, Waits,
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

/// How a cell is written: for people (table, markdown) or for machines (csv).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Human {
    Yes,
    No,
}

fn wait_cell(w: Option<Waits>, f: fn(Waits) -> u64, h: Human) -> String {
    match (w, h) {
        (None, Human::Yes) => "-".into(),
        (None, Human::No) => String::new(),
        (Some(w), Human::Yes) => human_wait(f(w)),
        (Some(w), Human::No) => fmt_millis(Nanos(f(w))),
    }
}

/// The per-policy summary columns (csv writes waits as decimal ms).
pub const SUMMARY: &[Column<PolicyReport>] = &[
    Column {
        header: "policy",
        cell: |p, _| p.label.clone(),
        numeric: false,
    },
    Column {
        header: "requests",
        cell: |p, _| p.requests.to_string(),
        numeric: true,
    },
    Column {
        header: "admitted",
        cell: |p, _| p.admitted.to_string(),
        numeric: true,
    },
    Column {
        header: "delayed",
        cell: |p, _| p.delayed.to_string(),
        numeric: true,
    },
    Column {
        header: "dropped",
        cell: |p, _| p.dropped.to_string(),
        numeric: true,
    },
    Column {
        header: "drop_pct",
        cell: |p, _| pct(p.drop_pct),
        numeric: true,
    },
    Column {
        header: "wait_p50",
        cell: |p, h| wait_cell(p.wait, |w| w.p50_ns, h),
        numeric: true,
    },
    Column {
        header: "wait_p95",
        cell: |p, h| wait_cell(p.wait, |w| w.p95_ns, h),
        numeric: true,
    },
    Column {
        header: "wait_p99",
        cell: |p, h| wait_cell(p.wait, |w| w.p99_ns, h),
        numeric: true,
    },
    Column {
        header: "wait_max",
        cell: |p, h| wait_cell(p.wait, |w| w.max_ns, h),
        numeric: true,
    },
    Column {
        header: "peak",
        cell: |p, _| p.peak.to_string(),
        numeric: true,
    },
    Column {
        header: "peak_kind",
        cell: |p, _| p.peak_kind.to_string(),
        numeric: false,
    },
    Column {
        header: "keys",
        cell: |p, _| p.keys_seen.to_string(),
        numeric: true,
    },
    Column {
        header: "keys_with_drops",
        cell: |p, _| p.keys_with_drops.to_string(),
        numeric: true,
    },
    Column {
        header: "skipped_bad",
        cell: |p, _| p.skipped_bad.to_string(),
        numeric: true,
    },
];

/// The top-keys columns; a row is (policy label, key row).
pub const TOP: &[Column<(String, KeyRow)>] = &[
    Column {
        header: "policy",
        cell: |(p, _), _| p.clone(),
        numeric: false,
    },
    Column {
        header: "key",
        cell: |(_, k), _| k.key.clone(),
        numeric: false,
    },
    Column {
        header: "requests",
        cell: |(_, k), _| k.requests.to_string(),
        numeric: true,
    },
    Column {
        header: "dropped",
        cell: |(_, k), _| k.dropped.to_string(),
        numeric: true,
    },
    Column {
        header: "drop_pct",
        cell: |(_, k), _| pct(k.drop_pct),
        numeric: true,
    },
];

/// The timeline columns.
pub const TIMELINE: &[Column<TimelineRow>] = &[
    Column {
        header: "interval_start",
        cell: |r, h| {
            if h == Human::Yes {
                instant(r.start_ns)
            } else {
                r.start_ns.to_string()
            }
        },
        numeric: false,
    },
    Column {
        header: "policy",
        cell: |r, _| r.policy.clone(),
        numeric: false,
    },
    Column {
        header: "arrived",
        cell: |r, _| r.arrived.to_string(),
        numeric: true,
    },
    Column {
        header: "sent",
        cell: |r, _| r.sent.to_string(),
        numeric: true,
    },
    Column {
        header: "dropped",
        cell: |r, _| r.dropped.to_string(),
        numeric: true,
    },
    Column {
        header: "level",
        cell: |r, _| r.level.to_string(),
        numeric: true,
    },
];

impl Report {
    /// (policy, key row) pairs for the top-keys tables.
    pub fn top_rows(&self) -> Vec<(String, KeyRow)> {
        self.policies
            .iter()
            .flat_map(|p| p.top_keys.iter().map(|k| (p.label.clone(), k.clone())))
            .collect()
    }

    /// A one-line description of the input.
    pub fn input_line(&self) -> String {
        let i = &self.input;
        let span = match (i.first_ns, i.last_ns) {
            (Some(a), Some(b)) => format!(", {} to {}", instant(a), instant(b)),
            _ => String::new(),
        };
        format!(
            "{} rows{span}; {} skipped as bad, {} re-sorted",
            i.rows, i.bad_rows_skipped, i.rows_reordered
        )
    }
}
