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

pub mod conf;
pub mod conf_fit;
pub mod conf_guard;
pub mod conf_rows;
pub mod conf_targets;
pub mod family;
pub mod goal;
pub mod haproxy;
pub mod outliers;
pub mod patch;
pub mod pick;
pub mod read;
pub mod recommend;
pub mod replicas;
mod resolution;
pub mod shape;
pub mod sweep;
pub mod zone_key;

use crate::cli::{Format, SizeArgs};
use crate::engine::candidates;
use crate::ingest::log::key::parse_prefix;
use crate::report::size::{
    Alternative, Current, FrontierRow, NeedRow, NginxConf, RuleOfThumb, Said, SizeReport,
};
use crate::report::size_outliers::Outliers;
use crate::report::{self, InputInfo};
use anyhow::{Context, Result};
use family::{Family, Point};
use goal::Goal;
use read::Input;
use shape::Shape;
use std::io::Write;
use sweep::{KeyNeeds, Sweep};

/// Runs `size`: read → sweep → recommend → report → render. Returns the
/// exit status (1 when no limit meets the targets).
pub fn run(args: SizeArgs) -> Result<u8> {
    if args.replicas.is_some() {
        return replicas::run(&args);
    }
    if args.nginx_conf.is_some() {
        return conf::run(&args);
    }
    if args.haproxy_cfg.is_some() {
        return haproxy::run(&args);
    }
    let asked = Asked::of(&args)?;
    let mut goal = asked.goal.clone();
    let mut input = read::read(&args, asked.key_col.as_deref(), &mut goal)?;
    let swept = sweep(&args, &asked, &input, &goal)?;
    let mut found = recommend(&args, &asked, &input, &goal, &swept)?;
    found
        .notes
        .extend(at_logged_speed(&mut input, &asked, &found)?);
    let coarse = resolution::check(&args, &asked, &mut input, &goal, found.recommended.as_ref())?;
    found.notes.extend(coarse.as_ref().map(|c| c.note.clone()));
    let mut report = report(&args, &asked, input, swept, found);
    report.time_resolution = coarse;
    render(&args, &report)
}

/// What the command line asks, checked before the log is read.
struct Asked {
    family: Family,
    /// The points `--rate`, `--window` or the spec give.
    points: Option<Vec<Point>>,
    goal: Goal,
    /// The key column the swept policy counts by (`None`: one bucket).
    key_col: Option<String>,
    /// `--current`'s spec.
    current: Option<String>,
}

impl Asked {
    fn of(args: &SizeArgs) -> Result<Asked> {
        if let Some(path) = &args.plot {
            crate::clash::check_output("--plot", path, "svg")?;
        }
        check_outputs(args)?;
        let family = Family::parse(args.policy.as_deref().unwrap_or_default())?;
        let points = family.points(args.rate.as_deref(), args.window.as_deref())?;
        let goal = Goal::from_args(args, family.shapes())?;
        let wait_given = matches!(args.max_wait, Some(crate::cli::WaitCap::At(_)));
        if wait_given && !family.shapes() && !args.quiet {
            crate::say!(
                "drip: note: --max-wait bounds the waits of shaping policies (shaper, nginx without nodelay); {} never delays a request",
                family.name
            );
        }
        if let Some(h) = &args.headroom {
            read::headroom(h)?;
        }
        let key_col = read::key_column(args, &family)?;
        let current = read::current_spec(args, key_col.as_deref())?;
        Ok(Asked {
            family,
            points,
            goal,
            key_col,
            current,
        })
    }
}

/// The sweep's findings.
struct Swept {
    points: Vec<Point>,
    needs: KeyNeeds,
    shape: Shape,
    frontier: Vec<FrontierRow>,
    costs_vary: bool,
}

/// The axis points, each key's zero-drop size at each, and the frontier.
fn sweep(args: &SizeArgs, asked: &Asked, input: &Input, goal: &Goal) -> Result<Swept> {
    let (family, log) = (&asked.family, &input.log);
    let keyed = asked.key_col.is_some();
    // The log's shape: average rate, busiest second.
    let shape = Shape::of(log);
    let points = sweep::axis_points(family, asked.points.clone(), &shape, keyed)?;
    let threads = sweep::threads(&points);
    let ok = |c| goal.period_ok(c);
    let periods = periods(args, input, &ok)?;
    let needs = KeyNeeds::replay(family, &points, log, threads)?;
    let sweep = Sweep {
        family,
        log,
        goal,
        counted: &input.counted,
        costs_vary: log.costs_vary(),
        keyed,
        horizon: args.horizon,
        per: periods.as_ref(),
        top: if keyed {
            recommend::hurt_kept(args.top, input)
        } else {
            0
        },
    };
    let frontier = sweep.frontier(&points, &needs, threads, input.show_progress)?;
    Ok(Swept {
        costs_vary: sweep.costs_vary,
        points,
        needs,
        shape,
        frontier,
    })
}

