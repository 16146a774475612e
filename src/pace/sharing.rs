//! The shared schedule of a run (`--share`): joined at the start, asked
//! for one line's slot at a time, and its error kept when it is given up.

use super::Config;
use super::reader::{Guard, Shared};
use super::schedule::{Schedule, Timing};
use super::share::{Answer, ShareSummary, Sharer};
use crate::clock::{Clock, MonotonicClock};
use crate::policy::Decision;
use crate::time::Nanos;

/// What the shared schedule said about the next line.
pub(super) enum Reservation {
    /// There is no shared schedule: the local policy decides.
    NotShared,
    /// Its decision.
    Decided(Decision),
    /// The line waits: for the line before it to be written, or for good
    /// (the schedule failed).
    Wait,
    /// The schedule cannot be reached: the line waits, and is offered
    /// again at this instant (policy time).
    RetryAt(Nanos),
}

/// The shared schedule, with `--share`, and why it was given up.
pub(super) struct Sharing {
    sharer: Option<Sharer>,
    error: Option<anyhow::Error>,
}

impl Sharing {
    /// Joins the shared schedule, with `--share`; the timing then takes
    /// one line at a time.
    pub(super) fn start(
        config: &Config,
        timing: &mut Timing,
        clock: MonotonicClock,
    ) -> anyhow::Result<Sharing> {
        let sharer = match &config.share {
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
        Ok(Sharing {
            sharer,
            error: None,
        })
    }

    /// Whether the run shares its schedule.
    pub(super) fn is_shared(&self) -> bool {
        self.sharer.is_some()
    }

    /// Whether the shared schedule was given up.
    pub(super) fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Why the shared schedule was given up.
    pub(super) fn take_error(&mut self) -> Option<anyhow::Error> {
        self.error.take()
    }

    /// The schedule's reservations, refusals and errors, for the summary.
    pub(super) fn summary(&self) -> Option<ShareSummary> {
        self.sharer.as_ref().map(Sharer::summary)
    }

    /// Asks the shared schedule for the next line's slot, without holding
    /// the inbox's lock while it answers. One reservation at a time: the
    /// next line reserves once this one is written.
    pub(super) fn reserve<'a>(
        &mut self,
        g: Guard<'a>,
        shared: &'a Shared,
        schedule: &Schedule<Vec<u8>>,
        clock: &MonotonicClock,
    ) -> (Guard<'a>, Reservation) {
        let Some(sharer) = &mut self.sharer else {
            return (g, Reservation::NotShared);
        };
        if schedule.backlog() > 0 {
            return (g, Reservation::Wait);
        }
        drop(g);
        let answer = sharer.reserve(clock.now());
        let g = shared.lock();
        let replied = clock.now();
        let at = |wait| schedule.policy_time(replied.saturating_add(wait));
        let reservation = match answer {
            Err(e) => {
                self.error = Some(e);
                Reservation::Wait
            }
            Ok(Answer::Unreachable { retry_after }) => Reservation::RetryAt(at(retry_after)),
            Ok(Answer::Go { delay }) => {
                Reservation::Decided(Decision::Admit { release: at(delay) })
            }
            Ok(Answer::Refused { retry_after }) => Reservation::Decided(Decision::Refuse {
                retry_at: Some(at(retry_after)),
            }),
        };
        (g, reservation)
    }
}
