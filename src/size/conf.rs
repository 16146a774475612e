//! `drip size LOG --nginx-conf nginx.conf`: each `limit_req` line of the
//! config sized on the rows it sees, the others held as they are, and a
//! patch of the config files.
//!
//! Steps, as for a policy: read (the config, then the log once into rows
//! with the key columns the config's zones read) -> sweep (every replay is
//! the audit replay of the whole config, [`ConfExec`], so routing, zone
//! keys, shared zones and the order of a location's limits are nginx's)
//! -> recommend ([`super::conf_fit`]) -> report -> render, with the patch
//! ([`super::patch`]).
//!
//! A sized unit is one `limit_req` line as written: a line inherited by
//! several locations (from `server` or `http`) is one unit, sized on the
//! rows of all of them. `rate=` belongs to the zone, so every line of a
//! zone is sized at the same rate; `burst=` per line.

use super::conf_fit::{self, Fig, Fitted};
use super::conf_guard::{Factor, Guard};
use super::conf_rows::Setting;
use super::conf_rows::{Rows, Unit, units};
use super::conf_targets::{self, PerLine};
use super::goal::Goal;
use super::outliers::Found;
use super::patch;
use crate::cli::{MaxChange, SizeArgs};
use crate::engine::conf::{ConfExec, ConfOptions};
use crate::ingest::input::{ColSel, file_name};
use crate::ingest::stream::{self, Read};
use crate::nginx_conf::NginxConf;
use crate::report::size::Targets;
use crate::report::size_conf::{AtSpeed, Change, LimitRow, Outcome, SizeConfReport, ZoneRow};
use crate::report::size_outliers::{Outlier, Outliers};
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::sync::Arc;

/// Runs `size --nginx-conf`: the exit status (1 when some limit cannot
/// meet the targets at any rate).
pub fn run(args: &SizeArgs) -> Result<u8> {
    let path = args.nginx_conf.as_deref().expect("--nginx-conf given");
    refuse_mixed(args)?;
    let goal = Goal::from_args(args, true)?;
    let (conf, mut exec, rows, read) = read(args, path)?;
    let units = units(&conf);
    let per_line = conf_targets::resolve(args, &conf, &units, &goal)?;
    let mut fit = conf_fit::Fit::new(
        &mut exec,
        &conf,
        &units,
        &rows,
        &per_line.goals,
        (args.per.map(|p| p.0), args.horizon),
    );
    if let Some(path) = &args.exclude_keys {
        fit.exclude(excluded_names(path)?);
    }
    let today = Setting::today(&conf, &units);
    // Outliers are clients: a zone keyed by route ($uri, $host) has none.
    let clients: Vec<bool> = (units.iter())
        .map(|u| !super::zone_key::zone_routes_only(&conf.zones[u.zone].key.text))
        .collect();
    let found = fit.find_outliers(&today, args.keep_outliers, &clients)?;
    let before = fit.replay(&today)?;
    let guard = Guard {
        tighten: args.tighten,
        max_change: args.max_change.unwrap_or(MaxChange::DEFAULT).0,
    };
    let fitted = fit.fit((&today, &before), &guard, &per_line.keep)?;
    let changes = (0..units.len())
        .map(|u| line_change(&fit, (&units, u), (&today, &before[u]), &fitted, &guard))
        .collect();
    let outliers: Vec<Option<Outliers>> = (0..units.len())
        .map(|u| {
            let figs = (&before[u], &fitted.after[u]);
            line_outliers(
                &fit,
                units[u].zone,
                found[u].as_ref(),
                figs,
                args.keep_outliers,
            )
        })
        .collect();
    let faster = headroom(&mut fit, &fitted)?;
    let zones = zone_rows(&fit, &conf, &fitted);
    let edits = patch::edits(&conf, &units, &today, &fitted.setting, &zones);
    let diff = patch::diff(&conf.path, &edits)?;
    let report = report(
        (args, &goal, &per_line),
        &conf,
        &units,
        Sized {
            before: &before,
            fitted: &fitted,
            changes,
            outliers,
            faster: &faster,
        },
        zones,
        read,
        diff,
    )?;
    render(args, &report)
}

/// The keys of `--exclude-keys FILE`, one a line (`#` lines and blank
/// ones skipped), as a zone's key gives them (`$binary_remote_addr`: the
/// client address as logged).
fn excluded_names(path: &std::path::Path) -> Result<std::collections::HashSet<Vec<u8>>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --exclude-keys file '{}'", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.as_bytes().to_vec())
        .collect())
}

