//! `drip audit`: replay timestamped request logs through rate-limit
//! policies, all in one pass, and report admits, drops and waits.
//!
//! Data flow: a reader thread parses rows (CSV → timestamp, key ids, cost)
//! into batches; the main thread re-sorts them within the reorder window and
//! decides each row under every policy, with the row's own timestamp as
//! `now`. Memory follows the reorder window and the active keys, not the
//! log's length. Exit status: 0 when every threshold holds, 1 when one is
//! crossed, 2 for usage or input errors.

mod config;
mod decisions;
mod judge;

use crate::cli::{AuditArgs, Format};
use crate::engine::replay::Replay;
use crate::ingest::{input, keys, stream, timestamp};
use crate::progress;
use crate::report::{InputInfo, Report, Timeline, plot};
use anyhow::{Context, Result, bail};
use config::Config;
use std::io::Write;

/// The replay, fed in time order.
struct Feed<'a> {
    replay: &'a mut Replay,
    /// Every time so far is a whole second.
    whole_seconds: bool,
}

impl stream::Sink for Feed<'_> {
    fn learn(&mut self, batch: &mut input::Batch) {
        self.replay.intern(batch);
    }

    fn take(&mut self, chunk: &[input::Event]) -> Result<()> {
        if self.whole_seconds {
            self.whole_seconds = chunk.iter().all(|e| e.at.0 % 1_000_000_000 == 0);
        }
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
            figures: plot::Figures {
                dropped: p.dropped,
                drop_pct: p.drop_pct,
                delayed: p.delayed,
                wait_p99_ns: p.wait.map(|w| w.p99_ns),
                keys_hurt: p.keys_with_drops,
                keys: p.keys_seen,
            },
        })
        .collect();
    let title = plot::text::with_files(
        "drip audit",
        &report.input.files,
        &format!("{} rows", report.input.rows),
        plot::TITLE_PX,
        plot::TITLE_ROOM,
    );
    let utc = jiff::tz::TimeZone::UTC;
    plot::timeline_svg(
        &title,
        &panels,
        timeline.unwrap_or(&empty),
        zone.map_or(&utc, |z| z.time_zone()),
    )
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

/// The replay of every policy, set up: the `--decisions` file opened, the
/// timeline and comparison asked for, the runs spread over threads; with
/// the progress bar that reading will move.
fn start_replay(config: &mut Config) -> Result<(Replay, progress::Reading)> {
    tune_allocator();
    let args = &config.args;
    let decisions = config.open_decisions()?;
    let runs = std::mem::take(&mut config.runs);
    let key_columns = config.input.key_cols.len();
    let mut replay = Replay::new(runs, key_columns, decisions, args.timeline, args.top)?;
    if config.auto_timeline() {
        replay.auto_timeline();
    }
    let show_progress = args.progress.wanted(args.quiet).show();
    let bar = progress::bytes_read(show_progress, &config.input.files);
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
    Ok((replay, bar))
}

/// Reads the logs in time order through every policy; an input without
/// rows is an error when thresholds are given, else a note.
fn read_logs(
    config: &Config,
    replay: &mut Replay,
    bar: &progress::Reading,
) -> Result<stream::Read> {
    let args = &config.args;
    let key_columns = config.input.key_cols.len();
    // Interning keys costs about as much as deciding one policy: with one
    // policy it balances the two threads on the replay's side, with more on
    // the reader's. Ids past an event's room are interned with the replay.
    let spills = key_columns > drip_core::ingest::input::MAX_KEYS;
    let reader_interns = (config.specs > 1 && !spills).then(|| {
        (0..key_columns)
            .map(|_| keys::Interner::default())
            .collect()
    });
    let mut feed = Feed {
        replay,
        whole_seconds: true,
    };
    let read = stream::read_ordered(
        &config.input,
        args.input.reorder_window,
        reader_interns,
        bar,
        &mut feed,
    )?;
    if feed.whole_seconds && read.summary.rows > 1 && !args.quiet {
        crate::say!(
            "drip: note: the log's times are whole seconds: the requests of one are taken as simultaneous, the worst case (delays, waits and drops within a second are upper bounds; `drip size` shows its pick both ways)"
        );
    }
    if read.summary.rows == 0 && config.thresholds.gated() {
        // Every gate would pass on nothing: a CI check must not.
        bail!(
            "the input has no rows, so --max-drop-rate, --max-drops and --max-wait have nothing to check; check the log's path and that it was written"
        );
    }
    if read.summary.rows == 0 && !args.quiet {
        crate::say!("drip: the input has no rows; every count in the report is zero");
    }
    Ok(read)
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
            truncated: summary.truncated,
            notices: summary.notices,
            lines_read_as: summary.read_as,
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
        Format::Table => {
            let width = crate::report::fit::width(args.wide);
            crate::report::audit::render_table(report, width, &mut out)
        }
        Format::Json => crate::report::audit::render_json(report, &mut out),
        Format::Csv => crate::report::audit::render_csv(report, &mut out),
        Format::Markdown => crate::report::audit::render_markdown(report, &mut out),
        Format::Html => crate::report::audit::render_html(report, svg.as_deref(), &mut out),
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
        crate::say!("drip: {}", crate::report::page::one_line(&c.to_string()));
    }
    plot_written?;
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write the report")
        }
        _ => Ok(if report.crossings.is_empty() { 0 } else { 1 }),
    }
}

/// `drip audit`: the arguments checked, the logs read through the replay
/// of every policy, the report built and judged against the thresholds,
/// and rendered.
pub fn run(args: AuditArgs) -> Result<u8> {
    let mut config = Config::from_args(args)?;
    let (mut replay, bar) = start_replay(&mut config)?;
    let read = read_logs(&config, &mut replay, &bar)?;
    let Replayed {
        mut report,
        plotted,
    } = build_report(&config, replay, read)?;
    report.crossings = judge::crossings(&config.thresholds, &report);
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
