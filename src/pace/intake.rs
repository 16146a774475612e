//! What is being decided: the lines waiting in their keys' lanes
//! (per-key pacing), the replay's lines sorted into log order
//! (`--replay`), or, in input order, the line a policy refused for now
//! (held until its retry instant), and the input line that found the
//! backlog full under `--on-full fail`.

use super::lanes::{Lanes, Step};
use super::reader::Inbox;
use super::replay::Replay;
use super::schedule::Schedule;
use crate::clock::{Clock, MonotonicClock};
use crate::time::Nanos;
use std::io;

/// The lines read and not yet in the schedule, and how the next is taken.
pub(super) struct Intake {
    /// Lines waiting for their key's turn (per-key pacing only).
    lanes: Option<Lanes>,
    /// `--replay`: lines read and sorted into log order.
    replay: Option<Replay>,
    /// A refused line's retry instant (policy time): it is offered again then.
    pub(super) held: Option<Nanos>,
    /// The input line refused under `--on-full fail`.
    pub(super) full_at: Option<u64>,
    /// Lines lanes refused in this turn.
    dropped: Vec<Vec<u8>>,
}

impl Intake {
    pub(super) fn new(lanes: Option<Lanes>, replay: Option<Replay>) -> Intake {
        Intake {
            lanes,
            replay,
            held: None,
            full_at: None,
            dropped: Vec::new(),
        }
    }

    /// Whether lines are offered in input order, one by one (no keys, no
    /// replay).
    pub(super) fn in_input_order(&self) -> bool {
        self.lanes.is_none() && self.replay.is_none()
    }

    /// The lanes, with per-key pacing.
    pub(super) fn lanes(&self) -> Option<&Lanes> {
        self.lanes.as_ref()
    }

    pub(super) fn lanes_mut(&mut self) -> Option<&mut Lanes> {
        self.lanes.as_mut()
    }

    /// Lines read and waiting here (in lanes, or sorting for the replay).
    pub(super) fn waiting(&self) -> usize {
        self.lanes.as_ref().map_or(0, Lanes::waiting)
            + self.replay.as_ref().map_or(0, Replay::waiting)
    }

    /// Whether no line waits here.
    pub(super) fn is_empty(&self) -> bool {
        self.lanes.as_ref().is_none_or(Lanes::is_empty)
            && self.replay.as_ref().is_none_or(|r| r.waiting() == 0)
    }

    /// A held line is offered at policy instant `at` at the latest.
    pub(super) fn retry_held_by(&mut self, at: Nanos) {
        self.held = self.held.map(|h| h.min(at));
    }

    /// Per key: the lanes decide what has arrived and what waited; each
    /// line they refuse is handed to `refused` at once.
    pub(super) fn decide_lanes(
        &mut self,
        schedule: &mut Schedule<Vec<u8>>,
        g: &mut Inbox,
        now: Nanos,
        mut refused: impl FnMut(&[u8]),
    ) -> Step {
        let Some(lanes) = &mut self.lanes else {
            return Step::Done;
        };
        let step = lanes.decide(schedule, g, now, &mut self.dropped);
        for item in self.dropped.drain(..) {
            refused(&item);
        }
        if let Step::Full { line } = step {
            self.full_at = Some(line);
        }
        step
    }

    /// `--replay`: lines go into the schedule at their logged times. False
    /// when the log cannot be replayed further; that is then the inbox's
    /// read error, so what was read and not written is unsent (and in
    /// `--rejects`).
    pub(super) fn decide_replay(
        &mut self,
        schedule: &mut Schedule<Vec<u8>>,
        g: &mut Inbox,
        clock: &MonotonicClock,
    ) -> bool {
        if let Some(replay) = &mut self.replay
            && let Err(e) = replay.decide(schedule, g, || clock.now())
        {
            g.read_error = Some(io::Error::new(io::ErrorKind::InvalidData, format!("{e:#}")));
            return false;
        }
        true
    }

    /// When a line waiting here is offered next (real time): a held line's
    /// retry instant, a lane's retry, the next replayed line.
    pub(super) fn next_wake(&self, schedule: &Schedule<Vec<u8>>) -> Option<Nanos> {
        // A held record is offered at its retry instant whenever we wake,
        // so waking for it before the next write may happen would only
        // cost a wake-up.
        let retry = |r| schedule.real_time(r).max(schedule.earliest_write());
        [
            self.held.map(retry),
            self.lanes.as_ref().and_then(Lanes::next_retry).map(retry),
            self.replay
                .as_ref()
                .and_then(Replay::next_wake)
                .map(|r| schedule.real_time(r)),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Adds the lines waiting here to `backlog` (input line, bytes), and
    /// puts it back in input order.
    pub(super) fn take_all(&mut self, backlog: &mut Vec<(u64, Vec<u8>)>) {
        if let Some(lanes) = &mut self.lanes {
            // Scheduled and waiting lines, back in input order.
            backlog.extend(lanes.take_all());
            backlog.sort_by_key(|(line, _)| *line);
        }
        if let Some(replay) = &mut self.replay {
            backlog.extend(replay.take_all());
            backlog.sort_by_key(|(line, _)| *line);
        }
    }
}
