//! Live control of a running `pace`: a FIFO of commands and SIGUSR1.
//!
//! `--control PATH` creates a FIFO there (or uses the FIFO already there)
//! and reads one command per line; a writer closing the FIFO ends its
//! last command, newline or not:
//!
//! ```text
//! pause DUR   hold every release for DUR (a later end wins over an earlier)
//! pause       hold every release until `resume`
//! resume      end a pause now
//! rate R      the shaper's new rate, from the next release on
//! burst N     the shaper's new burst (lines allowed to wait)
//! stats       one stats line on stderr
//! ```
//!
//! A pause moves the schedule by its length: lines continue after it at
//! the rate, never in a burst, and policies see no time pass while paused.
//! `rate` and `burst` retune the shaper that paces every line (`--rate`, or
//! a `key=none` shaper member with `--key`); see [`super::schedule::Schedule::retune`].
//! A command that cannot be read gets one line on stderr and changes
//! nothing: a typo must not end a long run. SIGUSR1 prints the stats line
//! too, as `dd` does, without stopping anything.

use super::Shared;
use super::adaptive::Adaptive;
use super::lanes::Lanes;
use super::schedule::{Lateness, Schedule, Timing};
use crate::clock::{Clock, MonotonicClock};
use crate::policy::PolicyConfig;
use crate::policy::Shaper;
use crate::policy::shaper::ShaperBound;
use crate::rate::{Rate, parse_duration, parse_rate};
use crate::time::Nanos;
use anyhow::{Context, bail};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One control command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Hold releases for a span, or until `resume` (`None`).
    Pause(Option<Nanos>),
    /// A command exited with status `code`, which `--pause-on` names:
    /// hold releases for `span`.
    PauseOn {
        span: Nanos,
        code: i32,
    },
    /// The API throttled: a command started at `started` exited `code`
    /// (`--throttle-on`), or a control line said so (both `None`).
    Throttle {
        started: Option<Nanos>,
        code: Option<i32>,
    },
    Resume,
    Rate(Rate),
    Burst(u64),
    Stats,
}

/// What `--control` accepts, for messages.
const VALID: &str = "pause [DUR], resume, rate R, burst N, throttle, stats";
/// The longest command line read; a longer one is refused whole.
const MAX_COMMAND: usize = 1024;

/// Parses one command line (surrounding blanks ignored).
pub fn parse(line: &str) -> Result<Command, String> {
    let line = line.trim();
    let (word, arg) = match line.split_once(char::is_whitespace) {
        Some((w, a)) => (w, Some(a.trim())),
        None => (line, None),
    };
    match (word, arg) {
        ("pause", None) => Ok(Command::Pause(None)),
        ("pause", Some(d)) => Ok(Command::Pause(Some(
            parse_duration(d).map_err(|e| e.to_string())?,
        ))),
        ("resume", None) => Ok(Command::Resume),
        ("rate", Some(r)) => parse_rate(r).map(Command::Rate).map_err(|e| e.to_string()),
        ("burst", Some(n)) => n.parse().map(Command::Burst).map_err(|_| {
            format!("invalid burst '{n}': give a whole number of lines, e.g. burst 10")
        }),
        ("stats", None) => Ok(Command::Stats),
        ("throttle", None) => Ok(Command::Throttle {
            started: None,
            code: None,
        }),
        ("resume" | "stats" | "throttle", Some(_)) => Err(format!("'{word}' takes no argument")),
        ("rate" | "burst", None) => Err(format!("'{word}' needs a value")),
        _ => Err(format!("unknown command '{line}'")),
    }
}

/// The control FIFO: created here (and removed at the end) or found here.
pub struct Fifo {
    path: PathBuf,
    created: bool,
    /// The private folder drip made for it (removed at the end too).
    dir: Option<PathBuf>,
}

