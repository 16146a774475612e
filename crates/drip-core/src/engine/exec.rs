//! How a run decides: a single policy is held as its own type behind
//! [`OneLoop`], so the replay runs a loop compiled for it, chosen once per
//! chunk; a `+` stack goes through [`Stack`]. Both keep per-key state in
//! `Store`s, until a replay thread starts:
//! then each single policy keyed by a column joins that column's
//! `Records` as a [`MemberLoop`], its
//! states in the same record as the other policies of the column.

pub use super::config_run::ConfigRun;
use super::loops::{MemberLoop, OneLoop};
use crate::policy::keyed::{Stack, Store};
use crate::policy::records::Records;
use crate::policy::{LevelKind, Listed, Spec, WithPolicy};

pub enum Exec {
    One(Box<dyn OneLoop>),
    /// A single policy whose states are a field of its key column's
    /// records (held by the replay thread).
    Member(Box<dyn MemberLoop>),
    Stack(Stack),
    /// A gateway's config (an nginx.conf, a haproxy.cfg): each row routed
    /// and keyed by the config itself.
    Conf(Box<dyn ConfigRun>),
    /// A policy as N instances behind a balancer (`--replicas`).
    Replicas(Box<super::replicas::Replicas>),
}

/// A single policy's store, behind its replay loop.
struct Looped;

impl WithPolicy for Looped {
    type Out = Box<dyn OneLoop>;
    fn run<P: Listed>(self, policy: &P) -> Box<dyn OneLoop> {
        Box::new(Store::new(*policy))
    }
}

/// A single policy as a field of its key column's records.
struct Joined<'a>(&'a mut Records);

impl WithPolicy for Joined<'_> {
    type Out = Box<dyn MemberLoop>;
    fn run<P: Listed>(self, policy: &P) -> Box<dyn MemberLoop> {
        Box::new(self.0.register(*policy))
    }
}

impl Exec {
    pub fn new(spec: &Spec) -> Exec {
        match spec.members.as_slice() {
            [member] if spec.block.is_none() => Exec::One(member.config.with(Looped)),
            _ => Exec::Stack(spec.build()),
        }
    }

    /// `spec`'s first policy (its only one) as a new field of `records`,
    /// with empty state.
    pub fn member(spec: &Spec, records: &mut Records) -> Exec {
        Exec::Member(spec.members[0].config.with(Joined(records)))
    }

    /// What reports need of the run's policy: from its table entry, or,
    /// for an nginx.conf, from its `limit_req` lines (levels only).
    fn facts(&self) -> (bool, u64, LevelKind) {
        let info = match self {
            Exec::One(one) => *one.info(),
            Exec::Member(m) => *m.info(),
            Exec::Stack(s) => s.info(),
            Exec::Replicas(r) => return r.facts(),
            Exec::Conf(c) => return (c.shapes(), c.max_level(), LevelKind::Level),
        };
        (info.shapes, info.max_level, info.level_kind)
    }

    /// True when admitted requests may be delayed.
    pub fn shapes(&self) -> bool {
        self.facts().0
    }

    /// The highest level the run can reach (`u64::MAX`: no bound).
    pub fn max_level(&self) -> u64 {
        self.facts().1
    }

    /// What the run's level measures.
    pub fn level_kind(&self) -> LevelKind {
        self.facts().2
    }
}
