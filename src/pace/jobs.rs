//! `pace -- COMMAND`: each record starts one command at its slot, the
//! instant the command starts. The commands that run, at most `--jobs` at
//! once (at the cap the schedule waits, and moves on without a burst);
//! their exits (succeeded, failed: to `--failed`; retried in a fresh slot
//! after a backoff; "rate limited": the schedule pauses); and their counts
//! for `--stats`.
//!
//! A command runs directly (no shell), in its own process group with
//! stdin from /dev/null: Ctrl-C reaches drip alone, which stops starting
//! commands and waits for the running ones; a second signal sends their
//! groups SIGTERM. Identical records run identical commands, so a
//! record's retry count is kept by its bytes.

use super::passthru::{Exit, Printer};
use super::reader::Shared;
use super::relay::{Relay, Started};
use crate::cli::{Codes, RunArgs};
use crate::clock::MonotonicClock;
use crate::time::Nanos;
use crate::wait_stats::WaitStats;
use anyhow::Context;
use serde::Serialize;
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

/// What [`Jobs::spawn`] did with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Start {
    /// Its command started, for the first time.
    First,
    /// Its command started again (a retry).
    Retry,
    /// No command can take it (a NUL byte): failed for good.
    Unpassable,
}

/// How commands are run, checked once from the arguments.
#[derive(Clone)]
pub(super) struct JobsConfig {
    argv: Vec<OsString>,
    /// The program found on `PATH` once, so each start does not search
    /// it again (the command still sees `argv[0]` as given).
    program: PathBuf,
    /// Whether some argument holds `{}` (else the record is appended).
    placeholder: bool,
    jobs: usize,
    keep_order: bool,
    tag: bool,
    pub(super) failed: Option<PathBuf>,
    retry: u32,
    retry_on: Option<Codes>,
    retry_delay: Nanos,
    pause_on: Option<Codes>,
    pause_for: Nanos,
    /// Exit statuses that mean the API throttled (`--adaptive`).
    throttle_on: Option<Codes>,
    /// The control FIFO each command is told of (`DRIP_CONTROL`).
    pub(super) control: Option<PathBuf>,
}

impl JobsConfig {
    /// The command to run, when one follows `--`.
    pub(super) fn from_args(args: &RunArgs, keep_order: bool) -> Option<JobsConfig> {
        if args.command.is_empty() {
            return None;
        }
        let placeholder = args.command[1..]
            .iter()
            .any(|a| find(a.as_bytes(), b"{}").is_some());
        Some(JobsConfig {
            program: on_path(&args.command[0]),
            argv: args.command.clone(),
            placeholder,
            jobs: usize::try_from(args.jobs).unwrap_or(usize::MAX),
            keep_order,
            tag: args.tag,
            failed: args.failed.clone(),
            retry: args.retry,
            retry_on: args.retry_on.clone(),
            retry_delay: args.retry_delay,
            pause_on: args.pause_on.clone(),
            pause_for: args.pause_for,
            throttle_on: args.throttle_on.clone(),
            control: None,
        })
    }

