//! The reading step of `size`: which key the swept policy counts by,
//! `--current` checked against it, the log read once into columns, and
//! the keys `--exclude-keys` leaves out of the targets.

use super::family::Family;
use super::goal::Goal;
use super::outliers::{Busy, Found};
use crate::cli::SizeArgs;
use crate::engine::candidates::log::Log;
use crate::ingest::input::ColSel;
use crate::ingest::log::key::{JOIN, KeyShape, parse_prefix};
use crate::ingest::stream::{self, Read};
use crate::policy::{KeyChoice, parse_spec};
use crate::progress;
use crate::report::size::Targets;
use anyhow::{Context, Result, anyhow, bail};
use std::collections::HashMap;
use std::path::Path;

/// The log as read, and what the targets count of it.
pub struct Input {
    pub log: Log,
    pub read: Read,
    /// By key id: false for keys left out of the targets (empty: all count).
    pub counted: Vec<bool>,
    pub targets: Targets,
    /// Notes for the report, found while reading.
    pub notes: Vec<String>,
    pub show_progress: bool,
    /// With `--headroom`: the arrival times as logged (`log.at` holds them
    /// compressed).
    pub logged_at: Option<Vec<u64>>,
    /// The outliers (left out of the targets unless kept); `None`: no
    /// population compared.
    pub outliers: Option<Found>,
}

impl Input {
    /// True when key `id` is an outlier.
    pub fn is_outlier(&self, id: usize) -> bool {
        self.outliers.as_ref().is_some_and(|f| f.has(id as u32))
    }

    /// True when the targets count key `id`.
    pub fn is_counted(&self, id: usize) -> bool {
        self.counted.is_empty() || self.counted[id]
    }
}

/// The key column the swept policy counts by (`None`: one bucket), read
/// as audit reads it.
pub fn key_column(args: &SizeArgs, family: &Family) -> Result<Option<String>> {
    let key_col = match &family.key {
        KeyChoice::Default => args.input.key_column.clone(),
        KeyChoice::Column(c) => Some(c.clone()),
        KeyChoice::Global => None,
    };
    if args.exclude_keys.is_some() && key_col.is_none() {
        bail!(
            "--exclude-keys needs a keyed policy: give --key-column COLUMN (or key= in the spec)"
        );
    }
    Ok(key_col)
}

/// `--current`'s spec as written, once every member counts by the swept
/// policy's key.
pub fn current_spec(args: &SizeArgs, key_col: Option<&str>) -> Result<Option<String>> {
    let Some(c) = args.current.as_deref() else {
        return Ok(None);
    };
    let spec = parse_spec(c)?;
    for m in &spec.members {
        let same = match &m.key {
            KeyChoice::Column(a) => key_col == Some(a.as_str()),
            KeyChoice::Global => key_col.is_none(),
            KeyChoice::Default => args.input.key_column.as_deref() == key_col,
        };
        if !same {
            bail!("--current '{c}' counts by another key than -p; give it the same key= (or none)");
        }
    }
    Ok(Some(spec.text))
}

/// Reads the log, and the keys `--exclude-keys` leaves out; sets the
/// requests and keys `goal` counts.
pub fn read(args: &SizeArgs, key_col: Option<&str>, goal: &mut Goal) -> Result<Input> {
    let keyed = key_col.is_some();
    let key_cols: Vec<ColSel> = key_col.map(ColSel::parse).into_iter().collect();
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
    if read.summary.rows == 0 {
        // Every size meets every target on nothing: no advice to give.
        bail!(
            "the input has no rows, so there is nothing to size a limit on; check the log's path and that it was written"
        );
    }
    let mut input = Input {
        log,
        read,
        counted: Vec::new(),
        targets: targets(args, goal),
        notes: Vec::new(),
        show_progress,
        logged_at: None,
        outliers: None,
    };
    if let Some(text) = &args.headroom {
        let (num, den) = headroom(text)?;
        input.targets.headroom = Some(text.trim().to_string());
        let compressed = compress(&input.log.at, num, den);
        input.logged_at = Some(std::mem::replace(&mut input.log.at, compressed));
    }
    if let Some(path) = &args.exclude_keys {
        exclude_keys(args, path, key_col, &mut input)?;
    }
    // Outliers are clients far outside the others: keys that are routes
    // (a URL, a Host) are the site's own, the busiest its most used.
    if key_col.is_some_and(|c| !super::zone_key::routes_only(c)) {
        input.targets.keep_outliers = args.keep_outliers;
        find_outliers(&mut input, args.keep_outliers);
    }
    goal.keys = (0..input.log.keys())
        .filter(|&k| input.is_counted(k))
        .count() as u64;
    // Every request counts, as audit counts them (rows with an empty key
    // are admitted unlimited), except those of excluded keys and outliers.
    let t = &input.targets;
    goal.requests = input.log.len() as u64 - t.excluded_requests - t.outlier_requests;
    Ok(input)
}

