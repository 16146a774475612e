//! What `drip size` found, as data, and its renderers: the frontier (one
//! row per rate or window: the smallest size meeting the targets and what
//! it gives), the recommendation, the per-key need, the rule of thumb and
//! the current config, written as one [`Page`] for every format. The
//! formats share the column lists ([`FRONTIER`], [`NEED`]).

use super::page::{Block, Page, Shown, Table, Verdict};
use super::{Column, Human, InputInfo, PolicyReport, pct, wait_cell};
use crate::time::Nanos;
use serde::Serialize;
use std::io::{self, Write};

#[derive(Clone, Debug, Default, Serialize)]
pub struct SizeReport {
    pub input: InputInfo,
    /// `-p` as given.
    pub policy: String,
    /// `rate` or `window`.
    pub axis: &'static str,
    /// `burst`, `capacity` or `limit`.
    pub size_param: &'static str,
    pub targets: Targets,
    pub horizon_ns: u64,
    pub frontier: Vec<FrontierRow>,
    pub recommended: Option<FrontierRow>,
    /// Other candidates, each by its own rule.
    pub alternatives: Vec<Alternative>,
    /// Ready-to-paste nginx directives for the recommendation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nginx: Option<NginxConf>,
    /// Per axis point, the zero-drop size of each key (keyed specs).
    pub per_key: Vec<NeedRow>,
    pub rule_of_thumb: RuleOfThumb,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<Current>,
    /// Said plainly when nothing in the range meets the targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// With times of whole seconds (or minutes): the pick both ways.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_resolution: Option<TimeResolution>,
    /// The keys far outside the population (keyed specs with enough keys).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outliers: Option<super::size_outliers::Outliers>,
    #[serde(flatten)]
    pub said: Said,
}

/// A log whose times are whole seconds (or minutes).
#[derive(Clone, Debug, Serialize)]
pub struct TimeResolution {
    /// The unit every time is a whole number of, ns.
    pub unit_ns: u64,
    /// How the recommendation takes the requests of one unit:
    /// `simultaneous` (the worst case).
    pub assumed: &'static str,
    /// The pick with each unit's requests spread evenly over it.
    pub spread_pick: Option<FrontierRow>,
    /// The note, as the report words it.
    pub note: String,
}

/// The notes beside the tables, and how much the formats for people show.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Said {
    /// Notes on the input and targets.
    pub notes: Vec<String>,
    /// How the sizes were found (shown with `--verbose`).
    pub method_notes: Vec<String>,
    /// Every column, each miss explained and the method notes in the
    /// formats for people.
    #[serde(skip)]
    pub verbose: bool,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Targets {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_drop_rate_pct: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_drops: Option<u64>,
    /// `N` keys or `PCT%` of the keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_keys_hurt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wait_ns: Option<u64>,
    /// The wait target is the default for a policy that delays (not given).
    pub max_wait_default: bool,
    /// `--per`: the drop targets hold in every period of this length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_ns: Option<u64>,
    /// `--headroom F`: sized for the requests arriving F times as fast.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headroom: Option<String>,
    /// Keys left out of the targets (`--exclude-keys`), found in the log.
    pub excluded_keys: u64,
    /// Requests of those keys.
    pub excluded_requests: u64,
    /// Outliers left out of the targets, and their requests.
    pub outlier_keys: u64,
    pub outlier_requests: u64,
    /// `--keep-outliers`: sized for every key.
    pub keep_outliers: bool,
}

impl Targets {
    /// "drop ≤ 1 %, keys hurt ≤ 5" for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = &self.max_drop_rate_pct {
            parts.push(format!("drop ≤ {p} %"));
        }
        if let Some(n) = self.max_drops {
            parts.push(format!("drops ≤ {n}"));
        }
        if let Some(k) = &self.max_keys_hurt {
            parts.push(format!("keys hurt ≤ {k}"));
        }
        if let Some(w) = self.max_wait_ns {
            let default = if self.max_wait_default {
                " (default; --max-wait none lifts it)"
            } else {
                ""
            };
            parts.push(format!("wait ≤ {}{default}", readable(w)));
        }
        let mut text = parts.join(", ");
        if self.outlier_keys > 0 {
            let s = if self.outlier_keys == 1 { "" } else { "s" };
            text.push_str(&format!(" (without {} outlier{s})", self.outlier_keys));
        }
        if let Some(p) = self.per_ns {
            text.push_str(&format!(" in every {}", crate::time::span(p)));
        }
        if let Some(f) = &self.headroom {
            text.push_str(&format!(" for the requests arriving {f}× as fast"));
        }
        text
    }
}

