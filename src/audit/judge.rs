//! Judging a report: the thresholds of a run (`--max-drop-rate`,
//! `--max-drops`, `--max-wait`, `--max-keys-hurt`, `--max-disagree`,
//! `--fail-untested`, and with `--compare` `--max-newly-dropped` and
//! `--max-keys-newly-hurt`), checked once when given and again against
//! the finished report, each crossing worded for a line.

use crate::cli::AuditArgs;
use crate::percent::Percent;
use crate::report::{Crossing, Report};
use crate::time::Nanos;
use anyhow::{Result, anyhow, bail};

/// A threshold as given: for one policy label, or all.
struct Threshold<T> {
    label: Option<String>,
    value: T,
    text: String,
}

fn parse_thresholds<T>(
    flag: &str,
    given: &[String],
    labels: &[String],
    parse: impl Fn(&str) -> Option<T>,
    example: &str,
) -> Result<Vec<Threshold<T>>> {
    given
        .iter()
        .map(|g| {
            let (label, value) = match g.rsplit_once('=') {
                Some((l, v)) => (Some(l.to_string()), v),
                None => (None, g.as_str()),
            };
            if let Some(l) = &label
                && !labels.contains(l)
            {
                bail!(
                    "{flag} '{g}': no policy labelled '{l}'; labels are: {}",
                    labels.join(", ")
                );
            }
            let v = parse(value.trim())
                .ok_or_else(|| anyhow!("{flag} '{g}': invalid value '{value}'; give {example}"))?;
            Ok(Threshold {
                label,
                value: v,
                text: value.trim().to_string(),
            })
        })
        .collect()
}

/// A bound on a count: at most N, or at most PCT% of a whole.
#[derive(Clone, Copy)]
enum Bound {
    Count(u64),
    Share(Percent),
}

impl Bound {
    /// `N` or `PCT%`.
    fn parse(text: &str) -> Option<Bound> {
        match text.strip_suffix('%') {
            Some(p) => Percent::parse(p).map(Bound::Share),
            None => text.parse::<u64>().ok().map(Bound::Count),
        }
    }

    fn exceeded_by(self, part: u64, whole: u64) -> bool {
        match self {
            Bound::Count(n) => part > n,
            Bound::Share(p) => p.exceeded_by(part, whole),
        }
    }
}

const BOUND_EXAMPLE: &str = "a count (e.g. 3) or a percentage with '%' (e.g. 1%)";

/// The thresholds of a run, checked once the report is built.
pub(super) struct Thresholds {
    max_drop_rate: Vec<Threshold<Percent>>,
    max_drops: Vec<Threshold<u64>>,
    max_wait: Vec<Threshold<Nanos>>,
    max_keys_hurt: Vec<Threshold<Bound>>,
    /// `--max-newly-dropped`, `--max-keys-newly-hurt` (of `--compare`).
    max_newly_dropped: Vec<Threshold<Bound>>,
    max_keys_newly_hurt: Vec<Threshold<Bound>>,
    /// `--max-disagree`, and as given.
    max_disagree: (Percent, String),
    /// `--verify-strict`: disagreements within nginx's clock granularity
    /// count against `--max-disagree` too.
    verify_strict: bool,
    /// `--fail-untested`.
    fail_untested: bool,
}

impl Thresholds {
    pub(super) fn from_args(args: &AuditArgs, labels: &[String]) -> Result<Thresholds> {
        let max_disagree = Percent::parse(args.max_disagree.trim()).ok_or_else(|| {
            anyhow!(
                "--max-disagree '{}': invalid value; give a percentage from 0 to 100, e.g. 0.5",
                args.max_disagree
            )
        })?;
        Ok(Thresholds {
            max_drop_rate: parse_thresholds(
                "--max-drop-rate",
                &args.max_drop_rate,
                labels,
                Percent::parse,
                "a percentage from 0 to 100, e.g. 5 or api=0.5",
            )?,
            max_drops: parse_thresholds(
                "--max-drops",
                &args.max_drops,
                labels,
                |s| s.parse::<u64>().ok(),
                "a whole number, e.g. 100",
            )?,
            max_wait: parse_thresholds(
                "--max-wait",
                &args.max_wait,
                labels,
                |s| crate::rate::parse_duration(s).ok(),
                "a duration, e.g. 2s or api=500ms",
            )?,
            max_disagree: (max_disagree, args.max_disagree.trim().to_string()),
            verify_strict: args.verify_strict,
            fail_untested: args.fail_untested,
            max_keys_hurt: parse_thresholds(
                "--max-keys-hurt",
                &args.max_keys_hurt,
                labels,
                Bound::parse,
                BOUND_EXAMPLE,
            )?,
            max_newly_dropped: parse_thresholds(
                "--max-newly-dropped",
                &args.max_newly_dropped,
                labels,
                Bound::parse,
                BOUND_EXAMPLE,
            )?,
            max_keys_newly_hurt: parse_thresholds(
                "--max-keys-newly-hurt",
                &args.max_keys_newly_hurt,
                labels,
                Bound::parse,
                BOUND_EXAMPLE,
            )?,
        })
    }

