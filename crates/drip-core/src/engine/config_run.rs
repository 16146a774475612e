//! A gateway's config as one kind of run: the trait the executors of an
//! nginx.conf (`conf`), a haproxy.cfg (`haproxy`) and a Traefik config
//! (`traefik`) implement, so the
//! replay, its replicas and the report treat them alike.

use super::outcome::{Gateway, NginxReport};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::policy::Decision;
use anyhow::Result;

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

impl ConfigRun for super::traefik::TraefikExec {
    fn decide(&mut self, ev: &Event, names: &KeyValues, levels: bool) -> Result<(Decision, u64)> {
        super::traefik::TraefikExec::decide(self, ev, names, levels)
    }
    fn section(&mut self) -> (Gateway, NginxReport) {
        (Gateway::Traefik, self.report())
    }
    fn take_limited_by_key(&mut self) -> Vec<u64> {
        super::traefik::TraefikExec::take_limited_by_key(self)
    }
    fn shapes(&self) -> bool {
        super::traefik::TraefikExec::shapes(self)
    }
    fn max_level(&self) -> u64 {
        u64::MAX
    }
    fn report_slot(&self) -> Option<usize> {
        super::traefik::TraefikExec::report_slot(self)
    }
}