/// Flags of `-p` sizing that mean nothing here: one line each.
fn refuse_mixed(args: &SizeArgs) -> Result<()> {
    let given = [
        ("-p", args.policy.is_some()),
        ("--rate", args.rate.is_some()),
        ("--window", args.window.is_some()),
        ("--current", args.current.is_some()),
        ("--plot", args.plot.is_some()),
        ("--key-column", args.input.key_column.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
        bail!(
            "{flag} does not go with --nginx-conf: --nginx-conf sizes the config's own limit_req lines, each at its zone's rate and key; run size once with -p and once with --nginx-conf to have both"
        );
    }
    Ok(())
}

/// Refuses, before anything is written, a report, patch or standard
/// error that is one of the logs, the --exclude-keys file or a file of the
/// config (`confs`: the one given, then with its includes), and a
/// `--patch` that is a folder.
pub(super) fn check_outputs(args: &SizeArgs, confs: &[std::path::PathBuf]) -> Result<()> {
    use crate::clash::{check_distinct, report_inputs, report_outputs};
    let excluded = args.exclude_keys.as_deref().map(|p| ("--exclude-keys", p));
    let inputs = report_inputs(&args.input.files, excluded, confs)?;
    if let Some(p) = args.patch.as_ref().filter(|p| p.is_dir()) {
        bail!(
            "--patch '{}' is a folder: give the path of the file to write the patch to",
            p.display()
        );
    }
    check_distinct(&inputs, &report_outputs("--patch", args.patch.as_deref()))
}

/// Reads the config, plans its replay, and reads the log into rows.
fn read(args: &SizeArgs, path: &std::path::Path) -> Result<(Arc<NginxConf>, ConfExec, Rows, Read)> {
    let vars = crate::nginx_setup::parse_vars(&args.nginx_var)?;
    check_outputs(args, &[path.to_path_buf()])?;
    let (_, conf) =
        crate::nginx_setup::load_confs(&[path.to_path_buf()], &[], args.quiet, false)?.remove(0);
    let units = units(&conf);
    if units.is_empty() {
        bail!(
            "{}: no limit_req in this config (with its includes): nothing to size; give the config whose locations limit requests",
            path.display()
        );
    }
    super::patch::one_per_line(&units, |z| conf.zones[z].name.clone())?;
    check_outputs(args, &conf.files)?;
    let mut spec = args.input.spec(Vec::new(), args.quiet)?;
    crate::nginx_setup::fitting_log_format(&conf, &spec, false).apply(&mut spec);
    let log_fields = crate::ingest::peek::log_fields(&spec);
    let opts = ConfOptions {
        static_files: None,
        log_fields: log_fields.as_deref(),
        overrides: &vars,
        location: None,
        verify: None,
        files: args.input.files.iter().map(|f| file_name(f)).collect(),
    };
    let mut cols: Vec<ColSel> = Vec::new();
    let exec = ConfExec::new(conf.clone(), &opts, &crate::notes(args.quiet), &mut |f| {
        let sel = ColSel::Name(f.to_string());
        Ok(cols.iter().position(|c| *c == sel).unwrap_or_else(|| {
            cols.push(sel);
            cols.len() - 1
        }))
    })?;
    let mut rows = Rows::new(cols.len());
    spec.key_cols = cols;
    let show = crate::progress::Wanted {
        quiet: args.quiet,
        no_progress: args.progress.no_progress,
        progress: args.progress.progress,
    }
    .show();
    let bar = crate::progress::bytes_read(show, &spec.files);
    let read = stream::read_ordered(&spec, args.input.reorder_window, None, &bar, &mut rows)?;
    if rows.events.is_empty() {
        bail!(
            "the input has no rows, so there is nothing to size a limit on; check the log's path and that it was written"
        );
    }
    if let Some(h) = &args.headroom {
        let (num, den) = super::read::headroom(h)?;
        let at: Vec<u64> = rows.events.iter().map(|e| e.at.0).collect();
        for (e, t) in rows
            .events
            .iter_mut()
            .zip(super::read::compress(&at, num, den))
        {
            e.at = crate::time::Nanos(t);
        }
    }
    Ok((conf, exec, rows, read))
}

/// Each zone's keys over the sized config, and the size that holds them.
fn zone_rows(fit: &conf_fit::Fit, conf: &NginxConf, fitted: &Fitted) -> Vec<ZoneRow> {
    conf.zones
        .iter()
        .enumerate()
        .map(|(z, zone)| {
            let used = fitted.zone_use[z];
            let binary = zone.key.text.trim() == "$binary_remote_addr";
            let longest = if binary { 16 } else { used.longest };
            let needed = patch::zone_bytes(used.peak, longest);
            ZoneRow {
                zone: zone.name.clone(),
                rate_today: zone.rate_text.clone(),
                rate: fitted.setting.rate_text(z),
                size_today: zone.size,
                size: zone.size.max(needed),
                peak_keys: used.peak,
                longest_key: longest as u64,
                used: fit.zone_reached(z),
            }
        })
        .collect()
}

/// What line `u` does to the rows it sees, for the report.
fn outcome(f: &Fig) -> Outcome {
    let share = |n: u64| {
        if f.seen == 0 {
            0.0
        } else {
            n as f64 * 100.0 / f.seen as f64
        }
    };
    let w = f.waits();
    Outcome {
        seen: f.seen,
        dropped: f.dropped,
        dropped_pct: share(f.dropped),
        delayed: f.delayed,
        delayed_pct: share(f.delayed),
        wait_p99_ns: w.p99,
        wait_max_ns: w.max,
        keys_hurt: f.keys_hurt(),
        excluded_rows: f.excluded.0,
        excluded_dropped: f.excluded.1,
        outlier_rows: f.outliers.0,
        outlier_dropped: f.outliers.1,
    }
}

/// The sized config replayed with the requests arriving 1.5 and 2 times
/// as fast: how much growth it has room for.
fn headroom(fit: &mut conf_fit::Fit, fitted: &Fitted) -> Result<Vec<(&'static str, Vec<Fig>)>> {
    [("1.5", (3, 2)), ("2", (2, 1))]
        .into_iter()
        .map(|(name, f)| Ok((name, fit.at_speed(&fitted.setting, f)?)))
        .collect()
}

/// A line's figures at more traffic, for the report.
fn at_speed(factor: &str, f: &Fig, goal: &Goal) -> AtSpeed {
    let o = outcome(f);
    let whole = crate::engine::candidates::per::PeriodCount {
        dropped: f.dropped,
        keys_hurt: f.keys_hurt(),
        requests: f.seen,
        keys: f.keys(),
    };
    let waits_ok = goal.max_wait.is_none_or(|w| o.wait_max_ns <= w.0);
    AtSpeed {
        factor: factor.into(),
        dropped: o.dropped,
        dropped_pct: o.dropped_pct,
        wait_max_ns: o.wait_max_ns,
        keys_hurt: o.keys_hurt,
        meets: goal.period_ok(whole) && waits_ok,
    }
}

/// Line `u`'s outliers for the report, with how often the config as
/// written and as sized refuses each.
fn line_outliers(
    fit: &conf_fit::Fit,
    zone: usize,
    found: Option<&Found>,
    (before, after): (&Fig, &Fig),
    kept: bool,
) -> Option<Outliers> {
    let found = found?;
    let refused = |f: &Fig, k: u32| {
        let drops = if kept { f.hurt() } else { &f.outlier_drops };
        drops.get(&k).copied().unwrap_or(0)
    };
    let rows = before.seen + before.excluded.0 + before.outliers.0;
    let keys = found
        .keys
        .iter()
        .map(|&(k, b, why)| Outlier {
            key: fit.key_name(zone, k),
            requests: b.requests,
            share_pct: b.requests as f64 * 100.0 / rows.max(1) as f64,
            busiest_second: b.spans[0],
            busiest_minute: b.spans[1],
            busiest_hour: b.spans[3],
            why: why.text(),
            refused: Some(refused(after, k)),
            refused_as_written: Some(refused(before, k)),
        })
        .collect();
    Some(Outliers {
        rule: super::outliers::rule_text(&found.reference),
        kept,
        keys,
    })
}

/// How many keys of line `u` only `a` refuses, and the first few named
/// (most refused first).
fn only_in(fit: &conf_fit::Fit, zone: usize, a: &Fig, b: &Fig) -> (u64, Vec<String>) {
    let mut only: Vec<(u64, u32)> = a
        .hurt()
        .iter()
        .filter(|(k, _)| !b.hurt().contains_key(k))
        .map(|(&k, &n)| (n, k))
        .collect();
    only.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
    let top = only
        .iter()
        .take(3)
        .map(|&(_, k)| fit.key_name(zone, k))
        .collect();
    (only.len() as u64, top)
}

/// What sizing does to line `u`: its change factors, why it is kept as
/// written, the keys it newly refuses and those it no longer refuses.
fn line_change(
    fit: &conf_fit::Fit,
    (units, u): (&[Unit], usize),
    (today, before): (&Setting, &Fig),
    fitted: &Fitted,
    guard: &Guard,
) -> Change {
    let zone = units[u].zone;
    let f = Factor::of(today, &fitted.setting, zone, &[u]);
    let after = &fitted.after[u];
    let (newly_hurt, newly_hurt_top) = only_in(fit, zone, after, before);
    let (relieved, relieved_top) = only_in(fit, zone, before, after);
    Change {
        rate_factor: f.rate,
        burst_factor: f.burst,
        text: f.describe(),
        kept: fitted.kept[zone]
            .as_ref()
            .filter(|_| before.seen > 0)
            .map(|k| k.describe(guard)),
        newly_hurt,
        relieved,
        newly_hurt_top,
        relieved_top,
    }
}

/// One line's row of the report.
fn limit_row(
    conf: &NginxConf,
    unit: &Unit,
    u: usize,
    (before, fitted, change): (&Fig, &Fitted, Change),
) -> LimitRow {
    let zone = &conf.zones[unit.zone];
    LimitRow {
        zone: zone.name.clone(),
        locations: unit
            .members
            .iter()
            .map(|&(l, _)| conf.locations[l].name.clone())
            .collect::<Vec<_>>()
            .join(", "),
        key: zone.key.text.clone(),
        at: unit.pos.to_string(),
        tested: before.seen > 0,
        rate_today: zone.rate_text.clone(),
        burst_today: unit.burst,
        delay: match unit.delay {
            None => "nodelay".into(),
            Some(0) => String::new(),
            Some(d) => format!("delay={d}"),
        },
        rate: fitted.setting.rate_text(unit.zone),
        burst: fitted.setting.bursts[u],
        before: outcome(before),
        after: outcome(&fitted.after[u]),
        missed: fitted.missed[u].clone(),
        change,
        outliers: None,
        headroom: Vec::new(),
        targets: None,
    }
}

/// What the sizing found, line by line.
struct Sized<'a> {
    /// Each line's figures as written, and the sized config.
    before: &'a [Fig],
    fitted: &'a Fitted,
    changes: Vec<Change>,
    outliers: Vec<Option<Outliers>>,
    /// The sized config at more traffic: (factor, each line's figures).
    faster: &'a [(&'static str, Vec<Fig>)],
}