    /// True when a threshold on drops or waits is given.
    pub(super) fn gated(&self) -> bool {
        !(self.max_drop_rate.is_empty()
            && self.max_drops.is_empty()
            && self.max_wait.is_empty()
            && self.max_keys_hurt.is_empty()
            && self.max_newly_dropped.is_empty()
            && self.max_keys_newly_hurt.is_empty())
    }
}

/// Every threshold the report crosses, policy by policy.
pub(super) fn crossings(t: &Thresholds, report: &Report) -> Vec<Crossing> {
    let applies = |label: &Option<String>, p: &str| label.as_deref().is_none_or(|l| l == p);
    let mut crossings = Vec::new();
    for p in &report.policies {
        for t in &t.max_drop_rate {
            if applies(&t.label, &p.label) && t.value.exceeded_by(p.dropped, p.requests) {
                crossings.push(Crossing {
                    policy: p.label.clone(),
                    threshold: "--max-drop-rate".into(),
                    limit: format!("{}%", t.text.trim_end_matches('%')),
                    measured: format!(
                        "{}% ({} of {})",
                        crate::report::pct(p.drop_pct),
                        p.dropped,
                        p.requests
                    ),
                });
            }
        }
        for t in &t.max_drops {
            if applies(&t.label, &p.label) && p.dropped > t.value {
                crossings.push(Crossing {
                    policy: p.label.clone(),
                    threshold: "--max-drops".into(),
                    limit: t.value.to_string(),
                    measured: p.dropped.to_string(),
                });
            }
        }
        for t in &t.max_wait {
            let max = p.wait.map_or(0, |w| w.max_ns);
            if applies(&t.label, &p.label) && max > t.value.0 {
                crossings.push(Crossing {
                    policy: p.label.clone(),
                    threshold: "--max-wait".into(),
                    limit: t.text.clone(),
                    measured: Nanos(max).to_string(),
                });
            }
        }
    }
    crossings.extend(hurt(t, report));
    crossings.extend(disagreements(t, report));
    if t.fail_untested {
        crossings.extend(untested(report));
    }
    crossings
}

/// The nginx.conf runs with a limited location that matched no row.
fn untested(report: &Report) -> Vec<Crossing> {
    report
        .policies
        .iter()
        .filter_map(|p| {
            let n = p.config()?;
            (!n.untested.is_empty()).then(|| Crossing {
                policy: p.label.clone(),
                threshold: "--fail-untested".into(),
                limit: "every location with limit_req matches a row".into(),
                measured: format!(
                    "{} matched no row of the log",
                    crate::quote::names(&n.untested)
                ),
            })
        })
        .collect()
}

/// The policies hurting more keys than `--max-keys-hurt` allows, and the
/// compared ones making more rows or keys worse than `--max-newly-dropped`
/// and `--max-keys-newly-hurt` allow.
fn hurt(t: &Thresholds, report: &Report) -> Vec<Crossing> {
    let applies = |label: &Option<String>, p: &str| label.as_deref().is_none_or(|l| l == p);
    let crossing = |policy: &str, flag: &str, t: &Threshold<Bound>, part: u64, whole: u64| {
        (applies(&t.label, policy) && t.value.exceeded_by(part, whole)).then(|| Crossing {
            policy: policy.to_string(),
            threshold: flag.into(),
            limit: t.text.clone(),
            measured: format!("{part} of {whole}"),
        })
    };
    let mut out = Vec::new();
    for p in &report.policies {
        for x in &t.max_keys_hurt {
            let (n, of) = (p.keys_with_drops, p.keys_seen);
            out.extend(crossing(&p.label, "--max-keys-hurt", x, n, of));
        }
    }
    for c in &report.compare {
        let Some(p) = report.policies.iter().find(|p| p.label == c.policy) else {
            continue;
        };
        for x in &t.max_newly_dropped {
            let (n, of) = (c.newly_dropped, p.requests);
            out.extend(crossing(&c.policy, "--max-newly-dropped", x, n, of));
        }
        for x in &t.max_keys_newly_hurt {
            let (n, of) = (c.keys_newly_hurt, p.keys_seen);
            out.extend(crossing(&c.policy, "--max-keys-newly-hurt", x, n, of));
        }
    }
    out
}

/// The nginx.conf runs whose verified rows disagree more than
/// `--max-disagree` allows.
fn disagreements(t: &Thresholds, report: &Report) -> Vec<Crossing> {
    let (max, text) = &t.max_disagree;
    report
        .policies
        .iter()
        .filter_map(|p| {
            let v = p.config()?.verify.as_ref()?;
            let (counted, but) = match t.verify_strict {
                true => (v.disagreed, String::new()),
                false => (
                    v.disagreed - v.within_clock,
                    match v.within_clock {
                        0 => String::new(),
                        n => format!(", not counting {n} within nginx's clock granularity"),
                    },
                ),
            };
            let share = if v.rows == 0 {
                0.0
            } else {
                counted as f64 * 100.0 / v.rows as f64
            };
            max.exceeded_by(counted, v.rows).then(|| Crossing {
                policy: p.label.clone(),
                threshold: "--max-disagree".into(),
                limit: format!("{}%", text.trim_end_matches('%')),
                measured: format!(
                    "{}% ({counted} of {} rows disagree with column '{}'{but})",
                    crate::report::pct(share),
                    v.rows,
                    v.column
                ),
            })
        })
        .collect()
}
