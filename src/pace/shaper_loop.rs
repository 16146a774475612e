//! The shaper loop, on the main thread: each turn it looks for a reason to
//! stop, applies control commands, decides the records that arrived (in
//! lanes per key, in log order for `--replay`, else in input order through
//! the schedule and the shared schedule), writes what is due, and sleeps
//! until the next deadline or news from the other threads.

use super::control::Controlled;
use super::lanes::Step;
use super::reader::{Guard, INBOX_BUDGET, Inbox, Record, Shared};
use super::schedule::Offer;
use super::sharing::Reservation;
use super::stats::Ending;
use super::tally::Counts;
use super::writer::{Stop, Wrote};
use super::{Pacer, Rejects, Tally};
use crate::cli::OnFull;
use crate::clock::Clock;
use crate::time::Nanos;
use anyhow::bail;
use std::sync::Arc;

impl Pacer {
    /// Runs until the input is done, or a signal, an error or a full
    /// backlog ends the run; then accounts for every line.
    pub(super) fn run(mut self) -> anyhow::Result<u8> {
        let shared = Arc::clone(&self.shared);
        let mut g = self.check_journal(shared.lock(), &shared)?;
        let ending = loop {
            self.note_journal(&g);
            self.collect_exits(&mut g);
            if let Some(ending) = stopped(&g) {
                break ending;
            }
            if !g.control.is_empty()
                || self.control.pause().is_some()
                || self.control.recovering(&self.clock)
            {
                let paused;
                (g, paused) = self.apply_control(g, &shared);
                if paused {
                    continue;
                }
            }
            let now = self.clock.now();
            // The rejects file failed: nothing more is decided, what was
            // admitted is sent on time, the rest is unsent.
            if !self.rejects.failed() {
                self.decide_lanes(&mut g, now)?;
                if !self
                    .intake
                    .decide_replay(&mut self.schedule, &mut g, &self.clock)
                {
                    continue;
                }
                g = self.decide_arrivals(g, &shared, now)?;
            }
            let then;
            (g, then) = self.hand_over(g, &shared, now);
            match then {
                Some(Then::Again) => continue,
                Some(Then::End(ending)) => break ending,
                None => {}
            }
            self.redraw();
            g = match self.next_wake() {
                None => shared.wait_main(g, None),
                Some(t) => {
                    let now = self.clock.now();
                    if t <= now {
                        continue;
                    }
                    shared.wait_main(g, Some(t.saturating_sub(now).to_duration()))
                }
            };
        };
        self.finish(g, ending)
    }