    /// The command for one record (its separator, and a `\r` before a
    /// newline, taken off).
    fn command(&self, text: &[u8]) -> Command {
        let arg = OsStr::from_bytes(text);
        let mut cmd = Command::new(&self.program);
        cmd.arg0(&self.argv[0]);
        for a in &self.argv[1..] {
            if self.placeholder {
                cmd.arg(OsStr::from_bytes(&replace_all(a.as_bytes(), b"{}", text)));
            } else {
                cmd.arg(a);
            }
        }
        if !self.placeholder {
            cmd.arg(arg);
        }
        if let Some(path) = &self.control {
            cmd.env("DRIP_CONTROL", path);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        cmd
    }

    /// The pause `--pause-on` asks for after exit status `code`.
    fn pause_after(&self, code: i32) -> Option<Nanos> {
        self.pause_on
            .as_ref()
            .filter(|c| c.contains(code))
            .map(|_| self.pause_for)
    }
}

/// The counts `--stats` shows.
#[derive(Debug, Default, Clone, Serialize)]
pub struct JobCounts {
    pub started: u64,
    pub succeeded: u64,
    pub failed: u64,
    /// Failed records that no command could be given (a NUL byte).
    pub unpassable: u64,
    pub retried: u64,
    /// Commands still running when a signal stopped the run.
    pub running_at_stop: u64,
    pub duration_p50_ms: f64,
    pub duration_p99_ms: f64,
}

/// The commands of a run.
pub(super) struct Jobs {
    config: JobsConfig,
    separator: u8,
    printer: Arc<Printer>,
    /// The thread that passes the commands' output on and reaps them.
    relay: Relay,
    /// Process ids (and groups) of the commands running.
    running: HashSet<u32>,
    /// Commands started, in order (for `--keep-order`).
    started: u64,
    /// Per record bytes: the attempt numbers of its retries on their way.
    attempts: HashMap<Vec<u8>, VecDeque<u32>>,
    /// Retries waiting out their backoff: (real instant, position, record).
    backoff: Vec<(Nanos, u64, Vec<u8>)>,
    failed_file: Option<BufWriter<File>>,
    counts: JobCounts,
    durations: WaitStats,
    /// SIGTERM was sent to the running commands.
    terminated: bool,
    /// Why a command could not be started (the run then stops).
    pub(super) error: Option<anyhow::Error>,
}

impl Jobs {
    /// Ready to run commands printing on `stdout` and `stderr`; their
    /// exits are reported into `shared`, their durations read on `clock`.
    pub(super) fn start(
        mut config: JobsConfig,
        separator: u8,
        (stdout, stderr): (File, File),
        shared: Arc<Shared>,
        clock: MonotonicClock,
    ) -> anyhow::Result<Jobs> {
        let failed_file = match &config.failed {
            Some(p) => Some(BufWriter::new(File::create(p).with_context(|| {
                format!("cannot create the --failed file '{}'", p.display())
            })?)),
            None => None,
        };
        if let Some(limit) = super::fds::raise_for(config.jobs) {
            let fit = super::fds::jobs_that_fit(config.jobs, limit);
            if fit < config.jobs {
                crate::say!(
                    "drip: -j {} is more than the open-file limit allows ({limit}, two a command): at most {fit} run at once",
                    config.jobs
                );
                config.jobs = fit;
            }
        }
        let printer = Arc::new(Printer::new(stdout, stderr, config.keep_order));
        let relay = Relay::start(Arc::clone(&printer), shared, clock, config.jobs)
            .context("cannot start the thread that passes the commands' output on")?;
        Ok(Jobs {
            printer,
            relay,
            config,
            separator,
            running: HashSet::new(),
            started: 0,
            attempts: HashMap::new(),
            backoff: Vec::new(),
            failed_file,
            counts: JobCounts::default(),
            durations: WaitStats::new(),
            terminated: false,
            error: None,
        })
    }

    /// Out of descriptors while `running` commands run: at most as many
    /// run at once from now on (one at least, with one note), and `record`
    /// (input position `line`) starts again once one ends.
    pub(super) fn out_of_files(&mut self, record: Vec<u8>, line: u64, now: Nanos) {
        let fit = self.running.len().max(1);
        if fit < self.config.jobs {
            crate::say!(
                "drip: out of open files with {fit} commands running: at most {fit} run at once from now on"
            );
            self.config.jobs = fit;
        }
        self.backoff.push((now, line, record));
    }

    /// Whether exit status `code` is a throttle (`--throttle-on`).
    pub(super) fn throttles(&self, code: i32) -> bool {
        self.config
            .throttle_on
            .as_ref()
            .is_some_and(|c| c.contains(code))
    }

    /// Commands that may start now.
    pub(super) fn room(&self) -> usize {
        self.config.jobs.saturating_sub(self.running.len())
    }

    pub(super) fn running(&self) -> usize {
        self.running.len()
    }

    /// Whether nothing runs and no retry waits.
    pub(super) fn idle(&self) -> bool {
        self.running.is_empty() && self.backoff.is_empty()
    }

