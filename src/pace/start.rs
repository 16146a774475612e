//! Starting a run: the output ends checked and opened, the schedule (and
//! per-key lanes, a shared schedule) built from the configuration, and the
//! threads that feed the shaper loop started: signals, control, reader.

use super::jobs::Jobs;
use super::journal::Journal;
use super::keys::Keys;
use super::lanes::Lanes;
use super::reader::{self, Shared};
use super::schedule::{Order, Schedule, Timing};
use super::{Config, Control, Intake, Output, Pacer, Rejects, Sharing, Tally, control, replay};
use crate::clock::MonotonicClock;
use crate::policy::PolicyConfig;
use crate::policy::keyed::Stack;
use crate::policy::spec::KeyChoice;
use anyhow::Context;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

impl Pacer {
    pub(super) fn start(config: Config) -> anyhow::Result<Pacer> {
        check_endpoints(&config)?;
        let rejects = Rejects::open(config.rejects.as_deref())?;
        let output = io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .context("cannot use standard output")?;
        let inputs = open_inputs(&config.input.files)?;
        let stack: Stack = config.spec.build();
        let gap_keeping = keeps_gap(&config);
        let mut timing = Timing::new(config.interval, gap_keeping, config.lateness);
        let clock = MonotonicClock::new();
        let sharing = Sharing::start(&config, &mut timing, clock)?;
        let tunable = tunable(&config);
        if config.control.adaptive && tunable.is_none() {
            anyhow::bail!(
                "--adaptive changes the rate of the shaper that paces every line: give --rate (not --policy, and not with --share, whose rate is every sharing process's)"
            );
        }
        let (schedule, lanes) = schedule_and_lanes(&config, stack, timing);
        let shared = Arc::new(Shared::new());
        let fifo = start_control(&config, &shared)?;
        let control_path = fifo.as_ref().map(|f| f.path().to_path_buf());
        let jobs = start_jobs(&config, &output, &shared, clock, control_path)?;
        let journal = match &config.input.journal {
            Some(path) => {
                let (mut journal, skip) = Journal::open(path, config.input.separator)?;
                if config.jobs.is_some() {
                    journal.keep_unterminated();
                }
                shared.lock().journal = Some(skip);
                Some(journal)
            }
            None => None,
        };
        let wake = start_signals(&shared, jobs.is_some())?;
        control::start_usr1(Arc::clone(&shared))?;
        start_reader(inputs, &shared, clock, config.input.separator)?;
        let replay = config.replay.clone().map(|c| replay::Replay::new(c, false));
        let size = input_size(&config.input.files);
        let mut tally = Tally::new(config.progress, size);
        // Files are all there at the start: a record's wait is its lateness
        // against its slot, not its place in the file.
        tally.stats.from_slot = size.is_some() && config.replay.is_none();
        let mut control = Control::new(tunable, gap_keeping, config.lateness, fifo);
        if config.control.adaptive {
            control.adapt();
        }
        Ok(Pacer {
            clock,
            shared,
            schedule,
            intake: Intake::new(lanes, replay),
            control,
            sharing,
            output: Output::new(
                File::from(output),
                wake,
                config.stamp,
                config.input.separator,
            ),
            rejects,
            tally,
            jobs,
            journal,
            config,
        })
    }
}

/// Refuses a rejects, journal or failed file that is also standard input
/// or output, an input, or another of them.
fn check_endpoints(config: &Config) -> anyhow::Result<()> {
    use crate::clash::{Endpoint, Place, check_distinct, named};
    let mut outputs = vec![Endpoint::new("standard output", Place::Stdout)];
    let inputs = crate::clash::inputs(&config.input.files, "the input", "standard input");
    if let Some(p) = &config.rejects {
        outputs.push(Endpoint::new(named("--rejects", p), Place::Path(p)));
    }
    if let Some(p) = &config.input.journal {
        outputs.push(Endpoint::new(named("--journal", p), Place::Path(p)));
    }
    if let Some(p) = config.jobs.as_ref().and_then(|j| j.failed.as_ref()) {
        outputs.push(Endpoint::new(named("--failed", p), Place::Path(p)));
    }
    check_distinct(&inputs, &outputs)
}

/// Whether the timing keeps half an interval between writes: a lone
/// shaper, or with keys a global one.
fn keeps_gap(config: &Config) -> bool {
    match &config.keyed {
        None => matches!(
            config.spec.members.as_slice(),
            [m] if matches!(m.config, PolicyConfig::Shaper(_))
        ),
        // Lines of different keys may leave together; a global shaper
        // still keeps its half interval between any two.
        Some(_) => config
            .spec
            .members
            .iter()
            .any(|m| m.key == KeyChoice::Global && matches!(m.config, PolicyConfig::Shaper(_))),
    }
}

/// The shaper the control commands `rate` and `burst` retune, if any.
fn tunable(config: &Config) -> Option<control::Tunable> {
    config
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
        .filter(|_| config.share.is_none())
}

/// The schedule, and with a key the lanes lines wait in for their turn.
fn schedule_and_lanes(
    config: &Config,
    stack: Stack,
    timing: Timing,
) -> (Schedule<Vec<u8>>, Option<Lanes>) {
    match &config.keyed {
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
                Keys::new(k.source.clone(), config.input.separator),
                per_key,
                k.keep_order,
                config.on_full,
                k.max_pending,
            );
            (Schedule::with_order(stack, timing, order), Some(lanes))
        }
    }
}

