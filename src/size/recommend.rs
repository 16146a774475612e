//! The recommending step of `size`: the frontier row to recommend, each
//! key's need, the rule of thumb beside the exact frontier, nginx
//! directives for an nginx recommendation, and `--current` replayed and
//! compared.

use super::family::{Family, Point};
use super::goal::Goal;
use super::outliers;
use super::read::Input;
use super::shape::{Shape, average_text, quantile};
use super::sweep::{KeyNeeds, MAX_SCAN};
use super::zone_key::ZoneKey;
use crate::engine::candidates::audit;
use crate::engine::candidates::log::Log;
use crate::engine::candidates::per::Periods;
use crate::engine::candidates::probe::{ProbeJob, Probed, dispatch};
use crate::policy::{NginxLimitReq, parse_spec};
use crate::rate::Rate;
use crate::report::size::HurtKey;
use crate::report::size::{Current, FrontierRow, KeyNeed, NeedRow, NginxConf, RuleOfThumb};
use crate::report::size_outliers::{Outlier, Outliers};
use crate::time::Nanos;
use anyhow::Result;

/// Each point's distribution of the keys' zero-drop sizes, and its top
/// keys.
pub fn per_key(
    family: &Family,
    points: &[Point],
    needs: &KeyNeeds,
    input: &Input,
    top: usize,
) -> Vec<NeedRow> {
    let log = &input.log;
    let mut rows = Vec::new();
    for (pi, p) in points.iter().enumerate() {
        let need_of = |k: usize| needs.of(pi, k);
        let mut sorted: Vec<u64> = (0..log.keys()).map(need_of).collect();
        sorted.sort_unstable();
        // The top keys: largest need, then most requests, then by name.
        let order = |&a: &usize, &b: &usize| {
            need_of(b)
                .cmp(&need_of(a))
                .then(log.requests_by_key[b].cmp(&log.requests_by_key[a]))
                .then(log.names.get(a as u32).cmp(log.names.get(b as u32)))
        };
        // Only a key whose need is at least the top-th largest can be among
        // the top keys: the others are passed over without a comparison.
        let mut ids: Vec<usize> = match sorted.len().checked_sub(top) {
            Some(i) if top > 0 => {
                let floor = sorted[i];
                (0..log.keys()).filter(|&k| need_of(k) >= floor).collect()
            }
            Some(_) => Vec::new(),
            None => (0..log.keys()).collect(),
        };
        if top < ids.len() {
            ids.select_nth_unstable_by(top, order);
            ids.truncate(top);
        }
        ids.sort_by(order);
        rows.push(NeedRow {
            rate: family.is_bucket().then(|| p.text.clone()),
            window: (!family.is_bucket()).then(|| p.text.clone()),
            keys: sorted.len() as u64,
            p50: quantile(&sorted, 50, 100),
            p90: quantile(&sorted, 90, 100),
            p99: quantile(&sorted, 99, 100),
            p99_9: quantile(&sorted, 999, 1000),
            max: quantile(&sorted, 1, 1),
            above_p99_9: {
                let p = quantile(&sorted, 999, 1000).unwrap_or(u64::MAX);
                sorted.iter().filter(|&&n| n > p).count() as u64
            },
            top: ids
                .iter()
                .take(top)
                .map(|&k| {
                    let n = need_of(k);
                    KeyNeed {
                        key: crate::quote::key_text(log.names.get(k as u32)),
                        need: (n != u64::MAX).then_some(n),
                        requests: log.requests_by_key[k],
                        excluded: !input.is_counted(k) && !input.is_outlier(k),
                        outlier: input.is_outlier(k),
                    }
                })
                .collect(),
        });
    }
    rows
}

/// The recommendation's period with the most drops, in words.
pub fn worst_period(rec: &FrontierRow, input: &Input, periods: &Periods) -> Result<String> {
    let config = parse_spec(&rec.spec)?.members[0].config;
    let job = ProbeJob {
        log: &input.log,
        counted: &input.counted,
        settled: None,
        settled_wait: 0,
        per: Some(periods),
    };
    let t = dispatch(&[config], job)[0];
    let len = crate::time::span(periods.len);
    Ok(match t.worst_period {
        None => format!("no period of {len} has a drop under the recommendation"),
        Some((start, dropped)) => {
            let c = periods.count(start / periods.len, dropped, 0);
            format!(
                "the recommendation's worst period of {len} starts {}: {dropped} of its {} requests dropped ({} %); every period of {len} meets the drop targets",
                crate::time::instant(start),
                c.requests,
                crate::report::pct(dropped as f64 * 100.0 / c.requests.max(1) as f64),
            )
        }
    })
}