/// What the report says beside the frontier.
struct Found {
    recommended: Option<FrontierRow>,
    alternatives: Vec<Alternative>,
    per_key: Vec<NeedRow>,
    rule_of_thumb: RuleOfThumb,
    nginx: Option<NginxConf>,
    verdict: Option<String>,
    current: Option<Current>,
    outliers: Option<Outliers>,
    notes: Vec<String>,
    method_notes: Vec<String>,
}

/// `--per`'s periods over the log, with the test each must pass; a period
/// so short that the log spans too many of them is refused.
fn periods<'a>(
    args: &SizeArgs,
    input: &Input,
    ok: &'a (dyn Fn(candidates::per::PeriodCount) -> bool + Sync),
) -> Result<Option<candidates::per::Periods<'a>>> {
    let Some(len) = args.per else {
        return Ok(None);
    };
    candidates::per::Periods::of(&input.log, &input.counted, len.0, ok)
        .map(Some)
        .map_err(|e| too_many_periods(len, e))
}

/// `--per LEN` refused: what it spans and the shortest that fits.
fn too_many_periods(len: crate::time::Nanos, e: candidates::per::TooManyPeriods) -> anyhow::Error {
    let shortest = crate::time::Nanos(e.shortest).to_duration();
    anyhow::anyhow!(
        "--per {}: {e}; give --per {} or longer",
        humantime::format_duration(len.to_duration()),
        humantime::format_duration(shortest)
    )
}

/// The recommendation and what explains it.
fn recommend(
    args: &SizeArgs,
    asked: &Asked,
    input: &Input,
    goal: &Goal,
    swept: &Swept,
) -> Result<Found> {
    let (family, log, frontier) = (&asked.family, &input.log, &swept.frontier);
    let keyed = asked.key_col.is_some();
    let ok = |c| goal.period_ok(c);
    let periods = periods(args, input, &ok)?;
    let chosen = pick::pick(frontier);
    let mut recommended = chosen.map(|i| frontier[i].clone());
    let mut alternatives = chosen.map_or(Vec::new(), |i| {
        pick::alternatives(frontier, i, family.shapes())
    });
    if keyed {
        let rows = recommended
            .iter_mut()
            .chain(alternatives.iter_mut().map(|a| &mut a.row));
        for row in rows {
            row.hurt_top = recommend::hurt(input, row, args.top)?;
        }
    }
    let per_key = if keyed {
        recommend::per_key(family, &swept.points, &swept.needs, input, args.top)
    } else {
        Vec::new()
    };
    let rule_of_thumb = recommend::rule(family, &swept.shape, keyed, frontier, goal.max_wait, log);
    let nginx = match (&recommended, family.nginx()) {
        (Some(rec), Some(n)) => {
            let key = asked.key_col.as_deref().map(|c| {
                let prefix = args.input.key_prefix.as_deref().map(parse_prefix);
                let prefix = prefix.transpose().map_err(|e| e.to_string())?;
                zone_key::zone_key(c, prefix, log)
            });
            Some(recommend::nginx_conf(&n, rec, log, key))
        }
        _ => None,
    };
    let verdict = recommended
        .is_none()
        .then(|| verdict(frontier, &swept.shape, args, input));
    let current = match asked.current.clone() {
        None => None,
        Some(text) => Some(recommend::current(
            text,
            input,
            (keyed, periods.as_ref()),
            goal,
            recommended.as_ref(),
        )?),
    };
    let mut notes = input.notes.clone();
    if let (Some(rec), Some(p)) = (&recommended, &periods) {
        notes.push(recommend::worst_period(rec, input, p)?);
    }
    let span_ok = |i: usize, h| sweep::tests(log, &swept.points[i], frontier[i].size, h);
    notes.extend(pick::horizon_note(
        family,
        &swept.points,
        frontier,
        span_ok,
        args.horizon,
        chosen,
    ));
    let method_notes = recommend::method_notes(frontier, swept.costs_vary);
    let outliers = recommend::outliers(input, recommended.as_ref())?;
    Ok(Found {
        outliers,
        recommended,
        alternatives,
        per_key,
        rule_of_thumb,
        nginx,
        verdict,
        current,
        notes,
        method_notes,
    })
}

/// With `--headroom`: the log's times as they came back in place, and
/// the recommendation replayed on them.
fn at_logged_speed(input: &mut Input, asked: &Asked, found: &Found) -> Result<Option<String>> {
    let Some(logged) = input.logged_at.take() else {
        return Ok(None);
    };
    input.log.at = logged;
    let Some(rec) = &found.recommended else {
        return Ok(None);
    };
    let mut row = rec.clone();
    row.fill(&candidates::audit(
        &input.log,
        &rec.spec,
        asked.key_col.is_some(),
        0,
    )?);
    Ok(Some(format!(
        "sized with headroom {}: the frontier is the log's requests arriving that many times as fast; at the speed they came, the recommendation gives {}",
        input.targets.headroom.as_deref().unwrap_or(""),
        report::size::outcome(&row)
    )))
}

