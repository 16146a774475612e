//! What `drip size --nginx-conf` found, as data, and its renderers: a row
//! per `limit_req` line (its settings as written and sized, and what it
//! does to the rows it sees before and after), a row per zone (rate and
//! size), the notes and the patch, written as one [`Page`] for every
//! format.

use super::page::{Block, Page, Shown, Table, Verdict};
use super::size::Targets;
use super::{Column, Human, pct, wait_cell};
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize)]
pub struct SizeConfReport {
    pub config: String,
    pub files: Vec<String>,
    pub rows: u64,
    pub targets: Targets,
    pub limits: Vec<LimitRow>,
    pub zones: Vec<ZoneRow>,
    pub notes: Vec<String>,
    /// The unified diff (empty: nothing to change), as text: bytes of the
    /// config that are not UTF-8 shown as U+FFFD.
    pub patch: String,
    /// The diff as written to `--patch`: the config's bytes as they are.
    #[serde(skip)]
    pub patch_bytes: Vec<u8>,
    /// `--patch FILE`, where the diff was written.
    pub patch_file: Option<String>,
    /// The commands that apply it.
    pub apply: String,
}

/// What one line does to the rows it sees.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outcome {
    pub seen: u64,
    pub dropped: u64,
    pub dropped_pct: f64,
    pub delayed: u64,
    pub delayed_pct: f64,
    pub wait_p99_ns: u64,
    pub wait_max_ns: u64,
    pub keys_hurt: u64,
    /// Rows of keys left out of the targets (`--exclude-keys`), and those
    /// it dropped: in none of the figures above.
    pub excluded_rows: u64,
    pub excluded_dropped: u64,
    /// The same for the line's outliers (when not kept).
    pub outlier_rows: u64,
    pub outlier_dropped: u64,
}

/// One `limit_req` line, as written and as sized.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LimitRow {
    pub zone: String,
    /// The locations it applies in.
    pub locations: String,
    /// The zone's key expression.
    pub key: String,
    /// file:line of the line.
    pub at: String,
    /// Rows reach it: sized; else left as written.
    pub tested: bool,
    pub rate_today: String,
    pub burst_today: u64,
    /// `nodelay`, `delay=N`, or empty (every excess request delayed).
    pub delay: String,
    pub rate: String,
    pub burst: u64,
    pub before: Outcome,
    pub after: Outcome,
    /// Why it meets the targets at no rate tried.
    pub missed: Option<String>,
    pub change: Change,
    /// The sized config with the same requests arriving faster (1.5×, 2×).
    pub headroom: Vec<AtSpeed>,
    /// The keys far outside the population of the rows it sees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outliers: Option<super::size_outliers::Outliers>,
    /// The `--target` values that give it targets of its own (absent: the
    /// global ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<String>,
}

/// What a sized line does to the same requests arriving faster.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AtSpeed {
    /// How many times as fast: `1.5`, `2`.
    pub factor: String,
    pub dropped: u64,
    pub dropped_pct: f64,
    pub wait_max_ns: u64,
    pub keys_hurt: u64,
    /// It still meets the targets.
    pub meets: bool,
}

fn at_speed(l: &LimitRow, i: usize) -> String {
    match l.headroom.get(i) {
        Some(a) if l.tested => format!(
            "{} ({}%), wait ≤ {}{}",
            a.dropped,
            pct(a.dropped_pct),
            super::size::readable(a.wait_max_ns),
            if a.meets { "" } else { " misses" }
        ),
        _ => "-".into(),
    }
}

/// The sized lines at more traffic.
pub const HEADROOM: &[Column<LimitRow>] = &[
    Column::text("zone", |l, _| l.zone.clone()),
    Column::text("location", |l, _| l.locations.clone()),
    Column::num("1.5× traffic: dropped", |l, _| at_speed(l, 0)),
    Column::num("2× traffic: dropped", |l, _| at_speed(l, 1)),
];