/// `--current` replayed as audit replays it, checked against the targets
/// and compared with the recommendation.
pub fn current(
    text: String,
    input: &Input,
    (keyed, per): (bool, Option<&Periods>),
    goal: &Goal,
    recommended: Option<&FrontierRow>,
) -> Result<Current> {
    let log = &input.log;
    let p = audit(log, &text, keyed, 0)?;
    // The targets' own figures for it: a direct replay that leaves
    // the excluded keys out.
    let config = parse_spec(&text)?;
    let tally = if config.members.len() == 1 {
        let t = dispatch(
            &[config.members[0].config],
            ProbeJob {
                log,
                counted: &input.counted,
                settled: None,
                settled_wait: 0,
                per,
            },
        );
        Some(t[0])
    } else if input.counted.is_empty() {
        // A stack: the audit's own figures, every key counted.
        Some(Probed {
            dropped: p.dropped,
            keys_hurt: p.keys_with_drops,
            max_wait: p.wait.map_or(0, |w| w.max_ns),
            ..Probed::default()
        })
    } else {
        None
    };
    let meets = tally.map(|t| goal.ok(&t));
    let mut change = Vec::new();
    if let Some(rec) = recommended {
        change.push(format!(
            "with the recommendation: drops {} → {}, keys hurt {} → {}",
            p.dropped, rec.dropped, p.keys_with_drops, rec.keys_hurt
        ));
        if let (Some(a), Some(b)) = (p.wait.map(|w| w.max_ns), rec.wait_max_ns) {
            change.push(format!(
                "longest wait {} → {}",
                crate::time::human_wait(a),
                crate::time::human_wait(b)
            ));
        }
    }
    if tally.is_none() {
        change.push("a '+' stack: its drops are shown, not checked against the targets".into());
    }
    Ok(Current {
        spec: text,
        requests: p.requests,
        admitted: p.admitted,
        dropped: p.dropped,
        drop_pct: p.drop_pct,
        keys_hurt: p.keys_with_drops,
        wait_max_ns: p.wait.map(|w| w.max_ns),
        meets_targets: meets,
        change,
    })
}

/// The notes on how the frontier's sizes were found.
pub fn method_notes(frontier: &[FrontierRow], costs_vary: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if frontier.iter().any(|r| r.method == "search") {
        notes.push(
            "searched: with every cost 1, drops never rose as the size grew on any random log measured, for every family (fixed-window count=all included), but that is measured, not proven; each answer met the targets and the size below it missed them, replayed directly".to_string(),
        );
    }
    if costs_vary {
        notes.push(if frontier.iter().any(|r| r.method == "search-unproven") {
            format!(
                "costs vary, so drops may rise with the size: rows marked search-unproven had more than {MAX_SCAN} sizes to scan and were searched as if drops only fell; each answer was still replayed directly"
            )
        } else {
            "scanned: costs vary, so drops may rise with the size; every size up to the answer was replayed".to_string()
        });
    }
    notes
}

fn rate_per_s(r: Rate) -> f64 {
    r.count() as f64 * 1e9 / r.per().0 as f64
}

