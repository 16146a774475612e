//! `drip pace`: stdin records to stdout through a policy on a monotonic clock.
//!
//! Contract (DESIGN.md §3):
//! - The default policy is the shaper: one record per interval, idle time
//!   never banked, at most `--burst` records waiting (or `--max-wait`).
//!   `--policy SPEC` takes any audit policy; a refused record waits in
//!   block mode until the policy's retry time and is offered again.
//! - Records are bytes up to and including a separator (`\n`, or NUL with
//!   `-0`); a final record without one is passed as it came. Nothing is
//!   decoded, nothing is written partially.
//! - Deadlines come from the [`schedule::Schedule`], never from the last
//!   wake-up; each wake-up writes the records due in one `write` and
//!   nothing is buffered after it.
//! - Every record read is written, refused (`dropped`, and in `--rejects`
//!   at once), or counted as unsent when the run stops early (a signal,
//!   downstream closing, stdout failing; also in `--rejects`). A record
//!   counts as written once the pipe took all of it; one cut by the stop
//!   is unsent, and the summary says how many of its bytes went out.
//! - With `--key`/`--key-field`, each line is decided under its key and
//!   waits in its key's lane ([`lanes`]); lines leave in order of release.
//!
//! Threads: a reader moves stdin bytes into an inbox (and stops reading
//! while the inbox holds [`INBOX_BUDGET`] bytes of undecided records, so a
//! blocked pacer blocks its upstream); the main thread decides, waits and
//! writes; a signal thread turns SIGINT/SIGTERM/SIGHUP into a stop. Waits are
//! condition-variable waits until the next deadline, or without a timeout
//! when nothing is due: no wake-ups while idle.

pub mod control;
pub mod keys;
mod lanes;
mod replay;
pub mod schedule;
pub mod share;
pub mod stamp;
pub mod stats;

use crate::audit::input;
use crate::audit::timestamp::Zone;
use crate::cli::{InputFormat, OnFull, PaceArgs, Stamp, StatsFormat};
use crate::clock::{Clock, MonotonicClock};
use crate::policy::PolicyConfig;
use crate::policy::keyed::Stack;
use crate::policy::shaper::ShaperBound;
use crate::policy::spec::{KeyChoice, parse_spec};
use crate::policy::{Decision, Shaper, Spec};
use crate::progress;
use crate::rate::Rate;
use crate::time::Nanos;
use anyhow::{Context, bail};
use indicatif::ProgressBar;
use keys::{KeySource, Keys};
use lanes::{Lanes, Step};
use schedule::{Offer, Order, Pending, Schedule, Timing};
use share::{Answer, Plan, ShareConfig, Sharer};
use stats::{Ending, Stats};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Undecided bytes the reader holds before it stops reading.
pub const INBOX_BUDGET: usize = 64 * 1024;
/// The longest record held while waiting for its separator. A longer one
/// stops the run: without it one unterminated "line" could fill memory.
pub const MAX_RECORD: usize = 64 * 1024 * 1024;
/// Keys listed as the busiest in the summary.
const BUSIEST_KEYS: usize = 5;
/// Bytes asked of stdin per read.
const READ_CHUNK: usize = 64 * 1024;

/// `pace`'s configuration, validated once from the arguments.
pub struct Config {
    spec: Spec,
    /// The shaping interval (ns), when the policy has one.
    interval: Option<Nanos>,
    /// The rate or spec, for messages and the summary.
    target: String,
    on_full: OnFull,
    rejects: Option<PathBuf>,
    separator: u8,
    stamp: Option<Stamp>,
    stats: Option<StatsFormat>,
    progress: bool,
    catch_up: bool,
    /// Per-key pacing, when a key is given.
    keyed: Option<KeyedConfig>,
    /// `--share`: the schedule and how this policy reserves in it.
    share: Option<(ShareConfig, Plan)>,
    /// The control FIFO's path.
    control: Option<PathBuf>,
    /// `--replay`: lines at their logged times.
    replay: Option<replay::ReplayConfig>,
}

/// Per-key pacing: where keys come from and how lines wait.
struct KeyedConfig {
    source: KeySource,
    keep_order: bool,
    max_pending: usize,
}

/// One interval of `rate` in ns, rounded down (for thresholds only).
fn interval_of(rate: Rate) -> Nanos {
    Nanos(rate.per().0 / rate.count())
}