/// The report as data.
fn report(
    (args, goal, per_line): (&SizeArgs, &Goal, &PerLine),
    conf: &NginxConf,
    units: &[Unit],
    Sized {
        before,
        fitted,
        changes,
        outliers,
        faster,
    }: Sized,
    zones: Vec<ZoneRow>,
    read: Read,
    (diff, root): (Vec<u8>, std::path::PathBuf),
) -> Result<SizeConfReport> {
    let limits = units
        .iter()
        .zip(changes)
        .zip(outliers)
        .enumerate()
        .map(|(u, ((unit, change), outliers))| LimitRow {
            outliers,
            headroom: faster
                .iter()
                .map(|(f, figs)| at_speed(f, &figs[u], &per_line.goals[u]))
                .collect(),
            targets: per_line.own[u].clone(),
            ..limit_row(conf, unit, u, (&before[u], fitted, change))
        })
        .collect();
    let root = crate::quote::shell_word(&root.display().to_string());
    // `nginx -t` alone checks the installed config, not this one.
    let config = std::path::absolute(&conf.path).unwrap_or_else(|_| conf.path.clone());
    let config = crate::quote::shell_word(&config.display().to_string());
    let patch_file = match &args.patch {
        Some(p) if p.as_os_str() != "-" => Some(
            std::path::absolute(p)
                .with_context(|| format!("cannot find where --patch '{}' is", p.display()))?,
        ),
        _ => None,
    };
    Ok(SizeConfReport {
        config: conf.path.display().to_string(),
        files: read.names,
        rows: read.summary.rows,
        targets: Targets {
            headroom: args.headroom.as_deref().map(|h| h.trim().to_string()),
            ..super::read::targets(args, goal)
        },
        limits,
        zones,
        notes: fitted.notes.clone(),
        patch: String::from_utf8_lossy(&diff).into_owned(),
        patch_bytes: diff,
        patch_file: patch_file.map(|p| p.display().to_string()),
        apply: format!("cd {root} && patch -p1 < PATCH && nginx -t -c {config}"),
    })
}