/// One point of the frontier: the smallest size meeting every target at
/// this rate or window, and the audit of its spec.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FrontierRow {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// On the recommendation and the alternatives (keyed specs): the first
    /// `--top` keys it refuses among those the targets count.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hurt_top: Vec<HurtKey>,
    /// The keys its audit replay refused most (`Sweep::top` of them), when
    /// the sweep ran one: what `hurt_top` is taken from.
    #[serde(skip)]
    pub refused_most: Option<Vec<crate::engine::outcome::KeyRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// A complete spec: `drip audit -p SPEC` reports the figures below.
    pub spec: String,
    /// The size found (burst, capacity or limit); on an infeasible row, the
    /// size whose figures are shown.
    pub size: u64,
    pub feasible: bool,
    pub requests: u64,
    pub admitted: u64,
    pub delayed: u64,
    /// Delayed requests, percent of all.
    pub delayed_pct: f64,
    pub dropped: u64,
    pub drop_pct: f64,
    pub keys: u64,
    pub keys_hurt: u64,
    /// False when the log cannot test this point: it spans less than a
    /// full burst's refill at this rate (or less than one window), or
    /// less than the horizon. Never recommended.
    pub tested: bool,
    /// Shaping policies only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_p99_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_max_ns: Option<u64>,
    /// Most requests the policy can admit in any window of the horizon.
    pub worst_in_horizon: u64,
    /// How the size was found: `zero-drop` (one unbounded pass: exact by
    /// construction), `search` (unit costs: relies on drops never rising as
    /// the size grows, which held on every random log measured for every
    /// family, `count=all` included), `scan` (costs vary: every size tried),
    /// `search-unproven` (costs vary and the range was too long to scan).
    /// Every answer and the size below it are replayed directly.
    pub method: &'static str,
    /// Replays of the log this row took (the audit replay of its answer
    /// included, when one was run).
    pub replays: u32,
    /// What the row is among the candidates: `pick`, `tightest`, `knee`,
    /// `lowest-wait`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<&'static str>,
    /// Why an infeasible row is infeasible.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// With keys left out of the targets: the figures the targets were
    /// checked on (the figures above count every key, as audit does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<Checked>,
}

/// A row's figures over the keys the targets count.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Checked {
    pub requests: u64,
    pub dropped: u64,
    pub drop_pct: f64,
    pub keys_hurt: u64,
}

impl FrontierRow {
    /// The audit's figures for the row's spec.
    pub fn fill(&mut self, p: &PolicyReport) {
        self.requests = p.requests;
        self.admitted = p.admitted;
        self.delayed = p.delayed;
        self.delayed_pct = if p.requests == 0 {
            0.0
        } else {
            p.delayed as f64 * 100.0 / p.requests as f64
        };
        self.dropped = p.dropped;
        self.drop_pct = p.drop_pct;
        self.keys = p.keys_seen;
        self.keys_hurt = p.keys_with_drops;
        self.wait_p99_ns = p.wait.map(|w| w.p99_ns);
        self.wait_max_ns = p.wait.map(|w| w.max_ns);
    }

    pub fn point(&self) -> &str {
        self.rate
            .as_deref()
            .or(self.window.as_deref())
            .unwrap_or("")
    }
}

/// A key a pick refuses.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HurtKey {
    pub key: String,
    pub requests: u64,
    pub refused: u64,
}

/// `    refuses 15 keys the targets count: a (3 of its 40), b (2 of 35), …`,
/// or nothing when it refuses none of them.
fn hurt_line(row: &FrontierRow) -> Option<String> {
    let n = row.checked.as_ref().map_or(row.keys_hurt, |c| c.keys_hurt);
    if row.hurt_top.is_empty() {
        return None;
    }
    let named: Vec<String> = (row.hurt_top.iter())
        .map(|k| format!("{} ({} of its {})", k.key, k.refused, k.requests))
        .collect();
    let more = if n > named.len() as u64 { ", …" } else { "" };
    let which = if row.checked.is_some() {
        " the targets count"
    } else {
        ""
    };
    Some(format!(
        "    refuses {n} key(s){which}: {}{more}",
        named.join(", ")
    ))
}