impl Fifo {
    /// A FIFO of drip's own, in a new folder only this user can enter, for
    /// the commands to write to (`DRIP_CONTROL`) when no `--control` is
    /// given.
    pub fn private() -> anyhow::Result<Fifo> {
        use std::os::unix::fs::DirBuilderExt;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("drip-{}-{nanos:09}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| {
                format!(
                    "cannot create a folder for the commands' control FIFO in '{}'",
                    std::env::temp_dir().display()
                )
            })?;
        let mut fifo = Fifo::open(&dir.join("control"))?;
        fifo.dir = Some(dir);
        Ok(fifo)
    }

    /// Creates the FIFO at `path`, or checks that what is there is one.
    pub fn open(path: &Path) -> anyhow::Result<Fifo> {
        use std::os::unix::fs::FileTypeExt;
        let created = match std::fs::metadata(path) {
            Ok(m) if m.file_type().is_fifo() => false,
            Ok(_) => bail!(
                "--control '{}' exists and is not a FIFO; give a new path (drip creates the FIFO) or an existing FIFO",
                path.display()
            ),
            Err(_) => {
                make_fifo(path).with_context(|| {
                    format!("cannot create the control FIFO '{}'", path.display())
                })?;
                true
            }
        };
        let fifo = Fifo {
            path: path.to_path_buf(),
            created,
            dir: None,
        };
        // A non-blocking open for reading does not wait for a writer: it
        // checks now that the FIFO can be read. The reading thread opens it
        // again, waiting for each writer in turn.
        {
            use std::os::unix::fs::OpenOptionsExt;
            File::options()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
                .with_context(|| format!("cannot open the control FIFO '{}'", path.display()))?;
        }
        Ok(fifo)
    }

    /// The FIFO's path, for the reading thread.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Fifo {
    fn drop(&mut self) {
        use std::os::unix::fs::FileTypeExt;
        // Only a FIFO: a file a writer left in its place is theirs.
        let fifo = std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.file_type().is_fifo());
        if self.created && fifo {
            let _ = std::fs::remove_file(&self.path);
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Creates a FIFO at `path`, readable and writable by this user only.
fn make_fifo(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("the path contains a NUL byte"))?;
    // SAFETY: `c` is a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// How often the reading thread checks, while no writer comes, that the
/// FIFO is still at its path.
const WATCH_EVERY: i32 = 500;

/// Opens the FIFO at `path` for reading and waits for a writer; every
/// [`WATCH_EVERY`] ms meanwhile, checks that the path still names it. A
/// FIFO removed is said once and created again; anything else in its
/// place (a file a writer created) is said and ends live control (None).
fn wait_for_writer(path: &Path) -> Option<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
    let shown = path.display();
    loop {
        let file = match File::options()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !recreate(path) {
                    return None;
                }
                continue;
            }
            Err(e) => {
                crate::say!(
                    "drip: cannot open the control FIFO '{shown}' again: {e}; live control is off"
                );
                return None;
            }
        };
        let ours = file.metadata().ok().map(|m| (m.dev(), m.ino()));
        loop {
            let mut fd = libc::pollfd {
                fd: file.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let ready = unsafe { libc::poll(&mut fd, 1, WATCH_EVERY) };
            if ready > 0 {
                // A writer: reads wait for its bytes from here on.
                // SAFETY: fcntl on an open descriptor; no memory involved.
                unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, 0) };
                return Some(file);
            }
            let here = std::fs::symlink_metadata(path);
            match here {
                Ok(m) if Some((m.dev(), m.ino())) == ours => continue,
                Ok(m) if m.file_type().is_fifo() => break,
                Ok(_) => {
                    crate::say!(
                        "drip: the control FIFO '{shown}' was replaced by something that is not a FIFO (a writer that found it removed creates a plain file); live control is off: remove '{shown}' and restart, or give another --control PATH"
                    );
                    return None;
                }
                Err(_) if recreate(path) => break,
                Err(_) => return None,
            }
        }
    }
}

/// The FIFO was removed from `path`: says so once, and creates it again;
/// false when it cannot be (live control is then off).
fn recreate(path: &Path) -> bool {
    let shown = path.display();
    if let Err(e) = make_fifo(path) {
        crate::say!(
            "drip: the control FIFO '{shown}' was removed and cannot be created again: {e}; live control is off"
        );
        return false;
    }
    crate::say!("drip: the control FIFO '{shown}' was removed; created it again");
    true
}

/// Reads commands from the FIFO into the inbox until the process ends.
///
/// The FIFO is opened for reading only, so that a writer closing it ends
/// its last command even without a newline (`printf 'pause 30s' > ctl`),
/// and the next writer's bytes never join it; then it is opened again,
/// which waits for the next writer. While it waits, a FIFO removed from
/// its path is reported once and created again.
pub(super) fn read_loop(path: PathBuf, shared: &Arc<Shared>) {
    loop {
        let Some(file) = wait_for_writer(&path) else {
            return;
        };
        if !read_writer(BufReader::new(file), shared) {
            return;
        }
    }
}