/// Why nothing is recommended: nothing the log tests meets the targets.
fn verdict(frontier: &[FrontierRow], shape: &Shape, args: &SizeArgs, input: &Input) -> String {
    if frontier.iter().any(|r| r.feasible) {
        return format!(
            "the log spans {}: too short to test any limit of the range that meets {} (a full burst must refill at its rate, or a window pass, within the log, and the log must span --horizon {}); give a longer log, a shorter --horizon or higher rates",
            report::size::readable(shape.span_ns),
            input.targets.describe(),
            report::size::readable(args.horizon.0)
        );
    }
    let last = frontier.last().map_or("", |r| r.point());
    format!(
        "no limit up to {last} meets {}: this is a capacity problem, not a limiter setting",
        input.targets.describe()
    )
}

/// The report as data.
fn report(args: &SizeArgs, asked: &Asked, input: Input, swept: Swept, found: Found) -> SizeReport {
    let (read, log) = (input.read, input.log);
    let mut frontier = swept.frontier;
    let marks = found
        .recommended
        .iter()
        .map(|r| ("pick", r))
        .chain(found.alternatives.iter().map(|a| (a.rule, &a.row)));
    for (mark, rec) in marks {
        for row in frontier.iter_mut().filter(|r| r.spec == rec.spec) {
            row.marks.push(mark);
        }
    }
    SizeReport {
        input: InputInfo {
            files: read.names,
            rows: read.summary.rows,
            bad_rows_skipped: read.summary.bad_rows,
            truncated: read.summary.truncated,
            notices: read.summary.notices,
            lines_read_as: read.summary.read_as.clone(),
            rows_reordered: read.reordered,
            time_column: read.summary.time_column,
            time_format: read.summary.time_format,
            first_ns: log.at.first().copied(),
            last_ns: log.at.last().copied(),
        },
        policy: args
            .policy
            .as_deref()
            .unwrap_or_default()
            .trim()
            .to_string(),
        axis: asked.family.sizing.axis.param(),
        size_param: asked.family.sizing.size_param,
        targets: input.targets,
        horizon_ns: args.horizon.0,
        frontier,
        recommended: found.recommended,
        alternatives: found.alternatives,
        nginx: found.nginx,
        per_key: found.per_key,
        rule_of_thumb: found.rule_of_thumb,
        current: found.current,
        verdict: found.verdict,
        time_resolution: None,
        outliers: found.outliers,
        said: Said {
            notes: found.notes,
            method_notes: found.method_notes,
            verbose: args.verbose,
        },
    }
}

/// Writes the report in its format, and the plot; the exit status.
fn render(args: &SizeArgs, report: &SizeReport) -> Result<u8> {
    let svg = if args.plot.is_some() || args.format == Format::Html {
        Some(crate::report::plot::size_report_svg(report)?)
    } else {
        None
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        Format::Table => {
            let width = crate::report::fit::width(args.wide);
            crate::report::size::render_table(report, width, &mut out)
        }
        Format::Json => crate::report::size::render_json(report, &mut out),
        Format::Csv => crate::report::size::render_csv(report, &mut out),
        Format::Markdown => crate::report::size::render_markdown(report, &mut out),
        Format::Html => crate::report::size::render_html(report, svg.as_deref(), &mut out),
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

/// Writes `page` on stdout in the `--format` asked.
pub(crate) fn write_page(args: &SizeArgs, page: &crate::report::page::Page) -> Result<()> {
    use crate::report::{csv, html, json, markdown, table};
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        Format::Table => table::write(page, crate::report::fit::width(args.wide), &mut out),
        Format::Json => json::write(page, &mut out),
        Format::Csv => csv::write(page, &mut out),
        Format::Markdown => markdown::write(page, &mut out),
        Format::Html => html::write(page, &mut out),
    }
    .and_then(|_| out.flush())
    .context("cannot write the report")
}

/// Refuses, before anything is written, a report or plot that would land on
/// one of the logs or the --exclude-keys file, or on each other.
fn check_outputs(args: &SizeArgs) -> Result<()> {
    use crate::clash::{check_distinct, report_inputs, report_outputs};
    let excluded = args.exclude_keys.as_deref().map(|p| ("--exclude-keys", p));
    let inputs = report_inputs(&args.input.files, excluded, &[])?;
    let outputs = report_outputs("--plot", args.plot.as_deref());
    check_distinct(&inputs, &outputs)
}
