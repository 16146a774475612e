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

use crate::time::{Nanos, fmt_millis};
use serde::Serialize;

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

/// One policy against the first, row by row and key by key.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompareReport {
    pub policy: String,
    pub against: String,
    /// Rows the first policy admitted and this one drops.
    pub newly_dropped: u64,
    /// Rows the first policy dropped and this one admits.
    pub newly_admitted: u64,
    /// Keys with no drop under the first policy and some under this one.
    pub keys_newly_hurt: u64,
    /// Keys with drops under the first policy and none under this one.
    pub keys_relieved: u64,
    pub top_hurt: Vec<KeyChange>,
    pub top_relieved: Vec<KeyChange>,
}

/// A key's drops under the first policy and under the compared one.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KeyChange {
    pub key: String,
    pub requests: u64,
    pub dropped_before: u64,
    pub dropped_now: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct InputInfo {
    pub files: Vec<String>,
    /// Data rows replayed.
    pub rows: u64,
    /// Rows skipped with --skip-bad.
    pub bad_rows_skipped: u64,
    /// Rows that arrived out of order and were re-sorted.
    pub rows_reordered: u64,
    pub time_column: String,
    pub time_format: String,
    /// First and last timestamp, ns since the epoch.
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
}

/// Wait percentiles of admitted requests (0 for immediate ones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Waits {
    pub p50_ns: u64,
    pub p95_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PolicyReport {
    pub label: String,
    pub spec: String,
    pub requests: u64,
    pub admitted: u64,
    /// Admitted requests that waited (nginx's DELAYED; PASSED is
    /// admitted − delayed, REJECTED is dropped).
    pub delayed: u64,
    pub dropped: u64,
    /// dropped / requests · 100 (0 when there were no requests).
    pub drop_pct: f64,
    /// True when the policy delays admitted requests.
    pub shapes: bool,
    /// Present for shaping policies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait: Option<Waits>,
    /// Peak backlog (shaping policies) or peak level/count (others).
    pub peak: u64,
    /// "backlog" or "level".
    pub peak_kind: &'static str,
    /// The highest backlog or level the policy allows (burst, capacity,
    /// limit; the largest member's in a stack); None when unbounded.
    #[serde(skip)]
    pub bound: Option<u64>,
    #[serde(rename = "keys")]
    pub keys_seen: u64,
    pub keys_with_drops: u64,
    /// Rows skipped with --skip-bad (not replayed through any policy).
    pub skipped_bad: u64,
    pub top_keys: Vec<KeyRow>,
    /// For an nginx.conf: what each location did, and the verification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nginx: Option<NginxReport>,
}

/// What an nginx.conf did, location by location.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NginxReport {
    pub config: String,
    /// Locations that received rows, in the config's order.
    pub locations: Vec<NginxLocationRow>,
    /// What the replay could not model exactly.
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyReport>,
}

/// Rows by `$limit_req_status` at one location.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NginxLocationRow {
    pub location: String,
    pub limits: String,
    pub requests: u64,
    pub passed: u64,
    pub delayed: u64,
    pub rejected: u64,
    /// No limit applied (`$limit_req_status` `-`).
    pub unlimited: u64,
}

/// drip's `$limit_req_status` against the logged one.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyReport {
    pub column: String,
    pub rows: u64,
    pub agreed: u64,
    pub disagreed: u64,
    pub agreement_pct: f64,
    /// (drip's status, logged status, rows).
    pub confusion: Vec<(String, String, u64)>,
    pub first_disagreements: Vec<VerifyRow>,
}

/// One disagreement: where, and both statuses.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyRow {
    pub at: String,
    pub emulated: String,
    pub logged: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct KeyRow {
    pub key: String,
    pub requests: u64,
    pub dropped: u64,
    pub drop_pct: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Timeline {
    pub interval_ns: u64,
    pub rows: Vec<TimelineRow>,
}

/// One interval of one policy.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TimelineRow {
    pub start_ns: u64,
    pub policy: String,
    pub arrived: u64,
    /// Admitted requests released in this interval.
    pub sent: u64,
    pub dropped: u64,
    /// Peak level or backlog in the interval.
    pub level: u64,
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

/// A wait for people: `0`, `1.5ms`, `2.5s`.
pub fn human_wait(ns: u64) -> String {
    if ns == 0 {
        "0".into()
    } else {
        Nanos(ns).to_string()
    }
}

/// A configured span as written: `1s`, `500ms`, `3h`, `1h 30m`.
pub fn span(ns: u64) -> String {
    humantime::format_duration(std::time::Duration::from_nanos(ns)).to_string()
}

/// An instant as RFC 3339 UTC with milliseconds when there are any.
pub fn instant(ns: u64) -> String {
    let ts =
        jiff::Timestamp::from_nanosecond(i128::from(ns)).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    if ns.is_multiple_of(Nanos::PER_SEC) {
        ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    }
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

/// A key's bytes as text any format can show on one line: printable
/// characters as they are, `\` doubled, control characters (newlines,
/// terminal escapes) as `\n`, `\r`, `\t` or `\u{1b}`, and bytes that are not
/// UTF-8 as `\xff`, so two different keys never print the same.
pub fn key_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod key_text_tests {
    use super::key_text;

    #[test]
    fn keys_are_one_line_and_distinct() {
        assert_eq!(key_text(b"10.0.0.1"), "10.0.0.1");
        assert_eq!(key_text("café".as_bytes()), "café");
        assert_eq!(key_text(b"a\nb\tc\r"), "a\\nb\\tc\\r");
        assert_eq!(key_text(b"\x1b[31mred"), "\\u{1b}[31mred");
        assert_eq!(key_text(b"\xff"), "\\xff");
        assert_ne!(key_text(b"\xff"), key_text(b"\xfe"));
        // A backslash is doubled, so no key can pose as an escaped one.
        assert_ne!(key_text(b"\\xff"), key_text(b"\xff"));
    }
}