impl Config {
    pub fn from_args(args: PaceArgs) -> anyhow::Result<Config> {
        if args.replay.replay {
            return Config::replay(args);
        }
        let (spec, target) = match (&args.policy, args.rate) {
            (Some(text), _) => {
                let spec = parse_spec(text).with_context(|| "--policy".to_string())?;
                if let Some((m, c)) = spec.members.iter().find_map(|m| match &m.key {
                    KeyChoice::Column(c) => Some((m, c)),
                    _ => None,
                }) {
                    bail!(
                        "--policy '{}': key={c} has no meaning in pace (lines have no columns); use --key or --key-field for per-key pacing, key=none for a global member",
                        m.text
                    );
                }
                (spec, text.trim().to_string())
            }
            (None, Some(rate)) => {
                let bound = match (args.burst, args.max_wait) {
                    (_, Some(w)) => ShaperBound::MaxWait(w),
                    (b, None) => ShaperBound::Burst(b.unwrap_or(0)),
                };
                let mut text = format!("shaper:rate={rate}");
                match bound {
                    ShaperBound::Burst(b) => text.push_str(&format!(",burst={b}")),
                    ShaperBound::MaxWait(w) => text.push_str(&format!(",max-wait={w}")),
                }
                let config = PolicyConfig::Shaper(Shaper::new(rate, bound));
                let spec = Spec {
                    text: text.clone(),
                    label: text.clone(),
                    members: vec![crate::policy::Member {
                        config,
                        key: KeyChoice::Default,
                        text,
                    }],
                };
                (spec, rate.to_string())
            }
            (None, None) => bail!("give --rate RATE (for example --rate 5/s) or --policy SPEC"),
        };
        let keyed = keyed_config(&args)?;
        let interval_among = |global_only: bool| {
            spec.members
                .iter()
                .filter(|m| !global_only || m.key == KeyChoice::Global)
                .filter_map(|m| match m.config {
                    PolicyConfig::Shaper(s) => Some(interval_of(s.rate())),
                    PolicyConfig::Gcra(g) => Some(interval_of(g.rate())),
                    _ => None,
                })
                .min()
        };
        // Per key, the global members' interval is the one all lines keep.
        let interval = match keyed {
            Some(_) => interval_among(true).or_else(|| interval_among(false)),
            None => interval_among(false),
        };
        let progress = progress::Wanted {
            quiet: false,
            no_progress: args.no_progress,
            progress: args.progress,
        }
        .show();
        let share = match ShareConfig::from_args(&args.share)? {
            None => None,
            Some(config) if keyed.is_some() => {
                config.cannot_share(&format!(
                    "{} keeps one schedule for all lines; it cannot be combined with --key or --key-field",
                    config.origin.name()
                ))?;
                None
            }
            Some(config) => {
                let plan = match spec.members.as_slice() {
                    [m] => Plan::of(&m.config),
                    _ => Err("a '+' stack keeps several states".to_string()),
                };
                match plan {
                    Ok(plan) => Some((config, plan)),
                    Err(why) => {
                        config.cannot_share(&format!(
                            "{} cannot share '{target}': {why}",
                            config.origin.name()
                        ))?;
                        None
                    }
                }
            }
        };
        Ok(Config {
            spec,
            interval,
            target,
            on_full: args.on_full,
            rejects: args.rejects,
            separator: if args.null { 0 } else { b'\n' },
            stamp: args.stamp,
            stats: args.stats,
            progress,
            catch_up: args.catch_up,
            keyed,
            share,
            control: args.control,
            replay: None,
        })
    }

    /// The configuration of `--replay`: no policy; each line's release
    /// comes from its logged time.
    fn replay(args: PaceArgs) -> anyhow::Result<Config> {
        let r = &args.replay;
        if r.merge {
            bail!(
                "--merge: pace --replay reads one log, from stdin, so it has no files to merge; merge the logs by time before the pipe (sort -m on a sortable time column), or use --reorder-window for one slightly unordered log"
            );
        }
        let speed = replay::Speed::parse(&r.speed).map_err(|e| anyhow::anyhow!("--speed: {e}"))?;
        if let Some(config) = ShareConfig::from_args(&args.share)? {
            config.cannot_share(&format!(
                "--replay keeps the log's own times; it cannot be combined with {}",
                config.origin.name()
            ))?;
        }
        if args.max_pending == 0 {
            bail!("--max-pending 0 would hold no line: give at least 1 (default 100000)");
        }
        let time_col = r
            .time_column
            .as_deref()
            .map(input::parse_time_column)
            .transpose()?;
        let time_format = input::parse_time_format(&r.time_format)?;
        let mut input_format = r.input_format;
        if let Some(f) = &r.log_format {
            match input_format {
                InputFormat::Auto | InputFormat::Nginx => input_format = InputFormat::Nginx,
                other => bail!(
                    "--log-format describes nginx lines, but --input-format is {}; drop one of them",
                    other.name()
                ),
            }
            crate::log::nginx::Nginx::compile(f)?;
        } else if input_format == InputFormat::Nginx {
            bail!(
                "--input-format nginx needs --log-format 'FORMAT', the log_format string from nginx.conf"
            );
        }
        let config = replay::ReplayConfig {
            time_col,
            time_format,
            zone: r
                .tz
                .as_deref()
                .map(Zone::parse)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--tz: {e}"))?,
            input_format,
            log_format: r.log_format.clone(),
            delimiter: r
                .delimiter
                .as_deref()
                .map(crate::audit::input::parse_delimiter)
                .transpose()?,
            no_header: r.no_header,
            speed,
            max_gap: r.max_gap,
            reorder_window: r.reorder_window,
            max_pending: args.max_pending,
        };
        let target = format!("replay at {}x", r.speed.trim());
        let progress = progress::Wanted {
            quiet: false,
            no_progress: args.no_progress,
            progress: args.progress,
        }
        .show();
        Ok(Config {
            spec: Spec {
                text: target.clone(),
                label: target.clone(),
                members: Vec::new(),
            },
            interval: None,
            target,
            on_full: args.on_full,
            rejects: args.rejects,
            separator: b'\n',
            stamp: args.stamp,
            stats: args.stats,
            progress,
            // Late lines go at once: the log's times are the schedule.
            catch_up: true,
            keyed: None,
            share: None,
            control: args.control,
            replay: Some(config),
        })
    }
}

