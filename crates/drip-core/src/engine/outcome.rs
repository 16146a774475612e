//! What a replay found, as plain data: per policy, per key, per interval,
//! per nginx location, and one policy against another. The report layer
//! renders these; nothing here formats for people.

use serde::Serialize;

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
    /// For policies that delay: the keys with the longest waits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_waits: Option<Vec<WaitKeyRow>>,
    /// For an nginx.conf: what each location did, and the verification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nginx: Option<NginxReport>,
    /// For a haproxy.cfg: the same, per frontend and backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub haproxy: Option<NginxReport>,
    /// For a Traefik config: the same, per router.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traefik: Option<NginxReport>,
    /// With `--replicas`: what the instances together let through,
    /// against the policy as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<ReplicaReport>,
}

/// A policy run as N instances behind a balancer, against one instance.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReplicaReport {
    pub replicas: u64,
    /// `round-robin`, `random:SEED`, `hash(COLUMN)`.
    pub balance: String,
    /// The span admitted requests are counted over (aligned to the epoch).
    pub window_ns: u64,
    /// The N instances behind the balancer.
    pub replicated: EdgeFigures,
    /// One instance seeing every row: the policy as written.
    pub written: EdgeFigures,
}

/// Requests admitted, and the most admitted in one window.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EdgeFigures {
    pub admitted: u64,
    /// The most one key (of the report's key column) got in one window.
    pub peak_per_key: u64,
    /// That key (none without a key column).
    pub peak_key: Option<String>,
    /// The most all rows together got in one window.
    pub peak_all: u64,
}

impl PolicyReport {
    /// The section of a config run (nginx.conf or haproxy.cfg), if it is one.
    pub fn config(&self) -> Option<&NginxReport> {
        self.nginx.as_ref().or(self.haproxy.as_ref())
    }
}

/// Which gateway's config a run replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gateway {
    Nginx,
    Haproxy,
    Traefik,
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
    /// Locations with `limit_req` that matched no row.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub untested: Vec<String>,
    /// Zones no `limit_req` uses: `zone "NAME" (file:line)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unused_zones: Vec<String>,
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
    /// Of `disagreed`, the rows a 1 ms move would decide as logged: within
    /// nginx's clock granularity.
    pub within_clock: u64,
    /// Of `agreed`, the rows of same-millisecond groups that agree only in
    /// another order than the log's (a delayed row is logged when it
    /// completes, after rows that came in after it).
    pub reordered: u64,
    pub agreement_pct: f64,
    /// (drip's status, logged status, rows).
    pub confusion: Vec<(String, String, u64)>,
    pub first_disagreements: Vec<VerifyRow>,
}

/// Disagreements a verification lists in the report.
pub const FIRST_DISAGREEMENTS: usize = 10;

impl VerifyReport {
    /// A verification of `rows`, `agreed` of them (`within_clock` of the
    /// others a 1 ms move decides as logged, `reordered` of the agreed in
    /// another order): the disagreements and the share derived.
    pub fn new(
        column: &str,
        [rows, agreed, within_clock, reordered]: [u64; 4],
        confusion: Vec<(String, String, u64)>,
        first_disagreements: Vec<VerifyRow>,
    ) -> VerifyReport {
        VerifyReport {
            column: column.to_string(),
            rows,
            agreed,
            disagreed: rows - agreed,
            within_clock,
            reordered,
            agreement_pct: match rows {
                0 => 100.0,
                n => agreed as f64 * 100.0 / n as f64,
            },
            confusion,
            first_disagreements,
        }
    }
}

/// One disagreement: where, and both statuses.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyRow {
    pub at: String,
    pub emulated: String,
    pub logged: String,
}

/// A report row of a key, with the key's bytes as read (the row's `key`
/// is the text shown), which order keys of equal score.
#[derive(Clone, Debug)]
pub struct Ranked<R> {
    /// The key's bytes as read.
    pub bytes: Vec<u8>,
    /// The key's row in the report.
    pub row: R,
}

/// A key's drops under one policy.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KeyRow {
    pub key: String,
    /// The key's rows in the log.
    pub requests: u64,
    /// Its rows that reached a limit: all of them for a policy; for an
    /// nginx.conf, those of a location whose limits applied to them.
    pub limited: u64,
    pub dropped: u64,
    /// dropped / limited · 100.
    pub drop_pct: f64,
}

/// A key's waits under a policy that delays.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WaitKeyRow {
    pub key: String,
    pub requests: u64,
    /// As in [`KeyRow`].
    pub limited: u64,
    /// Its longest wait.
    pub wait_max_ns: u64,
    /// Its admitted rows that waited.
    pub delayed: u64,
    /// delayed / limited · 100.
    pub delayed_pct: f64,
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
