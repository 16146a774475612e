//! `size --replicas N --total RATE`: the largest per-replica value of a
//! policy such that, behind the balancer, no key gets more than RATE at the
//! edge (counted per the rate's own period, aligned to the epoch, as
//! `audit --replicas` counts it), found on the log itself.
//!
//! The candidates are whole steps of the total: for a window family its
//! `limit` per the total's period (1 … the total's count); for a bucket
//! family its rate in steps of `total/N` (`k/(N·period)`: the even split is
//! one of them; nginx in whole `r/m`), at its smallest burst. What a key
//! gets never shrinks as the per-replica value grows, so a binary search
//! finds the largest that holds; it and the next one up are replayed and
//! both reported.

use super::family::Family;
use super::goal::Goal;
use crate::cli::SizeArgs;
use crate::engine::candidates::{self, log::Log};
use crate::engine::outcome::PolicyReport;
use crate::engine::replicas::Balance;
use crate::policy::rule::{Axis, RateForm};
use crate::rate::parse_rate;
use crate::report::size_replicas::{Candidate, ReplicaSizing};
use crate::time::{Nanos, human_wait};
use anyhow::{Context, Result, bail};

/// What the command line asks: the family, N, the balancer, the total.
struct Asked {
    family: Family,
    n: u32,
    balance: Balance,
    /// The total: `count` per `window`.
    count: u64,
    window: Nanos,
    text: String,
}

/// Runs `size --replicas`: the exit status (1 when no value holds).
pub fn run(args: &SizeArgs) -> Result<u8> {
    let asked = asked(args)?;
    let key_col = super::read::key_column(args, &asked.family)?;
    let mut goal = Goal::none();
    let input = super::read::read(args, key_col.as_deref(), &mut goal)?;
    let keyed = key_col.is_some();
    let sizing = search(&asked, &input.log, keyed)?;
    let code = u8::from(sizing.pick.is_none());
    render(args, &sizing)?;
    if !args.quiet
        && let Some(line) = sizing.verdict()
    {
        crate::say!("drip: {line}");
    }
    Ok(code)
}

fn asked(args: &SizeArgs) -> Result<Asked> {
    let Some(n) = args.replicas else {
        bail!("internal: size --replicas without --replicas");
    };
    let Some(total) = args.total.as_deref() else {
        bail!(
            "size --replicas {n} needs --total RATE: what one client should get through all {n} replicas together (e.g. --total 10/s)"
        );
    };
    if args.nginx_conf.is_some() || args.haproxy_cfg.is_some() {
        bail!(
            "size --replicas sizes a policy spec (-p); a config as replicas is audited by audit --replicas and not sized yet"
        );
    }
    let family = Family::parse(args.policy.as_deref().unwrap_or_default())?;
    let rate = parse_rate(total).with_context(|| format!("--total {total}"))?;
    let per = total.split_once('/').map_or("s", |(_, p)| p.trim());
    let window = parse_rate(&format!("1/{per}"))
        .with_context(|| format!("--total {total}"))?
        .per();
    // count per window = rate · window, a whole number.
    let scaled = u128::from(rate.count()) * u128::from(window.0);
    let per_ns = u128::from(rate.per().0);
    if scaled % per_ns != 0 || scaled == 0 {
        bail!("--total {total}: write a whole number of requests per period (e.g. 10/s, 600/min)");
    }
    let count = u64::try_from(scaled / per_ns).unwrap_or(u64::MAX);
    let text = args.balance.as_deref().unwrap_or("round-robin");
    let key = args.input.key_column.as_deref();
    let balance = Balance::parse(text, |column| match key == Some(column) {
        true => Ok(0),
        false => bail!(
            "size --balance hash({}) hashes the key column: give --key-column {} too",
            crate::quote::shown_str(column),
            crate::quote::shown_str(column)
        ),
    })?;
    Ok(Asked {
        family,
        n,
        balance,
        count,
        window,
        text: total.to_string(),
    })
}