    /// Starts the command of `record` (input position `line`) at real
    /// instant `at`; the relay thread passes its output on and reports its
    /// exit. An error: the command cannot be run at all.
    pub(super) fn spawn(&mut self, record: Vec<u8>, line: u64, at: Nanos) -> anyhow::Result<Start> {
        let attempt = self.take_attempt(&record).unwrap_or(0);
        let text = strip(&record, self.separator).to_vec();
        // No argument can carry a NUL byte: the record fails, the run goes on.
        if memchr::memchr(0, &text).is_some() {
            if self.counts.unpassable == 0 {
                crate::say!(
                    "drip: the record on input line {line} holds a NUL byte, which no command argument can carry: it is failed{}, and the run goes on (read such input with -0 if NUL ends its records)",
                    if self.failed_file.is_some() {
                        " and kept in --failed"
                    } else {
                        ""
                    }
                );
            }
            self.counts.unpassable += 1;
            self.fail(&record);
            return Ok(Start::Unpassable);
        }
        let child = self.config.command(&text).spawn().with_context(|| {
            format!(
                "cannot run '{}'",
                crate::quote::shown(self.config.argv[0].as_bytes())
            )
        })?;
        self.running.insert(child.id());
        let index = self.started;
        self.started += 1;
        if attempt == 0 {
            self.counts.started += 1;
        } else {
            self.counts.retried += 1;
            self.attempts.entry(record.clone()).or_default();
            self.attempts
                .get_mut(&record)
                .expect("just made")
                .push_front(attempt);
        }
        let tag = self.config.tag.then(|| {
            let mut t = text;
            t.push(b'\t');
            t
        });
        self.relay.watch(Started {
            child,
            index,
            tag,
            record,
            line,
            at,
        });
        Ok(if attempt == 0 {
            Start::First
        } else {
            Start::Retry
        })
    }

    /// A command could not start: the run stops with `e`; with
    /// `--keep-order` it holds no one up.
    pub(super) fn not_started(&mut self, e: anyhow::Error) {
        self.error = Some(e);
        let _ = self.printer.skip(self.started);
        self.started += 1;
    }

    /// The attempt number a record's next run is, when it is a retry.
    fn take_attempt(&mut self, record: &[u8]) -> Option<u32> {
        let q = self.attempts.get_mut(record)?;
        let a = q.pop_front();
        if q.is_empty() {
            self.attempts.remove(record);
        }
        a
    }

    /// A command ended at real instant `now`: counted, and its record
    /// retried (after its backoff), failed for good (in `--failed`), or
    /// done. `stopping`: no retry is started any more. Returns the pause
    /// `--pause-on` asks for.
    pub(super) fn exited(&mut self, exit: Exit, now: Nanos, stopping: bool) -> Option<Nanos> {
        self.running.remove(&exit.pid);
        self.durations.record(exit.took.0);
        let attempt = self.take_attempt(&exit.record).unwrap_or(0);
        let pause = self.config.pause_after(exit.code);
        if exit.code == 0 {
            self.counts.succeeded += 1;
            return pause;
        }
        let retried = self
            .config
            .retry_on
            .as_ref()
            .is_none_or(|c| c.contains(exit.code));
        if retried && attempt < self.config.retry && !stopping {
            let delay = self
                .config
                .retry_delay
                .0
                .saturating_mul(1u64 << attempt.min(40));
            self.backoff.push((
                now.saturating_add(Nanos(delay)),
                exit.line,
                exit.record.clone(),
            ));
            self.attempts
                .entry(exit.record)
                .or_default()
                .push_back(attempt + 1);
            return pause;
        }
        self.fail(&exit.record);
        pause
    }

    /// Counts a record as failed for good and keeps it in `--failed`.
    fn fail(&mut self, record: &[u8]) {
        self.counts.failed += 1;
        if let Some(w) = &mut self.failed_file
            && let Err(e) = w.write_all(record).and_then(|()| w.flush())
        {
            crate::say!("drip: cannot write the --failed file: {e}; it is given up");
            self.failed_file = None;
        }
    }

    /// The retries whose backoff ended by `now`, in the order they failed:
    /// (input position, record).
    pub(super) fn due_retries(&mut self, now: Nanos) -> Vec<(u64, Vec<u8>)> {
        let (due, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut self.backoff)
            .into_iter()
            .partition(|(t, _, _)| *t <= now);
        self.backoff = wait;
        due.into_iter().map(|(_, line, r)| (line, r)).collect()
    }