/// A candidate other than the pick, and the rule that chose it.
#[derive(Clone, Debug, Serialize)]
pub struct Alternative {
    /// `knee` or `lowest wait`.
    pub rule: &'static str,
    /// The rule, in words.
    pub why: String,
    pub row: FrontierRow,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct NginxConf {
    /// The `map` building the key (one bucket for all, a network prefix),
    /// its lines joined by newlines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map: Option<String>,
    /// Empty when nginx cannot express the key (`key_problem` says why).
    pub limit_req_zone: String,
    pub limit_req: String,
    pub zone_mb: u64,
    /// The most keys active within any 60 s of the log.
    pub keys_active_60s: u64,
    /// About how many states a megabyte of the zone keeps.
    pub states_per_mb: u64,
    /// How the log's key columns became the zone's key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_from: Option<String>,
    /// Why nginx cannot count by the key sized, said instead of a wrong
    /// `limit_req_zone`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_problem: Option<String>,
}

/// Zero-drop sizes across keys at one rate or window.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NeedRow {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    pub keys: u64,
    /// `null`: some request never fits at any size.
    pub p50: Option<u64>,
    pub p90: Option<u64>,
    pub p99: Option<u64>,
    pub p99_9: Option<u64>,
    pub max: Option<u64>,
    /// Keys that need more than the p99.9.
    pub above_p99_9: u64,
    /// The keys that need the most, largest first.
    pub top: Vec<KeyNeed>,
}

impl NeedRow {
    pub fn point(&self) -> &str {
        self.rate
            .as_deref()
            .or(self.window.as_deref())
            .unwrap_or("")
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct KeyNeed {
    pub key: String,
    pub need: Option<u64>,
    pub requests: u64,
    /// Left out of the targets by `--exclude-keys`.
    pub excluded: bool,
    /// Found far outside the population (see the outliers).
    pub outlier: bool,
}

/// Seed 001's rule of thumb next to the exact answer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RuleOfThumb {
    /// Requests per second over the log's span (per key when keyed: the
    /// p99 across keys).
    pub average_rate_per_s: f64,
    /// The most requests in one second (by one key when keyed).
    pub busiest_second: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_key: Option<String>,
    /// The lowest rate of the sweep at or above the average.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_rate: Option<String>,
    /// rate × the acceptable wait (`--max-wait`), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_size: Option<u64>,
    /// The exact size at the rule's rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_size: Option<u64>,
    /// The comparison, in words.
    pub text: Vec<String>,
}

/// The config in force, audited next to the recommendation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Current {
    pub spec: String,
    pub requests: u64,
    pub admitted: u64,
    pub dropped: u64,
    pub drop_pct: f64,
    pub keys_hurt: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_max_ns: Option<u64>,
    /// `null` when it could not be checked (a stack with excluded keys).
    pub meets_targets: Option<bool>,
    /// What changes with the recommendation, in words.
    pub change: Vec<String>,
}

fn opt_need(n: Option<u64>, h: Human) -> String {
    match (n, h) {
        (Some(n), _) => n.to_string(),
        (None, Human::Yes) => "never".into(),
        (None, Human::No) => String::new(),
    }
}

/// A wait as people read it, rounded up at the precision shown: `340ms`,
/// `1.7s`, `44s`, `12m44s`, `3h21m`, `2d5h`.
pub fn readable(ns: u64) -> String {
    const MS: u64 = Nanos::PER_MS;
    const SEC: u64 = Nanos::PER_SEC;
    let two = |a: u64, ua: &str, b: u64, ub: &str| {
        if b == 0 {
            format!("{a}{ua}")
        } else {
            format!("{a}{ua}{b}{ub}")
        }
    };
    if ns == 0 {
        return "0".into();
    }
    if ns < MS {
        return Nanos(ns).to_string();
    }
    let ms = ns.div_ceil(MS);
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let tenths = ns.div_ceil(SEC / 10);
    if tenths < 100 {
        return match tenths % 10 {
            0 => format!("{}s", tenths / 10),
            d => format!("{}.{d}s", tenths / 10),
        };
    }
    let s = ns.div_ceil(SEC);
    if s < 3600 {
        return if s < 60 {
            format!("{s}s")
        } else {
            two(s / 60, "m", s % 60, "s")
        };
    }
    let m = ns.div_ceil(60 * SEC);
    if m < 24 * 60 {
        return two(m / 60, "h", m % 60, "m");
    }
    let h = ns.div_ceil(3600 * SEC);
    two(h / 24, "d", h % 24, "h")
}