/// What sizing does to a line, against the line as written.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Change {
    /// Sized / as written: the zone's rate, and the line's burst (a burst
    /// of 0 counts as 1).
    pub rate_factor: f64,
    pub burst_factor: f64,
    /// `rate 60× tighter, burst 3.6× tighter`; empty: unchanged.
    pub text: String,
    /// Why the line is left as written though rows reach it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// Keys it refuses sized but not as written, and the other way.
    pub newly_hurt: u64,
    pub relieved: u64,
    /// The first of each, most refused first.
    pub newly_hurt_top: Vec<String>,
    pub relieved_top: Vec<String>,
}

/// One zone, as written and as sized.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ZoneRow {
    pub zone: String,
    pub rate_today: String,
    pub rate: String,
    /// Bytes.
    pub size_today: u64,
    pub size: u64,
    /// The most keys active within 60 s, in the sized replay.
    pub peak_keys: u64,
    /// The longest key, bytes (16 for `$binary_remote_addr`).
    pub longest_key: u64,
    /// Some line of it sees rows.
    pub used: bool,
}

/// `a → b`, or `a` when the same.
fn change(a: String, b: String) -> String {
    if a == b { a } else { format!("{a} → {b}") }
}

fn dropped(o: &Outcome) -> String {
    format!("{} ({}%)", o.dropped, pct(o.dropped_pct))
}

fn delayed(o: &Outcome) -> String {
    format!("{} ({}%)", o.delayed, pct(o.delayed_pct))
}

/// A line's settings as nginx reads them (no `burst=0`: its default).
fn settings(rate: &str, burst: u64, delay: &str) -> String {
    let burst = if burst > 0 {
        format!(" burst={burst}")
    } else {
        String::new()
    };
    format!("{rate}{burst} {delay}").trim_end().to_string()
}

/// The settings of each line, as written and sized.
const LIMITS: &[Column<LimitRow>] = &[
    Column::text("zone", |l, _| l.zone.clone()),
    Column::text("location", |l, _| l.locations.clone()),
    Column::text("key", |l, _| l.key.clone()),
    Column::text("as written", |l, _| {
        settings(&l.rate_today, l.burst_today, &l.delay)
    }),
    Column::text("sized", |l, _| {
        match (l.tested, &l.missed, &l.change.kept) {
            (false, _, _) => "untested: not sized".into(),
            (true, Some(_), None) => "no rate meets the targets".into(),
            (true, _, Some(_)) => "kept as written".into(),
            (true, None, None) => settings(&l.rate, l.burst, &l.delay),
        }
    }),
    Column::text("change", |l, _| l.change.text.clone()),
];

/// `9: a, b, c` (the first few named), or `0`.
fn keys_cell(n: u64, top: &[String]) -> String {
    match top {
        [] => n.to_string(),
        _ if n > top.len() as u64 => format!("{n}: {}, …", top.join(", ")),
        _ => format!("{n}: {}", top.join(", ")),
    }
}

/// What each line does to the rows it sees, `before → after`.
const EFFECT: &[Column<LimitRow>] = &[
    Column::text("zone", |l, _| l.zone.clone()),
    Column::text("location", |l, _| l.locations.clone()),
    Column::num("seen", |l, _| l.after.seen.to_string()),
    Column::num("dropped", |l, _| {
        change(dropped(&l.before), dropped(&l.after))
    }),
    Column::num("delayed", |l, _| {
        change(delayed(&l.before), delayed(&l.after))
    }),
    Column::num("wait p99", |l, h| {
        change(
            wait_cell(Some(l.before.wait_p99_ns), h),
            wait_cell(Some(l.after.wait_p99_ns), h),
        )
    }),
    Column::num("wait max", |l, h| {
        change(
            wait_cell(Some(l.before.wait_max_ns), h),
            wait_cell(Some(l.after.wait_max_ns), h),
        )
    }),
    Column::text("clients newly hurt", |l, _| {
        keys_cell(l.change.newly_hurt, &l.change.newly_hurt_top)
    }),
    Column::text("relieved", |l, _| {
        keys_cell(l.change.relieved, &l.change.relieved_top)
    }),
];

