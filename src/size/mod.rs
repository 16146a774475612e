//! `drip size`: the smallest limit real traffic needs, from its log.
//!
//! For each rate (bucket families) or window (window families), the
//! smallest burst, capacity or limit whose replay of the log meets every
//! target, exactly: each frontier row's figures come from the audit replay
//! of its complete spec, and one size less misses a target.
//!
//! The log is read once into columns ([`log::Log`]). One replay carrying
//! every axis point with unbounded policies gives each key's zero-drop
//! size ([`probe::NeedJob`]); the largest over the counted keys is the
//! exact answer to a zero-drop target and bounds every other search.
//! Drops never rise as the size grows when every cost is 1 (token bucket,
//! leaky bucket, GCRA, shaper, nginx, and the window families: measured on
//! thousands of random logs against exact models, and argued in the
//! design notes), so a K-ary search over sizes finds the smallest that
//! meets a drop-rate, drop-count or keys-hurt target in a few replays of K
//! candidates. With costs above 1 that fails (a larger bucket admits a
//! large request that starves the small ones after it), so every size up
//! to the zero-drop one is tried instead. Either way, the answer and the
//! size below it are replayed directly before they are reported.

pub mod family;
pub mod log;
pub mod probe;

use crate::cli::{Format, SizeArgs};
use crate::engine::replay::{Replay, Run, Slot};
use crate::ingest::input::ColSel;
use crate::ingest::stream::{self, CHUNK};
use crate::policy::{KeyChoice, PolicyConfig, parse_spec};
use crate::progress;
use crate::rate::Rate;
use crate::report::size::{
    Current, FrontierRow, KeyNeed, NeedRow, NginxConf, RuleOfThumb, SizeReport, Targets,
};
use crate::report::{InputInfo, PolicyReport};
use crate::time::Nanos;
use anyhow::{Context, Result, anyhow, bail};
use family::{Axis, CAP, Family, Point, PointValue};
use log::Log;
use probe::{NeedJob, Needs, ProbeJob, Tally, dispatch};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Candidates per probe replay in a search. Each replay costs about its
/// active rows times K decisions and narrows the range K + 1 times, so a
/// small K decides less in all; a larger one replays fewer times. 3, 7
/// and 15 measured alike within the noise of a shared host.
const K: usize = 7;
/// Most sizes tried one by one when costs vary.
const MAX_SCAN: u64 = 2048;
/// Windows tried when none are given.
const DEFAULT_WINDOWS: [&str; 5] = ["1s", "10s", "1m", "10m", "1h"];

/// Keys-hurt target: a count or a share of the counted keys.
#[derive(Clone, Copy, Debug)]
enum KeysHurt {
    Count(u64),
    /// numerator, denominator of the fraction.
    Share(u128, u128),
}

/// The targets, exact.
#[derive(Clone, Debug)]
struct Goal {
    drop_rate: Option<(u128, u128)>,
    drops: Option<u64>,
    keys_hurt: Option<KeysHurt>,
    max_wait: Option<Nanos>,
    /// Requests and keys the targets count.
    requests: u64,
    keys: u64,
}

impl Goal {
    /// The drop targets (drop rate, drops, keys hurt) hold.
    fn drops_ok(&self, t: &Tally) -> bool {
        self.drop_rate
            .is_none_or(|(n, d)| u128::from(t.dropped) * d <= n * u128::from(self.requests))
            && self.drops.is_none_or(|m| t.dropped <= m)
            && self.keys_hurt.is_none_or(|k| match k {
                KeysHurt::Count(m) => t.keys_hurt <= m,
                KeysHurt::Share(n, d) => u128::from(t.keys_hurt) * d <= n * u128::from(self.keys),
            })
    }

    fn wait_ok(&self, t: &Tally) -> bool {
        self.max_wait.is_none_or(|w| t.max_wait <= w.0)
    }

    fn ok(&self, t: &Tally) -> bool {
        self.drops_ok(t) && self.wait_ok(t)
    }

    /// True when some drop target allows no drop at all.
    fn zero_drops(&self) -> bool {
        self.drop_rate.is_some_and(|(n, _)| n == 0)
            || self.drops == Some(0)
            || matches!(
                self.keys_hurt,
                Some(KeysHurt::Count(0)) | Some(KeysHurt::Share(0, _))
            )
    }
}

/// A percentage as an exact fraction of 1: (numerator, denominator).
fn parse_pct(s: &str) -> Option<(u128, u128)> {
    let s = s.trim();
    let s = s.strip_suffix('%').unwrap_or(s);
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() || frac.len() > 9 {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let num: u128 = format!("{int}{frac}").parse().ok()?;
    let den = 100 * 10u128.pow(frac.len() as u32);
    (num <= den).then_some((num, den))
}

/// What the search found at one axis point.
struct Found {
    size: u64,
    feasible: bool,
    method: &'static str,
    replays: u32,
    note: Option<String>,
}

/// The sweep's shared inputs.
struct Sweep<'a> {
    family: &'a Family,
    log: &'a Log,
    goal: &'a Goal,
    counted: &'a [bool],
    costs_vary: bool,
}

