//! How a run decides: a single policy is held as its own type behind
//! [`OneLoop`], so the replay runs a loop compiled for it, chosen once per
//! chunk; a `+` stack goes through [`Stack`]. Both keep per-key state in
//! [`Store`](crate::policy::keyed::Store)s.

use super::replay::OneLoop;
use crate::policy::keyed::{Stack, Store};
use crate::policy::{LevelKind, Listed, Spec, WithPolicy};

pub enum Exec {
    One(Box<dyn OneLoop>),
    Stack(Stack),
    /// An nginx.conf: each row routed to its location's `limit_req` list.
    Conf(Box<super::nginx::ConfExec>),
}

/// A single policy's store, behind its replay loop.
struct Looped;

impl WithPolicy for Looped {
    type Out = Box<dyn OneLoop>;
    fn run<P: Listed>(self, policy: &P) -> Box<dyn OneLoop> {
        Box::new(Store::new(*policy))
    }
}

impl Exec {
    pub fn new(spec: &Spec) -> Exec {
        match spec.members.as_slice() {
            [member] => Exec::One(member.config.with(Looped)),
            _ => Exec::Stack(spec.build()),
        }
    }

    /// True when admitted requests may be delayed.
    pub fn shapes(&self) -> bool {
        match self {
            Exec::One(one) => one.info().shapes,
            Exec::Stack(s) => s.info().shapes,
            Exec::Conf(c) => c.shapes(),
        }
    }

    /// The highest level the run can reach (`u64::MAX`: no bound).
    pub fn max_level(&self) -> u64 {
        match self {
            Exec::One(one) => one.info().max_level,
            Exec::Stack(s) => s.info().max_level,
            Exec::Conf(c) => c.max_level(),
        }
    }

    /// What the run's level measures.
    pub fn level_kind(&self) -> LevelKind {
        match self {
            Exec::One(one) => one.info().level_kind,
            Exec::Stack(s) => s.info().level_kind,
            Exec::Conf(_) => LevelKind::Level,
        }
    }
}
