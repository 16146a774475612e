//! `drip audit`: replay timestamped request logs through rate-limit
//! policies, all in one pass, and report admits, drops and waits.
//!
//! Data flow: a reader thread parses rows (CSV → timestamp, key ids, cost)
//! into batches; the main thread re-sorts them within the reorder window and
//! decides each row under every policy, with the row's own timestamp as
//! `now`. Memory follows the reorder window and the active keys, not the
//! log's length. Exit status: 0 when every threshold holds, 1 when one is
//! crossed, 2 for usage or input errors.


use crate::cli::{AuditArgs, Format};
use crate::policy::{KeyChoice, Spec, parse_spec, parse_specs_file};
use crate::progress;
use crate::report::{Crossing, InputInfo, Report, Timeline, plot};
use crate::time::Nanos;
use anyhow::{Context, Result, anyhow, bail};
use crate::engine::replay::{Replay, Run, Slot};
use crate::ingest::input::{ColSel, InputSpec, MAX_KEYS, file_name};
use crate::engine::{conf as nginx};
use crate::ingest::{input, keys, stream, timestamp};
use std::io::Write;

/// The replay, fed in time order.
struct Feed<'a> {
    replay: &'a mut Replay,
}

impl stream::Sink for Feed<'_> {
    fn learn(&mut self, batch: &mut input::Batch) {
        self.replay.intern(batch);
    }

    fn take(&mut self, chunk: &[input::Event]) -> Result<()> {
        self.replay.decide_chunk(chunk)
    }
}

/// Replay threads when `--threads` is not given, for `runs` policies (see
/// [`threads_for`]).
fn default_threads(runs: usize) -> usize {
    threads_for(
        runs,
        std::thread::available_parallelism().map_or(1, usize::from),
    )
}

/// Replay threads for `runs` policies on `cores` cores. Reading keeps a
/// core busy, and one replay thread keeps pace with it for about four
/// policies (on the benchmark log, per 10M rows: reading about 0.8 s, a
/// replay thread's own work 0.2 s and 0.15 s per policy). With cores to spare
/// besides the reader's: one replay thread per four policies, up to them.
/// On two cores a second replay thread shares a core with the reader, and
/// pays only past eight policies (at eight both take the same time, and
/// two threads 7% more CPU; at sixteen two take 25% less time).
fn threads_for(runs: usize, cores: usize) -> usize {
    match cores {
        0..=2 if runs > 8 => cores.max(1),
        0..=2 => 1,
        _ => runs.div_ceil(4).clamp(1, cores - 1),
    }
}

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