impl Sweep<'_> {
    /// Tallies of `sizes` at `point`, one replay; `key_need`: each key's
    /// zero-drop size at this point.
    fn probe(&self, point: &Point, key_need: &[u64], sizes: &[u64]) -> Result<Vec<Tally>> {
        let configs = sizes
            .iter()
            .map(|&s| self.family.config(&point.text, s))
            .collect::<Result<Vec<PolicyConfig>>>()?;
        // Waits are measured on every key; drops only happen to keys that
        // need more than the size.
        let waits = self.goal.max_wait.is_some()
            && (self.family.name == "shaper" || self.family.nginx_delays());
        let smallest = sizes.iter().copied().min().unwrap_or(0);
        Ok(dispatch(
            &configs,
            ProbeJob {
                log: self.log,
                counted: self.counted,
                settled: (!waits).then_some((key_need, smallest)),
            },
        ))
    }

    /// The smallest size meeting the targets at `point`; `need`: the
    /// largest zero-drop size over the counted keys (`u64::MAX`: some
    /// request never fits).
    fn search(&self, point: &Point, key_need: &[u64], need: u64) -> Result<Found> {
        let min = self.family.min_size;
        let mut seen: HashMap<u64, Tally> = HashMap::new();
        let mut replays = 0u32;
        let mut run = |sizes: &[u64], seen: &mut HashMap<u64, Tally>| -> Result<()> {
            let fresh: Vec<u64> = sizes
                .iter()
                .copied()
                .filter(|s| !seen.contains_key(s))
                .collect();
            if fresh.is_empty() {
                return Ok(());
            }
            replays += 1;
            for (s, t) in fresh.iter().zip(self.probe(point, key_need, &fresh)?) {
                seen.insert(*s, t);
            }
            Ok(())
        };
        // The largest size known to meet the drop targets.
        let mut hi = if need == u64::MAX {
            run(&[CAP], &mut seen)?;
            if !self.goal.drops_ok(&seen[&CAP]) {
                return Ok(Found {
                    size: CAP,
                    feasible: false,
                    method: "search",
                    replays: replays + 1,
                    note: Some(format!(
                        "some requests cost more than any {} up to {CAP} admits, and the drop targets are missed even at {CAP}",
                        self.family.size_param
                    )),
                });
            }
            CAP
        } else {
            need.max(min)
        };
        let method;
        if self.costs_vary && hi - min < MAX_SCAN {
            method = "scan";
            // Drops may rise with the size: try every size, lowest first.
            let mut from = min;
            let mut found = None;
            while from <= hi && found.is_none() {
                let to = (from + probe::MAX_K as u64 - 1).min(hi);
                let sizes: Vec<u64> = (from..=to).collect();
                run(&sizes, &mut seen)?;
                found = sizes.iter().copied().find(|s| self.goal.ok(&seen[s]));
                from = to + 1;
            }
            let Some(s) = found else {
                let t = seen[&hi];
                return Ok(Found {
                    size: hi,
                    feasible: false,
                    method,
                    replays: replays + 1,
                    note: Some(self.wait_note(hi, &t)),
                });
            };
            hi = s;
        } else {
            method = if self.costs_vary {
                "search-unproven"
            } else if self.goal.zero_drops() && need != u64::MAX {
                "zero-drop"
            } else {
                "search"
            };
            if method != "zero-drop" {
                // Sizes below `lo` miss the drop targets; `hi` meets them.
                let mut lo = min;
                while lo < hi {
                    let span = hi - lo;
                    let sizes: Vec<u64> = if span as usize <= K {
                        (lo..hi).collect()
                    } else {
                        let mut v: Vec<u64> = (1..=K as u64)
                            .map(|j| {
                                lo + (u128::from(span) * u128::from(j) / (K as u128 + 1)) as u64
                            })
                            .collect();
                        v.dedup();
                        v
                    };
                    run(&sizes, &mut seen)?;
                    for &s in &sizes {
                        if self.goal.drops_ok(&seen[&s]) {
                            hi = hi.min(s);
                        }
                    }
                    for &s in &sizes {
                        if s < hi && !self.goal.drops_ok(&seen[&s]) {
                            lo = lo.max(s + 1);
                        }
                    }
                }
            }
        }
        // The answer and the size below it, replayed directly.
        let check: Vec<u64> = if hi > min { vec![hi - 1, hi] } else { vec![hi] };
        run(&check, &mut seen)?;
        let at = seen[&hi];
        if !self.goal.drops_ok(&at) {
            bail!(
                "internal check failed: {} {hi} at {} misses the drop targets it was found to meet (please report it)",
                self.family.size_param,
                point.text
            );
        }
        if hi > min && method != "search-unproven" && self.goal.ok(&seen[&(hi - 1)]) {
            bail!(
                "internal check failed: {} {} at {} meets the targets below the size found (please report it)",
                self.family.size_param,
                hi - 1,
                point.text
            );
        }
        let feasible = self.goal.wait_ok(&at);
        Ok(Found {
            size: hi,
            feasible,
            method,
            replays: replays + 1,
            note: (!feasible).then(|| self.wait_note(hi, &at)),
        })
    }

    fn wait_note(&self, size: u64, t: &Tally) -> String {
        match self.goal.max_wait {
            Some(w) if t.max_wait > w.0 => format!(
                "the drop targets need {} {size} or more here, and at {size} a request waits {} (over --max-wait {})",
                self.family.size_param,
                Nanos(t.max_wait),
                w
            ),
            _ => format!(
                "no {} up to {size} meets the targets",
                self.family.size_param
            ),
        }
    }
}

