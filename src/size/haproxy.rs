//! `size --haproxy-cfg`: each rule of a haproxy.cfg that refuses above a
//! request rate (`http-request deny|tarpit if { sc_http_req_rate(N) gt
//! LIMIT } …`) sized on the rows it applies to, the other rules held as
//! written, and the answer as a patch of the numbers.
//!
//! HAProxy counts every request it tracks, refused or not, so the rate a
//! row reads at a rule does not depend on that rule's limit: one replay
//! records, per rule, the rate each row read (see [`Probe`]), and the rows
//! a limit L refuses are exactly those above it, every candidate exact
//! without replaying it. The limits are sized in the order a request meets
//! them (frontends first), each on a replay with the ones before it sized:
//! a raised frontend limit sends more rows to the backend's. The log is
//! read once into memory and replayed from there. The targets count the
//! rows the rule applies to (its other terms holding), without outliers
//! (as `size` leaves them out: see `outliers.rs`) or `--exclude-keys`.
//!
//! A limit that meets the targets as written is kept (`--tighten` lowers it
//! to the smallest that does); a change beyond `--max-change` (4× by
//! default) is not made, and the report says what it would take.

use super::conf_rows::Rows;
use super::goal::Goal;
use super::outliers::Found;
use crate::cli::{MaxChange, SizeArgs};
use crate::engine::candidates::per::PeriodCount;
use crate::engine::config_run::ConfigOptions;
use crate::engine::haproxy::{HapExec, Probe};
use crate::haproxy_cfg::{HaproxyCfg, RateLimit, acl::Cmp};
use crate::ingest::input::{ColSel, file_name};
use crate::ingest::stream;
use crate::report::size_haproxy::{LimitRow, SizedCfg};
use anyhow::{Context, Result, bail};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Runs `size --haproxy-cfg`: the exit status (1 when a limit kept as
/// written misses its targets).
pub fn run(args: &SizeArgs) -> Result<u8> {
    let path = args.haproxy_cfg.as_deref().expect("--haproxy-cfg given");
    refuse_nginx_only(args)?;
    super::conf::check_outputs(args, &[path.to_path_buf()])?;
    let goal = Goal::from_args(args, false)?;
    let (_, cfg) =
        crate::nginx_setup::load_haproxy(&[path.to_path_buf()], &[], args.quiet)?.remove(0);
    if cfg.rate_limits().is_empty() {
        bail!(
            "{}: no rule refuses above a request rate ('http-request deny if {{ sc_http_req_rate(0) gt N }}'): nothing to size",
            path.display()
        );
    }
    let excluded = excluded_keys(args)?;
    // In the order a request meets them, each limit sized on the rows that
    // reach it once the limits before it are sized (a raised frontend
    // limit sends more rows to the backend's).
    let mut log = read_log(args, &cfg)?;
    let mut current = (*cfg).clone();
    let mut limits = Vec::new();
    for l in cfg.in_flow_order() {
        let (probe, exec) = replay(&mut log, Arc::new(current.clone()))?;
        let u = (probe.limits.iter())
            .position(|p| (p.proxy, p.rule) == (l.proxy, l.rule))
            .expect("the same rules");
        let row = size_one(args, &goal, &current, &probe, u, &l, &excluded, &exec);
        current = current.with_limit(&l, row.sized);
        limits.push(row);
    }
    limits.sort_by_key(|r| r.line);
    let (patch, checked) = patch(args, &cfg, &mut limits)?;
    let sized = SizedCfg {
        config: path.display().to_string(),
        limits,
        patch: patch
            .as_ref()
            .map(|p| String::from_utf8_lossy(p).into_owned()),
        checked,
    };
    render(args, &sized, patch.as_deref())?;
    Ok(u8::from(sized.limits.iter().any(|l| !l.meets)))
}

/// The nginx-only options, refused by name rather than ignored.
fn refuse_nginx_only(args: &SizeArgs) -> Result<()> {
    let given = [
        (!args.nginx_var.is_empty(), "--nginx-var"),
        (!args.target.is_empty(), "--target"),
        (args.only_zones.is_some(), "--only-zones"),
        (args.per.is_some(), "--per"),
        (args.headroom.is_some(), "--headroom"),
    ];
    if let Some((_, flag)) = given.iter().find(|g| g.0) {
        bail!("{flag} is not taken with --haproxy-cfg (yet): size without it");
    }
    Ok(())
}

/// `--exclude-keys`: table keys as HAProxy stores them, one per line.
fn excluded_keys(args: &SizeArgs) -> Result<HashSet<Vec<u8>>> {
    let Some(p) = &args.exclude_keys else {
        return Ok(HashSet::new());
    };
    let text = std::fs::read_to_string(p)
        .with_context(|| format!("cannot read --exclude-keys file '{}'", p.display()))?;
    Ok((text.lines().map(str::trim))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.as_bytes().to_vec())
        .collect())
}