    /// When the next retry's backoff ends.
    pub(super) fn next_retry(&self) -> Option<Nanos> {
        self.backoff.iter().map(|(t, _, _)| *t).min()
    }

    /// A record not started when the run stopped: true when it was a
    /// retry, which then counts as failed (in `--failed`), not unsent.
    pub(super) fn left_over(&mut self, record: &[u8]) -> bool {
        if self.take_attempt(record).is_some() {
            self.fail(record);
            return true;
        }
        false
    }

    /// The run stopped: retries waiting out their backoff fail for good.
    pub(super) fn give_up_retries(&mut self) {
        for (_, _, r) in std::mem::take(&mut self.backoff) {
            self.take_attempt(&r);
            self.fail(&r);
        }
    }

    /// Notes how many commands run as the run stops.
    pub(super) fn stopping(&mut self) {
        self.counts.running_at_stop = self.running.len() as u64;
    }

    /// Sends SIGTERM to every running command's process group, once.
    pub(super) fn terminate(&mut self) {
        if self.terminated {
            return;
        }
        self.terminated = true;
        for &pid in &self.running {
            if let Ok(pid) = i32::try_from(pid) {
                // SAFETY: kill(2) with a process group id; no memory involved.
                unsafe { libc::kill(-pid, libc::SIGTERM) };
            }
        }
    }

    /// Whether any command failed for good.
    pub(super) fn any_failed(&self) -> bool {
        self.counts.failed > 0
    }

    /// The counts, with the durations' percentiles.
    /// Commands failed for good and retries started so far (cheap: for
    /// the progress line).
    pub(super) fn failed_and_retried(&self) -> (u64, u64) {
        (self.counts.failed, self.counts.retried)
    }

    pub(super) fn counts(&self) -> JobCounts {
        let p = self.durations.clone().percentiles();
        JobCounts {
            duration_p50_ms: p.p50 as f64 / 1e6,
            duration_p99_ms: p.p99 as f64 / 1e6,
            ..self.counts.clone()
        }
    }
}

/// Where `program` is found on `PATH` as execvp(3) looks for it: the
/// first executable file of that name; itself when it names a path, or
/// when it is not found (starting it then says why).
fn on_path(program: &OsStr) -> PathBuf {
    let found = (!program.as_bytes().contains(&b'/'))
        .then(|| std::env::var_os("PATH"))
        .flatten()
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(program))
                .find(|p| executable(p))
        });
    found.unwrap_or_else(|| PathBuf::from(program))
}

/// Whether `path` is a file this process may execute.
fn executable(path: &std::path::Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) reads a NUL-terminated path and touches nothing else.
    let may = unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0;
    may && std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// The record without its separator (and a `\r` before a newline).
fn strip(record: &[u8], sep: u8) -> &[u8] {
    let r = record.strip_suffix(&[sep]).unwrap_or(record);
    if sep == b'\n' {
        r.strip_suffix(b"\r").unwrap_or(r)
    } else {
        r
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `hay` with every `needle` replaced by `with`.
fn replace_all(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len() + with.len());
    let mut rest = hay;
    while let Some(i) = find(rest, needle) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(with);
        rest = &rest[i + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_looked_up_on_path_once() {
        let sh = on_path(OsStr::new("sh"));
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        assert_eq!(on_path(OsStr::new("./x")), PathBuf::from("./x"));
        let none = OsStr::new("drip-no-such-program");
        assert_eq!(on_path(none), PathBuf::from(none));
    }

    #[test]
    fn braces_are_replaced_everywhere() {
        assert_eq!(replace_all(b"a{}b{}", b"{}", b"X"), b"aXbX");
        assert_eq!(replace_all(b"none", b"{}", b"X"), b"none");
    }

    #[test]
    fn a_record_loses_its_separator_only() {
        assert_eq!(strip(b"a b\r\n", b'\n'), b"a b");
        assert_eq!(strip(b"a\n", 0), b"a\n");
        assert_eq!(strip(b"a\0", 0), b"a");
        assert_eq!(strip(b"last", b'\n'), b"last");
    }
}