/// The limits table for scripts: one column per figure.
const LIMITS_DATA: &[Column<LimitRow>] = &[
    Column::text("zone", |l, _| l.zone.clone()),
    Column::text("locations", |l, _| l.locations.clone()),
    Column::text("key", |l, _| l.key.clone()),
    Column::text("at", |l, _| l.at.clone()),
    Column::text("tested", |l, _| l.tested.to_string()),
    Column::text("rate_today", |l, _| l.rate_today.clone()),
    Column::num("burst_today", |l, _| l.burst_today.to_string()),
    Column::text("delay", |l, _| l.delay.clone()),
    Column::text("rate", |l, _| l.rate.clone()),
    Column::num("burst", |l, _| l.burst.to_string()),
    Column::num("seen", |l, _| l.after.seen.to_string()),
    Column::num("dropped_before", |l, _| l.before.dropped.to_string()),
    Column::num("dropped_after", |l, _| l.after.dropped.to_string()),
    Column::num("delayed_before", |l, _| l.before.delayed.to_string()),
    Column::num("delayed_after", |l, _| l.after.delayed.to_string()),
    Column::num("wait_p99_before", |l, h| {
        wait_cell(Some(l.before.wait_p99_ns), h)
    }),
    Column::num("wait_p99_after", |l, h| {
        wait_cell(Some(l.after.wait_p99_ns), h)
    }),
    Column::num("wait_max_before", |l, h| {
        wait_cell(Some(l.before.wait_max_ns), h)
    }),
    Column::num("wait_max_after", |l, h| {
        wait_cell(Some(l.after.wait_max_ns), h)
    }),
    Column::num("rate_factor", |l, _| l.change.rate_factor.to_string()),
    Column::num("burst_factor", |l, _| l.change.burst_factor.to_string()),
    Column::num("newly_hurt", |l, _| l.change.newly_hurt.to_string()),
    Column::num("relieved", |l, _| l.change.relieved.to_string()),
    Column::text("kept", |l, _| l.change.kept.clone().unwrap_or_default()),
];

const ZONES: &[Column<ZoneRow>] = &[
    Column::text("zone", |z, _| z.zone.clone()),
    Column::text("rate", |z, _| change(z.rate_today.clone(), z.rate.clone())),
    Column::text("size", |z, _| change(size(z.size_today), size(z.size))),
    Column::num("peak keys (60 s)", |z, _| z.peak_keys.to_string()),
];

/// Bytes as nginx's `zone=NAME:SIZE` writes them.
fn size(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{}m", bytes >> 20)
    } else {
        format!("{}k", bytes.div_ceil(1 << 10))
    }
}

/// Whether every line meets its targets, and how many the patch changes.
fn verdict(r: &SizeConfReport) -> Verdict {
    let missed: Vec<String> = (r.limits.iter())
        .filter_map(|l| {
            l.missed
                .as_ref()
                .map(|m| format!("{} ({}): {m}", l.at, l.zone))
        })
        .collect();
    let changed = (r.limits.iter())
        .filter(|l| !l.change.text.is_empty())
        .count();
    let line = match (missed.len(), changed) {
        (0, 0) => "every limit_req line meets its targets as written".to_string(),
        (0, c) => format!("every limit_req line meets its targets; the patch changes {c}"),
        (1, _) => "1 limit_req line misses its targets".to_string(),
        (m, _) => format!("{m} limit_req lines miss their targets"),
    };
    Verdict {
        pass: missed.is_empty(),
        line,
        details: missed,
    }
}