/// The per-key options, checked.
fn keyed_config(args: &PaceArgs) -> anyhow::Result<Option<KeyedConfig>> {
    let source = match (&args.key, args.key_field) {
        (Some(pattern), _) => {
            let re = regex::bytes::Regex::new(pattern).map_err(|e| {
                // The regex crate's message spans lines; its last says what.
                let text = e.to_string();
                let what = text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("invalid pattern")
                    .trim()
                    .trim_start_matches("error: ")
                    .to_string();
                anyhow::anyhow!(
                    "invalid --key '{pattern}': {what}; give a regular expression whose first group is the key, e.g. '^https?://([^/:]+)'"
                )
            })?;
            KeySource::Pattern(re)
        }
        (None, Some(n)) => {
            let sep = match &args.field_sep {
                Some(text) => Some(crate::audit::input::parse_delimiter(text).map_err(|_| {
                    anyhow::anyhow!(
                        "invalid --field-sep '{text}': give one ASCII character, or 'tab'"
                    )
                })?),
                None => None,
            };
            KeySource::Field {
                index: usize::try_from(n).unwrap_or(usize::MAX),
                sep,
            }
        }
        (None, None) => {
            if args.keep_order {
                bail!("--keep-order applies to per-key pacing: add --key REGEX or --key-field N");
            }
            return Ok(None);
        }
    };
    if args.max_pending == 0 {
        bail!("--max-pending 0 would hold no line: give at least 1 (default 100000)");
    }
    Ok(Some(KeyedConfig {
        source,
        keep_order: args.keep_order,
        max_pending: args.max_pending,
    }))
}

/// Runs `pace` and returns the exit status.
pub fn run(args: PaceArgs) -> anyhow::Result<u8> {
    let config = Config::from_args(args)?;
    Pacer::start(config)?.run()
}

/// A record with its input line number and arrival (real time).
struct Record {
    line: u64,
    arrived: Nanos,
    bytes: Vec<u8>,
}

/// What the reader and the signal thread share with the main thread.
#[derive(Default)]
struct Inbox {
    records: VecDeque<Record>,
    /// Bytes in `records`.
    buffered: usize,
    /// Bytes after the last separator, not yet a record.
    partial: Vec<u8>,
    lines_in: u64,
    eof: bool,
    read_error: Option<io::Error>,
    signal: Option<i32>,
    /// Tells the reader to stop.
    stop: bool,
    /// The reader waits for room (so a wake-up is worth a syscall).
    reader_waiting: bool,
    /// Control commands (the FIFO, SIGUSR1) not yet applied.
    control: Vec<control::Command>,
}

impl Inbox {
    fn push(&mut self, arrived: Nanos, bytes: Vec<u8>) {
        self.buffered += bytes.len();
        self.lines_in += 1;
        self.records.push_back(Record {
            line: self.lines_in,
            arrived,
            bytes,
        });
    }

    /// Splits a chunk read at `arrived` into records after `partial`.
    fn ingest(&mut self, chunk: &[u8], arrived: Nanos, sep: u8) {
        let mut start = 0;
        while let Some(i) = chunk[start..].iter().position(|&b| b == sep) {
            let end = start + i + 1;
            let bytes = if self.partial.is_empty() {
                chunk[start..end].to_vec()
            } else {
                let mut p = std::mem::take(&mut self.partial);
                p.extend_from_slice(&chunk[start..end]);
                p
            };
            self.push(arrived, bytes);
            start = end;
        }
        self.partial.extend_from_slice(&chunk[start..]);
    }
}

struct Shared {
    inbox: Mutex<Inbox>,
    /// Wakes the main thread: records arrived, input ended, a signal.
    main_cv: Condvar,
    /// Wakes the reader: room in the inbox, or stop.
    reader_cv: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inbox> {
        // A poisoned lock only means another thread panicked; the data is
        // still consistent enough to account for every line.
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn read_loop(mut input: File, shared: &Shared, clock: MonotonicClock, sep: u8) {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        {
            let mut g = shared.lock();
            while !g.stop && !g.records.is_empty() && g.buffered >= INBOX_BUDGET {
                g.reader_waiting = true;
                g = shared.reader_cv.wait(g).unwrap_or_else(|e| e.into_inner());
                g.reader_waiting = false;
            }
            if g.stop {
                return;
            }
        }
        let result = input.read(&mut buf);
        let now = clock.now();
        let mut g = shared.lock();
        match result {
            Ok(0) => {
                if !g.partial.is_empty() {
                    let last = std::mem::take(&mut g.partial);
                    g.push(now, last);
                }
                g.eof = true;
            }
            Ok(n) => {
                g.ingest(&buf[..n], now, sep);
                if g.partial.len() > MAX_RECORD {
                    let (what, hint) = if sep == 0 {
                        ("NUL", "is the input newline-separated? then drop -0")
                    } else {
                        ("newline", "is it NUL-separated (find -print0)? then add -0")
                    };
                    g.read_error = Some(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "a record has no {what} in its first {} MiB; {hint}",
                            MAX_RECORD >> 20
                        ),
                    ));
                    g.eof = true;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                g.read_error = Some(e);
                g.eof = true;
            }
        }
        let done = g.eof;
        drop(g);
        shared.main_cv.notify_one();
        if done {
            return;
        }
    }
}

