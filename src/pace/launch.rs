//! The shaper loop's side of `pace -- COMMAND`: the records due start
//! their commands (as many as `--jobs` leaves room for; the others wait in
//! the schedule, which re-bases after the stall as for a slow stdout),
//! the commands that ended are accounted for, retries go back to the front
//! of the inbox once their backoff is over, and at the end the running
//! commands are waited for.

use super::Pacer;
use super::control::Command;
use super::jobs::Start;
use super::reader::{Guard, Record, Shared};
use super::writer::Wrote;
use crate::clock::Clock;
use crate::time::Nanos;

impl Pacer {
    /// Accounts for the commands that ended, and puts the retries whose
    /// backoff is over at the front of the inbox (each takes a fresh slot).
    pub(super) fn collect_exits(&mut self, g: &mut Guard<'_>) {
        let Some(jobs) = &mut self.jobs else {
            return;
        };
        let now = self.clock.now();
        let stopping = g.signal.is_some();
        for exit in std::mem::take(&mut g.exits) {
            if exit.closed {
                g.out_closed = true;
            }
            if exit.code == 0
                && let Some(j) = &mut self.journal
            {
                j.done(exit.line, &exit.record);
            }
            let code = exit.code;
            let started = now.saturating_sub(exit.took);
            if code == 0 {
                self.control.succeeded(now);
            }
            if jobs.throttles(code) {
                let started = Some(started);
                g.control.push(Command::Throttle {
                    started,
                    code: Some(code),
                });
            }
            if let Some(span) = jobs.exited(exit, now, stopping) {
                g.control.push(Command::PauseOn { span, code });
            }
        }
        if let Some(j) = &mut self.journal {
            j.commit();
        }
        for (line, record) in jobs.due_retries(now).into_iter().rev() {
            g.buffered += record.len();
            g.records.push_front(Record {
                line,
                arrived: now,
                bytes: record,
            });
        }
    }

    /// Starts the commands of the records due at `now`, as many as there
    /// is room for, without holding the inbox's lock meanwhile.
    pub(super) fn start_due<'a>(
        &mut self,
        g: Guard<'a>,
        shared: &'a Shared,
        now: Nanos,
    ) -> (Guard<'a>, Wrote) {
        let Some(jobs) = &mut self.jobs else {
            return (g, Wrote::Nothing);
        };
        let room = jobs.room();
        if room == 0 || !self.output.take_due_upto(&mut self.schedule, now, room) {
            return (g, Wrote::Nothing);
        }
        drop(g);
        let mut due = self.output.take_pending().into_iter();
        let mut last_start = now;
        while let Some(p) = due.next() {
            let at = self.clock.now();
            last_start = at;
            let slot = self.schedule.real_time(p.release);
            // Strict: the schedule moves by how late this start is, so the
            // next start keeps its distance from this one.
            if self.schedule.strict() {
                self.schedule.settle(p.release, at);
            }
            let len = p.item.len() as u64;
            // Kept until the command has started: one that cannot start
            // leaves its record unsent, as the records after it.
            match jobs.spawn(p.item.clone(), p.seq, at) {
                Ok(Start::First) => {
                    self.tally.stats.sent(p.arrived, slot, at);
                    self.tally.bytes_done += len;
                }
                Ok(Start::Retry) => {}
                // It would fail the same on every rerun: done for the journal.
                Ok(Start::Unpassable) => {
                    if let Some(j) = &mut self.journal {
                        j.done(p.seq, &p.item);
                    }
                }
                // Out of descriptors: this record and the rest start again
                // once a command ends, fewer at once.
                Err(e) if super::fds::out_of_files(&e) => {
                    jobs.out_of_files(p.item, p.seq, at);
                    for p in due.by_ref() {
                        jobs.out_of_files(p.item, p.seq, at);
                    }
                    break;
                }
                Err(e) => {
                    jobs.not_started(e);
                    super::shaper_loop::unsent(&mut self.tally, &mut self.rejects, &p.item);
                    break;
                }
            }
        }
        // What a failed start left is unsent.
        for p in due {
            super::shaper_loop::unsent(&mut self.tally, &mut self.rejects, &p.item);
        }
        // A command starts when it is spawned: the gap to the next start
        // counts from there, not from when the spawn returned (which
        // waits for the program to be loaded), so starts do not fall
        // behind by the time each spawn takes.
        self.schedule.wrote(last_start);
        self.redraw();
        (shared.lock(), Wrote::All)
    }

    /// Redraws the progress line, with the commands running, failed and
    /// retried, and the adaptive rate now.
    pub(super) fn redraw(&mut self) {
        if !self.tally.shown() {
            return;
        }
        let mut more = String::new();
        if let Some(j) = &self.jobs {
            let (failed, retried) = j.failed_and_retried();
            more = format!(
                ", {} running, {failed} failed, {retried} retried",
                j.running()
            );
        }
        if let Some((_, rate)) = self.control.adaptive_summary(self.clock.now()) {
            more.push_str(&format!(", adaptive {rate:.1}/s"));
        }
        self.tally
            .update(&self.clock, self.schedule.backlog(), &more);
    }

    /// Whether the commands are all done (none runs, no retry waits).
    pub(super) fn jobs_idle(&self) -> bool {
        self.jobs.as_ref().is_none_or(|j| j.idle())
    }

    /// Whether a record due could start now.
    pub(super) fn jobs_have_room(&self) -> bool {
        self.jobs.as_ref().is_none_or(|j| j.room() > 0)
    }

    /// When the next retry's backoff ends.
    pub(super) fn next_retry(&self) -> Option<Nanos> {
        self.jobs.as_ref().and_then(|j| j.next_retry())
    }

    /// At the end of the run: waits for the running commands (a second
    /// signal sends them SIGTERM); retries not yet started fail for good.
    pub(super) fn wait_for_jobs<'a>(&mut self, mut g: Guard<'a>, shared: &'a Shared) -> Guard<'a> {
        let Some(jobs) = &mut self.jobs else {
            return g;
        };
        jobs.stopping();
        loop {
            let now = self.clock.now();
            for exit in std::mem::take(&mut g.exits) {
                if exit.code == 0
                    && let Some(j) = &mut self.journal
                {
                    j.done(exit.line, &exit.record);
                }
                jobs.exited(exit, now, true);
            }
            if let Some(j) = &mut self.journal {
                j.commit();
            }
            if jobs.running() == 0 {
                break;
            }
            if g.more_signals > 0 {
                jobs.terminate();
            }
            g = shared.wait_main(g, None);
        }
        jobs.give_up_retries();
        g
    }

    /// Why the commands could not go on: one could not be started.
    pub(super) fn start_failed(&self) -> bool {
        self.jobs.as_ref().is_some_and(|j| j.error.is_some())
    }

    /// A record read and not started at the end: a retry on its way
    /// fails for good, any other is unsent.
    pub(super) fn left_over(&mut self, item: &[u8]) -> bool {
        self.jobs.as_mut().is_some_and(|j| j.left_over(item))
    }
}