/// Seed 001's rule: rate ≥ the average input rate; capacity ≤ rate × the
/// acceptable wait. Set next to the exact frontier.
pub fn rule(
    family: &Family,
    shape: &Shape,
    keyed: bool,
    frontier: &[FrontierRow],
    max_wait: Option<Nanos>,
    log: &Log,
) -> RuleOfThumb {
    let avg = shape.rule_rate(keyed);
    let who = if keyed { " (p99 across keys)" } else { "" };
    let busiest_key = shape
        .busiest_key
        .filter(|_| keyed)
        .map(|k| crate::quote::key_text(log.names.get(k)));
    let mut text = vec![format!(
        "the log's average rate is {}{who}; its busiest second has {} requests{}",
        average_text(avg),
        shape.busiest,
        busiest_key
            .as_deref()
            .map(|k| format!(" (key {k})"))
            .unwrap_or_default()
    )];
    let mut r = RuleOfThumb {
        average_rate_per_s: avg,
        busiest_second: shape.busiest,
        busiest_key,
        ..RuleOfThumb::default()
    };
    if !family.is_bucket() {
        text.push(
            "for a window of W the rule reads: limit ≥ average rate × W; the frontier gives the exact limit per window".into(),
        );
        r.text = text;
        return r;
    }
    let at_rule = frontier.iter().find(|row| {
        row.rate
            .as_deref()
            .and_then(|t| crate::rate::parse_rate(t).ok())
            .is_some_and(|rate| rate_per_s(rate) >= avg)
    });
    match at_rule {
        None => text.push(format!(
            "no rate in the sweep reaches the average {}: every rate here drains slower than the traffic arrives",
            average_text(avg)
        )),
        Some(row) => {
            let rate = crate::rate::parse_rate(row.rate.as_deref().unwrap_or("1")).ok();
            r.rule_rate = row.rate.clone();
            r.exact_size = Some(row.size);
            let cap = match (rate, max_wait) {
                (Some(rate), Some(w)) => {
                    Some((u128::from(w.0) * u128::from(rate.count()) / u128::from(rate.per().0)) as u64)
                }
                _ => None,
            };
            r.rule_size = cap;
            match cap {
                Some(cap) => {
                    let verdict = if !row.feasible {
                        "no size works there".to_string()
                    } else if row.size <= cap {
                        format!("the rule holds: the exact {} {} is within it", family.sizing.size_param, row.size)
                    } else {
                        format!(
                            "they disagree: the targets need {} {}, more than rate × wait allows; raise the rate",
                            family.sizing.size_param, row.size
                        )
                    };
                    text.push(format!(
                        "rate ≥ average → {}; capacity ≤ rate × acceptable wait ({}) = {cap}; exact at {}: {} {} — {verdict}",
                        row.point(),
                        max_wait.map(|w| w.to_string()).unwrap_or_default(),
                        row.point(),
                        family.sizing.size_param,
                        row.size
                    ));
                }
                None => text.push(format!(
                    "rate ≥ average → {}; the exact {} there: {}{} (give --max-wait to compare with capacity ≤ rate × wait)",
                    row.point(),
                    family.sizing.size_param,
                    row.size,
                    if row.feasible { "" } else { " (misses the targets)" }
                )),
            }
        }
    }
    r.text = text;
    r
}

/// nginx directives for the recommendation, keyed as it was sized
/// (`key`: `None` for one bucket), with a zone sized for the most keys
/// active within 60 s.
pub fn nginx_conf(
    nginx: &NginxLimitReq,
    rec: &FrontierRow,
    log: &Log,
    key: Option<Result<ZoneKey, String>>,
) -> NginxConf {
    let active = if key.is_some() {
        active_keys(log, Nanos::from_secs(60))
    } else {
        1
    };
    // One bucket for all: every request gets the same non-empty key (an
    // empty key would exempt it, and `$server_name` splits by server).
    let key = key.unwrap_or_else(|| {
        Ok(ZoneKey {
            key: "$drip_all".into(),
            map: vec!["map $remote_addr $drip_all { default all; }".into()],
            from: "one bucket for every request: the map gives each the same key".into(),
            state_bytes: 64,
        })
    });
    // nginx's burst is 0 when not written: no `burst=0` in a snippet.
    let mut req = String::from("limit_req zone=drip");
    if rec.size > 0 {
        req.push_str(&format!(" burst={}", rec.size));
    }
    match nginx.delay() {
        None => req.push_str(" nodelay"),
        Some(0) => {}
        Some(d) => req.push_str(&format!(" delay={d}")),
    }
    req.push(';');
    let rate = rec.rate.clone().unwrap_or_default();
    let mut conf = NginxConf {
        limit_req: req,
        keys_active_60s: active,
        ..NginxConf::default()
    };
    match key {
        Ok(k) => {
            // nginx keeps about 16,000 address states a megabyte; a longer
            // key takes a larger slab.
            conf.states_per_mb = (1u64 << 20) / k.state_bytes;
            conf.zone_mb = active.div_ceil(conf.states_per_mb).max(1);
            conf.limit_req_zone = format!(
                "limit_req_zone {} zone=drip:{}m rate={rate};",
                k.key, conf.zone_mb
            );
            conf.map = (!k.map.is_empty()).then(|| k.map.join("\n"));
            conf.key_from = Some(k.from);
        }
        Err(why) => conf.key_problem = Some(why),
    }
    conf
}

