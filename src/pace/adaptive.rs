//! `--adaptive`: the rate follows what the API says. A throttle signal (a
//! command's exit status in `--throttle-on`, or a `throttle` control line
//! a wrapper writes to `$DRIP_CONTROL`) estimates the API's limit as the
//! lesser of the rate in force and the rate it let through over the last
//! second (the commands that ended in success then), and cuts the rate to
//! [`BETA`] of that, as TCP and the AWS SDKs' adaptive retry cut theirs.
//! The rate then recovers along a cubic (TCP CUBIC's curve): quickly at
//! first, flat around the estimate for a while, then probing above it,
//! never above `--rate`. The throttles of one episode (within a second of
//! the cut, or from commands started before it) cut once. Pure: every
//! method takes the time it acts at.

use std::collections::VecDeque;

use crate::time::Nanos;

/// The share of the rate kept on a throttle.
pub(super) const BETA: f64 = 0.7;
/// Seconds from a cut back to the rate the throttle came at.
pub(super) const RECOVERY_S: f64 = 10.0;
/// Throttles this close to the last cut belong to it (a limit's window
/// stays full for a while; the requests in flight then all come back).
const SAME_EPISODE: Nanos = Nanos(1_000_000_000);
/// The span the rate let through is measured over.
const DELIVERED_OVER: Nanos = Nanos(1_000_000_000);

/// The rate a run adapts, in lines per second.
#[derive(Clone, Debug)]
pub(super) struct Adaptive {
    /// `--rate`: never exceeded.
    target: f64,
    /// The least rate a cut goes to.
    floor: f64,
    last: Option<Cut>,
    cuts: u64,
    /// When the commands that succeeded in the last [`DELIVERED_OVER`]
    /// ended.
    delivered: VecDeque<Nanos>,
}

/// The last cut: when, and the rate in force then.
#[derive(Clone, Copy, Debug)]
struct Cut {
    at: Nanos,
    from: f64,
}

impl Adaptive {
    /// Adapting below `target` lines per second.
    pub(super) fn new(target: f64) -> Adaptive {
        Adaptive {
            target,
            floor: (target / 1000.0).max(1.0 / 3600.0).min(target),
            last: None,
            cuts: 0,
            delivered: VecDeque::new(),
        }
    }

    /// The rate at real instant `now`, lines per second.
    pub(super) fn rate_at(&self, now: Nanos) -> f64 {
        let Some(c) = self.last else {
            return self.target;
        };
        let t = now.saturating_sub(c.at).0 as f64 / 1e9;
        let scale = c.from * (1.0 - BETA) / RECOVERY_S.powi(3);
        (scale * (t - RECOVERY_S).powi(3) + c.from).clamp(self.floor, self.target)
    }

    /// A command succeeded, seen at `now`.
    pub(super) fn succeeded(&mut self, now: Nanos) {
        self.delivered.push_back(now);
        self.forget(now);
    }

    /// Drops the successes older than [`DELIVERED_OVER`] at `now`.
    fn forget(&mut self, now: Nanos) {
        let since = now.saturating_sub(DELIVERED_OVER);
        while self.delivered.front().is_some_and(|&s| s < since) {
            self.delivered.pop_front();
        }
    }

    /// A throttle signal at `now`, from a command started at `started`
    /// (`None`: from a control line). One of the episode of the last cut
    /// (within a second of it, or from a command started before it, sent
    /// at the old rate) says nothing new: no cut. Returns the rate before,
    /// after, and the limit's estimate it recovers to, when it cuts.
    pub(super) fn throttled(
        &mut self,
        now: Nanos,
        started: Option<Nanos>,
    ) -> Option<(f64, f64, f64)> {
        if let Some(c) = self.last {
            let stale =
                started.is_some_and(|s| s < c.at) || now.saturating_sub(c.at) < SAME_EPISODE;
            if stale {
                return None;
            }
        }
        self.forget(now);
        let before = self.rate_at(now);
        let through = self.delivered.len() as f64 * 1e9 / DELIVERED_OVER.0 as f64;
        let limit = if through > 0.0 {
            before.min(through)
        } else {
            before
        };
        self.last = Some(Cut {
            at: now,
            from: limit,
        });
        self.cuts += 1;
        Some((before, self.rate_at(now), limit))
    }

