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
pub mod haproxy;
pub mod keyed;
pub mod leaky_bucket;
mod meter;
pub mod nginx;
pub mod records;
pub mod rule;
pub mod shaper;
pub mod sliding_log;
pub mod sliding_window;
pub mod spec;
pub mod table;
pub mod token_bucket;
pub mod traefik;

pub use nginx::NginxLimitReq;
pub use rule::ParamError;
pub use shaper::Shaper;
pub use spec::{KeyChoice, Member, Spec, parse_spec, parse_specs_file};
pub use table::{LevelKind, Listed, PolicyConfig, WithPolicy};

use crate::time::Nanos;
use std::num::NonZeroU64;

/// A window's length: longer than zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window(NonZeroU64);

impl Window {
    /// `None` for an empty span.
    pub fn new(span: Nanos) -> Option<Window> {
        NonZeroU64::new(span.0).map(Window)
    }
    /// The length, in nanoseconds.
    pub fn span(self) -> Nanos {
        Nanos(self.0.get())
    }
}

/// The answer to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Admitted; released at `release` (== now when immediate, later when
    /// a shaper delays it).
    Admit {
        /// The instant the request goes.
        release: Nanos,
    },
    /// Refused. `retry_at` is the first instant at which the same request
    /// would be admitted if nothing else arrived; `None` when it can never fit.
    Refuse {
        /// The first instant that admits the same request, if any.
        retry_at: Option<Nanos>,
    },
}

impl Decision {
    /// True for an admission, delayed or not.
    pub fn is_admit(self) -> bool {
        matches!(self, Decision::Admit { .. })
    }
    /// The delay of an admitted request (0 for a refusal).
    #[cfg(test)]
    pub fn wait(self, now: Nanos) -> Nanos {
        match self {
            Decision::Admit { release } => release.saturating_sub(now),
            Decision::Refuse { .. } => Nanos::ZERO,
        }
    }
    /// nginx's `$limit_req_status` vocabulary for this decision.
    #[cfg(test)]
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
    /// changing `state`. `cost` is at most the policy's
    /// [`Info::max_cost`](rule::Info::max_cost): [`Checked`] refuses
    /// larger costs before asking.
    fn check(&self, state: &Self::State, now: Nanos, cost: u64) -> Decision;

    /// Records a request that `check` admitted.
    fn admit(&self, state: &mut Self::State, now: Nanos, cost: u64);

    /// Records a request that `check` refused. A refusal changes nothing
    /// unless the policy's documented flavour says so.
    fn refuse(&self, _state: &mut Self::State, _now: Nanos, _cost: u64) {}

    /// `check`, then record the outcome.
    fn decide(&self, state: &mut Self::State, now: Nanos, cost: u64) -> Decision {
        self.decide_retry::<true>(state, now, cost)
    }

    /// `decide`, for a caller that only counts decisions unless `RETRY`:
    /// the same admission, release and change of state, but without
    /// `RETRY` a refusal comes with no retry time (`retry_at: None`). A
    /// policy overrides this one, not `decide`, to do in one step what
    /// `check` and `admit` do in two, and to skip the retry time's work.
    fn decide_retry<const RETRY: bool>(
        &self,
        state: &mut Self::State,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        let d = self.check(state, now, cost);
        match d {
            Decision::Admit { .. } => self.admit(state, now, cost),
            Decision::Refuse { .. } => self.refuse(state, now, cost),
        }
        match d {
            Decision::Refuse { .. } if !RETRY => Decision::Refuse { retry_at: None },
            d => d,
        }
    }

    /// True when `state` decides every future request exactly as a key
    /// never seen would, from `now` on: the key may be forgotten.
    fn is_neutral(&self, state: &Self::State, now: Nanos) -> bool;

    /// The occupancy after the last request, in the policy's own units
    /// (bucket level, backlog, window count), for reports.
    fn level(&self, state: &Self::State, now: Nanos) -> u64;

    /// `level` just after `decide` admitted a request at `now`: a policy
    /// that knows it more cheaply then overrides this.
    #[inline]
    fn admitted_level(&self, state: &Self::State, now: Nanos) -> u64 {
        self.level(state, now)
    }
}

/// A refusal that changes nothing, as a policy's `decide` returns it: with
/// its retry time (from `check`) when `RETRY`, else with none.
#[inline(always)]
fn refusal<P: Policy, const RETRY: bool>(
    policy: &P,
    state: &P::State,
    now: Nanos,
    cost: u64,
) -> Decision {
    match RETRY {
        true => policy.check(state, now, cost),
        false => Decision::Refuse { retry_at: None },
    }
}

#[cfg(test)]
mod tests;

/// A policy with the one test every caller needs in front of it: a cost
/// larger than the policy can ever admit
/// ([`Info::max_cost`](rule::Info::max_cost)) is refused with no retry
/// time, and recorded as any refusal (fixed-window `count=all` counts it;
/// the window's end frees the key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked<P> {
    policy: P,
    max_cost: u64,
}

impl<P: Listed> Checked<P> {
    /// `policy` behind the test of its [`Info::max_cost`](rule::Info::max_cost).
    pub fn new(policy: P) -> Checked<P> {
        Checked {
            max_cost: policy.info().max_cost,
            policy,
        }
    }
}

impl<P: Policy> Policy for Checked<P> {
    type State = P::State;

    #[inline]
    fn check(&self, state: &P::State, now: Nanos, cost: u64) -> Decision {
        if cost > self.max_cost {
            return Decision::Refuse { retry_at: None };
        }
        self.policy.check(state, now, cost)
    }

    #[inline]
    fn admit(&self, state: &mut P::State, now: Nanos, cost: u64) {
        self.policy.admit(state, now, cost);
    }

    #[inline]
    fn refuse(&self, state: &mut P::State, now: Nanos, cost: u64) {
        self.policy.refuse(state, now, cost);
    }

    /// The policy's own decision (which may do in one step what `check`
    /// and `admit` do in two), behind the cost test.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        state: &mut P::State,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        if cost > self.max_cost {
            self.policy.refuse(state, now, cost);
            return Decision::Refuse { retry_at: None };
        }
        self.policy.decide_retry::<RETRY>(state, now, cost)
    }

    #[inline]
    fn is_neutral(&self, state: &P::State, now: Nanos) -> bool {
        self.policy.is_neutral(state, now)
    }

    #[inline]
    fn level(&self, state: &P::State, now: Nanos) -> u64 {
        self.policy.level(state, now)
    }

    #[inline]
    fn admitted_level(&self, state: &P::State, now: Nanos) -> u64 {
        self.policy.admitted_level(state, now)
    }
}