/// Reads the commands of the writers that hold the FIFO open, until the
/// last one closes it. Returns false when reading failed.
fn read_writer(mut input: BufReader<File>, shared: &Arc<Shared>) -> bool {
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut input)
            .take(MAX_COMMAND as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => {
                crate::say!("drip: reading the control FIFO: {e}; live control is off");
                return false;
            }
        }
        if line.len() > MAX_COMMAND {
            crate::say!("drip: control: a command longer than {MAX_COMMAND} bytes was ignored");
            // Skip the rest of that line.
            let mut rest = Vec::new();
            let _ = input.read_until(b'\n', &mut rest);
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        match parse(&text) {
            Ok(cmd) => {
                shared.lock().control.push(cmd);
                shared.main_cv.notify_one();
            }
            Err(e) => crate::say!("drip: control: {e}; valid: {VALID}"),
        }
    }
}

/// Turns each SIGUSR1 into a stats request.
pub(super) fn start_usr1(shared: Arc<Shared>) -> anyhow::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGUSR1])
        .context("cannot install the SIGUSR1 handler")?;
    std::thread::Builder::new()
        .name("usr1".into())
        .spawn(move || {
            for _ in signals.forever() {
                shared.lock().control.push(Command::Stats);
                shared.main_cv.notify_one();
            }
        })
        .context("cannot start the SIGUSR1 thread")?;
    Ok(())
}

/// A pause in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    /// Real instant it began.
    pub since: Nanos,
    /// Real instant it ends by itself; `None`: at `resume`.
    pub until: Option<Nanos>,
}

/// The shaper `rate` and `burst` retune: which stack member, as it is now.
#[derive(Debug, Clone, Copy)]
pub struct Tunable {
    pub member: usize,
    pub shaper: Shaper,
}

/// Live control: the pause in force and the shaper `rate` and `burst`
/// commands retune.
pub(super) struct Control {
    pause: Option<Pause>,
    /// The shaper `rate` and `burst` retune, if any.
    tunable: Option<Tunable>,
    /// The retuned shaper, for the summary.
    retuned: Option<String>,
    /// The timing keeps half an interval between writes (a lone or global
    /// shaper), and what lateness does: for a retuned timing.
    gap_keeping: bool,
    lateness: Lateness,
    /// Pauses started (a pause extended while in force is one).
    pauses: u64,
    /// `--adaptive`: the rate the API's throttles leave, and the rate
    /// last applied to the shaper (lines per second).
    adaptive: Option<(Adaptive, f64)>,
    /// Removes a FIFO drip created when the run ends.
    _fifo: Option<Fifo>,
}

/// What control commands act on.
pub(super) struct Controlled<'a> {
    pub(super) schedule: &'a mut Schedule<Vec<u8>>,
    pub(super) lanes: Option<&'a mut Lanes>,
    /// The run shares its schedule (`--share`), which cannot be retuned.
    pub(super) shared: bool,
    pub(super) clock: &'a MonotonicClock,
}

impl Control {
    pub(super) fn new(
        tunable: Option<Tunable>,
        gap_keeping: bool,
        lateness: Lateness,
        fifo: Option<Fifo>,
    ) -> Control {
        Control {
            pause: None,
            tunable,
            retuned: None,
            gap_keeping,
            lateness,
            pauses: 0,
            adaptive: None,
            _fifo: fifo,
        }
    }

    /// The pause in force.
    pub(super) fn pause(&self) -> Option<Pause> {
        self.pause
    }

    /// Adapts the shaper's rate to the API's throttles (`--adaptive`).
    pub(super) fn adapt(&mut self) {
        if let Some(t) = self.tunable {
            let r = t.shaper.rate();
            let per_s = r.count() as f64 * 1e9 / r.per().0 as f64;
            self.adaptive = Some((Adaptive::new(per_s), per_s));
        }
    }

    /// `--adaptive`: a command succeeded (seen at `now`): the API let it
    /// through.
    pub(super) fn succeeded(&mut self, now: Nanos) {
        if let Some((a, _)) = self.adaptive.as_mut() {
            a.succeeded(now);
        }
    }

    /// Whether the adaptive rate is below `--rate` now: the loop then
    /// comes back to raise it. Reads the clock only with `--adaptive` (the
    /// main loop asks at every turn).
    pub(super) fn recovering(&self, clock: &MonotonicClock) -> bool {
        self.adaptive
            .as_ref()
            .is_some_and(|(a, _)| a.recovering(clock.now()))
    }