/// The audit replay of one spec over the in-memory log: the figures
/// `drip audit -p SPEC` reports.
fn audit(log: &Log, spec_text: &str, keyed: bool, top: usize) -> Result<PolicyReport> {
    let spec = parse_spec(spec_text)?;
    let slot = if keyed { Slot::Column(0) } else { Slot::Global };
    let run = Run::new(&spec, vec![slot; spec.members.len()], 0);
    let mut replay = Replay::new(vec![run], usize::from(keyed), None, None, top)?;
    if keyed {
        for id in 0..log.names.len() {
            replay.learn_key(0, log.names.get(id as u32));
        }
    }
    let mut buf = Vec::with_capacity(CHUNK);
    let mut start = 0;
    while start < log.len() {
        log.events(start, CHUNK, &mut buf);
        replay.decide_chunk(&buf)?;
        start += CHUNK;
    }
    let (mut reports, _) = replay.finish()?;
    Ok(reports.remove(0))
}

/// Most requests the policy can admit in any window of `h`.
fn worst_in_horizon(family: &Family, point: &Point, size: u64, h: Nanos) -> u64 {
    let sat = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
    match point.value {
        PointValue::Rate(r) => {
            // ⌊R·H⌋ requests refill within H.
            let refill = u128::from(h.0) * u128::from(r.count()) / u128::from(r.per().0);
            let refill = if family.is_nginx() {
                // nginx's own rate: thousandths per second, r/m truncated.
                family
                    .config(&point.text, size)
                    .ok()
                    .and_then(|c| match c {
                        PolicyConfig::Nginx(n) => {
                            Some(u128::from(n.rate_m()) * u128::from(h.0) / 1_000_000_000_000)
                        }
                        _ => None,
                    })
                    .unwrap_or(refill)
            } else {
                refill
            };
            match family.name {
                // Releases are 1/R apart whatever the burst.
                "shaper" => sat(1 + refill),
                "nginx" if family.nginx_delays() => {
                    sat(u128::from(family.nginx_delay().min(size)) + 1 + refill)
                }
                "nginx" => sat(u128::from(size) + 1 + refill),
                _ => sat(u128::from(size) + refill),
            }
        }
        PointValue::Window(w) => {
            let windows = u128::from(h.0.div_ceil(w.0));
            match family.name {
                "sliding-log" => sat(u128::from(size) * windows),
                _ => sat(u128::from(size) * (windows + 1)),
            }
        }
    }
}

/// Nearest-rank quantile of sorted values.
fn quantile(sorted: &[u64], num: u64, den: u64) -> Option<u64> {
    if sorted.is_empty() {
        return Some(0);
    }
    let n = sorted.len() as u64;
    let rank = (num * n).div_ceil(den).max(1);
    let v = sorted[rank as usize - 1];
    (v != u64::MAX).then_some(v)
}

fn rate_per_s(r: Rate) -> f64 {
    r.count() as f64 * 1e9 / r.per().0 as f64
}

/// Refuses, before anything is written, a report or plot that would land on
/// one of the logs or the --exclude-keys file, or on each other.
fn check_outputs(args: &SizeArgs) -> Result<()> {
    use crate::clash::{Endpoint, Place, check_distinct, check_logs_once, logs, named};
    let mut inputs = logs(&args.input.files);
    check_logs_once(&inputs)?;
    if let Some(p) = &args.exclude_keys {
        inputs.push(Endpoint::new(named("--exclude-keys", p), Place::Path(p)));
    }
    let mut outputs = vec![Endpoint::new("standard output (the report)", Place::Stdout)];
    if let Some(p) = &args.plot {
        outputs.push(Endpoint::new(named("--plot", p), Place::Path(p)));
    }
    check_distinct(&inputs, &outputs)
}