fn wait_of(ns: Option<u64>, h: Human) -> String {
    match h {
        Human::Yes => ns.map_or("-".into(), readable),
        Human::No => wait_cell(ns, h),
    }
}

/// A row's mark: the pick and the alternatives it is, else why it is
/// not a candidate.
fn mark(r: &FrontierRow) -> String {
    if !r.marks.is_empty() {
        r.marks.join(", ")
    } else if !r.feasible {
        "misses".into()
    } else if !r.tested {
        "untested".into()
    } else {
        String::new()
    }
}

/// The frontier as people read it by default (under 100 columns).
pub const FRONTIER_BRIEF: &[Column<FrontierRow>] = &[
    Column::text("point", |r, _| r.point().to_string()),
    Column::num("size", |r, _| r.size.to_string()),
    Column::num("dropped", |r, _| r.dropped.to_string()),
    Column::num("drop %", |r, _| pct(r.drop_pct)),
    Column::num("delayed", |r, _| r.delayed.to_string()),
    Column::num("delay %", |r, _| pct(r.delayed_pct)),
    Column::num("wait p99", |r, h| wait_of(r.wait_p99_ns, h)),
    Column::num("wait max", |r, h| wait_of(r.wait_max_ns, h)),
    Column::num("keys hurt", |r, _| r.keys_hurt.to_string()),
    Column::text("", |r, _| mark(r)),
];

/// Every frontier column (`--verbose`, and the tables for scripts).
pub const FRONTIER: &[Column<FrontierRow>] = &[
    Column::text("point", |r, _| r.point().to_string()),
    Column::num("size", |r, _| r.size.to_string()),
    Column::text("meets_targets", |r, h| match (r.feasible, h) {
        (true, Human::Yes) => "yes".into(),
        (false, Human::Yes) => "NO".into(),
        (f, Human::No) => f.to_string(),
    }),
    Column::text("tested", |r, h| match (r.tested, h) {
        (true, Human::Yes) => "yes".into(),
        (false, Human::Yes) => "no".into(),
        (f, Human::No) => f.to_string(),
    }),
    Column::num("requests", |r, _| r.requests.to_string()),
    Column::num("admitted", |r, _| r.admitted.to_string()),
    Column::num("delayed", |r, _| r.delayed.to_string()),
    Column::num("delayed_pct", |r, _| pct(r.delayed_pct)),
    Column::num("dropped", |r, _| r.dropped.to_string()),
    Column::num("drop_pct", |r, _| pct(r.drop_pct)),
    Column::num("keys_hurt", |r, _| r.keys_hurt.to_string()),
    Column::num("wait_p99", |r, h| wait_of(r.wait_p99_ns, h)),
    Column::num("wait_max", |r, h| wait_of(r.wait_max_ns, h)),
    Column::num("most_in_horizon", |r, _| r.worst_in_horizon.to_string()),
    Column::text("found_by", |r, _| r.method.to_string()),
    Column::text("mark", |r, _| mark(r)),
    Column::text("spec", |r, _| r.spec.clone()),
];