    /// `--adaptive`: the throttles so far and the rate now, for the summary.
    pub(super) fn adaptive_summary(&self, now: Nanos) -> Option<(u64, f64)> {
        self.adaptive
            .as_ref()
            .map(|(a, _)| (a.cuts(), a.rate_at(now)))
    }

    /// Pauses started so far, for the summary.
    pub(super) fn pauses(&self) -> u64 {
        self.pauses
    }

    /// The retuned shaper, for the summary.
    pub(super) fn retuned(&self) -> Option<&str> {
        self.retuned.as_deref()
    }

    /// Applies the commands that arrived at real instant `now` (`stats_line`
    /// renders the stats line, told whether a pause is in force) and ends
    /// a pause whose time has come. Returns the pause still in force, and
    /// whether the shaper was retuned (a line held for the old one's retry
    /// time is then offered again at once).
    pub(super) fn apply(
        &mut self,
        commands: Vec<Command>,
        now: Nanos,
        mut to: Controlled<'_>,
        stats_line: impl Fn(&Schedule<Vec<u8>>, bool) -> String,
    ) -> (Option<Pause>, bool) {
        let mut retuned = false;
        for cmd in commands {
            match cmd {
                Command::Pause(span) => self.pause_for(span, now, "a control command"),
                Command::PauseOn { span, code } => {
                    let why = format!("a command exited {code}, which --pause-on names");
                    self.pause_for(Some(span), now, &why);
                }
                Command::Resume => {
                    if self.pause.is_some() {
                        self.end_pause(now, to.schedule);
                        crate::say!("drip: control: resumed");
                    }
                }
                Command::Throttle { started, code } => {
                    retuned |= self.throttled(now, started, code, &mut to);
                }
                Command::Rate(rate) => retuned |= self.retune(Some(rate), None, &mut to),
                Command::Burst(n) => retuned |= self.retune(None, Some(n), &mut to),
                Command::Stats => {
                    let line = stats_line(to.schedule, self.pause.is_some());
                    let _ = std::io::stderr().write_all(line.as_bytes());
                }
            }
        }
        if let Some(Pause {
            until: Some(end), ..
        }) = self.pause
            && end <= now
        {
            self.end_pause(end, to.schedule);
        }
        retuned |= self.recover(now, &mut to);
        (self.pause, retuned)
    }

    /// A throttle signal at `now`: with `--adaptive` the rate is cut (one
    /// line says why, from what to what), unless the command was sent
    /// before the last cut.
    fn throttled(
        &mut self,
        now: Nanos,
        started: Option<Nanos>,
        code: Option<i32>,
        to: &mut Controlled<'_>,
    ) -> bool {
        let Some((a, _)) = self.adaptive.as_mut() else {
            crate::say!("drip: control: 'throttle' needs --adaptive; nothing changes");
            return false;
        };
        let Some((before, after, limit)) = a.throttled(now, started) else {
            return false;
        };
        let why = match code {
            Some(c) => format!("a command exited {c}, which --throttle-on names"),
            None => "a control line".to_string(),
        };
        crate::say!(
            "drip: throttled ({why}): rate {} -> {}; it recovers to {} within {}s, then probes up to --rate",
            per_s(before),
            per_s(after),
            per_s(limit),
            super::adaptive::RECOVERY_S
        );
        self.set_rate(after, to)
    }

    /// Raises the adaptive rate along its recovery curve (by 1 % or more).
    fn recover(&mut self, now: Nanos, to: &mut Controlled<'_>) -> bool {
        let Some((a, applied)) = &self.adaptive else {
            return false;
        };
        let want = a.rate_at(now);
        if (want - applied).abs() <= applied * 0.01 {
            return false;
        }
        self.set_rate(want, to)
    }

    /// Retunes the shaper to `per_s` lines per second (exactly `--rate`
    /// at the top).
    fn set_rate(&mut self, per_s: f64, to: &mut Controlled<'_>) -> bool {
        let Some(t) = self.tunable else {
            return false;
        };
        let Some((a, applied)) = self.adaptive.as_mut() else {
            return false;
        };
        *applied = per_s;
        let top = per_s >= a.target();
        let rate = match top {
            true => t.shaper.rate(),
            false => Rate::new(1, Nanos((1e9 / per_s).round().max(1.0) as u64))
                .unwrap_or(t.shaper.rate()),
        };
        self.apply_shaper(t.member, Shaper::new(rate, t.shaper.bound()), to);
        true
    }