    /// `--rate`, lines per second.
    pub(super) fn target(&self) -> f64 {
        self.target
    }

    /// Cuts so far.
    pub(super) fn cuts(&self) -> u64 {
        self.cuts
    }

    /// Whether the rate is below `--rate` (still recovering) at `now`.
    pub(super) fn recovering(&self, now: Nanos) -> bool {
        self.rate_at(now) < self.target
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_cut_keeps_beta_then_recovers_along_a_cubic_capped_at_the_rate() {
        let mut a = Adaptive::new(80.0);
        assert_eq!(a.rate_at(Nanos(5 * S)), 80.0);
        let (before, after, _) = a.throttled(Nanos(5 * S), Some(Nanos(4 * S))).unwrap();
        assert_eq!(before, 80.0);
        assert!((after - 56.0).abs() < 1e-9, "{after}");
        // Back at the rate it was cut from after RECOVERY_S, flat around it.
        let at = |s: f64| a.rate_at(Nanos(5 * S + (s * 1e9) as u64));
        assert!((at(RECOVERY_S) - 80.0).abs() < 1e-9);
        assert!(at(2.0) > 56.0 && at(2.0) < at(5.0) && at(5.0) < at(9.0));
        assert!(at(9.0) > 79.9);
        assert!(a.recovering(Nanos(6 * S)));
        assert!(!a.recovering(Nanos(5 * S + 11 * S)));
    }

    /// The limit is estimated as what got through in the last second:
    /// 20 successes at 80/s cut to 70 % of 20, not of 80.
    #[test]
    fn a_cut_starts_from_what_got_through_in_the_last_second() {
        let mut a = Adaptive::new(80.0);
        for i in 0..20 {
            a.succeeded(Nanos(i * 12_500_000 + 30_000_000));
        }
        // A success from over a second ago no longer counts.
        let mut old = a.clone();
        old.succeeded(Nanos(0));
        let (before, after, limit) = a
            .throttled(Nanos(300_000_000), Some(Nanos(260_000_000)))
            .unwrap();
        assert_eq!((before, limit), (80.0, 20.0));
        assert!((after - 14.0).abs() < 1e-9, "{after}");
        let at = a.rate_at(Nanos(300_000_000 + 10 * S));
        assert!((at - 20.0).abs() < 1e-9, "{at}");
        let (_, later, _) = old.throttled(Nanos(2 * S), None).unwrap();
        assert!((later - 56.0).abs() < 1e-9, "{later}");
    }

    #[test]
    fn throttles_of_requests_sent_before_the_cut_do_not_cut_again() {
        let mut a = Adaptive::new(20.0);
        assert!(a.throttled(Nanos(10 * S), Some(Nanos(9 * S))).is_some());
        // Started before the cut: in flight at the old rate.
        assert!(
            a.throttled(Nanos(10 * S + 1), Some(Nanos(10 * S - 1)))
                .is_none()
        );
        // Within a second of the cut: the same episode, whatever started.
        assert!(a.throttled(Nanos(10 * S + 500_000_000), None).is_none());
        // Started after it, a second on: the new rate is still too high.
        let (before, after, _) = a.throttled(Nanos(11 * S), Some(Nanos(10 * S + 5))).unwrap();
        assert!(before < 20.0 && (after - before * BETA).abs() < 1e-9);
        assert!(a.throttled(Nanos(12 * S), None).is_some());
        assert_eq!(a.cuts(), 3);
        // Never below the floor.
        for i in 0..100 {
            a.throttled(Nanos((20 + i) * S), None);
        }
        assert!(a.rate_at(Nanos(120 * S)) >= 20.0 / 1000.0);
    }
}