/// A percentage as an exact fraction: (numerator, denominator) of PCT/100.
fn parse_pct(s: &str) -> Option<(u128, u128)> {
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

fn load_specs(args: &AuditArgs) -> Result<Vec<Spec>> {
    let mut specs = Vec::new();
    for text in &args.policies {
        specs.push(parse_spec(text)?);
    }
    if let Some(path) = &args.policies_file {
        let contents = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --policies file '{}'", path.display()))?;
        let from_file = parse_specs_file(&contents)
            .map_err(|(line, e)| anyhow!("{}:{line}: {e}", path.display()))?;
        if from_file.is_empty() {
            bail!("{}: no policy specs in the file", path.display());
        }
        specs.extend(from_file);
    }
    if specs.is_empty() && args.nginx_conf.is_empty() {
        bail!(
            "no policy given; add --policy SPEC (e.g. --policy gcra:rate=10/s,burst=20), --policies FILE or --nginx-conf FILE"
        );
    }
    let mut seen = std::collections::HashSet::new();
    for s in &specs {
        if !seen.insert(s.label.clone()) {
            bail!(
                "two policies are labelled '{}'; give each a distinct label=",
                s.label
            );
        }
    }
    Ok(specs)
}


/// The timeline plot of an audit: a panel per policy, in report order.
fn audit_plot(
    report: &Report,
    timeline: Option<&Timeline>,
    zone: Option<&timestamp::Zone>,
) -> Result<String> {
    let empty = Timeline::default();
    let panels: Vec<plot::Panel> = report
        .policies
        .iter()
        .map(|p| plot::Panel {
            label: &p.label,
            spec: &p.spec,
            level_kind: p.peak_kind,
            bound: p.bound,
        })
        .collect();
    let title = format!(
        "drip audit: {}, {} rows",
        report.input.files.join(", "),
        report.input.rows
    );
    let utc = jiff::tz::TimeZone::UTC;
    plot::timeline_svg(
        &title,
        &panels,
        timeline.unwrap_or(&empty),
        zone.map_or(&utc, |z| z.time_zone()),
    )
}

/// Refuses, before anything is opened for writing, a decisions file or a
/// report that is one of the logs, the policies file, or each other.
fn check_outputs(args: &AuditArgs, files: &[std::path::PathBuf]) -> Result<()> {
    use crate::clash::{Endpoint, Place, check_distinct, check_logs_once, logs, named};
    let mut inputs = logs(files);
    check_logs_once(&inputs)?;
    if let Some(p) = &args.policies_file {
        inputs.push(Endpoint::new(named("--policies", p), Place::Path(p)));
    }
    let mut outputs = vec![Endpoint::new("standard output (the report)", Place::Stdout)];
    match &args.decisions {
        Some(p) if p.as_os_str() == "-" => {
            outputs[0] = Endpoint::new("standard output (--decisions -)", Place::Stdout)
        }
        Some(p) => outputs.push(Endpoint::new(named("--decisions", p), Place::Path(p))),
        None => {}
    }
    if let Some(p) = &args.plot {
        outputs.push(Endpoint::new(named("--plot", p), Place::Path(p)));
    }
    check_distinct(&inputs, &outputs)
}

/// The thresholds of a run, checked once the report is built.
struct Thresholds {
    max_drop_rate: Vec<Threshold<(u128, u128)>>,
    max_drops: Vec<Threshold<u64>>,
    max_wait: Vec<Threshold<Nanos>>,
    /// `--max-disagree` as a fraction, and as given.
    max_disagree: ((u128, u128), String),
}

impl Thresholds {
    fn from_args(args: &AuditArgs, labels: &[String]) -> Result<Thresholds> {
        let max_disagree = parse_pct(args.max_disagree.trim()).ok_or_else(|| {
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
                parse_pct,
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
        })
    }

    /// True when a threshold on drops or waits is given.
    fn gated(&self) -> bool {
        !(self.max_drop_rate.is_empty() && self.max_drops.is_empty() && self.max_wait.is_empty())
    }
}

/// Everything an audit needs, checked before anything is read or written.
struct Config {
    args: AuditArgs,
    labels: Vec<String>,
    /// One per policy spec, then one per nginx.conf, in report order.
    runs: Vec<Run>,
    /// How the logs are read, the key columns included.
    input: InputSpec,
    thresholds: Thresholds,
    /// Policies given as specs (not nginx.conf): with two or more, keys are
    /// interned on the reader thread.
    specs: usize,
    /// A plot is drawn (`--plot`, or the HTML page).
    plotting: bool,
}

impl Config {
    fn from_args(args: AuditArgs) -> Result<Config> {
        check_outputs(&args, &args.input.files)?;
        let specs = load_specs(&args)?;
        let mut labels: Vec<String> = specs.iter().map(|s| s.label.clone()).collect();
        // nginx.conf policies: each config is one run, after the specs.
        let nginx_vars = crate::nginx_conf::setup::parse_vars(&args.nginx_var)?;
        let confs = crate::nginx_conf::setup::load_confs(&args.nginx_conf, &labels, args.quiet)?;
        labels.extend(confs.iter().map(|(l, _)| l.clone()));
        let thresholds = Thresholds::from_args(&args, &labels)?;
        let mut key_cols = KeyColumns::new(&args);
        let mut runs = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            runs.push(Run::new(s, key_cols.slots(s)?, i));
        }
        // The reading options first: a config may tell how its log is written.
        let mut input = args.input.spec(Vec::new(), args.quiet)?;
        if let Some((_, conf)) = confs.first() {
            crate::nginx_conf::setup::adopt_log_format(
                conf,
                &mut input,
                args.verify_column.is_some(),
                args.quiet,
            );
        }
        conf_runs(&args, &confs, &input, &nginx_vars, &mut key_cols, &mut runs)?;
        input.key_cols = key_cols.0;
        if let Some(path) = &args.plot {
            crate::clash::check_output("--plot", path, "svg")?;
        }
        Ok(Config {
            plotting: args.plot.is_some() || args.format == Format::Html,
            specs: specs.len(),
            args,
            labels,
            runs,
            input,
            thresholds,
        })
    }

    /// A timeline whose interval follows the log's span: a plot without
    /// `--timeline`.
    fn auto_timeline(&self) -> bool {
        self.args.timeline.is_none() && self.plotting
    }

    /// The `--decisions` file, opened, and its name for messages.
    fn open_decisions(&self) -> Result<Option<(Box<dyn Write + Send>, String)>> {
        Ok(match &self.args.decisions {
            None => None,
            Some(p) if p.as_os_str() == "-" => Some((
                Box::new(std::io::BufWriter::new(std::io::stdout())),
                "standard output".into(),
            )),
            Some(p) => Some((
                Box::new(std::io::BufWriter::with_capacity(
                    1 << 16,
                    std::fs::File::create(p).with_context(|| {
                        format!("cannot create --decisions file '{}'", p.display())
                    })?,
                )),
                format!("'{}'", p.display()),
            )),
        })
    }
}