    /// Puts `shaper` in place of stack member `member`, with its timing.
    fn apply_shaper(&self, member: usize, shaper: Shaper, to: &mut Controlled<'_>) {
        let timing = Timing::new(
            Some(super::interval_of(shaper.rate())),
            self.gap_keeping,
            self.lateness,
        );
        to.schedule
            .retune(member, PolicyConfig::Shaper(shaper).build(), timing);
    }

    /// Starts a pause at `now` for `span` (`None`: until `resume`), or
    /// extends the one in force; one line says why a pause starts, none
    /// that it was extended.
    fn pause_for(&mut self, span: Option<Nanos>, now: Nanos, why: &str) {
        let fresh = self.pause.is_none();
        let until = span.map(|d| now.saturating_add(d));
        let p = match self.pause {
            None => Pause { since: now, until },
            // The later end wins; an open pause stays open.
            Some(p) => Pause {
                since: p.since,
                until: match (p.until, until) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                },
            },
        };
        self.pause = Some(p);
        if !fresh {
            return;
        }
        self.pauses += 1;
        let how = match span {
            Some(d) => format!("for {}", humantime::format_duration(d.to_duration())),
            None => "until resume".to_string(),
        };
        crate::say!("drip: paused {how}: {why}");
    }

    /// Ends the pause at real instant `at`: the schedule moves by its length.
    fn end_pause(&mut self, at: Nanos, schedule: &mut Schedule<Vec<u8>>) {
        if let Some(p) = self.pause.take() {
            // Policy time stands still while paused, so retry instants
            // (policy time) stay right.
            schedule.pause(at.saturating_sub(p.since));
        }
    }

    /// Applies `rate`/`burst` to the shaper that paces every line.
    fn retune(&mut self, rate: Option<Rate>, burst: Option<u64>, to: &mut Controlled<'_>) -> bool {
        let Some(t) = self.tunable else {
            if to.shared {
                crate::say!(
                    "drip: control: rate and burst cannot change a shared schedule (--share): restart the sharing processes with the new rate"
                );
                return false;
            }
            crate::say!(
                "drip: control: rate and burst apply to the shaper that paces every line (--rate, or a key=none shaper member with --key); this run has none"
            );
            return false;
        };
        let rate = rate.unwrap_or(t.shaper.rate());
        let bound = match (burst, t.shaper.bound()) {
            (Some(b), _) => ShaperBound::Burst(b),
            (None, bound) => bound,
        };
        let shaper = Shaper::new(rate, bound);
        self.apply_shaper(t.member, shaper, to);
        self.tunable = Some(Tunable {
            member: t.member,
            shaper,
        });
        // What waited on the old policy is offered again now.
        let now = to.schedule.policy_time(to.clock.now());
        if let Some(lanes) = &mut to.lanes {
            lanes.retry_all_at(now);
        }
        let text = match bound {
            ShaperBound::Burst(b) => format!("rate={rate},burst={b}"),
            ShaperBound::MaxWait(w) => format!(
                "rate={rate},max-wait={}",
                humantime::format_duration(w.to_duration())
            ),
        };
        crate::say!("drip: control: shaper now {text}");
        self.retuned = Some(text);
        true
    }
}

/// A rate in lines per second, for messages (three significant digits).
fn per_s(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}/s")
    } else if r >= 10.0 {
        format!("{r:.1}/s")
    } else {
        format!("{r:.2}/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(
            parse("pause 30s\n"),
            Ok(Command::Pause(Some(Nanos::from_secs(30))))
        );
        assert_eq!(parse("  pause  "), Ok(Command::Pause(None)));
        assert_eq!(parse("resume"), Ok(Command::Resume));
        assert_eq!(
            parse("rate 2/s"),
            Ok(Command::Rate(parse_rate("2/s").unwrap()))
        );
        assert_eq!(parse("burst 10"), Ok(Command::Burst(10)));
        assert_eq!(parse("stats\r\n"), Ok(Command::Stats));
    }

    #[test]
    fn bad_commands_say_what_is_wrong() {
        for (line, want) in [
            ("pause soon", "invalid duration 'soon'"),
            ("rate fast", "invalid rate 'fast'"),
            ("rate", "'rate' needs a value"),
            ("burst -1", "invalid burst '-1'"),
            ("resume now", "'resume' takes no argument"),
            ("faster please", "unknown command 'faster please'"),
        ] {
            let e = parse(line).unwrap_err();
            assert!(e.contains(want), "{line}: {e}");
        }
    }
}
