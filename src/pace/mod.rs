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
//! (stdin into records), [`shaper_loop`] (decide, wait, hand over) and
//! [`end`] (account for every line, the summary, the exit status). The
//! state they work on is kept by its owners, one file each: [`intake`]
//! (lanes, the replay, a held line), [`control`] (pause and retune),
//! [`sharing`] (the shared schedule), [`writer`] (stdout), [`rejects`]
//! (the rejects file), [`journal`] (the records done, for `--journal`;
//! [`resume`] is its part of the run) and [`tally`] (the counts and the
//! progress line).

mod adaptive;
mod config;
pub mod control;
mod end;
mod fds;
mod intake;
mod jobs;
mod journal;
pub mod keys;
mod lanes;
mod launch;
mod passthru;
mod reader;
mod rejects;
mod relay;
mod replay;
mod resume;
pub mod schedule;
mod shaper_loop;
pub mod share;
mod sharing;
mod shell_script;
pub mod stamp;
mod start;
pub mod stats;
mod tally;
mod writer;

use crate::cli::{OnFull, PaceArgs, Stamp, StatsFormat};
use crate::clock::MonotonicClock;
use crate::policy::Spec;
use crate::rate::Rate;
use crate::time::Nanos;
use control::Control;
use intake::Intake;
use journal::Journal;
use keys::KeySource;
use reader::{Inbox, Record, Shared};
use rejects::Rejects;
use schedule::Schedule;
use share::{Plan, ShareConfig};
use sharing::Sharing;
use std::path::PathBuf;
use std::sync::Arc;
use tally::Tally;
use writer::Output;

/// Keys listed as the busiest in the summary.
const BUSIEST_KEYS: usize = 5;

/// Live control of a run: where control lines are read, and whether the
/// rate follows the API's throttles.
#[derive(Clone, Debug, Default)]
struct LiveConfig {
    /// `--control`: the FIFO's path.
    fifo: Option<PathBuf>,
    /// `--adaptive`.
    adaptive: bool,
}

/// `pace`'s configuration, validated once from the arguments.
pub struct Config {
    spec: Spec,
    /// The shaping interval (ns), when the policy has one.
    interval: Option<Nanos>,
    /// The rate or spec, for messages and the summary.
    target: String,
    on_full: OnFull,
    rejects: Option<PathBuf>,
    /// What is read: the files, and how records end.
    input: reader::InputConfig,
    stamp: Option<Stamp>,
    stats: Option<StatsFormat>,
    progress: bool,
    /// What a late record does to the schedule.
    lateness: schedule::Lateness,
    /// Per-key pacing, when a key is given.
    keyed: Option<KeyedConfig>,
    /// `--share`: the schedule and how this policy reserves in it.
    share: Option<(ShareConfig, Plan)>,
    /// Live control: the FIFO and the adaptive rate.
    control: LiveConfig,
    /// `--replay`: lines at their logged times.
    replay: Option<replay::ReplayConfig>,
    /// `-- COMMAND`: a command started per record instead of writing it.
    jobs: Option<jobs::JobsConfig>,
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

/// A running pace: the configuration, the clock and the inbox the other
/// threads fill, the schedule, and the parts that own the rest: what is
/// being decided ([`intake::Intake`]), live control ([`control::Control`]),
/// the shared schedule ([`sharing::Sharing`]), standard output
/// ([`writer::Output`]), the rejects file ([`rejects::Rejects`]) and the
/// counts with the progress line ([`tally::Tally`]).
struct Pacer {
    config: Config,
    clock: MonotonicClock,
    shared: Arc<Shared>,
    schedule: Schedule<Vec<u8>>,
    intake: Intake,
    control: Control,
    sharing: Sharing,
    output: Output,
    rejects: Rejects,
    tally: Tally,
    /// `-- COMMAND`: the commands started and running.
    jobs: Option<jobs::Jobs>,
    /// `--journal`: the records done, for a rerun to skip.
    journal: Option<Journal>,
}