/// The log in memory, read once (stdin too), with what the config's
/// replays need to read it: the log's fields, its files' names, and the
/// key columns the config's fields took, in order.
struct Log {
    rows: Rows,
    fields: Option<Vec<String>>,
    files: Vec<String>,
    cols: Vec<ColSel>,
}

/// Reads the log, its key columns those `cfg` reads.
fn read_log(args: &SizeArgs, cfg: &Arc<HaproxyCfg>) -> Result<Log> {
    let mut spec = args.input.spec(Vec::new(), args.quiet)?;
    let files = match args.input.files.is_empty() {
        true => vec!["<stdin>".into()],
        false => args.input.files.iter().map(|f| file_name(f)).collect(),
    };
    let mut log = Log {
        rows: Rows::default(),
        fields: crate::ingest::peek::log_fields(&spec),
        files,
        cols: Vec::new(),
    };
    // A first executor names the fields the config reads.
    executor(&mut log, cfg.clone())?;
    spec.key_cols = log.cols.clone();
    log.rows = Rows::new(log.cols.len());
    let bar = crate::progress::bytes_read(args.progress.wanted(args.quiet).show(), &spec.files);
    let read = stream::read_ordered(&spec, args.input.reorder_window, None, &bar, &mut log.rows)?;
    if read.summary.rows == 0 {
        bail!(
            "the input has no rows, so there is nothing to size a limit on; check the log's path and that it was written"
        );
    }
    Ok(log)
}

/// An executor of `cfg` on the log's key columns (adding those it reads
/// first).
fn executor(log: &mut Log, cfg: Arc<HaproxyCfg>) -> Result<HapExec> {
    let opts = ConfigOptions {
        log_fields: log.fields.as_deref(),
        verify: None,
        files: log.files.clone(),
    };
    let cols = &mut log.cols;
    HapExec::new(cfg, &opts, &mut |f| {
        let sel = ColSel::Name(f.to_string());
        Ok(match cols.iter().position(|c| *c == sel) {
            Some(i) => i,
            None => {
                cols.push(sel);
                cols.len() - 1
            }
        })
    })
}

/// Every row of the log through `cfg`, recording what each rate limit
/// sees.
fn replay(log: &mut Log, cfg: Arc<HaproxyCfg>) -> Result<(Probe, HapExec)> {
    let mut exec = executor(log, cfg)?;
    exec.probe();
    for ev in &log.rows.events {
        exec.decide(ev, &log.rows.names, false)?;
    }
    let probe = exec.probed().expect("the probe was set");
    Ok((probe, exec))
}

/// What limit `u` refuses at `limit`: (rows refused, keys hurt), counted.
fn refused(seen: &[(u32, u64)], cmp: Cmp, limit: u64) -> (u64, u64) {
    let over = |r: u64| match cmp {
        Cmp::Ge => r >= limit,
        _ => r > limit,
    };
    let mut keys = HashSet::new();
    let mut n = 0;
    for &(k, r) in seen {
        if over(r) {
            n += 1;
            keys.insert(k);
        }
    }
    (n, keys.len() as u64)
}

/// What a rate limit saw, by key: each row (key, ms, rate), the keys'
/// names, the outliers, and the (key, rate) of the rows the targets count.
struct Keyed {
    rows: Vec<(u32, u64, u64)>,
    names: Vec<Vec<u8>>,
    outliers: Option<Found>,
    counted: Vec<(u32, u64)>,
}