    /// Applies the control commands that arrived. True while a pause is in
    /// force: the loop has then waited for its end or for news, and
    /// decides and writes nothing this turn.
    fn apply_control<'a>(&mut self, mut g: Guard<'a>, shared: &'a Shared) -> (Guard<'a>, bool) {
        let commands = std::mem::take(&mut g.control);
        let lines_in = g.lines_in;
        let waiting = g.records.len() + self.schedule.backlog() + self.intake.waiting();
        let now = self.clock.now();
        let (tally, target) = (&self.tally, self.config.target.as_str());
        let to = Controlled {
            schedule: &mut self.schedule,
            lanes: self.intake.lanes_mut(),
            shared: self.sharing.is_shared(),
            clock: &self.clock,
        };
        let (pause, retuned) = self.control.apply(commands, now, to, |schedule, paused| {
            let counts = Counts {
                lines_in,
                waiting,
                paused,
            };
            tally.line(now, target, schedule.slip(), counts)
        });
        if retuned {
            // A held line is offered to the new shaper at once.
            let now = self.schedule.policy_time(self.clock.now());
            self.intake.retry_held_by(now);
        }
        let Some(p) = pause else {
            return (g, false);
        };
        // Paused: nothing is decided or written until it ends.
        let timeout = p
            .until
            .map(|t| t.saturating_sub(self.clock.now()).to_duration());
        (shared.wait_main(g, timeout), true)
    }

    /// Per key: the lanes decide what has arrived and what waited. Refused
    /// lines are counted and kept at once.
    fn decide_lanes(&mut self, g: &mut Inbox, now: Nanos) -> anyhow::Result<()> {
        let (tally, rejects) = (&mut self.tally, &mut self.rejects);
        let step = self
            .intake
            .decide_lanes(&mut self.schedule, g, now, |item| {
                refused(tally, rejects, item)
            });
        if step == Step::Never {
            bail!(
                "--policy '{}' can never admit a line; give it a burst or limit of at least 1",
                self.config.target
            );
        }
        Ok(())
    }

    /// Without keys or replay: offers the records that arrived to the
    /// schedule, in order, until one must wait.
    fn decide_arrivals<'a>(
        &mut self,
        mut g: Guard<'a>,
        shared: &'a Shared,
        now: Nanos,
    ) -> anyhow::Result<Guard<'a>> {
        if !self.intake.in_input_order() {
            return Ok(g);
        }
        while let Some(front) = g.records.front() {
            let at = match self.intake.held {
                Some(r) if self.schedule.real_time(r) > now => break,
                Some(r) => {
                    self.schedule.settle(r, now);
                    r
                }
                None => self.schedule.policy_time(front.arrived),
            };
            // Strict and shared: a slot is reserved only when its command
            // can start at it; one held while -j is full would start late,
            // closer to the next process's slot than the schedule allows.
            if self.sharing.is_shared() && self.schedule.strict() && !self.jobs_have_room() {
                break;
            }
            let reservation;
            (g, reservation) = self.sharing.reserve(g, shared, &self.schedule, &self.clock);
            let shared_decision = match reservation {
                Reservation::NotShared => None,
                Reservation::Decided(d) => Some(d),
                Reservation::Wait => break,
                Reservation::RetryAt(r) => {
                    self.intake.held = Some(r);
                    break;
                }
            };
            let rec = g.records.pop_front().expect("front exists");
            g.buffered -= rec.bytes.len();
            let offer = match shared_decision {
                None => self.schedule.offer(at, rec.arrived, rec.line, rec.bytes),
                Some(d) => self
                    .schedule
                    .offer_with(at, rec.arrived, rec.line, rec.bytes, d),
            };
            let (retry_at, item) = match offer {
                Offer::Queued { .. } => {
                    self.intake.held = None;
                    continue;
                }
                Offer::Full { retry_at, item } => (retry_at, item),
            };
            let back = Record {
                line: rec.line,
                arrived: rec.arrived,
                bytes: item,
            };
            let Some(r) = retry_at else {
                put_back(&mut g, back);
                bail!(
                    "--policy '{}' can never admit a line; give it a burst or limit of at least 1",
                    self.config.target
                );
            };
            if !self.refused_for_now(&mut g, back, r) {
                break;
            }
        }
        Ok(g)
    }

    /// A line the policy refused until policy instant `r`, as `--on-full`
    /// says: back in the inbox to wait for `r` (block), refused (drop), or
    /// the end of the run (fail). False when no more lines are offered now.
    fn refused_for_now(&mut self, g: &mut Inbox, back: Record, r: Nanos) -> bool {
        match self.config.on_full {
            OnFull::Block => {
                put_back(g, back);
                // Offered again at once when `r` has passed.
                self.intake.held = Some(r);
                true
            }
            OnFull::Drop => {
                refused(&mut self.tally, &mut self.rejects, &back.bytes);
                !self.rejects.failed()
            }
            OnFull::Fail => {
                // Its position in the input, records a journal skipped
                // counted.
                self.intake.full_at = Some(back.line);
                put_back(g, back);
                false
            }
        }
    }

    /// After deciding: ends the run when it must, and writes what is due.
    /// `None`: nothing to do until the next deadline.
    fn hand_over<'a>(
        &mut self,
        mut g: Guard<'a>,
        shared: &'a Shared,
        now: Nanos,
    ) -> (Guard<'a>, Option<Then>) {
        if self.sharing.failed() {
            return (g, Some(Then::End(Ending::ShareError)));
        }
        if self.start_failed() {
            return (g, Some(Then::End(Ending::CommandError)));
        }
        if self.rejects.failed() && !g.stop {
            // Read no more: lines read from now on could not be kept.
            g.stop = true;
            self.shared.reader_cv.notify_one();
        }
        if self.intake.full_at.is_some() {
            // What was due before the refusal still goes out.
            let wrote;
            (g, wrote) = self.write_due(g, shared, now);
            let ending = match wrote {
                Wrote::Short(Stop::Failed(e)) => {
                    self.output.failed(e);
                    Ending::WriteError
                }
                _ => Ending::Full,
            };
            return (g, Some(Then::End(ending)));
        }
        if g.reader_waiting && g.buffered < INBOX_BUDGET / 2 {
            self.shared.reader_cv.notify_one();
        }
        let wrote;
        (g, wrote) = self.write_due(g, shared, now);
        let then = match wrote {
            Wrote::Nothing => self.finished(&g).map(Then::End),
            Wrote::All => Some(Then::Again),
            Wrote::Short(Stop::Closed) => Some(Then::End(Ending::BrokenPipe)),
            Wrote::Short(Stop::Failed(e)) => {
                self.output.failed(e);
                Some(Then::End(Ending::WriteError))
            }
        };
        (g, then)
    }

    /// Writes the lines due at `now`, without holding the inbox's lock
    /// while writing.
    fn write_due<'a>(
        &mut self,
        g: Guard<'a>,
        shared: &'a Shared,
        now: Nanos,
    ) -> (Guard<'a>, Wrote) {
        if self.jobs.is_some() {
            return self.start_due(g, shared, now);
        }
        if !self.output.take_due(&mut self.schedule, now) {
            return (g, Wrote::Nothing);
        }
        drop(g);
        let stop = self.send();
        let g = shared.lock();
        (g, stop.map_or(Wrote::All, Wrote::Short))
    }

    /// Writes the lines due in one write and counts them. Lines that did
    /// not go out whole are counted as unsent: those after the last whole
    /// line written when downstream closed, stdout failed, or a stop signal
    /// came while downstream was not reading (then `None`; the main loop
    /// stops).
    fn send(&mut self) -> Option<Stop> {
        let w = self.output.write(&self.clock);
        self.tally.stats.partial_bytes = w.partial;
        let done = self.clock.now();
        self.schedule.wrote(done);
        // Strict: the schedule moves by how late the write ended (a line
        // is out once the pipe took it), so the next line keeps its
        // distance from this one.
        for p in self.output.sent(w.lines) {
            let slot = self.schedule.real_time(p.release);
            self.tally.stats.sent(p.arrived, slot, w.at);
            self.tally.bytes_done += p.item.len() as u64;
        }
        if let Some(p) = self
            .output
            .sent(w.lines)
            .last()
            .filter(|_| self.schedule.strict())
        {
            self.schedule.settle(p.release, done);
        }
        if let Some(j) = &mut self.journal {
            // A write that ended on a closed pipe: its lines may have gone
            // into the pipe after its reader left, so they are not done.
            let closed = matches!(w.stop, Some(Stop::Closed));
            for p in self.output.sent(w.lines).iter().filter(|_| !closed) {
                j.done(p.seq, &p.item);
            }
            j.commit();
        }
        self.redraw();
        for item in self.output.drain_unsent(w.lines) {
            unsent(&mut self.tally, &mut self.rejects, &item);
        }
        w.stop
    }

    /// With nothing written this turn: whether the run is over, because
    /// the rejects file failed and the backlog is gone, or because the
    /// input ended and every line is out.
    fn finished(&self, g: &Inbox) -> Option<Ending> {
        if self.rejects.failed() && self.schedule.backlog() == 0 {
            return Some(Ending::RejectsError);
        }
        let done = g.eof
            && g.records.is_empty()
            && self.schedule.backlog() == 0
            && self.intake.is_empty()
            && self.jobs_idle();
        done.then_some(Ending::Eof)
    }

    /// When to wake next (real time): the next write, or a line waiting
    /// in the intake. `None`: only news from another thread.
    fn next_wake(&self) -> Option<Nanos> {
        // At the --jobs cap, a command that ends is the news to wait for.
        let due = self.schedule.next_due().filter(|_| self.jobs_have_room());
        [
            due,
            self.intake.next_wake(&self.schedule),
            self.next_retry(),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// A line refused: counted, and in the rejects file at once (a kill -9
/// loses nothing refused).
pub(super) fn refused(tally: &mut Tally, rejects: &mut Rejects, item: &[u8]) {
    tally.stats.dropped += 1;
    rejects.keep(item, true);
}

/// A line read and not written: counted, and kept in the rejects file
/// when there is one.
pub(super) fn unsent(tally: &mut Tally, rejects: &mut Rejects, item: &[u8]) {
    tally.stats.unsent += 1;
    rejects.keep(item, false);
}

/// What the loop does after handing over.
enum Then {
    /// Go round again at once.
    Again,
    /// The run is over.
    End(Ending),
}

/// A stop signal or a read error ends the run.
fn stopped(g: &Inbox) -> Option<Ending> {
    if let Some(sig) = g.signal {
        return Some(match sig {
            signal_hook::consts::SIGTERM => Ending::Sigterm,
            signal_hook::consts::SIGHUP => Ending::Sighup,
            _ => Ending::Sigint,
        });
    }
    if g.out_closed {
        return Some(Ending::BrokenPipe);
    }
    g.read_error.is_some().then_some(Ending::ReadError)
}

/// Puts a refused record back at the front of the inbox.
fn put_back(g: &mut Inbox, rec: Record) {
    g.buffered += rec.bytes.len();
    g.records.push_front(rec);
}