/// The distinct key columns of a run: the default first, then each
/// member's `key=` and each nginx.conf's key fields, in order of use.
struct KeyColumns(Vec<ColSel>, Option<usize>);

impl KeyColumns {
    fn new(args: &AuditArgs) -> KeyColumns {
        let mut k = KeyColumns(Vec::new(), None);
        if let Some(c) = args.input.key_column.as_deref() {
            // The first column can always be added.
            k.1 = k.slot(ColSel::parse(c)).ok();
        }
        k
    }

    /// The place of `sel` among the key columns, added if new.
    fn slot(&mut self, sel: ColSel) -> Result<usize> {
        if let Some(i) = self.0.iter().position(|c| *c == sel) {
            return Ok(i);
        }
        if self.0.len() == MAX_KEYS {
            bail!("at most {MAX_KEYS} distinct key columns can be used in one run");
        }
        self.0.push(sel);
        Ok(self.0.len() - 1)
    }

    /// Where each member of `spec` takes its key from.
    fn slots(&mut self, spec: &Spec) -> Result<Vec<Slot>> {
        spec.members
            .iter()
            .map(|m| {
                Ok(match &m.key {
                    KeyChoice::Default => self.1.map_or(Slot::Global, Slot::Column),
                    KeyChoice::Global => Slot::Global,
                    KeyChoice::Column(c) => Slot::Column(self.slot(ColSel::parse(c))?),
                })
            })
            .collect()
    }
}

/// Adds a run per nginx.conf, after the specs' runs.
fn conf_runs(
    args: &AuditArgs,
    confs: &[(String, std::sync::Arc<crate::nginx_conf::NginxConf>)],
    input: &InputSpec,
    nginx_vars: &std::collections::HashMap<String, String>,
    key_cols: &mut KeyColumns,
    runs: &mut Vec<Run>,
) -> Result<()> {
    let log_fields = if confs.is_empty() {
        None
    } else {
        crate::ingest::peek::log_fields(input)
    };
    let conf_opts = nginx::ConfOptions {
        log_fields: log_fields.as_deref(),
        overrides: nginx_vars,
        location: args.nginx_location.as_deref(),
        verify: args.verify_column.as_deref(),
        files: if args.input.files.is_empty() {
            vec!["<stdin>".into()]
        } else {
            args.input.files.iter().map(|f| file_name(f)).collect()
        },
    };
    for (label, conf) in confs {
        let exec = nginx::ConfExec::new(conf.clone(), &conf_opts, args.quiet, &mut |f| {
            key_cols.slot(ColSel::Name(f.to_string()))
        })?;
        let order = runs.len();
        runs.push(Run::nginx(
            exec,
            label.clone(),
            crate::nginx_conf::setup::describe(conf),
            order,
        ));
    }
    Ok(())
}

/// What the replay of the logs produced, before thresholds.
struct Replayed {
    report: Report,
    /// The timeline to plot, when one is drawn.
    plotted: Option<Timeline>,
}

/// Blocks of 256 KiB and more come straight from the system and go back to
/// it when freed. Without a fixed threshold glibc raises it to the size of
/// each large block freed, so the per-key tables, as they grow on several
/// replay threads, leave their old copies in the heap: about 10% more peak
/// memory on the benchmark log with two threads. Chunks of rows stay below.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: sets a number in glibc's allocator; called before the audit
    // starts any thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
    }
}

