//! How a run decides: a single policy is held by its type, so the replay
//! can run a loop compiled for it (the `each!` macro); a `+` stack goes through
//! [`Stack`]. Both keep per-key state in [`Dense`] vectors.

use crate::policy::keyed::{Dense, Limiter, Stack};
use crate::policy::{
    FixedWindow, Gcra, LeakyBucket, NginxLimitReq, PolicyConfig, Shaper, SlidingLog, SlidingWindow,
    Spec, TokenBucket,
};

/// One policy, by type.
pub enum One {
    TokenBucket(Dense<TokenBucket>),
    LeakyBucket(Dense<LeakyBucket>),
    Gcra(Dense<Gcra>),
    Shaper(Dense<Shaper>),
    FixedWindow(Dense<FixedWindow>),
    SlidingWindow(Dense<SlidingWindow>),
    SlidingLog(Dense<SlidingLog>),
    Nginx(Dense<NginxLimitReq>),
}

/// Runs `$body` with `$d` bound to the policy inside `$one`.
macro_rules! each {
    ($one:expr, $d:ident => $body:expr) => {
        match $one {
            $crate::audit::exec::One::TokenBucket($d) => $body,
            $crate::audit::exec::One::LeakyBucket($d) => $body,
            $crate::audit::exec::One::Gcra($d) => $body,
            $crate::audit::exec::One::Shaper($d) => $body,
            $crate::audit::exec::One::FixedWindow($d) => $body,
            $crate::audit::exec::One::SlidingWindow($d) => $body,
            $crate::audit::exec::One::SlidingLog($d) => $body,
            $crate::audit::exec::One::Nginx($d) => $body,
        }
    };
}

pub(crate) use each;

pub enum Exec {
    One(One),
    Stack(Stack),
    /// An nginx.conf: each row routed to its location's `limit_req` list.
    Conf(Box<super::nginx::ConfExec>),
}

impl Exec {
    pub fn new(spec: &Spec) -> Exec {
        let [member] = spec.members.as_slice() else {
            return Exec::Stack(spec.build_dense());
        };
        Exec::One(match member.config {
            PolicyConfig::TokenBucket(p) => One::TokenBucket(Dense::new(p)),
            PolicyConfig::LeakyBucket(p) => One::LeakyBucket(Dense::new(p)),
            PolicyConfig::Gcra(p) => One::Gcra(Dense::new(p)),
            PolicyConfig::Shaper(p) => One::Shaper(Dense::new(p)),
            PolicyConfig::FixedWindow(p) => One::FixedWindow(Dense::new(p)),
            PolicyConfig::SlidingWindow(p) => One::SlidingWindow(Dense::new(p)),
            PolicyConfig::SlidingLog(p) => One::SlidingLog(Dense::new(p)),
            PolicyConfig::Nginx(p) => One::Nginx(Dense::new(p)),
        })
    }

    pub fn shapes(&self) -> bool {
        match self {
            Exec::One(one) => each!(one, d => d.shapes()),
            Exec::Stack(s) => s.shapes(),
            Exec::Conf(c) => c.shapes(),
        }
    }

    pub fn max_level(&self) -> u64 {
        match self {
            Exec::One(one) => each!(one, d => d.max_level()),
            Exec::Stack(s) => s.max_level(),
            Exec::Conf(c) => c.max_level(),
        }
    }

    pub fn level_kind(&self) -> &'static str {
        match self {
            Exec::One(one) => each!(one, d => d.level_kind()),
            Exec::Stack(s) => s.level_kind(),
            Exec::Conf(_) => "level",
        }
    }
}