struct Pacer {
    config: Config,
    clock: MonotonicClock,
    shared: Arc<Shared>,
    schedule: Schedule<Vec<u8>>,
    /// Lines waiting for their key's turn (per-key pacing only).
    lanes: Option<Lanes>,
    /// `--replay`: lines read and sorted into log order.
    replay: Option<replay::Replay>,
    /// The pause in force (`--control`).
    pause: Option<control::Pause>,
    /// The shaper `rate` and `burst` commands retune, if any.
    tunable: Option<control::Tunable>,
    /// The retuned shaper, for the summary.
    retuned: Option<String>,
    /// The timing keeps half an interval between writes (a lone or global shaper).
    gap_keeping: bool,
    /// Removes a FIFO drip created when the run ends.
    _fifo: Option<control::Fifo>,
    output: File,
    /// Readable once a stop signal has arrived: lets a write that waits on
    /// a downstream which stopped reading give up between two lines.
    wake: io::PipeReader,
    rejects: Option<BufWriter<File>>,
    /// Why the rejects file was given up: the run then takes no more
    /// input, sends what was admitted, and ends with an error.
    rejects_error: Option<io::Error>,
    stats: Stats,
    progress: ProgressBar,
    /// (time, lines out) when the shown rate was last measured.
    rate_mark: (Nanos, u64),
    /// Lines per second over the last measured span, for the progress line.
    shown_rate: f64,
    /// The shared schedule, with `--share`.
    share: Option<Sharer>,
}