fn keyed(args: &SizeArgs, probe: &Probe, u: usize, excluded: &HashSet<Vec<u8>>) -> Keyed {
    let seen = &probe.seen[u];
    // Dense key ids per (table, entry).
    let mut ids: HashMap<(u32, u32), u32> = HashMap::new();
    let mut names: Vec<Vec<u8>> = Vec::new();
    let rows: Vec<(u32, u64, u64)> = (seen.iter())
        .map(|s| {
            let next = ids.len() as u32;
            let id = *ids.entry((s.table, s.entry)).or_insert_with(|| {
                names.push(probe.keys[s.table as usize][s.entry as usize].clone());
                next
            });
            (id, s.ms, s.rate)
        })
        .collect();
    let outliers = match args.keep_outliers {
        true => None,
        false => {
            let seen: Vec<(u32, u32, u64)> = rows
                .iter()
                .map(|&(k, ms, _)| (0, k, ms * 1_000_000))
                .collect();
            Found::per_line(seen, 1).remove(0)
        }
    };
    let left_out = |k: u32| {
        outliers.as_ref().is_some_and(|o| o.has(k)) || excluded.contains(&names[k as usize])
    };
    let counted: Vec<(u32, u64)> = (rows.iter())
        .filter(|r| !left_out(r.0))
        .map(|&(k, _, r)| (k, r))
        .collect();
    Keyed {
        rows,
        names,
        outliers,
        counted,
    }
}

/// Sizes rate limit `u` (`l`) on what the probe saw.
#[allow(clippy::too_many_arguments)]
fn size_one(
    args: &SizeArgs,
    goal: &Goal,
    cfg: &HaproxyCfg,
    probe: &Probe,
    u: usize,
    l: &RateLimit,
    excluded: &HashSet<Vec<u8>>,
    exec: &HapExec,
) -> LimitRow {
    let Keyed {
        rows,
        names,
        outliers,
        counted,
    } = keyed(args, probe, u, excluded);
    let keys = counted.iter().map(|c| c.0).collect::<HashSet<_>>().len() as u64;
    let meets = |limit: u64| {
        let (dropped, keys_hurt) = refused(&counted, l.cmp, limit);
        goal.period_ok(PeriodCount {
            dropped,
            keys_hurt,
            requests: counted.len() as u64,
            keys,
        })
    };
    // The smallest limit that meets the targets: at the highest rate read
    // nothing is refused.
    let top = counted.iter().map(|c| c.1).max().unwrap_or(0);
    let (mut lo, mut hi) = (0u64, top);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if meets(mid) { hi = mid } else { lo = mid + 1 }
    }
    let tightest = lo;
    let today = l.value;
    let ok_today = meets(today);
    let wanted = if ok_today && !args.tighten {
        today
    } else {
        tightest
    };
    let max = args.max_change.unwrap_or(MaxChange::DEFAULT).0;
    let factor = wanted.max(1) as f64 / today.max(1) as f64;
    let factor = factor.max(1.0 / factor);
    let blocked = max.is_some_and(|m| factor > m) && wanted != today;
    let sized = if blocked { today } else { wanted };
    let (dropped_today, _) = refused(&counted, l.cmp, today);
    let (dropped, keys_hurt) = refused(&counted, l.cmp, sized);
    let proxy = &cfg.proxies[l.proxy];
    let mut notes = Vec::new();
    if blocked {
        notes.push(format!(
            "needs {wanted} ({:.1}× today's {today}); kept as written: --max-change {:.1} allows it",
            factor,
            (factor * 10.0).ceil() / 10.0
        ));
    } else if ok_today && !args.tighten && tightest < today {
        notes.push(format!(
            "meets the targets as written; the tightest that would is {tightest} (--tighten patches it)"
        ));
    }
    if dropped_today > 0 && tightest > today {
        notes.push(who_is_refused(&rows, &names, l.cmp, today, args.top));
    }
    if let Some(o) = &outliers {
        for (k, busy, _) in o.keys.iter().take(args.top) {
            let (mine, _) = refused(
                &rows
                    .iter()
                    .filter(|r| r.0 == *k)
                    .map(|r| (r.0, r.2))
                    .collect::<Vec<_>>(),
                l.cmp,
                sized,
            );
            notes.push(format!(
                "outlier left out of the targets: {} ({} rows here; refused {mine} at {sized})",
                crate::quote::shown(&names[*k as usize]),
                busy.requests
            ));
        }
    }
    LimitRow {
        proxy: proxy.title(),
        line: l.line,
        rule: proxy.rules[l.rule].text.clone(),
        today,
        sized,
        needed: tightest,
        rows: counted.len() as u64,
        entered: exec.proxy_counts(l.proxy).0,
        refused_today: dropped_today,
        refused: dropped,
        keys_hurt,
        meets: meets(sized),
        notes,
    }
}