/// Reads the logs in time order through every policy and builds the report
/// (without threshold crossings).
fn replay(config: &mut Config) -> Result<Replayed> {
    tune_allocator();
    let args = &config.args;
    let decisions = config.open_decisions()?;
    let runs = std::mem::take(&mut config.runs);
    let key_columns = config.input.key_cols.len();
    let mut replay = Replay::new(runs, key_columns, decisions, args.timeline, args.top)?;
    if config.auto_timeline() {
        replay.auto_timeline();
    }
    let show_progress = progress::Wanted {
        quiet: args.quiet,
        no_progress: args.no_progress,
        progress: args.progress,
    }
    .show();
    let bar = progress::bytes_read(show_progress, &config.input.files);
    // Interning keys costs about as much as deciding one policy: with one
    // policy it balances the two threads on the replay's side, with more on
    // the reader's.
    let reader_interns = (config.specs > 1).then(|| {
        (0..key_columns)
            .map(|_| keys::Interner::default())
            .collect()
    });
    if args.compare {
        if config.labels.len() < 2 {
            bail!(
                "--compare needs two or more policies (e.g. --nginx-conf old.conf --nginx-conf new.conf); the first is the baseline"
            );
        }
        replay.compare();
    }
    let runs = config.labels.len();
    replay.spread(
        args.threads
            .map_or_else(|| default_threads(runs), usize::from),
    )?;
    let read = stream::read_ordered(
        &config.input,
        args.input.reorder_window,
        reader_interns,
        &bar,
        &mut Feed {
            replay: &mut replay,
        },
    )?;
    if read.summary.rows == 0 && config.thresholds.gated() {
        // Every gate would pass on nothing: a CI check must not.
        bail!(
            "the input has no rows, so --max-drop-rate, --max-drops and --max-wait have nothing to check; check the log's path and that it was written"
        );
    }
    if read.summary.rows == 0 && !args.quiet {
        crate::say!("drip: the input has no rows; every count in the report is zero");
    }
    build_report(config, replay, read)
}

/// The report of a finished replay, and the timeline to plot.
fn build_report(config: &Config, replay: Replay, read: stream::Read) -> Result<Replayed> {
    let (first, last) = (replay.first, replay.last);
    let compare = replay.compare_report();
    let (mut policies, timeline) = replay.finish()?;
    let timeline = timeline.map(|(i, rows)| Timeline {
        interval_ns: i.0,
        rows,
    });
    let (timeline, plotted) = plotted_timeline(config, timeline);
    let stream::Read {
        summary,
        reordered,
        names,
    } = read;
    for p in &mut policies {
        p.skipped_bad = summary.bad_rows;
    }
    let report = Report {
        input: InputInfo {
            files: names,
            rows: summary.rows,
            bad_rows_skipped: summary.bad_rows,
            rows_reordered: reordered,
            time_column: summary.time_column,
            time_format: summary.time_format,
            first_ns: first.map(|t| t.0),
            last_ns: last.map(|t| t.0),
        },
        policies,
        timeline,
        crossings: Vec::new(),
        compare,
    };
    Ok(Replayed { report, plotted })
}

/// The report's timeline and the plot's: --timeline's as it is, or a few
/// hundred intervals.
fn plotted_timeline(
    config: &Config,
    timeline: Option<Timeline>,
) -> (Option<Timeline>, Option<Timeline>) {
    match timeline {
        Some(t) if config.auto_timeline() => (None, Some(plot::fit(&t))),
        Some(t) if config.plotting && plot::intervals(&t) > plot::MAX_PLOTTED => {
            let fitted = plot::fit(&t);
            if !config.args.quiet {
                crate::say!(
                    "drip: the plot shows the timeline every {}: --timeline {} gives {} intervals, more than {} can be drawn legibly",
                    crate::time::span(fitted.interval_ns),
                    crate::time::span(t.interval_ns),
                    plot::intervals(&t),
                    plot::MAX_PLOTTED
                );
            }
            (Some(t), Some(fitted))
        }
        t => (t.clone(), t),
    }
}