/// With a command after `--`: what runs the commands, printing on
/// standard output and standard error.
fn start_jobs(
    config: &Config,
    output: &OwnedFd,
    shared: &Arc<Shared>,
    clock: MonotonicClock,
    control: Option<PathBuf>,
) -> anyhow::Result<Option<Jobs>> {
    let Some(c) = &config.jobs else {
        return Ok(None);
    };
    let mut c = c.clone();
    c.control = control;
    let stdout = output.try_clone().context("cannot use standard output")?;
    let stderr = io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot use standard error")?;
    let jobs = Jobs::start(
        c,
        config.input.separator,
        (File::from(stdout), File::from(stderr)),
        Arc::clone(shared),
        clock,
    )?;
    Ok(Some(jobs))
}

/// Starts the thread that turns SIGINT/SIGTERM/SIGHUP into a stop; returns
/// the end of a pipe that becomes readable then. A second signal exits at
/// once; with commands running (`commands`) it is noted instead (the
/// commands then get SIGTERM), and a third exits.
fn start_signals(shared: &Arc<Shared>, commands: bool) -> anyhow::Result<io::PipeReader> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])
    .context("cannot install the SIGINT/SIGTERM/SIGHUP handlers")?;
    let (wake_rx, wake_tx) = io::pipe().context("cannot create a pipe")?;
    let s = Arc::clone(shared);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut signals = Distinct::new(signals.forever());
            if let Some(sig) = signals.next() {
                s.lock().signal = Some(sig);
                s.main_cv.notify_one();
                let _ = (&wake_tx).write_all(&[1]);
            }
            // The wake pipe lets a write to a downstream that stopped
            // reading give up at the next line end; inside a long line
            // it still waits, so a second signal leaves at once.
            if commands && signals.next().is_some() {
                s.lock().more_signals += 1;
                s.main_cv.notify_one();
            }
            if let Some(sig) = signals.next() {
                crate::say!("drip: second signal: exiting without accounting for the backlog");
                std::process::exit(128 + sig);
            }
        })
        .context("cannot start the signal thread")?;
    Ok(wake_rx)
}

/// A signal repeated within this of its first delivery is that one again.
const ECHO: std::time::Duration = std::time::Duration::from_millis(100);

/// Signals as a person sends them: GNU `timeout` (without `--foreground`)
/// sends its signal to drip and then to drip's process group, so one
/// signal arrives twice within a few ms; the repeat is not a second one.
struct Distinct<I> {
    signals: I,
    last: Option<(i32, std::time::Instant)>,
}

impl<I: Iterator<Item = i32>> Distinct<I> {
    fn new(signals: I) -> Distinct<I> {
        Distinct {
            signals,
            last: None,
        }
    }
}

impl<I: Iterator<Item = i32>> Iterator for Distinct<I> {
    type Item = i32;
    fn next(&mut self) -> Option<i32> {
        loop {
            let sig = self.signals.next()?;
            let now = std::time::Instant::now();
            let echo = self
                .last
                .is_some_and(|(s, at)| s == sig && now.duration_since(at) < ECHO);
            if !echo {
                self.last = Some((sig, now));
                return Some(sig);
            }
        }
    }
}

/// Opens the control FIFO and starts its thread: with `--control`, or
/// drip's own for the commands to write to (`DRIP_CONTROL`).
fn start_control(config: &Config, shared: &Arc<Shared>) -> anyhow::Result<Option<control::Fifo>> {
    let fifo = match (&config.control.fifo, &config.jobs) {
        (Some(path), _) => control::Fifo::open(path)?,
        (None, Some(_)) => control::Fifo::private()?,
        (None, None) => return Ok(None),
    };
    let s = Arc::clone(shared);
    let path = fifo.path().to_path_buf();
    std::thread::Builder::new()
        .name("control".into())
        .spawn(move || control::read_loop(path, &s))
        .context("cannot start the control thread")?;
    Ok(Some(fifo))
}

fn start_reader(
    inputs: Vec<reader::Source>,
    shared: &Arc<Shared>,
    clock: MonotonicClock,
    sep: u8,
) -> anyhow::Result<()> {
    let s = Arc::clone(shared);
    std::thread::Builder::new()
        .name("reader".into())
        .spawn(move || reader::read_loop(inputs, &s, clock, sep))
        .context("cannot start the reader thread")?;
    Ok(())
}

/// The size of the input in bytes, when every input is a file named
/// (standard input, a pipe or a device has no size known ahead).
fn input_size(files: &[PathBuf]) -> Option<u64> {
    if files.is_empty() {
        return None;
    }
    files
        .iter()
        .map(|f| {
            (f.as_os_str() != "-")
                .then(|| std::fs::metadata(f).ok())
                .flatten()
                .filter(std::fs::Metadata::is_file)
                .map(|m| m.len())
        })
        .sum()
}

/// Opens the inputs in order (none: standard input), so a file that
/// cannot be read stops the run before anything is sent.
fn open_inputs(files: &[PathBuf]) -> anyhow::Result<Vec<reader::Source>> {
    let stdin = || -> anyhow::Result<reader::Source> {
        let fd = io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .context("cannot use standard input")?;
        Ok(reader::Source {
            name: String::new(),
            file: File::from(fd),
        })
    };
    if files.is_empty() {
        return Ok(vec![stdin()?]);
    }
    files
        .iter()
        .map(|f| {
            if f.as_os_str() == "-" {
                return stdin();
            }
            let file = File::open(f).with_context(|| {
                format!(
                    "cannot open '{}'; give files to read, or none to read standard input",
                    f.display()
                )
            })?;
            if file.metadata().is_ok_and(|m| m.is_dir()) {
                anyhow::bail!("'{}' is a directory; give files to read", f.display());
            }
            Ok(reader::Source {
                name: format!("'{}'", f.display()),
                file,
            })
        })
        .collect()
}