pub fn run(args: SizeArgs) -> Result<u8> {
    if let Some(path) = &args.plot {
        crate::clash::check_output("--plot", path, "svg")?;
    }
    check_outputs(&args)?;
    let family = Family::parse(&args.policy)?;
    let given_points = family.points(args.rate.as_deref(), args.window.as_deref())?;
    if args.max_drop_rate.is_none() && args.max_drops.is_none() && args.max_keys_hurt.is_none() {
        bail!(
            "no target given; add --max-drop-rate PCT, --max-drops N or --max-keys-hurt PCT%|N (e.g. --max-drop-rate 0.1)"
        );
    }
    let drop_rate = args
        .max_drop_rate
        .as_deref()
        .map(|t| {
            parse_pct(t).ok_or_else(|| {
                anyhow!("invalid --max-drop-rate '{t}': give a percentage from 0 to 100, e.g. 0.5")
            })
        })
        .transpose()?;
    let keys_hurt = args
        .max_keys_hurt
        .as_deref()
        .map(|t| {
            let bad = || {
                anyhow!(
                    "invalid --max-keys-hurt '{t}': give a count of keys (e.g. 3) or a percentage of keys with '%' (e.g. 1%)"
                )
            };
            if t.trim().ends_with('%') {
                parse_pct(t).map(|(n, d)| KeysHurt::Share(n, d)).ok_or_else(bad)
            } else {
                t.trim().parse::<u64>().map(KeysHurt::Count).map_err(|_| bad())
            }
        })
        .transpose()?;
    if args.max_wait.is_some() && !(family.name == "shaper" || family.nginx_delays()) && !args.quiet
    {
        crate::say!(
            "drip: note: --max-wait bounds the waits of shaping policies (shaper, nginx without nodelay); {} never delays a request",
            family.name
        );
    }

    // The key the swept policy counts by, read as audit reads it.
    let key_col = match &family.key {
        KeyChoice::Default => args.input.key_column.clone(),
        KeyChoice::Column(c) => Some(c.clone()),
        KeyChoice::Global => None,
    };
    let keyed = key_col.is_some();
    if args.exclude_keys.is_some() && !keyed {
        bail!(
            "--exclude-keys needs a keyed policy: give --key-column COLUMN (or key= in the spec)"
        );
    }
    let current = args
        .current
        .as_deref()
        .map(|c| -> Result<_> {
            let spec = parse_spec(c)?;
            for m in &spec.members {
                let same = match (&m.key, &family.key) {
                    (KeyChoice::Column(a), _) => key_col.as_deref() == Some(a.as_str()),
                    (KeyChoice::Global, _) => !keyed,
                    (KeyChoice::Default, _) => {
                        args.input.key_column.as_deref() == key_col.as_deref()
                    }
                };
                if !same {
                    bail!(
                        "--current '{c}' counts by another key than -p; give it the same key= (or none)"
                    );
                }
            }
            Ok(spec.text)
        })
        .transpose()?;
    let key_cols: Vec<ColSel> = key_col.as_deref().map(ColSel::parse).into_iter().collect();
    let spec = args.input.spec(key_cols, args.quiet)?;
    let show_progress = progress::Wanted {
        quiet: args.quiet,
        no_progress: args.progress.no_progress,
        progress: args.progress.progress,
    }
    .show();
    let bar = progress::bytes_read(show_progress, &spec.files);
    let mut log = Log::new(keyed, args.input.cost_column.is_some());
    let read = stream::read_ordered(&spec, args.input.reorder_window, None, &bar, &mut log)?;
    if read.summary.rows == 0 && !args.quiet {
        crate::say!("drip: the input has no rows; every size is the smallest");
    }

    // Keys left out of the targets.
    let mut counted: Vec<bool> = Vec::new();
    let mut targets = Targets {
        max_drop_rate_pct: args
            .max_drop_rate
            .as_deref()
            .map(|t| t.trim().trim_end_matches('%').to_string()),
        max_drops: args.max_drops,
        max_keys_hurt: args.max_keys_hurt.as_deref().map(|t| t.trim().to_string()),
        max_wait_ns: args.max_wait.map(|w| w.0),
        ..Targets::default()
    };
    let mut notes = Vec::new();
    if let Some(path) = &args.exclude_keys {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --exclude-keys file '{}'", path.display()))?;
        // A line names a key as the report shows it (`10.1.2.0/24`,
        // `/api|alice`) or as logged (`10.1.2.3:4711`): the logged form is
        // shaped as the log's keys are (port, prefix, joined parts).
        let shape = crate::ingest::log::key::KeyShape {
            strip_port: args.input.strip_port,
            prefix: args
                .input
                .key_prefix
                .as_deref()
                .map(crate::ingest::log::key::parse_prefix)
                .transpose()
                .map_err(|e| anyhow!(e))?,
        };
        let joined = key_col.as_deref().is_some_and(|c| c.contains(','));
        let mut lines: Vec<bool> = Vec::new();
        let mut forms: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
        for line in text.lines() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let n = lines.len();
            lines.push(false);
            let mut shaped = Vec::new();
            if joined {
                shape.append_joined(
                    l.split(crate::ingest::log::key::JOIN as char)
                        .map(str::as_bytes),
                    &mut shaped,
                );
            } else {
                shape.append(l.as_bytes(), &mut shaped);
            }
            for form in [l.as_bytes().to_vec(), shaped] {
                let at = forms.entry(form).or_default();
                if !at.contains(&n) {
                    at.push(n);
                }
            }
        }
        counted = vec![true; log.keys()];
        for (id, c) in counted.iter_mut().enumerate() {
            if let Some(at) = forms.get(log.names.get(id as u32)) {
                *c = false;
                for &n in at {
                    lines[n] = true;
                }
                targets.excluded_keys += 1;
                targets.excluded_requests += log.requests_by_key[id];
            }
        }
        let missing = lines.iter().filter(|f| !**f).count();
        if missing > 0 {
            let note = format!(
                "{missing} of the {} keys in '{}' do not appear in the log",
                lines.len(),
                path.display()
            );
            if !args.quiet {
                crate::say!("drip: {note}");
            }
            notes.push(note);
        }
    }
    let is_counted = |id: usize| counted.is_empty() || counted[id];
    let counted_keys = (0..log.keys()).filter(|&k| is_counted(k)).count() as u64;
    // Every request counts, as audit counts them (rows with an empty key
    // are admitted unlimited), except those of excluded keys.
    let counted_requests = log.len() as u64 - targets.excluded_requests;
    let goal = Goal {
        drop_rate,
        drops: args.max_drops,
        keys_hurt,
        max_wait: args.max_wait,
        requests: counted_requests,
        keys: counted_keys,
    };

    // The log's shape: average rate, busiest second.
    let stats = Shape::of(&log);
    let points: Vec<Point> = match given_points {
        Some(p) => p,
        None => match family.axis {
            Axis::Window => DEFAULT_WINDOWS
                .iter()
                .map(|w| {
                    Ok(Point {
                        text: (*w).to_string(),
                        value: PointValue::Window(
                            crate::rate::parse_duration(w).map_err(|e| anyhow!(e))?,
                        ),
                    })
                })
                .collect::<Result<_>>()?,
            Axis::Rate => {
                let lo = stats.mean_rate(keyed);
                let hi =
                    Rate::new(stats.busiest.max(1), Nanos::from_secs(1)).map_err(|e| anyhow!(e))?;
                let hi = family.round_up(hi).map(|p| p.value);
                let lo = lo.and_then(|r| family.round_up(r)).map(|p| p.value);
                match (lo, hi) {
                    (Some(PointValue::Rate(lo)), Some(PointValue::Rate(hi))) => {
                        let hi = if family::per_sec_cmp(lo, hi).is_gt() {
                            lo
                        } else {
                            hi
                        };
                        family.ladder(lo, hi)
                    }
                    _ => family.ladder(
                        Rate::new(1, Nanos::from_secs(1)).map_err(|e| anyhow!(e))?,
                        Rate::new(1, Nanos::from_secs(1)).map_err(|e| anyhow!(e))?,
                    ),
                }
            }
        },
    };

    // Each key's zero-drop size at every point: one unbounded replay for
    // up to MAX_K points.
    let offset = u64::from(family.is_nginx());
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(points.len())
        .max(1);
    let group = points.len().div_ceil(threads).clamp(1, probe::MAX_K);
    let configs: Vec<Vec<PolicyConfig>> = points
        .chunks(group)
        .map(|g| g.iter().map(|p| family.config(&p.text, CAP)).collect())
        .collect::<Result<_>>()?;
    let needs: Vec<Needs> = std::thread::scope(|s| {
        let handles: Vec<_> = configs
            .iter()
            .map(|c| s.spawn(|| dispatch(c, NeedJob { log: &log, offset })))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow!("a replay thread failed")))
            .collect::<Result<_>>()
    })?;
    let need_of = |pi: usize, key: usize| needs[pi / group].of(key, pi % group);

    // The sweep: points spread over two threads.
    let sweep = Sweep {
        family: &family,
        log: &log,
        goal: &goal,
        counted: &counted,
        costs_vary: log.costs_vary(),
    };
    let sweep_bar = progress::steps(
        show_progress,
        points.len() as u64,
        if family.is_bucket() {
            "rates"
        } else {
            "windows"
        },
    );
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<FrontierRow>>>> =
        Mutex::new((0..points.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= points.len() {
                        break;
                    }
                    let p = &points[i];
                    let key_need: Vec<u64> = (0..log.keys()).map(|k| need_of(i, k)).collect();
                    let need = (0..log.keys())
                        .filter(|&k| is_counted(k))
                        .map(|k| key_need[k])
                        .max()
                        .unwrap_or(0);
                    let row = (|| -> Result<FrontierRow> {
                        let found = sweep.search(p, &key_need, need)?;
                        let spec = family.spec(&p.text, found.size);
                        let report = audit(&log, &spec, keyed, 0)?;
                        let mut row = FrontierRow {
                            rate: family.is_bucket().then(|| p.text.clone()),
                            window: (!family.is_bucket()).then(|| p.text.clone()),
                            spec,
                            size: found.size,
                            feasible: found.feasible,
                            worst_in_horizon: worst_in_horizon(
                                &family,
                                p,
                                found.size,
                                args.horizon,
                            ),
                            method: found.method,
                            replays: found.replays,
                            note: found.note,
                            ..FrontierRow::default()
                        };
                        row.fill(&report);
                        Ok(row)
                    })();
                    results.lock().expect("no panics hold the lock")[i] = Some(row);
                    sweep_bar.inc(1);
                }
            });
        }
    });
    sweep_bar.finish_and_clear();
    let mut frontier = Vec::new();
    for r in results.into_inner().expect("no panics hold the lock") {
        frontier.push(r.expect("every point swept")?);
    }

    // The recommendation: the fewest requests through in any horizon.
    let recommended = frontier
        .iter()
        .filter(|r| r.feasible)
        .min_by(|a, b| {
            a.worst_in_horizon
                .cmp(&b.worst_in_horizon)
                .then(a.size.cmp(&b.size))
        })
        .cloned();

    // Per-key need.
    let mut per_key = Vec::new();
    if keyed {
        for (pi, p) in points.iter().enumerate() {
            let mut sorted: Vec<u64> = (0..log.keys()).map(|k| need_of(pi, k)).collect();
            sorted.sort_unstable();
            // The top keys: largest need, then most requests, then by name.
            let order = |&a: &usize, &b: &usize| {
                need_of(pi, b)
                    .cmp(&need_of(pi, a))
                    .then(log.requests_by_key[b].cmp(&log.requests_by_key[a]))
                    .then(log.names.get(a as u32).cmp(log.names.get(b as u32)))
            };
            let mut ids: Vec<usize> = (0..log.keys()).collect();
            if args.top < ids.len() {
                ids.select_nth_unstable_by(args.top, order);
                ids.truncate(args.top);
            }
            ids.sort_by(order);
            per_key.push(NeedRow {
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
                    .take(args.top)
                    .map(|&k| {
                        let n = need_of(pi, k);
                        KeyNeed {
                            key: crate::quote::key_text(log.names.get(k as u32)),
                            need: (n != u64::MAX).then_some(n),
                            requests: log.requests_by_key[k],
                            excluded: !is_counted(k),
                        }
                    })
                    .collect(),
            });
        }
    }

    let rule_of_thumb = rule(&family, &stats, keyed, &frontier, args.max_wait, &log);

    let nginx = match (&recommended, family.is_nginx()) {
        (Some(rec), true) => Some(nginx_conf(&family, rec, &log, keyed)),
        _ => None,
    };

    let verdict = recommended.is_none().then(|| {
        let last = points.last().map_or(String::new(), |p| p.text.clone());
        format!(
            "no limit up to {last} meets {}: this is a capacity problem, not a limiter setting",
            targets.describe()
        )
    });

    let current = match current {
        None => None,
        Some(text) => {
            let p = audit(&log, &text, keyed, 0)?;
            // The targets' own figures for it: a direct replay that leaves
            // the excluded keys out.
            let config = parse_spec(&text)?;
            let tally = if config.members.len() == 1 {
                let t = dispatch(
                    &[config.members[0].config],
                    ProbeJob {
                        log: &log,
                        counted: &counted,
                        settled: None,
                    },
                );
                Some(t[0])
            } else if counted.is_empty() {
                // A stack: the audit's own figures, every key counted.
                Some(Tally {
                    dropped: p.dropped,
                    keys_hurt: p.keys_with_drops,
                    max_wait: p.wait.map_or(0, |w| w.max_ns),
                })
            } else {
                None
            };
            let meets = tally.map(|t| goal.ok(&t));
            let mut change = Vec::new();
            if let Some(rec) = &recommended {
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
                change.push(
                    "a '+' stack: its drops are shown, not checked against the targets".into(),
                );
            }
            Some(Current {
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
    };

    if frontier.iter().any(|r| r.method == "search") {
        notes.push(
            "searched: with every cost 1, drops never rose as the size grew on any random log measured, for every family (fixed-window count=all included), but that is measured, not proven; each answer met the targets and the size below it missed them, replayed directly".to_string(),
        );
    }
    if sweep.costs_vary {
        notes.push(if frontier.iter().any(|r| r.method == "search-unproven") {
            format!(
                "costs vary, so drops may rise with the size: rows marked search-unproven had more than {MAX_SCAN} sizes to scan and were searched as if drops only fell; each answer was still replayed directly"
            )
        } else {
            "scanned: costs vary, so drops may rise with the size; every size up to the answer was replayed".to_string()
        });
    }

    let report = SizeReport {
        input: InputInfo {
            files: read.names,
            rows: read.summary.rows,
            bad_rows_skipped: read.summary.bad_rows,
            truncated: read.summary.truncated,
            rows_reordered: read.reordered,
            time_column: read.summary.time_column,
            time_format: read.summary.time_format,
            first_ns: log.at.first().copied(),
            last_ns: log.at.last().copied(),
        },
        policy: args.policy.trim().to_string(),
        axis: if family.is_bucket() { "rate" } else { "window" },
        size_param: family.size_param,
        targets,
        horizon_ns: args.horizon.0,
        frontier,
        recommended,
        nginx,
        per_key,
        rule_of_thumb,
        current,
        verdict,
        notes,
    };
    let svg = if args.plot.is_some() || args.format == Format::Html {
        Some(crate::report::plot::size_report_svg(&report)?)
    } else {
        None
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        Format::Table => crate::report::size::render_table(&report, &mut out),
        Format::Json => crate::report::size::render_json(&report, &mut out),
        Format::Csv => crate::report::size::render_csv(&report, &mut out),
        Format::Markdown => crate::report::size::render_markdown(&report, &mut out),
        Format::Html => crate::report::html::render_size(&report, svg.as_deref(), &mut out),
    }
    .and_then(|_| out.flush())
    .context("cannot write the report")?;
    if let (Some(path), Some(svg)) = (&args.plot, &svg) {
        std::fs::write(path, svg)
            .with_context(|| format!("cannot write --plot file '{}'", path.display()))?;
    }
    if let Some(v) = &report.verdict {
        crate::say!("drip: {v}");
        return Ok(1);
    }
    Ok(0)
}

/// The log's average rate and busiest second.
struct Shape {
    span_ns: u64,
    rows: u64,
    keys: u64,
    /// p99 across keys of requests per key (keyed logs).
    p99_requests: u64,
    /// Most requests in one second (of one key when keyed).
    busiest: u64,
    busiest_key: Option<u32>,
}

impl Shape {
    fn of(log: &Log) -> Shape {
        let span_ns = match (log.at.first(), log.at.last()) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        };
        let keys = log.keys();
        // Per key: its current second and count there.
        let mut sec = vec![u64::MAX; keys];
        let mut count = vec![0u64; keys];
        let mut busiest = 0;
        let mut busiest_key = None;
        let mut rows = 0u64;
        for i in 0..log.len() {
            let k = log.key[i];
            if k == crate::ingest::keys::EMPTY_KEY {
                continue;
            }
            rows += 1;
            let (k, s) = (k as usize, log.at[i] / Nanos::PER_SEC);
            if sec[k] != s {
                sec[k] = s;
                count[k] = 0;
            }
            count[k] += 1;
            if count[k] > busiest {
                busiest = count[k];
                busiest_key = Some(k as u32);
            }
        }
        let mut per_key: Vec<u64> = log.requests_by_key.clone();
        per_key.sort_unstable();
        Shape {
            span_ns,
            rows,
            keys: keys as u64,
            p99_requests: quantile(&per_key, 99, 100).unwrap_or(0),
            busiest,
            busiest_key,
        }
    }

    /// Requests per second over the span (per key on average when keyed).
    fn mean_rate(&self, keyed: bool) -> Option<Rate> {
        if self.rows == 0 || self.span_ns == 0 {
            return None;
        }
        let per = if keyed {
            self.span_ns.saturating_mul(self.keys.max(1))
        } else {
            self.span_ns
        };
        Rate::new(self.rows, Nanos(per)).ok()
    }

    /// The average rate the rule of thumb compares with (p99 key when keyed).
    fn rule_rate(&self, keyed: bool) -> f64 {
        if self.span_ns == 0 {
            return 0.0;
        }
        let n = if keyed { self.p99_requests } else { self.rows };
        n as f64 * 1e9 / self.span_ns as f64
    }
}

/// An average rate as it reads naturally: per second down to 0.1/s, then
/// per minute, per hour or per day, with four significant digits, so a
/// sparse log's rate never shows as zero.
fn average_text(per_s: f64) -> String {
    if per_s <= 0.0 || !per_s.is_finite() {
        return "0/s".into();
    }
    let (v, unit) = [(1.0, "s"), (60.0, "min"), (3600.0, "h")]
        .into_iter()
        .map(|(mul, unit)| (per_s * mul, unit))
        .find(|(v, _)| *v >= 0.1)
        .unwrap_or((per_s * 86_400.0, "day"));
    let digits = (3 - v.log10().floor() as i32).clamp(0, 8) as usize;
    let text = format!("{v:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}/{unit}")
}

/// Seed 001's rule: rate ≥ the average input rate; capacity ≤ rate × the
/// acceptable wait. Set next to the exact frontier.
fn rule(
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
                        format!("the rule holds: the exact {} {} is within it", family.size_param, row.size)
                    } else {
                        format!(
                            "they disagree: the targets need {} {}, more than rate × wait allows; raise the rate",
                            family.size_param, row.size
                        )
                    };
                    text.push(format!(
                        "rate ≥ average → {}; capacity ≤ rate × acceptable wait ({}) = {cap}; exact at {}: {} {} — {verdict}",
                        row.point(),
                        max_wait.map(|w| w.to_string()).unwrap_or_default(),
                        row.point(),
                        family.size_param,
                        row.size
                    ));
                }
                None => text.push(format!(
                    "rate ≥ average → {}; the exact {} there: {}{} (give --max-wait to compare with capacity ≤ rate × wait)",
                    row.point(),
                    family.size_param,
                    row.size,
                    if row.feasible { "" } else { " (misses the targets)" }
                )),
            }
        }
    }
    r.text = text;
    r
}