impl Pacer {
    fn start(config: Config) -> anyhow::Result<Pacer> {
        {
            use crate::clash::{Endpoint, Place, check_distinct, named};
            let mut outputs = vec![Endpoint::new("standard output", Place::Stdout)];
            if let Some(p) = &config.rejects {
                outputs.push(Endpoint::new(named("--rejects", p), Place::Path(p)));
            }
            check_distinct(&[Endpoint::new("standard input", Place::Stdin)], &outputs)?;
        }
        let rejects = match &config.rejects {
            Some(path) => Some(BufWriter::new(File::create(path).with_context(|| {
                format!("cannot create the rejects file '{}'", path.display())
            })?)),
            None => None,
        };
        let output = io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .context("cannot use standard output")?;
        let input = io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .context("cannot use standard input")?;
        let stack: Stack = config.spec.build();
        let shaper =
            match &config.keyed {
                None => matches!(
                    config.spec.members.as_slice(),
                    [m] if matches!(m.config, PolicyConfig::Shaper(_))
                ),
                // Lines of different keys may leave together; a global shaper
                // still keeps its half interval between any two.
                Some(_) => config.spec.members.iter().any(|m| {
                    m.key == KeyChoice::Global && matches!(m.config, PolicyConfig::Shaper(_))
                }),
            };
        let mut timing = Timing::new(config.interval, shaper, config.catch_up);
        let clock = MonotonicClock::new();
        let share = match &config.share {
            Some((c, plan)) => {
                // One line is reserved at a time and goes at its slot:
                // slots are already an interval apart, and batching would
                // hold a line past the slot it reserved.
                timing.min_gap = None;
                timing.quantum = Nanos::ZERO;
                Some(Sharer::start(c.clone(), *plan, clock.now())?)
            }
            None => None,
        };
        let tunable = config
            .spec
            .members
            .iter()
            .enumerate()
            .filter(|(_, m)| config.keyed.is_none() || m.key == KeyChoice::Global)
            .find_map(|(i, m)| match m.config {
                PolicyConfig::Shaper(s) => Some(control::Tunable {
                    member: i,
                    shaper: s,
                }),
                _ => None,
            })
            // Without a key, only a lone shaper paces every line by itself;
            // a shared schedule's rate is every sharing process's.
            .filter(|_| config.keyed.is_some() || config.spec.members.len() == 1)
            .filter(|_| config.share.is_none());
        let (schedule, lanes) = match &config.keyed {
            None => (Schedule::new(stack, timing), None),
            Some(k) => {
                let order = if k.keep_order {
                    Order::Arrival
                } else {
                    Order::Release
                };
                let per_key = config
                    .spec
                    .members
                    .iter()
                    .map(|m| m.key != KeyChoice::Global)
                    .collect();
                let lanes = Lanes::new(
                    Keys::new(k.source.clone(), config.separator),
                    per_key,
                    k.keep_order,
                    config.on_full,
                    k.max_pending,
                );
                (Schedule::with_order(stack, timing, order), Some(lanes))
            }
        };
        let shared = Arc::new(Shared {
            inbox: Mutex::new(Inbox::default()),
            main_cv: Condvar::new(),
            reader_cv: Condvar::new(),
        });

        let mut signals = signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ])
        .context("cannot install the SIGINT/SIGTERM/SIGHUP handlers")?;
        let (wake_rx, wake_tx) = io::pipe().context("cannot create a pipe")?;
        let s = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let mut signals = signals.forever();
                if let Some(sig) = signals.next() {
                    s.lock().signal = Some(sig);
                    s.main_cv.notify_one();
                    let _ = (&wake_tx).write_all(&[1]);
                }
                // The wake pipe lets a write to a downstream that stopped
                // reading give up at the next line end; inside a long line
                // it still waits, so a second signal leaves at once.
                if let Some(sig) = signals.next() {
                    crate::say!("drip: second signal: exiting without accounting for the backlog");
                    std::process::exit(128 + sig);
                }
            })
            .context("cannot start the signal thread")?;
        control::start_usr1(Arc::clone(&shared))?;
        let fifo = match &config.control {
            Some(path) => {
                let fifo = control::Fifo::open(path)?;
                let s = Arc::clone(&shared);
                let path = fifo.path().to_path_buf();
                std::thread::Builder::new()
                    .name("control".into())
                    .spawn(move || control::read_loop(path, &s))
                    .context("cannot start the control thread")?;
                Some(fifo)
            }
            None => None,
        };
        let s = Arc::clone(&shared);
        let sep = config.separator;
        std::thread::Builder::new()
            .name("reader".into())
            .spawn(move || read_loop(File::from(input), &s, clock, sep))
            .context("cannot start the reader thread")?;

        let replay = config.replay.clone().map(|c| replay::Replay::new(c, false));
        let progress = progress::status_line(config.progress);
        Ok(Pacer {
            config,
            clock,
            shared,
            schedule,
            lanes,
            replay,
            pause: None,
            tunable,
            retuned: None,
            gap_keeping: shaper,
            _fifo: fifo,
            output: File::from(output),
            wake: wake_rx,
            rejects,
            rejects_error: None,
            stats: Stats::new(),
            progress,
            rate_mark: (Nanos::ZERO, 0),
            shown_rate: 0.0,
            share,
        })
    }

    fn run(mut self) -> anyhow::Result<u8> {
        let mut held: Option<Nanos> = None;
        let mut due: Vec<Pending<Vec<u8>>> = Vec::new();
        let mut batch: Vec<u8> = Vec::new();
        let mut dropped: Vec<Vec<u8>> = Vec::new();
        // Per key and in replay, lines are decided outside the loop below.
        let keyed = self.lanes.is_some() || self.replay.is_some();
        // The line number refused under --on-full fail.
        let mut full_at = 0u64;
        // Why the shared schedule was given up.
        let mut share_error: Option<anyhow::Error> = None;
        let mut write_error: Option<io::Error> = None;
        let shared = Arc::clone(&self.shared);
        let mut g = shared.lock();
        let ending = loop {
            if let Some(sig) = g.signal {
                break match sig {
                    signal_hook::consts::SIGTERM => Ending::Sigterm,
                    signal_hook::consts::SIGHUP => Ending::Sighup,
                    _ => Ending::Sigint,
                };
            }
            if g.read_error.is_some() {
                break Ending::ReadError;
            }
            if !g.control.is_empty() || self.pause.is_some() {
                let commands = std::mem::take(&mut g.control);
                let waiting = g.records.len()
                    + self.schedule.backlog()
                    + self.lanes.as_ref().map_or(0, Lanes::waiting)
                    + self.replay.as_ref().map_or(0, replay::Replay::waiting);
                let (pause, retuned) = self.control(commands, g.lines_in, waiting);
                if retuned {
                    // A held line is offered to the new shaper at once.
                    let now = self.schedule.policy_time(self.clock.now());
                    held = held.map(|h| h.min(now));
                }
                if let Some(p) = pause {
                    // Paused: nothing is decided or written until it ends.
                    g = match p.until {
                        None => shared.main_cv.wait(g).unwrap_or_else(|e| e.into_inner()),
                        Some(t) => {
                            let timeout = t.saturating_sub(self.clock.now()).to_duration();
                            shared
                                .main_cv
                                .wait_timeout(g, timeout)
                                .unwrap_or_else(|e| e.into_inner())
                                .0
                        }
                    };
                    continue;
                }
            }
            let now = self.clock.now();
            let mut full = false;
            // The rejects file failed: nothing more is decided, what was
            // admitted is sent on time, the rest is unsent.
            let draining = self.rejects_error.is_some();
            if !draining && let Some(lanes) = &mut self.lanes {
                // Per key: lanes decide what has arrived and what waited.
                let step = lanes.decide(&mut self.schedule, &mut g, now, &mut dropped);
                for item in dropped.drain(..) {
                    self.stats.dropped += 1;
                    // In the file at once: a kill -9 loses nothing refused.
                    self.keep(&item, true);
                }
                match step {
                    Step::Done => {}
                    Step::Full { line } => {
                        full = true;
                        full_at = line;
                    }
                    Step::Never => bail!(
                        "--policy '{}' can never admit a line; give it a burst or limit of at least 1",
                        self.config.target
                    ),
                }
            }
            if !draining
                && let Some(replay) = &mut self.replay
                && let Err(e) = replay.decide(&mut self.schedule, &mut g, || self.clock.now())
            {
                // Accounted for as a read error: what was read and not
                // written is unsent (and in --rejects).
                g.read_error = Some(io::Error::new(io::ErrorKind::InvalidData, format!("{e:#}")));
                continue;
            }
            // Decide the records that have arrived, in order.
            while !keyed
                && !draining
                && let Some(front) = g.records.front()
            {
                let at = match held {
                    Some(r) if self.schedule.real_time(r) > now => break,
                    Some(r) => {
                        self.schedule.settle(r, now);
                        r
                    }
                    None => self.schedule.policy_time(front.arrived),
                };
                let shared_decision = match &mut self.share {
                    None => None,
                    // One reservation at a time: the next line reserves
                    // once this one is written.
                    Some(_) if self.schedule.backlog() > 0 => break,
                    Some(sharer) => {
                        drop(g);
                        let answer = sharer.reserve(self.clock.now());
                        g = shared.lock();
                        let replied = self.clock.now();
                        match answer {
                            Err(e) => {
                                share_error = Some(e);
                                break;
                            }
                            Ok(Answer::Unreachable { retry_after }) => {
                                held = Some(
                                    self.schedule
                                        .policy_time(replied.saturating_add(retry_after)),
                                );
                                break;
                            }
                            Ok(Answer::Go { delay }) => Some(Decision::Admit {
                                release: self.schedule.policy_time(replied.saturating_add(delay)),
                            }),
                            Ok(Answer::Refused { retry_after }) => Some(Decision::Refuse {
                                retry_at: Some(
                                    self.schedule
                                        .policy_time(replied.saturating_add(retry_after)),
                                ),
                            }),
                        }
                    }
                };
                let rec = g.records.pop_front().expect("front exists");
                g.buffered -= rec.bytes.len();
                let offer = match shared_decision {
                    None => self.schedule.offer(at, rec.arrived, rec.bytes),
                    Some(d) => self.schedule.offer_with(at, rec.arrived, rec.bytes, d),
                };
                match offer {
                    Offer::Queued { .. } => held = None,
                    Offer::Full {
                        retry_at: None,
                        item,
                    } => {
                        g.buffered += item.len();
                        g.records.push_front(Record {
                            line: rec.line,
                            arrived: rec.arrived,
                            bytes: item,
                        });
                        bail!(
                            "--policy '{}' can never admit a line; give it a burst or limit of at least 1",
                            self.config.target
                        );
                    }
                    Offer::Full {
                        retry_at: Some(r),
                        item,
                    } => match self.config.on_full {
                        OnFull::Block => {
                            g.buffered += item.len();
                            g.records.push_front(Record {
                                line: rec.line,
                                arrived: rec.arrived,
                                bytes: item,
                            });
                            // Offered again at once when `r` has passed.
                            held = Some(r);
                            continue;
                        }
                        OnFull::Drop => {
                            self.stats.dropped += 1;
                            // In the file at once: a kill -9 loses nothing refused.
                            self.keep(&item, true);
                            if self.rejects_error.is_some() {
                                break;
                            }
                        }
                        OnFull::Fail => {
                            g.buffered += item.len();
                            g.records.push_front(Record {
                                line: rec.line,
                                arrived: rec.arrived,
                                bytes: item,
                            });
                            full = true;
                            full_at = self.stats.lines_out
                                + self.stats.dropped
                                + self.schedule.backlog() as u64
                                + 1;
                            break;
                        }
                    },
                }
            }
            if share_error.is_some() {
                break Ending::ShareError;
            }
            if self.rejects_error.is_some() && !g.stop {
                // Read no more: lines read from now on could not be kept.
                g.stop = true;
                self.shared.reader_cv.notify_one();
            }
            if full {
                // What was due before the refusal still goes out.
                due.clear();
                if self.schedule.take_due(now, &mut due) > 0 {
                    drop(g);
                    let stop = self.send(&mut due, &mut batch);
                    g = shared.lock();
                    if let Some(Stop::Failed(e)) = stop {
                        write_error = Some(e);
                        break Ending::WriteError;
                    }
                }
                break Ending::Full;
            }
            if g.reader_waiting && g.buffered < INBOX_BUDGET / 2 {
                self.shared.reader_cv.notify_one();
            }
            // Write what is due, without holding the lock.
            due.clear();
            if self.schedule.take_due(now, &mut due) > 0 {
                drop(g);
                let stop = self.send(&mut due, &mut batch);
                g = shared.lock();
                match stop {
                    None => continue,
                    Some(Stop::Closed) => break Ending::BrokenPipe,
                    Some(Stop::Failed(e)) => {
                        write_error = Some(e);
                        break Ending::WriteError;
                    }
                }
            }
            if self.rejects_error.is_some() && self.schedule.backlog() == 0 {
                break Ending::RejectsError;
            }
            if g.eof
                && g.records.is_empty()
                && self.schedule.backlog() == 0
                && self.lanes.as_ref().is_none_or(Lanes::is_empty)
                && self.replay.as_ref().is_none_or(|r| r.waiting() == 0)
            {
                break Ending::Eof;
            }
            self.update_progress();
            // A held record is offered at its retry instant whenever we
            // wake, so waking for it before the next write may happen
            // would only cost a wake-up.
            let wake = [
                self.schedule.next_due(),
                held.map(|r| {
                    self.schedule
                        .real_time(r)
                        .max(self.schedule.earliest_write())
                }),
                self.lanes.as_ref().and_then(Lanes::next_retry).map(|r| {
                    self.schedule
                        .real_time(r)
                        .max(self.schedule.earliest_write())
                }),
                self.replay
                    .as_ref()
                    .and_then(replay::Replay::next_wake)
                    .map(|r| self.schedule.real_time(r)),
            ]
            .into_iter()
            .flatten()
            .min();
            g = match wake {
                None => shared.main_cv.wait(g).unwrap_or_else(|e| e.into_inner()),
                Some(t) => {
                    let now = self.clock.now();
                    if t <= now {
                        continue;
                    }
                    let timeout = t.saturating_sub(now).to_duration();
                    shared
                        .main_cv
                        .wait_timeout(g, timeout)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        };
        // Stop the reader; account for everything not written.
        g.stop = true;
        let records: Vec<Record> = g.records.drain(..).collect();
        let partial = std::mem::take(&mut g.partial);
        let read_error = g.read_error.take();
        self.stats.lines_in = g.lines_in;
        drop(g);
        self.shared.reader_cv.notify_one();
        let mut backlog: Vec<(u64, Vec<u8>)> =
            self.schedule.take_all().map(|p| (p.seq, p.item)).collect();
        if let Some(lanes) = &mut self.lanes {
            // Scheduled and waiting lines, back in input order.
            backlog.extend(lanes.take_all());
            backlog.sort_by_key(|(line, _)| *line);
        }
        if let Some(replay) = &mut self.replay {
            backlog.extend(replay.take_all());
            backlog.sort_by_key(|(line, _)| *line);
        }
        for (_, item) in backlog {
            self.unsent(&item);
        }
        for r in records {
            self.unsent(&r.bytes);
        }
        if !partial.is_empty() {
            self.stats.lines_in += 1;
            self.unsent(&partial);
        }
        if let Some(w) = &mut self.rejects
            && let Err(e) = w.flush()
        {
            self.rejects = None;
            self.rejects_error = Some(e);
        }
        self.progress.finish_and_clear();
        // After a signal or an error lines are left unsent: the summary
        // says how many even without --stats.
        let early = self.rejects_error.is_some()
            || matches!(
                ending,
                Ending::Sigint
                    | Ending::Sigterm
                    | Ending::ShareError
                    | Ending::Sighup
                    | Ending::ReadError
                    | Ending::WriteError
                    | Ending::RejectsError
            );
        if self.config.stats.is_some() || early {
            let mut summary = self.stats.summary(
                self.clock.now(),
                self.config.target.clone(),
                ending,
                self.schedule.slip(),
            );
            summary.keys = self.lanes.as_ref().map(|l| l.keys().summary(BUSIEST_KEYS));
            summary.share = self.share.as_ref().map(Sharer::summary);
            summary.paused_ms = self.schedule.paused().0 as f64 / 1e6;
            if let Some(text) = &self.retuned {
                summary.target = format!("{} (shaper now {text})", summary.target);
            }
            let text = match self.config.stats {
                Some(StatsFormat::Json) => summary.to_json(),
                _ => summary.to_text(),
            };
            // stderr may be gone too; nothing else to tell then.
            let _ = io::stderr().write_all(text.as_bytes());
        }
        if let Some(e) = &self.rejects_error {
            let path = self.config.rejects.as_deref().unwrap_or(Path::new(""));
            crate::say!(
                "drip: cannot write the rejects file '{}': {e}; input was read no further, and of the {} line(s) dropped and {} unsent not all are in that file; free space there or give another --rejects FILE",
                path.display(),
                self.stats.dropped,
                self.stats.unsent
            );
        }
        if let Some(e) = read_error {
            return Err(e).context("reading standard input");
        }
        if let Some(e) = write_error {
            let kept = match &self.config.rejects {
                Some(_) if self.rejects_error.is_some() => String::new(),
                Some(p) => format!(" and kept in '{}'", p.display()),
                None => " (give --rejects FILE to keep them)".into(),
            };
            anyhow::bail!(
                "cannot write standard output: {e}; {} line(s) not written are counted as unsent{kept}",
                self.stats.unsent
            );
        }
        let lost = self.rejects_error.is_some();
        Ok(match ending {
            // Lines not kept in the rejects file make it an I/O error.
            Ending::Eof | Ending::BrokenPipe if lost => 2,
            Ending::Eof | Ending::BrokenPipe => 0,
            Ending::ReadError | Ending::WriteError | Ending::RejectsError => 2,
            Ending::Sighup => 129,
            Ending::Full => {
                crate::say!(
                    "drip: backlog full at input line {full_at}: lines arrive faster than {} allows; use --on-full block (wait) or drop, or a larger --burst/--max-wait",
                    self.config.target
                );
                3
            }
            Ending::Sigint => 130,
            Ending::Sigterm => 143,
            Ending::ShareError => {
                let e = share_error.expect("a share error ends the run");
                crate::say!(
                    "drip: {e:#}; {} line(s) read and not written",
                    self.stats.unsent
                );
                2
            }
        })
    }

    /// Writes `due` in one write. Lines that did not go out whole are
    /// counted as unsent: those after the last whole line written when
    /// downstream closed, stdout failed, or a stop signal came while
    /// downstream was not reading (then `None`; the main loop stops).
    fn send(&mut self, due: &mut Vec<Pending<Vec<u8>>>, batch: &mut Vec<u8>) -> Option<Stop> {
        let (sent, stop) = self.write(due, batch);
        for p in due.drain(..).skip(sent) {
            self.unsent(&p.item);
        }
        stop
    }

    /// Writes one batch (stamped if asked) in one write, as far as it goes:
    /// the lines written whole, and why it stopped short, if it did.
    fn write(&mut self, due: &[Pending<Vec<u8>>], batch: &mut Vec<u8>) -> (usize, Option<Stop>) {
        batch.clear();
        let mut ends = Vec::with_capacity(due.len());
        let wall = self.config.stamp.map(|_| stamp::wall_now());
        for p in due {
            if let (Some(format), Some(wall)) = (self.config.stamp, wall) {
                stamp::write_stamp(batch, format, wall);
            }
            batch.extend_from_slice(&p.item);
            ends.push(batch.len());
        }
        let at = self.clock.now();
        let (written, result) = write_until_stopped(&self.output, &self.wake, batch, &ends);
        // Lines the pipe took whole count as sent, even when it then closed.
        let lines = ends.iter().take_while(|&&end| end <= written).count();
        let line_start = lines.checked_sub(1).map_or(0, |l| ends[l]);
        self.stats.partial_bytes = (written - line_start) as u64;
        self.schedule.wrote(self.clock.now());
        for p in &due[..lines] {
            self.stats.sent(p.arrived, at);
        }
        self.update_progress();
        let stop = match result {
            Ok(()) => None,
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Some(Stop::Closed),
            Err(e) => Some(Stop::Failed(e)),
        };
        (lines, stop)
    }

    /// Accounts for a line read and not written: counted, and kept in the
    /// rejects file when there is one.
    fn unsent(&mut self, item: &[u8]) {
        self.stats.unsent += 1;
        self.keep(item, false);
    }

    /// Writes a line to the rejects file, if there is one (and flushes it
    /// when `flush`). When that fails the file is given up and the error
    /// kept: the run then stops taking input and ends with it.
    fn keep(&mut self, item: &[u8], flush: bool) {
        if let Some(w) = &mut self.rejects {
            let result = w
                .write_all(item)
                .and_then(|()| if flush { w.flush() } else { Ok(()) });
            if let Err(e) = result {
                self.rejects = None;
                self.rejects_error = Some(e);
            }
        }
    }

    /// Redraws the progress line (indicatif limits the redraw rate). The
    /// current rate is measured over the last second or more of writes;
    /// nothing wakes up just to redraw.
    fn update_progress(&mut self) {
        if self.progress.is_hidden() {
            return;
        }
        let now = self.clock.now();
        let (at, out) = self.rate_mark;
        let span = now.saturating_sub(at);
        if span >= Nanos::from_secs(1) {
            // Display only: a float is fine here.
            self.shown_rate = (self.stats.lines_out - out) as f64 * 1e9 / span.0 as f64;
            self.rate_mark = (now, self.stats.lines_out);
        }
        self.progress.set_message(format!(
            "{} sent, {} dropped, {} waiting, {:.1}/s",
            self.stats.lines_out,
            self.stats.dropped,
            self.schedule.backlog(),
            self.shown_rate
        ));
        self.progress.tick();
    }
}

/// Why a write stopped short of the batch.
enum Stop {
    /// Downstream closed the pipe.
    Closed,
    /// Standard output failed (a full disk, `/dev/full`).
    Failed(io::Error),
}

/// Writes `batch` to `out` and returns how many bytes went out, with the
/// error that stopped it, if any. Without an error: all of them, or fewer
/// when `wake` became readable (a stop signal) while `out` was not taking
/// bytes. It then stops only at a line end (`ends`: the offset just past
/// each line), so no line is ever cut.
///
/// It waits with poll(2) and writes at most `PIPE_BUF` bytes after each
/// wake-up, which a pipe then takes without blocking, and ends each write
/// at a line end when one is within reach: every wait then starts between
/// two lines, so a downstream that stopped reading cannot hold it past a
/// signal at any rate. Only a line longer than `PIPE_BUF` is written in
/// pieces, and inside it only stdout is waited for.
fn write_until_stopped(
    out: &File,
    wake: &io::PipeReader,
    batch: &[u8],
    ends: &[usize],
) -> (usize, io::Result<()>) {
    use std::os::fd::AsRawFd;
    const PIPE_BUF: usize = 4096;
    let mut done = 0;
    while done < batch.len() {
        let at_line_end = done == 0 || ends.binary_search(&done).is_ok();
        let mut fds = [
            libc::pollfd {
                fd: out.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Between lines, a stop signal ends the write; inside one, only
        // stdout is waited for.
        let nfds = if at_line_end { 2 } else { 1 };
        // SAFETY: `fds` is a valid array of `nfds` pollfd structs.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), nfds, -1) };
        if ready < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return (done, Err(e));
        }
        if at_line_end && fds[1].revents != 0 && fds[0].revents & libc::POLLOUT == 0 {
            return (done, Ok(()));
        }
        if fds[0].revents == 0 {
            continue;
        }
        let reach = batch.len().min(done + PIPE_BUF);
        let end = match ends.binary_search(&reach) {
            Ok(_) => reach,
            Err(i) if i > 0 && ends[i - 1] > done => ends[i - 1],
            Err(_) => reach,
        };
        match (&*out).write(&batch[done..end]) {
            Ok(0) => return (done, Err(io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (done, Err(e)),
        }
    }
    (done, Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(inbox: &Inbox) -> Vec<&[u8]> {
        inbox.records.iter().map(|r| r.bytes.as_slice()).collect()
    }

    #[test]
    fn records_split_across_reads_keep_every_byte() {
        let mut inbox = Inbox::default();
        inbox.ingest(b"one\ntw", Nanos(1), b'\n');
        inbox.ingest(b"o\n\xff\xfe", Nanos(2), b'\n');
        inbox.ingest(b"\n", Nanos(3), b'\n');
        assert_eq!(records(&inbox), [&b"one\n"[..], b"two\n", b"\xff\xfe\n"]);
        // A record's arrival is the read that completed it.
        let arrivals: Vec<Nanos> = inbox.records.iter().map(|r| r.arrived).collect();
        assert_eq!(arrivals, [Nanos(1), Nanos(2), Nanos(3)]);
        assert_eq!(inbox.buffered, 11);
        assert_eq!(inbox.lines_in, 3);
        assert!(inbox.partial.is_empty());
        inbox.ingest(b"tail", Nanos(4), b'\n');
        assert_eq!(inbox.partial, b"tail");
        assert_eq!(inbox.lines_in, 3);
    }

    #[test]
    fn nul_separates_and_newlines_are_data() {
        let mut inbox = Inbox::default();
        inbox.ingest(b"a\nb\0c\0", Nanos(0), 0);
        assert_eq!(records(&inbox), [&b"a\nb\0"[..], b"c\0"]);
    }
}