/// Whom the limit as written refuses, busiest first: a raise that serves
/// one or two keys (a bot, a login script) says so.
fn who_is_refused(
    rows: &[(u32, u64, u64)],
    names: &[Vec<u8>],
    cmp: Cmp,
    limit: u64,
    top: usize,
) -> String {
    let mut by_key: HashMap<u32, (u64, u64)> = HashMap::new();
    for &(k, _, r) in rows {
        let e = by_key.entry(k).or_default();
        e.0 += 1;
        e.1 += u64::from(match cmp {
            Cmp::Ge => r >= limit,
            _ => r > limit,
        });
    }
    let mut hurt: Vec<(u32, (u64, u64))> = by_key.into_iter().filter(|(_, v)| v.1 > 0).collect();
    hurt.sort_by(|a, b| b.1.1.cmp(&a.1.1).then(a.0.cmp(&b.0)));
    let total: u64 = hurt.iter().map(|h| h.1.1).sum();
    let named: Vec<String> = (hurt.iter().take(top.max(1)))
        .map(|(k, (rows, refused))| {
            format!(
                "{} {refused} of its {rows}",
                crate::quote::shown(&names[*k as usize])
            )
        })
        .collect();
    let n = hurt.len();
    format!(
        "today's limit refuses {total} rows of {n} {}: {}{}; raising it serves {}",
        if n == 1 { "key" } else { "keys" },
        named.join(", "),
        if n > named.len() { ", …" } else { "" },
        if n == 1 {
            "that one key: check it is a client to serve"
        } else {
            "them"
        }
    )
}

/// The patch of every changed limit (`None`: nothing changes), and what
/// `haproxy -c` said of the patched config.
fn patch(
    args: &SizeArgs,
    cfg: &HaproxyCfg,
    limits: &mut [LimitRow],
) -> Result<(Option<Vec<u8>>, String)> {
    let old = std::fs::read(&cfg.path)
        .with_context(|| format!("cannot read '{}' to patch it", cfg.path.display()))?;
    let mut lines: Vec<Vec<u8>> = old
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    let mut changed = false;
    for l in limits.iter_mut().filter(|l| l.sized != l.today) {
        let Some(line) = lines.get_mut(l.line - 1) else {
            bail!("{}:{}: the line is gone", cfg.path.display(), l.line);
        };
        let Some(new) = retarget(line, l.today, l.sized) else {
            l.notes.push(format!(
                "the rate is compared in a named ACL, not on line {}: not in the patch; set {} there by hand",
                l.line, l.sized
            ));
            continue;
        };
        *line = new;
        changed = true;
    }
    if !changed {
        return Ok((None, String::new()));
    }
    let new: Vec<u8> = lines.concat();
    let name = Path::new(cfg.path.file_name().unwrap_or_default());
    let diff = super::patch::unified(name, &old, &new);
    let checked = haproxy_check(&cfg.path, &new, args.quiet);
    Ok((Some(diff), checked))
}

