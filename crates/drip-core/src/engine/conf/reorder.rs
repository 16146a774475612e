//! Another order of a same-millisecond group. nginx logs a request when it
//! completes, so a delayed request is logged after requests that came in
//! after it, and the log holds no finer time than the millisecond: the
//! order nginx decided a group of one millisecond in is not in the log.
//! Rows answered at once (passed or refused without delay) are logged in
//! the order they came in; a delayed row may have come in anywhere among
//! them. When the log's order gives other statuses than nginx logged,
//! [`order`] looks for an order, so constrained, that gives every row the
//! status nginx logged, deciding each row from the states before the group.

use crate::nginx_conf::Status;
use crate::policy::nginx::{NginxLimitReq, NginxState};
use crate::policy::{Decision, Policy};
use crate::time::Nanos;
use std::collections::HashMap;

/// The states of zone keys, by (zone, key id).
pub(super) type States = HashMap<(u32, u32), NginxState>;

/// One `limit_req` of a row's location with the row's key in its zone.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lim {
    pub zone: u32,
    pub key: u32,
    pub limit: NginxLimitReq,
}

/// A row as the search decides it.
pub(super) struct Row<'a> {
    pub at: Nanos,
    pub cost: u64,
    pub dry: bool,
    /// Its location's limits that key it, in order.
    pub lims: &'a [Lim],
    pub logged: Status,
}

/// Rows decided, at most, in one search: past it the group stays a
/// disagreement.
const BUDGET: usize = 20_000;

/// An order of `rows` (indices) keeping rows answered at once in their
/// order, in which each row gets its logged status from the states
/// `before` the group, with the states after it; `None` when there is none
/// (or the search ran past its budget).
pub(super) fn order(rows: &[Row], before: &States) -> Option<(Vec<usize>, States)> {
    let mut search = Search {
        rows,
        used: vec![false; rows.len()],
        order: Vec::with_capacity(rows.len()),
        budget: BUDGET,
    };
    let states = before.clone();
    let end = search.from(states)?;
    Some((search.order, end))
}

struct Search<'a, 'r> {
    rows: &'a [Row<'r>],
    used: Vec<bool>,
    order: Vec<usize>,
    budget: usize,
}

impl Search<'_, '_> {
    /// Extends `order` to every row from `states`: the states at the end.
    fn from(&mut self, states: States) -> Option<States> {
        if self.order.len() == self.rows.len() {
            return Some(states);
        }
        // The next row answered at once, and every delayed row not placed.
        let next_at_once = (0..self.rows.len()).find(|&i| !self.used[i] && !delayed(&self.rows[i]));
        let candidates: Vec<usize> = (0..self.rows.len())
            .filter(|&i| !self.used[i] && (delayed(&self.rows[i]) || Some(i) == next_at_once))
            .collect();
        for i in candidates {
            if self.budget == 0 {
                return None;
            }
            self.budget -= 1;
            let mut s = states.clone();
            if decide(&self.rows[i], &mut s) != self.rows[i].logged {
                continue;
            }
            self.used[i] = true;
            self.order.push(i);
            if let Some(end) = self.from(s) {
                return Some(end);
            }
            self.order.pop();
            self.used[i] = false;
        }
        None
    }
}

fn delayed(r: &Row) -> bool {
    matches!(r.logged, Status::Delayed | Status::DelayedDryRun)
}

/// nginx's decision of `row` against `states`, which it updates: every
/// limit is checked in order up to the first that refuses; a row no limit
/// refused is counted by all of them.
pub(super) fn decide(row: &Row, states: &mut States) -> Status {
    let (mut release, mut applied) = (row.at, false);
    for l in row.lims {
        let st = states.entry((l.zone, l.key)).or_default();
        match l.limit.check(st, row.at, row.cost) {
            Decision::Admit { release: r } => (release, applied) = (release.max(r), true),
            Decision::Refuse { .. } if row.dry => return Status::RejectedDryRun,
            Decision::Refuse { .. } => return Status::Rejected,
        }
    }
    for l in row.lims {
        let st = states.entry((l.zone, l.key)).or_default();
        l.limit.admit(st, row.at, row.cost);
    }
    match (applied, release > row.at, row.dry) {
        (false, _, _) => Status::None,
        (true, false, _) => Status::Passed,
        (true, true, false) => Status::Delayed,
        (true, true, true) => Status::DelayedDryRun,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nginx_conf::Status::{Delayed, Passed, Rejected};
    use crate::policy::nginx::NginxRate;

    #[test]
    fn a_delayed_row_may_have_come_in_before_rows_logged_ahead_of_it() {
        // Zone 0 delays one request (burst=1), zone 1 refuses past one
        // (nodelay): location a has zone 0, b both, c zone 1; one key.
        let z0 = NginxLimitReq::new(NginxRate::PerSec(10), 1, Some(0));
        let z1 = NginxLimitReq::new(NginxRate::PerSec(10), 0, None);
        let lim = |zone, limit| Lim {
            zone,
            key: 7,
            limit,
        };
        let (a, b, c) = ([lim(0, z0)], [lim(0, z0), lim(1, z1)], [lim(1, z1)]);
        let at = Nanos(5_000_000);
        let row = |lims, logged| Row {
            at,
            cost: 1,
            dry: false,
            lims,
            logged,
        };
        // nginx took x, a2, b, c: b was refused by zone 0, so c passed;
        // a2, delayed, was logged last.
        let rows = [
            row(&a[..], Passed),
            row(&b[..], Rejected),
            row(&c[..], Passed),
            row(&a[..], Delayed),
        ];
        // In the log's order b is delayed, c refused and a2 refused.
        let mut s = HashMap::new();
        let in_log_order: Vec<Status> = rows.iter().map(|r| decide(r, &mut s)).collect();
        assert_eq!(in_log_order, [Passed, Delayed, Rejected, Rejected]);
        let (found, end) = order(&rows, &HashMap::new()).expect("an order");
        assert_eq!(found, [0, 3, 1, 2]);
        let mut s = HashMap::new();
        for i in found {
            decide(&rows[i], &mut s);
        }
        assert_eq!(s, end);
        // Rows answered at once keep their order: the refused b cannot
        // have come in before x.
        let swapped = [row(&b[..], Rejected), row(&a[..], Passed)];
        assert!(super::order(&swapped, &HashMap::new()).is_none());
    }
}