/// The most distinct keys seen within any span of `w`.
fn active_keys(log: &Log, w: Nanos) -> u64 {
    let mut in_window = vec![0u32; log.keys()];
    let mut distinct = 0u64;
    let mut best = 0;
    let mut tail = 0;
    for i in 0..log.len() {
        let k = log.key[i];
        if k == crate::ingest::keys::EMPTY_KEY {
            continue;
        }
        while log.at[tail] + w.0 < log.at[i] {
            let kt = log.key[tail];
            if kt != crate::ingest::keys::EMPTY_KEY {
                in_window[kt as usize] -= 1;
                distinct -= u64::from(in_window[kt as usize] == 0);
            }
            tail += 1;
        }
        distinct += u64::from(in_window[k as usize] == 0);
        in_window[k as usize] += 1;
        best = best.max(distinct);
    }
    best
}

/// The outliers of `input` as the report gives them, with what `pick`
/// does to each; `None` when no population was compared.
pub fn outliers(input: &Input, pick: Option<&FrontierRow>) -> Result<Option<Outliers>> {
    let Some(found) = &input.outliers else {
        return Ok(None);
    };
    let log = &input.log;
    let ids: Vec<u32> = found.keys.iter().map(|o| o.0).collect();
    let refused = match pick {
        Some(p) => outliers::refused(log, &p.spec, &ids)?
            .into_iter()
            .map(Some)
            .collect(),
        None => vec![None; ids.len()],
    };
    let keys = found
        .keys
        .iter()
        .map(|&(k, b, over)| Outlier {
            key: crate::quote::key_text(log.names.get(k)),
            requests: b.requests,
            share_pct: b.requests as f64 * 100.0 / log.len().max(1) as f64,
            busiest_second: b.spans[0],
            busiest_minute: b.spans[1],
            busiest_hour: b.spans[3],
            why: over.text(),
            refused: None,
            refused_as_written: None,
        })
        .zip(refused)
        .map(|(o, refused)| Outlier { refused, ..o })
        .collect();
    Ok(Some(Outliers {
        rule: outliers::rule_text(&found.reference),
        kept: input.targets.keep_outliers,
        keys,
    }))
}

/// The keys `pick` refuses among those the targets count, most refused
/// first (then most requests, then by name, as audit ranks them): the
/// first `top` of them. The outliers left out and the excluded keys are
/// named apart. Taken from the row's own audit replay when the sweep ran
/// one, else from one replay of its spec.
pub fn hurt(input: &Input, pick: &FrontierRow, top: usize) -> Result<Vec<HurtKey>> {
    let log = &input.log;
    if top == 0 || pick.keys_hurt == 0 {
        return Ok(Vec::new());
    }
    let left_out: std::collections::HashSet<String> = (0..log.keys())
        // Outliers left out are not counted; kept ones (--keep-outliers) are.
        .filter(|&k| !input.is_counted(k))
        .map(|k| crate::quote::key_text(log.names.get(k as u32)))
        .collect();
    let refused_most = match &pick.refused_most {
        Some(rows) => rows.clone(),
        None => audit(log, &pick.spec, true, hurt_kept(top, input))?.top_keys,
    };
    Ok(refused_most
        .into_iter()
        .filter(|k| !left_out.contains(&k.key))
        .take(top)
        .map(|k| HurtKey {
            key: k.key,
            requests: k.requests,
            refused: k.dropped,
        })
        .collect())
}

/// The most refused keys an audit replay keeps so that [`hurt`] can name
/// `top` of those the targets count: `top` and the keys left out.
pub fn hurt_kept(top: usize, input: &Input) -> usize {
    if top == 0 {
        return 0;
    }
    top + (0..input.log.keys())
        .filter(|&k| !input.is_counted(k))
        .count()
}
