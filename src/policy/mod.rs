//! The policy core: pure, deterministic rate-limit state machines.
//!
//! A policy is asked `check(state, now, cost)` and answers a [`Decision`]
//! without changing anything; the caller then records the outcome with
//! `admit` or `refuse`. `decide` does both. Nothing here reads a clock,
//! sleeps, prints or allocates per call (the sliding log grows its entry
//! list, which is its state). `pace` passes monotonic readings as `now`,
//! `audit` passes log timestamps.
//!
//! Every rule is exact integer arithmetic on [`Nanos`] and exact [`Rate`](crate::rate::Rate)s;
//! see the module of each policy for its formula.

pub mod fixed_window;
pub mod gcra;
pub mod keyed;
pub mod leaky_bucket;
pub mod nginx;
pub mod shaper;
pub mod sliding_log;
pub mod sliding_window;
pub mod spec;
pub mod token_bucket;

pub use fixed_window::{Align, CountMode, FixedWindow};
pub use gcra::Gcra;
pub use leaky_bucket::LeakyBucket;
pub use nginx::NginxLimitReq;
pub use shaper::Shaper;
pub use sliding_log::SlidingLog;
pub use sliding_window::SlidingWindow;
pub use spec::{KeyChoice, Member, PolicyConfig, Spec, SpecError, parse_spec, parse_specs_file};
pub use token_bucket::TokenBucket;

use crate::time::Nanos;

/// The answer to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Admitted; released at `release` (== now when immediate, later when
    /// a shaper delays it).
    Admit { release: Nanos },
    /// Refused. `retry_at` is the first instant at which the same request
    /// would be admitted if nothing else arrived; `None` when it can never fit.
    Refuse { retry_at: Option<Nanos> },
}

impl Decision {
    pub fn is_admit(self) -> bool {
        matches!(self, Decision::Admit { .. })
    }
    /// The delay of an admitted request (0 for a refusal).
    pub fn wait(self, now: Nanos) -> Nanos {
        match self {
            Decision::Admit { release } => release.saturating_sub(now),
            Decision::Refuse { .. } => Nanos::ZERO,
        }
    }
    /// nginx's `$limit_req_status` vocabulary for this decision.
    pub fn nginx_status(self, now: Nanos) -> &'static str {
        match self {
            Decision::Admit { release } if release > now => "DELAYED",
            Decision::Admit { .. } => "PASSED",
            Decision::Refuse { .. } => "REJECTED",
        }
    }
}

/// A rate-limit policy: a deterministic function of (state, now, cost).
pub trait Policy {
    /// Per-key state. `Default` is the state of a key never seen.
    type State: Default;

    /// The decision for a request of `cost` units at `now`, without
    /// changing `state`.
    fn check(&self, state: &Self::State, now: Nanos, cost: u64) -> Decision;

    /// Records a request that `check` admitted.
    fn admit(&self, state: &mut Self::State, now: Nanos, cost: u64);

    /// Records a request that `check` refused. A refusal changes nothing
    /// unless the policy's documented flavour says so.
    fn refuse(&self, _state: &mut Self::State, _now: Nanos, _cost: u64) {}

    /// `check`, then record the outcome.
    fn decide(&self, state: &mut Self::State, now: Nanos, cost: u64) -> Decision {
        let d = self.check(state, now, cost);
        match d {
            Decision::Admit { .. } => self.admit(state, now, cost),
            Decision::Refuse { .. } => self.refuse(state, now, cost),
        }
        d
    }

    /// True when `state` decides every future request exactly as a key
    /// never seen would, from `now` on: the key may be forgotten.
    fn is_neutral(&self, state: &Self::State, now: Nanos) -> bool;

    /// The occupancy after the last request, in the policy's own units
    /// (bucket level, backlog, window count), for reports.
    fn level(&self, state: &Self::State, now: Nanos) -> u64;

    /// True when a state owns memory beyond its own size (the sliding
    /// log's entries), so forgetting neutral states frees memory.
    fn holds_memory(&self) -> bool {
        false
    }

    /// A hint: start loading what `state` points to (the sliding log's
    /// entries). Changes nothing.
    fn prefetch(&self, _state: &Self::State) {}

    /// True when a refusal changes state (fixed-window `count=all`).
    fn refusal_counts(&self) -> bool {
        false
    }

    /// The highest `level` can ever be (`u64::MAX`: no bound), so a driver
    /// tracking a peak can stop asking once it is reached.
    fn max_level(&self) -> u64 {
        u64::MAX
    }

    /// What `level` measures, for reports: "level" (bucket level, window
    /// count) or "backlog" (requests waiting to be released).
    fn level_kind(&self) -> &'static str {
        "level"
    }

    /// True for policies that delay admitted requests (shaper, nginx).
    fn shapes(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