/// The keys that need the most at a row's point, with their needs.
fn top_keys(r: &NeedRow) -> String {
    r.top
        .iter()
        .map(|k| {
            let n = k.need.map_or("never".to_string(), |n| n.to_string());
            let x = match (k.excluded, k.outlier) {
                (true, _) => " (excluded)",
                (_, true) => " (outlier)",
                _ => "",
            };
            format!("{} {n}{x}", k.key)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The per-key need columns.
pub const NEED: &[Column<NeedRow>] = &[
    Column::text("point", |r, _| r.point().to_string()),
    Column::num("keys", |r, _| r.keys.to_string()),
    Column::num("p50", |r, h| opt_need(r.p50, h)),
    Column::num("p90", |r, h| opt_need(r.p90, h)),
    Column::num("p99", |r, h| opt_need(r.p99, h)),
    Column::num("p99.9", |r, h| opt_need(r.p99_9, h)),
    Column::num("max", |r, h| opt_need(r.max, h)),
    Column::text("top keys", |r, _| top_keys(r)),
];

/// What a row does, in one line: dropped, delayed, waits, keys hurt.
pub fn outcome(row: &FrontierRow) -> String {
    let Some(c) = &row.checked else {
        return format!(
            "dropped {} ({} %), delayed {} ({} %), wait p99 {} max {}, keys hurt {}",
            row.dropped,
            pct(row.drop_pct),
            row.delayed,
            pct(row.delayed_pct),
            readable(row.wait_p99_ns.unwrap_or(0)),
            readable(row.wait_max_ns.unwrap_or(0)),
            row.keys_hurt
        );
    };
    // The checked figures first: the header's targets are met on them.
    format!(
        "on the {} rows the targets count: dropped {} ({} %), keys hurt {}; wait p99 {} max {}; the {} rows left out of the targets: dropped {}, keys hurt {}",
        c.requests,
        c.dropped,
        pct(c.drop_pct),
        c.keys_hurt,
        readable(row.wait_p99_ns.unwrap_or(0)),
        readable(row.wait_max_ns.unwrap_or(0)),
        row.requests.saturating_sub(c.requests),
        row.dropped.saturating_sub(c.dropped),
        row.keys_hurt.saturating_sub(c.keys_hurt)
    )
}

/// Lines said under the tables: recommendation, nginx, rule, current.
pub(crate) fn summary_lines(r: &SizeReport) -> Vec<String> {
    let mut lines = Vec::new();
    match &r.recommended {
        Some(rec) => {
            lines.push(format!("recommended: {}  {}", rec.spec, outcome(rec)));
            lines.push(format!(
                "    at most {} requests in any {} ({} {} at {} {})",
                rec.worst_in_horizon,
                readable(r.horizon_ns),
                r.size_param,
                rec.size,
                r.axis,
                rec.point(),
            ));
            lines.extend(hurt_line(rec));
        }
        None => lines.push("recommended: none".into()),
    }
    for a in &r.alternatives {
        lines.push(format!(
            "{} ({}): {}  {}",
            a.rule,
            a.why,
            a.row.spec,
            outcome(&a.row)
        ));
        lines.extend(hurt_line(&a.row));
    }
    if let Some(v) = &r.verdict {
        lines.push(v.clone());
    }
    // The per-key need at the recommended point, in words.
    let at = r.recommended.as_ref().map(|rec| rec.point().to_string());
    if let Some(n) = r.per_key.iter().find(|n| Some(n.point()) == at.as_deref())
        && let (Some(p999), Some(max)) = (n.p99_9, n.max)
        && max > p999
    {
        let over: Vec<&KeyNeed> = n
            .top
            .iter()
            .filter(|k| k.need.is_none_or(|v| v > p999))
            .collect();
        let names: Vec<String> = over
            .iter()
            .map(|k| match k.need {
                Some(v) => format!("{} {v}", k.key),
                None => format!("{} never", k.key),
            })
            .collect();
        lines.push(format!(
            "at {}: a {} of {p999} covers 99.9 % of the {} keys; {} need more{}: {}",
            n.point(),
            r.size_param,
            n.keys,
            n.above_p99_9,
            if (over.len() as u64) < n.above_p99_9 {
                ", the most"
            } else {
                ""
            },
            names.join(", ")
        ));
    }
    if let Some(n) = &r.nginx {
        nginx_lines(n, &mut lines);
    }
    for t in &r.rule_of_thumb.text {
        lines.push(format!("rule of thumb: {t}"));
    }
    if let Some(c) = &r.current {
        lines.push(format!(
            "current: {}  ({} dropped, {}%, {} keys hurt; {} the targets)",
            c.spec,
            c.dropped,
            pct(c.drop_pct),
            c.keys_hurt,
            match c.meets_targets {
                Some(true) => "meets",
                Some(false) => "misses",
                None => "not checked against",
            }
        ));
        for ch in &c.change {
            lines.push(format!("    {ch}"));
        }
    }
    for n in &r.said.notes {
        lines.push(format!("note: {n}"));
    }
    if r.said.verbose {
        for n in &r.said.method_notes {
            lines.push(format!("method: {n}"));
        }
    }
    lines
}

/// The nginx directives to paste, and how they are keyed.
fn nginx_lines(n: &NginxConf, lines: &mut Vec<String>) {
    if let Some(why) = &n.key_problem {
        lines.push(format!("nginx: no limit_req_zone written: {why}"));
        lines.push(format!("    {}", n.limit_req));
        return;
    }
    lines.push(format!(
        "nginx ({}; {} keys active within 60 s at most, about {} a MB):",
        n.key_from.as_deref().unwrap_or(""),
        n.keys_active_60s,
        n.states_per_mb
    ));
    for m in n.map.iter().flat_map(|m| m.split('\n')) {
        lines.push(format!("    {m}"));
    }
    lines.push(format!("    {}", n.limit_req_zone));
    lines.push(format!("    {}", n.limit_req));
}

pub(crate) fn heading(r: &SizeReport) -> String {
    format!(
        "drip size: {} swept along {}, smallest {} meeting {}",
        r.policy,
        r.axis,
        r.size_param,
        r.targets.describe()
    )
}

/// What the sizing plot shows, said under it.
const PLOT_CAPTION: &str = "The smallest size per rate or window that meets the targets (the \
                            recommendation ringed, misses crossed out); below, the zero-drop size \
                            of each key as quantiles across keys.";

/// The recommendation, or why there is none, for the first line.
fn verdict(r: &SizeReport) -> Verdict {
    match &r.recommended {
        Some(rec) => Verdict {
            pass: true,
            line: format!("recommended: {}", rec.spec),
            details: vec![format!(
                "dropped {} ({} %), keys hurt {}; targets: {}",
                rec.dropped,
                pct(rec.drop_pct),
                rec.keys_hurt,
                r.targets.describe()
            )],
        },
        None => Verdict {
            pass: false,
            line: "no limit meets the targets".into(),
            details: r.verdict.iter().cloned().collect(),
        },
    }
}

/// The report as a page; `plot` is the sizing plot (an SVG document),
/// drawn in HTML. Its tables for scripts: the frontier, and the per-key
/// need when there is one.
pub fn page<'a>(r: &'a SizeReport, plot: Option<&str>) -> Page<'a> {
    let mut page = Page::new(heading(r), r);
    page.add(
        Shown::TEXT | Shown::MARKDOWN,
        Block::Title(page.title.clone()),
    );
    page.add(Shown::HTML, Block::Title(page.title.clone()));
    page.add(Shown::ALL, Block::Paragraph(r.input.line()));
    if let Some(v) = &r.verdict {
        page.add(Shown::HTML, Block::Alert(vec![v.clone()]));
    }
    page.verdict = Some(verdict(r));
    let recommendation = || Block::Heading("Recommendation".into());
    page.add(Shown::HTML, recommendation());
    page.add(Shown::HTML, Block::Pre(summary_lines(r)));
    page.add(Shown::HTML, Block::Heading("Frontier".into()));
    add_frontier(&mut page, r);
    add_need(&mut page, r);
    page.add(Shown::MARKDOWN, recommendation());
    page.add(Shown::TEXT | Shown::MARKDOWN, Block::Pre(summary_lines(r)));
    if let Some(o) = &r.outliers {
        o.add(&mut page, "Outliers".into());
    }
    if let Some(svg) = plot {
        page.add(Shown::HTML, Block::Heading("Plot".into()));
        let figure = Block::Figure {
            svg: svg.to_string(),
            caption: PLOT_CAPTION.into(),
        };
        page.add(Shown::HTML, figure);
    }
    for n in &r.said.notes {
        page.add(Shown::HTML, Block::Paragraph(format!("note: {n}")));
    }
    for n in &r.said.method_notes {
        page.add(Shown::HTML, Block::Paragraph(format!("method: {n}")));
    }
    page
}

/// The frontier, and why each infeasible point is.
fn add_frontier(page: &mut Page, r: &SizeReport) {
    let table = |cols, h| {
        let mut t = Table::from_columns(cols, &r.frontier, h);
        t.headers[0] = r.axis.into();
        t.headers[1] = r.size_param.into();
        t
    };
    let people = if r.said.verbose {
        FRONTIER
    } else {
        FRONTIER_BRIEF
    };
    page.add(Shown::ALL, Block::Table(table(people, Human::Yes)));
    page.data.push(table(FRONTIER, Human::No));
    let missed: Vec<&FrontierRow> = r.frontier.iter().filter(|f| f.note.is_some()).collect();
    if !r.said.verbose && !missed.is_empty() {
        let brief = format!(
            "{} of the {} points {} the targets (--verbose says why each)",
            missed.len(),
            r.frontier.len(),
            if missed.len() == 1 { "misses" } else { "miss" }
        );
        page.add(Shown::TEXT | Shown::MARKDOWN, Block::List(vec![brief]));
    }
    for row in missed {
        let note = format!("{}: {}", row.point(), row.note.as_deref().unwrap_or(""));
        if r.said.verbose {
            page.add(
                Shown::TEXT | Shown::MARKDOWN,
                Block::List(vec![note.clone()]),
            );
        }
        page.add(Shown::HTML, Block::Paragraph(note));
    }
}

/// The per-key need, when the spec is keyed.
fn add_need(page: &mut Page, r: &SizeReport) {
    if r.per_key.is_empty() {
        return;
    }
    let long = format!(
        "per-key need ({} each key needs for no drops)",
        r.size_param
    );
    page.add(Shown::TEXT, Block::Heading(long));
    let short = Block::Heading("Per-key need".into());
    page.add(Shown::MARKDOWN | Shown::HTML, short);
    let table = |h, cols: &[Column<NeedRow>]| {
        let mut t = Table::from_columns(cols, &r.per_key, h);
        t.headers[0] = r.axis.into();
        if h == Human::No {
            t.headers[7] = "top_keys".into();
        }
        t
    };
    let people = if r.said.verbose { NEED } else { &NEED[..7] };
    page.add(Shown::ALL, Block::Table(table(Human::Yes, people)));
    page.data.push(table(Human::No, NEED));
    let at = r.recommended.as_ref().map(|rec| rec.point());
    if let Some(n) = r.per_key.iter().find(|n| Some(n.point()) == at)
        && !r.said.verbose
    {
        let line = format!("keys needing the most at {}: {}", n.point(), top_keys(n));
        page.add(Shown::ALL, Block::List(vec![line]));
    }
}

pub fn render_table(r: &SizeReport, width: Option<usize>, out: &mut dyn Write) -> io::Result<()> {
    super::table::write(&page(r, None), width, out)
}

pub fn render_markdown(r: &SizeReport, out: &mut dyn Write) -> io::Result<()> {
    super::markdown::write(&page(r, None), out)
}

pub fn render_csv(r: &SizeReport, out: &mut dyn Write) -> io::Result<()> {
    super::csv::write(&page(r, None), out)
}

pub fn render_json(r: &SizeReport, out: &mut dyn Write) -> io::Result<()> {
    super::json::write(&page(r, None), out)
}

pub fn render_html(r: &SizeReport, plot: Option<&str>, out: &mut dyn Write) -> io::Result<()> {
    super::html::write(&page(r, plot), out)
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn waits_read_as_people_say_them() {
        let ms = 1_000_000;
        assert_eq!(readable(0), "0");
        assert_eq!(readable(340 * ms), "340ms");
        assert_eq!(readable(339 * ms + 1), "340ms");
        assert_eq!(readable(1_700 * ms), "1.7s");
        assert_eq!(readable(2_000 * ms), "2s");
        assert_eq!(readable(999 * ms + 1), "1s");
        assert_eq!(readable(44_000 * ms), "44s");
        assert_eq!(readable(764_132 * ms), "12m45s");
        assert_eq!(readable(120_000 * ms), "2m");
        assert_eq!(readable(12_061_000 * ms), "3h22m");
        assert_eq!(readable(3 * 86_400_000 * ms + 3_600_000 * ms), "3d1h");
    }
}