/// Finds the outliers among the counted keys (on the times as logged)
/// and, unless `keep`, leaves them out of the targets.
fn find_outliers(input: &mut Input, keep: bool) {
    let log = &input.log;
    let Some(by_key) = log.by_key() else {
        return;
    };
    let at = input.logged_at.as_deref().unwrap_or(&log.at);
    let mut times = Vec::new();
    let keys: Vec<(u32, Busy)> = (0..log.keys())
        .filter(|&k| input.is_counted(k) && log.requests_by_key[k] > 0)
        .map(|k| {
            times.clear();
            times.extend(
                by_key.rows()[by_key.of_key(k)]
                    .iter()
                    .map(|&r| at[r as usize]),
            );
            (k as u32, Busy::of(&times))
        })
        .collect();
    input.outliers = Found::among(&keys);
    let Some(found) = input
        .outliers
        .as_ref()
        .filter(|f| !keep && !f.keys.is_empty())
    else {
        return;
    };
    if input.counted.is_empty() {
        input.counted = vec![true; log.keys()];
    }
    for &(k, b, _) in &found.keys {
        input.counted[k as usize] = false;
        input.targets.outlier_keys += 1;
        input.targets.outlier_requests += b.requests;
    }
}

/// The targets as the report states them (`headroom` is set where the
/// times are compressed).
pub fn targets(args: &SizeArgs, goal: &Goal) -> Targets {
    Targets {
        max_drop_rate_pct: args
            .max_drop_rate
            .as_deref()
            .map(|t| t.trim().trim_end_matches('%').to_string()),
        max_drops: args.max_drops,
        max_keys_hurt: args.max_keys_hurt.as_deref().map(|t| t.trim().to_string()),
        max_wait_ns: goal.max_wait.map(|w| w.0),
        max_wait_default: goal.wait_default,
        per_ns: args.per.map(|p| p.0),
        ..Targets::default()
    }
}

/// `--headroom F` as an exact fraction `num / den` above 1.
pub fn headroom(text: &str) -> Result<(u64, u64)> {
    let bad = || {
        anyhow!("invalid --headroom '{text}': give how many times as fast, above 1, e.g. 1.5 or 2")
    };
    let t = text.trim();
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole
            .bytes()
            .chain(frac.bytes())
            .all(|b| b.is_ascii_digit())
        || frac.len() > 9
    {
        return Err(bad());
    }
    let den = 10u64.pow(frac.len() as u32);
    let num: u64 = format!("{whole}{frac}").parse().map_err(|_| bad())?;
    if num <= den || whole.len() > 6 {
        return Err(bad());
    }
    Ok((num, den))
}

/// Times compressed by `num / den` around the first: exact to the
/// nanosecond, rounded down, order kept.
pub(super) fn compress(at: &[u64], num: u64, den: u64) -> Vec<u64> {
    let Some(&first) = at.first() else {
        return Vec::new();
    };
    at.iter()
        .map(|&t| first + (u128::from(t - first) * u128::from(den) / u128::from(num)) as u64)
        .collect()
}

/// Leaves the keys listed in `path` out of the targets, and notes the
/// lines naming no key of the log.
fn exclude_keys(
    args: &SizeArgs,
    path: &Path,
    key_col: Option<&str>,
    input: &mut Input,
) -> Result<()> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read --exclude-keys file '{}'", path.display()))?;
    // A line names a key as the report shows it (`10.1.2.0/24`,
    // `/api|alice`) or as logged (`10.1.2.3:4711`): the logged form is
    // shaped as the log's keys are (port, prefix, joined parts).
    let shape = KeyShape {
        strip_port: args.input.strip_port,
        prefix: args
            .input
            .key_prefix
            .as_deref()
            .map(parse_prefix)
            .transpose()
            .map_err(|e| anyhow!(e))?,
    };
    let joined = key_col.is_some_and(|c| c.contains(','));
    let (mut lines, forms) = key_forms(&text, &shape, joined);
    let log = &input.log;
    input.counted = vec![true; log.keys()];
    for (id, c) in input.counted.iter_mut().enumerate() {
        if let Some(at) = forms.get(log.names.get(id as u32)) {
            *c = false;
            for &n in at {
                lines[n] = true;
            }
            input.targets.excluded_keys += 1;
            input.targets.excluded_requests += log.requests_by_key[id];
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
        input.notes.push(note);
    }
    Ok(())
}

/// Each key line of `text` (one flag per line: found in the log yet), and
/// every form a line may take in the log, with the lines that give it.
fn key_forms(
    text: &str,
    shape: &KeyShape,
    joined: bool,
) -> (Vec<bool>, HashMap<Vec<u8>, Vec<usize>>) {
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
            shape.append_joined(l.split(JOIN as char).map(str::as_bytes), &mut shaped);
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
    (lines, forms)
}