/// nginx directives for the recommendation, with a zone sized for the
/// most keys active within 60 s (nginx keeps about 16,000 states a
/// megabyte for `$binary_remote_addr`).
fn nginx_conf(family: &Family, rec: &FrontierRow, log: &Log, keyed: bool) -> NginxConf {
    let active = if keyed {
        active_keys(log, Nanos::from_secs(60))
    } else {
        1
    };
    let mb = active.div_ceil(16_000).max(1);
    // One bucket for all: every request gets the same non-empty key (an
    // empty key would exempt it, and `$server_name` splits by server).
    let (key, map) = if keyed {
        ("$binary_remote_addr", None)
    } else {
        (
            "$drip_all",
            Some("map $remote_addr $drip_all { default all; }".to_string()),
        )
    };
    let rate = rec.rate.clone().unwrap_or_default();
    let mut req = format!("limit_req zone=drip burst={}", rec.size);
    if !family.nginx_delays() {
        req.push_str(" nodelay");
    } else if family.nginx_delay() > 0 {
        req.push_str(&format!(" delay={}", family.nginx_delay()));
    }
    req.push(';');
    NginxConf {
        map,
        limit_req_zone: format!("limit_req_zone {key} zone=drip:{mb}m rate={rate};"),
        limit_req: req,
        zone_mb: mb,
        keys_active_60s: active,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Decision;

    #[test]
    fn average_rates_read_with_their_significant_digits() {
        assert_eq!(average_text(0.66863), "0.6686/s");
        assert_eq!(average_text(17.0), "17/s");
        assert_eq!(average_text(1234.5678), "1235/s");
        assert_eq!(average_text(0.0004), "1.44/h");
        assert_eq!(average_text(0.01), "0.6/min");
        assert_eq!(average_text(1e-7), "0.00864/day");
        assert_eq!(average_text(0.0), "0/s");
    }

    /// No window of the horizon lets more requests through than the bound
    /// the recommendation ranks by (releases, for the policies that delay).
    #[test]
    fn worst_in_horizon_bounds_every_window() {
        let cases = [
            ("gcra", "2/s"),
            ("token-bucket", "3/s"),
            ("leaky-bucket", "1/s"),
            ("shaper", "2/s"),
            ("nginx:nodelay", "2r/s"),
            ("nginx", "2r/s"),
            ("nginx:delay=2", "20r/m"),
            ("fixed-window", "2s"),
            ("fixed-window:align=first-hit,count=all", "3s"),
            ("sliding-window", "2s"),
            ("sliding-log", "2s"),
        ];
        let mut seed = 11u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for (policy, point) in cases {
            let family = Family::parse(policy).unwrap();
            let p = family.points(
                family.is_bucket().then_some(point),
                (!family.is_bucket()).then_some(point),
            );
            let p = p.unwrap().unwrap().remove(0);
            for size in [family.min_size, 1, 3, 7] {
                let spec = parse_spec(&family.spec(&p.text, size)).unwrap();
                for h in [Nanos::from_millis(700), Nanos::from_secs(5)] {
                    let bound = worst_in_horizon(&family, &p, size, h);
                    for _ in 0..20 {
                        let mut stack = spec.build();
                        let mut out = Vec::new();
                        let mut t = 0u64;
                        for _ in 0..300 {
                            t += next() % 400;
                            let now = Nanos::from_millis(t);
                            if let Decision::Admit { release } = stack.decide(&[Some(0)], now, 1) {
                                out.push(release.0);
                            }
                        }
                        out.sort_unstable();
                        let mut tail = 0;
                        for (i, &r) in out.iter().enumerate() {
                            while out[tail] + h.0 <= r {
                                tail += 1;
                            }
                            let through = (i + 1 - tail) as u64;
                            assert!(
                                through <= bound,
                                "{policy} at {point}, size {size}: {through} in {h} > {bound}"
                            );
                        }
                    }
                }
            }
        }
    }
}
