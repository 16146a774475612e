//! How a run decides: a single policy is held as its own type behind
//! [`OneLoop`], so the replay runs a loop compiled for it, chosen once per
//! chunk; a `+` stack goes through [`Stack`]. Both keep per-key state in
//! `Store`s, until a replay thread starts:
//! then each single policy keyed by a column joins that column's
//! `Records` as a [`MemberLoop`], its
//! states in the same record as the other policies of the column.

use super::loops::{MemberLoop, OneLoop};
use super::outcome::{Gateway, NginxReport};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::policy::Decision;
use crate::policy::keyed::{Stack, Store};
use crate::policy::records::Records;
use crate::policy::{LevelKind, Listed, Spec, WithPolicy};
use anyhow::Result;

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

/// A gateway's config replayed as one run: it routes and keys each row
/// itself, and adds its own section to the report.
pub trait ConfigRun: Send {
    /// Decides one row (`levels`: also its level).
    fn decide(&mut self, ev: &Event, names: &KeyValues, levels: bool) -> Result<(Decision, u64)>;
    /// The gateway and the report's section, once every row is decided.
    fn section(&mut self) -> (Gateway, NginxReport);
    /// Rows a limit applied to, per key id of the report's key column.
    fn take_limited_by_key(&mut self) -> Vec<u64>;
    /// True when admitted requests may be delayed.
    fn shapes(&self) -> bool;
    /// The highest level a row can reach (`u64::MAX`: no bound).
    fn max_level(&self) -> u64;
    /// The key column the report counts drops by.
    fn report_slot(&self) -> Option<usize>;
}

impl ConfigRun for super::conf::ConfExec {
    fn decide(&mut self, ev: &Event, names: &KeyValues, levels: bool) -> Result<(Decision, u64)> {
        super::conf::ConfExec::decide(self, ev, names, levels)
    }
    fn section(&mut self) -> (Gateway, NginxReport) {
        (Gateway::Nginx, self.report())
    }
    fn take_limited_by_key(&mut self) -> Vec<u64> {
        super::conf::ConfExec::take_limited_by_key(self)
    }
    fn shapes(&self) -> bool {
        super::conf::ConfExec::shapes(self)
    }
    fn max_level(&self) -> u64 {
        super::conf::ConfExec::max_level(self)
    }
    fn report_slot(&self) -> Option<usize> {
        super::conf::ConfExec::report_slot(self)
    }
}

impl ConfigRun for super::haproxy::HapExec {
    fn decide(&mut self, ev: &Event, names: &KeyValues, levels: bool) -> Result<(Decision, u64)> {
        super::haproxy::HapExec::decide(self, ev, names, levels)
    }
    fn section(&mut self) -> (Gateway, NginxReport) {
        (Gateway::Haproxy, self.report())
    }
    fn take_limited_by_key(&mut self) -> Vec<u64> {
        super::haproxy::HapExec::take_limited_by_key(self)
    }
    fn shapes(&self) -> bool {
        false
    }
    fn max_level(&self) -> u64 {
        u64::MAX
    }
    fn report_slot(&self) -> Option<usize> {
        super::haproxy::HapExec::report_slot(self)
    }
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
            [member] => Exec::One(member.config.with(Looped)),
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
            Exec::Replicas(r) => r.info(),
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
