//! The shaper loop, on the main thread: each turn it looks for a reason to
//! stop, applies control commands, decides the records that arrived (in
//! lanes per key, in log order for `--replay`, else in input order through
//! the schedule and the shared schedule), writes what is due, and sleeps
//! until the next deadline or news from the other threads.

use super::lanes::{Lanes, Step};
use super::reader::{Guard, INBOX_BUDGET, Inbox, Record, Shared};
use super::schedule::Offer;
use super::share::Answer;
use super::stats::Ending;
use super::writer::{Stop, Wrote};
use super::{Pacer, replay};
use crate::cli::OnFull;
use crate::clock::Clock;
use crate::policy::Decision;
use crate::time::Nanos;
use anyhow::bail;
use std::io;
use std::sync::Arc;

/// What the shared schedule said about the next line.
enum Reservation {
    /// There is no shared schedule: the local policy decides.
    NotShared,
    /// Its decision.
    Decided(Decision),
    /// The line waits: for the line before it to be written, for the
    /// schedule to be reachable again, or for good (it failed).
    Wait,
}

impl Pacer {
    /// Runs until the input is done, or a signal, an error or a full
    /// backlog ends the run; then accounts for every line.
    pub(super) fn run(mut self) -> anyhow::Result<u8> {
        let shared = Arc::clone(&self.shared);
        let mut g = shared.lock();
        let ending = loop {
            if let Some(ending) = stopped(&g) {
                break ending;
            }
            if !g.control.is_empty() || self.pause.is_some() {
                let paused;
                (g, paused) = self.apply_control(g, &shared);
                if paused {
                    continue;
                }
            }
            let now = self.clock.now();
            // The rejects file failed: nothing more is decided, what was
            // admitted is sent on time, the rest is unsent.
            if self.rejects_error.is_none() {
                self.decide_lanes(&mut g, now)?;
                if !self.decide_replay(&mut g) {
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
            self.update_progress();
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
        let waiting = g.records.len()
            + self.schedule.backlog()
            + self.lanes.as_ref().map_or(0, Lanes::waiting)
            + self.replay.as_ref().map_or(0, replay::Replay::waiting);
        let (pause, retuned) = self.control(commands, g.lines_in, waiting);
        if retuned {
            // A held line is offered to the new shaper at once.
            let now = self.schedule.policy_time(self.clock.now());
            self.held = self.held.map(|h| h.min(now));
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
        let Some(lanes) = &mut self.lanes else {
            return Ok(());
        };
        let mut dropped = std::mem::take(&mut self.dropped);
        let step = lanes.decide(&mut self.schedule, g, now, &mut dropped);
        for item in dropped.drain(..) {
            self.stats.dropped += 1;
            // In the file at once: a kill -9 loses nothing refused.
            self.keep(&item, true);
        }
        self.dropped = dropped;
        match step {
            Step::Done => {}
            Step::Full { line } => self.full_at = Some(line),
            Step::Never => bail!(
                "--policy '{}' can never admit a line; give it a burst or limit of at least 1",
                self.config.target
            ),
        }
        Ok(())
    }

    /// `--replay`: lines go into the schedule at their logged times. False
    /// when the log cannot be replayed further; that is then the inbox's
    /// read error, so what was read and not written is unsent (and in
    /// `--rejects`).
    fn decide_replay(&mut self, g: &mut Inbox) -> bool {
        if let Some(replay) = &mut self.replay
            && let Err(e) = replay.decide(&mut self.schedule, g, || self.clock.now())
        {
            g.read_error = Some(io::Error::new(io::ErrorKind::InvalidData, format!("{e:#}")));
            return false;
        }
        true
    }

    /// Without keys or replay: offers the records that arrived to the
    /// schedule, in order, until one must wait.
    fn decide_arrivals<'a>(
        &mut self,
        mut g: Guard<'a>,
        shared: &'a Shared,
        now: Nanos,
    ) -> anyhow::Result<Guard<'a>> {
        if self.lanes.is_some() || self.replay.is_some() {
            return Ok(g);
        }
        while let Some(front) = g.records.front() {
            let at = match self.held {
                Some(r) if self.schedule.real_time(r) > now => break,
                Some(r) => {
                    self.schedule.settle(r, now);
                    r
                }
                None => self.schedule.policy_time(front.arrived),
            };
            let reservation;
            (g, reservation) = self.reserve_shared(g, shared);
            let shared_decision = match reservation {
                Reservation::NotShared => None,
                Reservation::Decided(d) => Some(d),
                Reservation::Wait => break,
            };
            let rec = g.records.pop_front().expect("front exists");
            g.buffered -= rec.bytes.len();
            let offer = match shared_decision {
                None => self.schedule.offer(at, rec.arrived, rec.bytes),
                Some(d) => self.schedule.offer_with(at, rec.arrived, rec.bytes, d),
            };
            let (retry_at, item) = match offer {
                Offer::Queued { .. } => {
                    self.held = None;
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
            match self.config.on_full {
                OnFull::Block => {
                    put_back(&mut g, back);
                    // Offered again at once when `r` has passed.
                    self.held = Some(r);
                }
                OnFull::Drop => {
                    self.stats.dropped += 1;
                    // In the file at once: a kill -9 loses nothing refused.
                    self.keep(&back.bytes, true);
                    if self.rejects_error.is_some() {
                        break;
                    }
                }
                OnFull::Fail => {
                    put_back(&mut g, back);
                    self.full_at = Some(
                        self.stats.lines_out
                            + self.stats.dropped
                            + self.schedule.backlog() as u64
                            + 1,
                    );
                    break;
                }
            }
        }
        Ok(g)
    }

    /// Asks the shared schedule, with `--share`, for the next line's slot,
    /// without holding the inbox's lock while it answers. One reservation
    /// at a time: the next line reserves once this one is written.
    fn reserve_shared<'a>(&mut self, g: Guard<'a>, shared: &'a Shared) -> (Guard<'a>, Reservation) {
        let Some(sharer) = &mut self.share else {
            return (g, Reservation::NotShared);
        };
        if self.schedule.backlog() > 0 {
            return (g, Reservation::Wait);
        }
        drop(g);
        let answer = sharer.reserve(self.clock.now());
        let g = shared.lock();
        let replied = self.clock.now();
        let at = |wait| self.schedule.policy_time(replied.saturating_add(wait));
        let reservation = match answer {
            Err(e) => {
                self.share_error = Some(e);
                Reservation::Wait
            }
            Ok(Answer::Unreachable { retry_after }) => {
                self.held = Some(at(retry_after));
                Reservation::Wait
            }
            Ok(Answer::Go { delay }) => {
                Reservation::Decided(Decision::Admit { release: at(delay) })
            }
            Ok(Answer::Refused { retry_after }) => Reservation::Decided(Decision::Refuse {
                retry_at: Some(at(retry_after)),
            }),
        };
        (g, reservation)
    }

    /// After deciding: ends the run when it must, and writes what is due.
    /// `None`: nothing to do until the next deadline.
    fn hand_over<'a>(
        &mut self,
        mut g: Guard<'a>,
        shared: &'a Shared,
        now: Nanos,
    ) -> (Guard<'a>, Option<Then>) {
        if self.share_error.is_some() {
            return (g, Some(Then::End(Ending::ShareError)));
        }
        if self.rejects_error.is_some() && !g.stop {
            // Read no more: lines read from now on could not be kept.
            g.stop = true;
            self.shared.reader_cv.notify_one();
        }
        if self.full_at.is_some() {
            // What was due before the refusal still goes out.
            let wrote;
            (g, wrote) = self.write_due(g, shared, now);
            let ending = match wrote {
                Wrote::Short(Stop::Failed(e)) => {
                    self.write_error = Some(e);
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
                self.write_error = Some(e);
                Some(Then::End(Ending::WriteError))
            }
        };
        (g, then)
    }

    /// With nothing written this turn: whether the run is over, because
    /// the rejects file failed and the backlog is gone, or because the
    /// input ended and every line is out.
    fn finished(&self, g: &Inbox) -> Option<Ending> {
        if self.rejects_error.is_some() && self.schedule.backlog() == 0 {
            return Some(Ending::RejectsError);
        }
        let done = g.eof
            && g.records.is_empty()
            && self.schedule.backlog() == 0
            && self.lanes.as_ref().is_none_or(Lanes::is_empty)
            && self.replay.as_ref().is_none_or(|r| r.waiting() == 0);
        done.then_some(Ending::Eof)
    }

    /// When to wake next (real time): the next write, a held line's retry
    /// instant, a lane's retry, the next replayed line. `None`: only news
    /// from another thread.
    fn next_wake(&self) -> Option<Nanos> {
        // A held record is offered at its retry instant whenever we wake,
        // so waking for it before the next write may happen would only
        // cost a wake-up.
        [
            self.schedule.next_due(),
            self.held.map(|r| {
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
        .min()
    }
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
    g.read_error.is_some().then_some(Ending::ReadError)
}

/// Puts a refused record back at the front of the inbox.
fn put_back(g: &mut Inbox, rec: Record) {
    g.buffered += rec.bytes.len();
    g.records.push_front(rec);
}