pub fn page(r: &SizeConfReport) -> Page<'_> {
    let mut page = Page::new(format!("drip size --nginx-conf {}", r.config), r);
    page.verdict = Some(verdict(r));
    page.add(Shown::ALL, Block::Title(page.title.clone()));
    page.add(
        Shown::ALL,
        Block::Paragraph(format!(
            "{} rows from {}; each limit_req line sized to {} on the rows it sees{}",
            r.rows,
            r.files.join(", "),
            r.targets.describe(),
            if r.limits.iter().any(|l| l.targets.is_some()) {
                " (the lines --target names: their own, in the notes)"
            } else {
                ""
            }
        )),
    );
    page.add(Shown::ALL, Block::Heading("Limits".into()));
    page.add(
        Shown::ALL,
        Block::Table(Table::from_columns(LIMITS, &r.limits, Human::Yes)),
    );
    page.add(Shown::ALL, Block::Heading("Before → after".into()));
    page.add(
        Shown::ALL,
        Block::Table(Table::from_columns(EFFECT, &r.limits, Human::Yes)),
    );
    page.data
        .push(Table::from_columns(LIMITS_DATA, &r.limits, Human::No));
    if r.limits.iter().any(|l| !l.headroom.is_empty()) {
        let h = "At more traffic (the sized config; the same requests arriving faster)";
        page.add(Shown::ALL, Block::Heading(h.into()));
        page.add(
            Shown::ALL,
            Block::Table(Table::from_columns(HEADROOM, &r.limits, Human::Yes)),
        );
    }
    page.add(Shown::ALL, Block::Heading("Zones".into()));
    page.add(
        Shown::ALL,
        Block::Table(Table::from_columns(ZONES, &r.zones, Human::Yes)),
    );
    let mut notes: Vec<String> = r
        .limits
        .iter()
        .filter_map(|l| {
            let what = match (&l.missed, l.tested, &l.change.kept) {
                (_, false, _) => untested(l, &r.zones),
                (Some(m), true, _) => m.clone(),
                (None, true, Some(k)) => k.clone(),
                (None, true, None) => return None,
            };
            Some(format!(
                "{} (zone {}, {}): {what}",
                l.at, l.zone, l.locations
            ))
        })
        .collect();
    notes.extend(r.limits.iter().filter_map(|l| {
        let own = l.targets.as_ref()?;
        Some(format!(
            "{} (zone {}, {}): targets of its own, from {own}",
            l.at, l.zone, l.locations
        ))
    }));
    notes.extend(r.limits.iter().filter(|l| l.before.excluded_rows > 0).map(|l| {
        format!(
            "{} (zone {}, {}): the excluded keys' {} rows, in no figure above: {} dropped as written, {} sized",
            l.at, l.zone, l.locations, l.before.excluded_rows, l.before.excluded_dropped, l.after.excluded_dropped
        )
    }));
    notes.extend(r.limits.iter().filter(|l| l.before.outlier_rows > 0).map(|l| {
        format!(
            "{} (zone {}, {}): the outliers' {} rows, in no figure above: {} dropped as written, {} sized",
            l.at, l.zone, l.locations, l.before.outlier_rows, l.before.outlier_dropped, l.after.outlier_dropped
        )
    }));
    notes.extend(r.notes.iter().cloned());
    if !notes.is_empty() {
        page.add(Shown::ALL, Block::List(notes));
    }
    for l in &r.limits {
        if let Some(o) = &l.outliers {
            let title = format!("Outliers of {} (zone {}, {})", l.at, l.zone, l.locations);
            o.add(&mut page, title);
        }
    }
    add_patch(&mut page, r);
    page
}

/// The note on a line no row reaches: its own settings stay as written,
/// but a rate is the zone's, so a zone sized on its other lines changes
/// this line's limit too, untested, and the note says so.
fn untested(l: &LimitRow, zones: &[ZoneRow]) -> String {
    let moved = zones
        .iter()
        .find(|z| z.zone == l.zone && z.rate != z.rate_today);
    match moved {
        Some(z) => format!(
            "no row of the log reaches it: untested and not sized; its burst is left as written, but its zone's rate changes from {} to {} with the zone's other lines, so this location's limit changes untested",
            z.rate_today, z.rate
        ),
        None => "no row of the log reaches it: untested, not sized, left as written".to_string(),
    }
}

/// The patch, or where it was written, and how to apply it.
fn add_patch(page: &mut Page, r: &SizeConfReport) {
    page.add(Shown::ALL, Block::Heading("Patch".into()));
    if r.patch.is_empty() {
        page.add(
            Shown::ALL,
            Block::Paragraph("nothing to change: the config as written is the one sized".into()),
        );
        return;
    }
    let apply = match &r.patch_file {
        Some(f) => format!(
            "written to {f}; apply: {}",
            r.apply.replace("PATCH", &crate::quote::shell_word(f))
        ),
        None => format!("apply (saved as PATCH, or with --patch FILE): {}", r.apply),
    };
    page.add(Shown::ALL, Block::Paragraph(apply));
    if r.patch_file.is_none() {
        page.add(
            Shown::ALL,
            Block::Pre(r.patch.lines().map(str::to_string).collect()),
        );
    }
}