/// Every threshold the report crosses, policy by policy.
fn thresholds(t: &Thresholds, report: &Report) -> Vec<Crossing> {
    let applies = |label: &Option<String>, p: &str| label.as_deref().is_none_or(|l| l == p);
    let mut crossings = Vec::new();
    for p in &report.policies {
        for t in &t.max_drop_rate {
            let (num, den) = t.value;
            // dropped/requests > num/den, exactly
            if applies(&t.label, &p.label)
                && u128::from(p.dropped) * den > num * u128::from(p.requests)
            {
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
    crossings.extend(disagreements(t, report));
    crossings
}

/// The nginx.conf runs whose verified rows disagree more than
/// `--max-disagree` allows.
fn disagreements(t: &Thresholds, report: &Report) -> Vec<Crossing> {
    let ((num, den), text) = &t.max_disagree;
    report
        .policies
        .iter()
        .filter_map(|p| {
            let v = p.nginx.as_ref()?.verify.as_ref()?;
            (u128::from(v.disagreed) * den > num * u128::from(v.rows)).then(|| Crossing {
                policy: p.label.clone(),
                threshold: "--max-disagree".into(),
                limit: format!("{}%", text.trim_end_matches('%')),
                measured: format!(
                    "{}% ({} of {} rows disagree with column '{}')",
                    crate::report::pct(100.0 - v.agreement_pct),
                    v.disagreed,
                    v.rows,
                    v.column
                ),
            })
        })
        .collect()
}

/// Writes the report (unless the decisions go to stdout) and the plot,
/// says each crossing, and gives the exit status.
fn render(config: &Config, report: &Report, plotted: Option<&Timeline>) -> Result<u8> {
    let args = &config.args;
    let decisions_on_stdout = args
        .decisions
        .as_deref()
        .is_some_and(|p| p.as_os_str() == "-");
    let svg = if config.plotting {
        Some(audit_plot(report, plotted, config.input.zone.as_ref())?)
    } else {
        None
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = match args.format {
        _ if decisions_on_stdout => Ok(()),
        Format::Table => crate::report::table::render(report, &mut out),
        Format::Json => crate::report::json::render(report, &mut out),
        Format::Csv => crate::report::csv::render(report, &mut out),
        Format::Markdown => crate::report::markdown::render(report, &mut out),
        Format::Html => crate::report::html::render_audit(report, svg.as_deref(), &mut out),
    }
    .and_then(|_| out.flush());
    let plot_written = match (&args.plot, &svg) {
        (Some(path), Some(svg)) => std::fs::write(path, svg)
            .with_context(|| format!("cannot write --plot file '{}'", path.display())),
        _ => Ok(()),
    };
    // A crossed threshold is said and exits 1 whatever happened to the
    // report: a reader that stopped early (`| head`) must not turn it
    // into a success.
    for c in &report.crossings {
        crate::say!("drip: {c}");
    }
    plot_written?;
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write the report")
        }
        _ => Ok(if report.crossings.is_empty() { 0 } else { 1 }),
    }
}

/// `drip audit`: the arguments checked, the logs replayed, the thresholds
/// checked, the report written.
pub fn run(args: AuditArgs) -> Result<u8> {
    let mut config = Config::from_args(args)?;
    let Replayed {
        mut report,
        plotted,
    } = replay(&mut config)?;
    report.crossings = thresholds(&config.thresholds, &report);
    render(&config, &report, plotted.as_ref())
}

#[cfg(test)]
mod tests {
    use super::threads_for;

    #[test]
    fn replay_threads_follow_the_policies_and_the_cores() {
        // Two cores: one replay thread beside the reader up to eight
        // policies, two past them.
        assert_eq!(threads_for(1, 2), 1);
        assert_eq!(threads_for(8, 2), 1);
        assert_eq!(threads_for(9, 2), 2);
        assert_eq!(threads_for(40, 2), 2);
        // One core: one thread whatever the policies.
        assert_eq!(threads_for(40, 1), 1);
        // More cores: one per four policies, the reader's core left to it.
        assert_eq!(threads_for(1, 8), 1);
        assert_eq!(threads_for(4, 8), 1);
        assert_eq!(threads_for(5, 8), 2);
        assert_eq!(threads_for(8, 4), 2);
        assert_eq!(threads_for(16, 4), 3);
        assert_eq!(threads_for(100, 8), 7);
    }
}