/// Writes the report, and the patch to `--patch`; the exit status.
fn render(args: &SizeArgs, report: &SizeConfReport) -> Result<u8> {
    let to_stdout = args.patch.as_ref().is_some_and(|p| p.as_os_str() == "-");
    if let Some(p) = args.patch.as_ref().filter(|_| !to_stdout) {
        std::fs::write(p, &report.patch_bytes)
            .with_context(|| format!("cannot write --patch file '{}'", p.display()))?;
    }
    if to_stdout {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        out.write_all(&report.patch_bytes)
            .and_then(|_| out.flush())
            .context("cannot write the report")?;
    } else {
        super::write_page(args, &crate::report::size_conf::page(report))?;
    }
    let missed = |guarded: bool| {
        (report.limits.iter())
            .filter(|l| l.missed.is_some() && l.change.kept.is_some() == guarded)
            .count()
    };
    let (none, guarded) = (missed(false), missed(true));
    if none > 0 {
        crate::say!(
            "drip: {none} limit(s) meet the targets at no rate tried: their lines are left as they are (see the notes)"
        );
    }
    if guarded > 0 {
        crate::say!(
            "drip: {guarded} limit(s) miss the targets as written, and meeting them needs a change beyond --max-change: their lines are left as they are (see the notes)"
        );
    }
    Ok(if none + guarded > 0 { 1 } else { 0 })
}
