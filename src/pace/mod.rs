//! `drip pace`: stdin records to stdout through a policy on a monotonic clock.
//!
//! Contract:
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
//! while the inbox holds [`reader::INBOX_BUDGET`] bytes of undecided
//! records, so a blocked pacer blocks its upstream); the main thread
//! decides, waits and writes; a signal thread turns SIGINT/SIGTERM/SIGHUP
//! into a stop. Waits are condition-variable waits until the next deadline,
//! or without a timeout when nothing is due: no wake-ups while idle.
//!
//! The run reads as its steps, one file each: [`config`] (the arguments,
//! checked once), [`start`] (files, schedule and threads), [`reader`]
//! (stdin into records), [`shaper_loop`] (decide, wait, hand over),
//! [`writer`] (stdout and the rejects file) and [`end`] (account for every
//! line, the summary, the exit status).

mod config;
pub mod control;
mod end;
pub mod keys;
mod lanes;
mod reader;
mod replay;
pub mod schedule;
mod shaper_loop;
pub mod share;
pub mod stamp;
mod start;
pub mod stats;
mod writer;

use crate::cli::{OnFull, PaceArgs, Stamp, StatsFormat};
use crate::clock::MonotonicClock;
use crate::policy::Spec;
use crate::rate::Rate;
use crate::time::Nanos;
use indicatif::ProgressBar;
use keys::KeySource;
use lanes::Lanes;
use reader::{Inbox, Record, Shared};
use schedule::{Pending, Schedule};
use share::{Plan, ShareConfig, Sharer};
use stats::Stats;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::PathBuf;
use std::sync::Arc;

/// Keys listed as the busiest in the summary.
const BUSIEST_KEYS: usize = 5;

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

/// Runs `pace` and returns the exit status.
pub fn run(args: PaceArgs) -> anyhow::Result<u8> {
    let config = Config::from_args(args)?;
    Pacer::start(config)?.run()
}

/// A running pace: the configuration, the schedule and what waits in it,
/// the output ends, and the counts so far.
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
    /// The shared schedule, with `--share`.
    share: Option<Sharer>,
    /// A refused line's retry instant (policy time): it is offered again then.
    held: Option<Nanos>,
    /// The input line refused under `--on-full fail`.
    full_at: Option<u64>,
    /// Why the shared schedule was given up.
    share_error: Option<anyhow::Error>,
    /// Why standard output failed.
    write_error: Option<io::Error>,
    /// Lines due in this wake-up, and the bytes of their one write.
    due: Vec<Pending<Vec<u8>>>,
    batch: Vec<u8>,
    /// Lines lanes refused in this turn.
    dropped: Vec<Vec<u8>>,
}