/// The per-replica candidates, smallest first: (axis text, size).
fn ladder(a: &Asked) -> Result<Vec<(String, u64)>> {
    let f = &a.family;
    let min = f.sizing.min_size.max(1);
    Ok(match f.sizing.axis {
        Axis::Window => {
            let window = f.fixed.clone().unwrap_or_else(|| human_wait(a.window.0));
            (1..=a.count).map(|k| (window.clone(), k)).collect()
        }
        Axis::Rate if f.sizing.rate_form == RateForm::NginxWhole => {
            // Whole requests per minute, up to the total itself.
            let minute = 60 * Nanos::PER_SEC;
            let top = u128::from(a.count) * u128::from(minute) / u128::from(a.window.0);
            if top == 0 {
                bail!(
                    "--total {}: nginx writes rates in whole r/s or r/m; a total below 1r/m cannot be split",
                    a.text
                );
            }
            let top = u64::try_from(top).unwrap_or(u64::MAX).min(1_000_000);
            (1..=top)
                .map(|k| (format!("{k}r/m"), f.sizing.min_size))
                .collect()
        }
        Axis::Rate => {
            // k per N periods: steps of total/N, up to the total.
            let span = human_wait(a.window.0.saturating_mul(u64::from(a.n)));
            let top = a.count.saturating_mul(u64::from(a.n)).min(1_000_000);
            (1..=top).map(|k| (format!("{k}/{span}"), min)).collect()
        }
    })
}

/// The largest candidate whose replicas hold the total, and the next.
fn search(a: &Asked, log: &Log, keyed: bool) -> Result<ReplicaSizing> {
    let ladder = ladder(a)?;
    let replay = |i: usize| -> Result<Candidate> {
        let (axis, size) = &ladder[i];
        let spec = a.family.spec(axis, *size);
        let r =
            candidates::audit_replicated(log, &spec, keyed, (a.n, a.balance.clone(), a.window))?;
        let step = match a.family.sizing.axis {
            Axis::Window => format!("{}={size}", a.family.sizing.size_param),
            Axis::Rate => format!("rate={axis}"),
        };
        Ok(candidate(spec, &step, &r, keyed))
    };
    let holds = |c: &Candidate| c.edge_peak <= a.count;
    // The largest index that holds, if any: lo holds, hi does not.
    let first = replay(0)?;
    let (pick, over) = if !holds(&first) {
        (None, Some(first))
    } else {
        let (mut lo, mut lo_c) = (0, first);
        let last = ladder.len() - 1;
        let top = replay(last)?;
        if holds(&top) {
            (Some(top), None)
        } else {
            let (mut hi, mut hi_c) = (last, top);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                let c = replay(mid)?;
                if holds(&c) {
                    (lo, lo_c) = (mid, c);
                } else {
                    (hi, hi_c) = (mid, c);
                }
            }
            (Some(lo_c), Some(hi_c))
        }
    };
    Ok(ReplicaSizing {
        replicas: u64::from(a.n),
        balance: a.balance.to_string(),
        total: a.text.clone(),
        window_ns: a.window.0,
        per_key: keyed,
        pick,
        over,
    })
}

fn candidate(spec: String, step: &str, r: &PolicyReport, keyed: bool) -> Candidate {
    let rep = r
        .replicas
        .as_ref()
        .expect("a replicated run reports its replicas");
    let e = &rep.replicated;
    Candidate {
        spec,
        per_replica: step.to_string(),
        edge_peak: if keyed { e.peak_per_key } else { e.peak_all },
        peak_key: e.peak_key.clone().filter(|_| keyed),
        admitted: r.admitted,
        dropped: r.dropped,
        drop_pct: r.drop_pct,
    }
}

fn render(args: &SizeArgs, s: &ReplicaSizing) -> Result<()> {
    super::write_page(args, &crate::report::size_replicas::page(s))
}