/// `line` with the number after `http_req_rate(…) gt|ge` changed from
/// `from` to `to`, every other byte kept; `None` unless exactly one such
/// number is `from`.
fn retarget(line: &[u8], from: u64, to: u64) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(line).ok()?;
    let mut hits = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].find("http_req_rate") {
        let start = at + i;
        let rest = &text[start..];
        let close = rest.find(['}', '\n']).unwrap_or(rest.len());
        let words: Vec<(usize, &str)> = rest[..close]
            .split_whitespace()
            .map(|w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
            .collect();
        if let [_, (_, "gt" | "ge"), (pos, n), ..] = words.as_slice()
            && n.parse::<u64>().ok() == Some(from)
        {
            hits.push((*pos, n.len()));
        }
        at = start + "http_req_rate".len();
    }
    let [(pos, len)] = hits.as_slice() else {
        return None;
    };
    let mut out = line[..*pos].to_vec();
    out.extend_from_slice(to.to_string().as_bytes());
    out.extend_from_slice(&line[pos + len..]);
    Some(out)
}

/// Checks the patched config with `haproxy -c`: what it said.
fn haproxy_check(path: &Path, new: &[u8], quiet: bool) -> String {
    let Some(bin) = [
        "/usr/sbin/haproxy",
        "/usr/local/sbin/haproxy",
        "/usr/bin/haproxy",
    ]
    .iter()
    .find(|p| Path::new(p).is_file()) else {
        return "not checked: no haproxy here to run 'haproxy -c' on it".into();
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".drip-check-{}.cfg", std::process::id()));
    let tmp = match std::fs::write(&tmp, new) {
        Ok(()) => tmp,
        Err(_) => {
            let t = std::env::temp_dir().join(format!("drip-check-{}.cfg", std::process::id()));
            if std::fs::write(&t, new).is_err() {
                return "not checked: cannot write a copy to run 'haproxy -c' on".into();
            }
            t
        }
    };
    let out = std::process::Command::new(bin)
        .arg("-c")
        .arg("-f")
        .arg(&tmp)
        .output();
    let _ = std::fs::remove_file(&tmp);
    match out {
        Ok(o) if o.status.success() => "haproxy -c: the patched config is valid".into(),
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let first = err
                .lines()
                .find(|l| l.contains("ALERT"))
                .unwrap_or("refused");
            if !quiet {
                crate::say!(
                    "drip: warning: haproxy -c refuses the patched config: {}",
                    crate::quote::shown_str(first)
                );
            }
            format!("haproxy -c refuses the patched config: {}", first.trim())
        }
        Err(e) => format!("not checked: cannot run {bin}: {e}"),
    }
}

fn render(args: &SizeArgs, s: &SizedCfg, patch: Option<&[u8]>) -> Result<()> {
    if let (Some(p), Some(bytes)) = (&args.patch, patch) {
        if p.as_os_str() == "-" {
            let stdout = std::io::stdout();
            let mut w = stdout.lock();
            w.write_all(bytes)
                .and_then(|_| w.flush())
                .context("cannot write the patch")?;
            return Ok(());
        }
        std::fs::write(p, bytes)
            .with_context(|| format!("cannot write --patch file '{}'", p.display()))?;
    }
    super::write_page(args, &crate::report::size_haproxy::page(s))
}

#[cfg(test)]
mod tests {
    use super::retarget;

    #[test]
    fn only_the_number_of_the_rate_comparison_changes() {
        let line =
            b"  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 40 } !office\n";
        let got = retarget(line, 40, 79).unwrap();
        assert_eq!(
            got,
            b"  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 79 } !office\n"
        );
        // The sc0_ form, and ge.
        let got = retarget(
            b"http-request tarpit if { sc0_http_req_rate ge 5 }\n",
            5,
            12,
        )
        .unwrap();
        assert_eq!(got, b"http-request tarpit if { sc0_http_req_rate ge 12 }\n");
        // A named ACL (no comparison on the line), another value, or two
        // comparisons of the same value: not patched.
        assert!(retarget(b"http-request deny if too_fast\n", 40, 50).is_none());
        assert!(
            retarget(
                b"http-request deny if { sc_http_req_rate(0) gt 41 }\n",
                40,
                50
            )
            .is_none()
        );
        let two =
            b"http-request deny if { sc_http_req_rate(0) gt 4 } || { sc_http_req_rate(1) gt 4 }\n";
        assert!(retarget(two, 4, 8).is_none());
    }
}
