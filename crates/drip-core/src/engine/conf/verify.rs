//! `--verify-column`: each row's `$limit_req_status` against the one nginx
//! logged. A log does not say in which order nginx saw requests of the
//! same millisecond sharing a zone key (at any location naming the zone),
//! so such a group is compared as a multiset (the same statuses in any
//! order).
//!
//! When the multiset differs, another order of the group may still give
//! every row its logged status (see [`reorder`](super::reorder)): nginx
//! logs a delayed request when it completes.
//!
//! nginx decides on its own millisecond clock, cached per event loop
//! pass, and the log's `$msec` can be a millisecond off it. A disagreeing
//! row that would get the logged status 1 ms earlier or later (from the
//! same state) is within nginx's clock granularity: counted apart, and
//! listed as such.

use super::reorder::{self, Lim, Row, States};
use crate::engine::outcome::{FIRST_DISAGREEMENTS, VerifyReport, VerifyRow};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::ingest::keys::EMPTY_KEY;
use crate::nginx_conf::Status;
use crate::policy::nginx::NginxState;
use crate::time::Nanos;
use anyhow::{Result, bail};
use std::collections::HashMap;

/// A row waiting for its same-millisecond group to be complete.
struct Pending {
    /// The limits of its location that key it: `lims[from..to]` of the
    /// verifier (those past one that refused it too).
    from: u32,
    to: u32,
    at: Nanos,
    cost: u64,
    dry: bool,
    emulated: Status,
    logged: Status,
    /// The row's status 1 ms earlier and 1 ms later (from the state before
    /// it), when it disagrees; else `emulated`.
    moved: [Status; 2],
    file: u32,
    line: u64,
}

/// What verification has counted.
pub(super) struct Verify {
    slot: usize,
    column: String,
    group_ms: i64,
    pending: Vec<Pending>,
    /// The limits of the pending rows.
    lims: Vec<Lim>,
    /// The states of the pending rows' zone keys before their millisecond.
    group_before: States,
    /// The states after the groups that agree in another order, for the
    /// replay to go on from.
    write_back: Vec<((u32, u32), NginxState)>,
    rows: u64,
    agreed: u64,
    /// Disagreements a 1 ms move of the row removes.
    within_clock: u64,
    /// Agreements in another order than the log's.
    reordered: u64,
    confusion: HashMap<(Status, Status), u64>,
    first: Vec<VerifyRow>,
    files: Vec<String>,
    /// The states of the zone keys that admitted the row being decided,
    /// before it: what a move of the row is decided from.
    pub(super) before: Vec<((usize, u32), crate::policy::nginx::NginxState)>,
}

impl Verify {
    /// Compares the statuses in key column `slot` (the log's `column`);
    /// `files`: the logs' names, to say where a row is.
    pub(super) fn new(slot: usize, column: &str, files: Vec<String>) -> Verify {
        Verify {
            slot,
            column: column.to_string(),
            group_ms: i64::MIN,
            pending: Vec::new(),
            lims: Vec::new(),
            group_before: HashMap::new(),
            write_back: Vec::new(),
            rows: 0,
            agreed: 0,
            within_clock: 0,
            reordered: 0,
            confusion: HashMap::new(),
            first: Vec::new(),
            files,
            before: Vec::new(),
        }
    }

    /// The status nginx logged for `ev`.
    #[inline]
    pub(super) fn logged(&self, ev: &Event, names: &KeyValues) -> Result<Status> {
        let id = names.id(ev, self.slot);
        let text = if id == EMPTY_KEY {
            &b""[..]
        } else {
            names[self.slot].get(id)
        };
        let Some(logged) = Status::parse(text) else {
            bail!(
                "{}:{}: the logged $limit_req_status '{}' in column '{}' is not PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN or '-'; check --verify-column",
                self.files[ev.file as usize],
                ev.line,
                String::from_utf8_lossy(text),
                self.column
            );
        };
        Ok(logged)
    }

    /// Starts deciding a row of `now_ms`: once a millisecond is over, its
    /// groups are compared. The states to go on from, for groups that agree
    /// in another order than the log's.
    #[inline]
    pub(super) fn start(&mut self, now_ms: i64) -> std::vec::Drain<'_, ((u32, u32), NginxState)> {
        if now_ms != self.group_ms {
            self.flush();
            self.group_ms = now_ms;
        }
        self.before.clear();
        self.write_back.drain(..)
    }

    /// Queues the row `ev` of a location in `dry` run or not, logged as
    /// `logged`, decided at `now_ms` as `emulated` (and as `moved` 1 ms
    /// either side) under `lims`, whose states before it are in `before`
    /// or else `state`.
    #[inline]
    pub(super) fn record(
        &mut self,
        ev: &Event,
        [emulated, logged]: [Status; 2],
        moved: [Status; 2],
        (lims, dry): (&[Lim], bool),
        now_ms: i64,
        state: impl Fn((u32, u32)) -> NginxState,
    ) {
        for l in lims {
            let zk = (l.zone, l.key);
            if !self.group_before.contains_key(&zk) {
                let s = self.before.iter().find(|(b, _)| (b.0 as u32, b.1) == zk);
                let s = s.map_or_else(|| state(zk), |(_, s)| *s);
                self.group_before.insert(zk, s);
            }
        }
        let p = Pending {
            from: 0,
            to: 0,
            at: ev.at,
            cost: u64::from(ev.cost),
            dry,
            emulated,
            logged,
            moved,
            file: ev.file,
            line: ev.line,
        };
        self.push(p, lims.iter().copied(), now_ms);
    }

    /// Queues a row decided at `now_ms` under `lims`.
    #[inline]
    fn push(&mut self, mut p: Pending, lims: impl Iterator<Item = Lim>, now_ms: i64) {
        if now_ms != self.group_ms {
            self.flush();
            self.group_ms = now_ms;
        }
        p.from = self.lims.len() as u32;
        self.lims.extend(lims);
        p.to = self.lims.len() as u32;
        self.pending.push(p);
    }

    /// Compares each group of same-ms rows as a multiset of statuses: rows
    /// sharing a zone key, at any location (their order can change their
    /// decisions; the order of rows with no key in common cannot), so a
    /// disagreement is blamed on a row of the key drip decided that way.
    fn flush(&mut self) {
        let rows = std::mem::take(&mut self.pending);
        let lims = std::mem::take(&mut self.lims);
        let before = std::mem::take(&mut self.group_before);
        // Union-find over the rows: joined when they share a zone key.
        let mut parent: Vec<usize> = (0..rows.len()).collect();
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        let mut owner: HashMap<(u32, u32), usize> = HashMap::new();
        for (i, p) in rows.iter().enumerate() {
            for l in &lims[p.from as usize..p.to as usize] {
                match owner.entry((l.zone, l.key)) {
                    std::collections::hash_map::Entry::Occupied(o) => {
                        let (a, b) = (root(&mut parent, *o.get()), root(&mut parent, i));
                        parent[a.max(b)] = a.min(b);
                    }
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(i);
                    }
                }
            }
        }
        let mut order: Vec<(usize, usize)> =
            (0..rows.len()).map(|i| (root(&mut parent, i), i)).collect();
        order.sort_unstable();
        let mut rows: Vec<Option<Pending>> = rows.into_iter().map(Some).collect();
        let mut grouped: Vec<(usize, Pending)> = Vec::with_capacity(rows.len());
        for (g, i) in order {
            grouped.push((g, rows[i].take().expect("each row once")));
        }
        for group in grouped.chunk_by(|a, b| a.0 == b.0) {
            let group: Vec<&Pending> = group.iter().map(|(_, p)| p).collect();
            self.compare(&group, &lims, &before);
        }
    }

    /// Compares one group: its statuses as a multiset, else in another
    /// order of the group, else row by row what is left.
    fn compare(&mut self, group: &[&Pending], lims: &[Lim], before: &States) {
        let n = group.len();
        self.rows += n as u64;
        let mut emu: Vec<Status> = group.iter().map(|p| p.emulated).collect();
        let mut log: Vec<(Status, usize)> = group
            .iter()
            .enumerate()
            .map(|(i, p)| (p.logged, i))
            .collect();
        emu.sort();
        log.sort();
        // Match equal statuses; what is left on each side disagrees.
        let (mut i, mut j) = (0, 0);
        let mut matched = Vec::new();
        let mut left_e = Vec::new();
        let mut left_l = Vec::new();
        while i < n || j < n {
            if i < n && j < n && emu[i] == log[j].0 {
                matched.push(emu[i]);
                i += 1;
                j += 1;
            } else if j >= n || (i < n && emu[i] < log[j].0) {
                left_e.push(emu[i]);
                i += 1;
            } else {
                left_l.push(log[j]);
                j += 1;
            }
        }
        if !left_e.is_empty() && n > 1 && self.reorders(group, lims, before) {
            return;
        }
        for s in matched {
            *self.confusion.entry((s, s)).or_default() += 1;
            self.agreed += 1;
        }
        for (e, (l, at)) in left_e.into_iter().zip(left_l) {
            *self.confusion.entry((e, l)).or_default() += 1;
            let p = group[at];
            let clock = p.moved.contains(&l);
            self.within_clock += u64::from(clock);
            if self.first.len() < FIRST_DISAGREEMENTS {
                self.list(p, e, l, n, clock);
            }
        }
    }

    /// Whether some order of `group` gives every row its logged status;
    /// if so its rows agree, and the replay goes on from the states after.
    #[cold]
    fn reorders(&mut self, group: &[&Pending], lims: &[Lim], before: &States) -> bool {
        let rows: Vec<Row> = group
            .iter()
            .map(|p| Row {
                at: p.at,
                cost: p.cost,
                dry: p.dry,
                lims: &lims[p.from as usize..p.to as usize],
                logged: p.logged,
            })
            .collect();
        let start: States = (rows.iter())
            .flat_map(|r| r.lims.iter().map(|l| (l.zone, l.key)))
            .map(|zk| (zk, before.get(&zk).copied().unwrap_or_default()))
            .collect();
        let Some((_, end)) = reorder::order(&rows, &start) else {
            return false;
        };
        for p in group {
            *self.confusion.entry((p.logged, p.logged)).or_default() += 1;
        }
        self.agreed += group.len() as u64;
        self.reordered += group.len() as u64;
        self.write_back.extend(end);
        true
    }

    /// Lists a disagreement of row `p`, in a group of `n`.
    fn list(&mut self, p: &Pending, e: Status, l: Status, n: usize, clock: bool) {
        let mut emulated = e.text().to_string();
        if n > 1 {
            emulated.push_str(&format!(" (in a group of {n} same-ms rows)"));
        }
        if clock {
            let when = if p.moved[0] == l { "earlier" } else { "later" };
            emulated.push_str(&format!(
                " ({} 1 ms {when}: within nginx's clock granularity)",
                l.text()
            ));
        }
        self.first.push(VerifyRow {
            at: format!("{}:{}", self.files[p.file as usize], p.line),
            emulated,
            logged: l.text().to_string(),
        });
    }

    /// What verification found, once every row is decided.
    pub(super) fn report(&mut self) -> VerifyReport {
        self.flush();
        let mut confusion: Vec<(String, String, u64)> = self
            .confusion
            .iter()
            .map(|((e, l), n)| (e.text().to_string(), l.text().to_string(), *n))
            .collect();
        let rank = |t: &str| Status::ALL.iter().position(|s| s.text() == t);
        confusion.sort_by_key(|(e, l, _)| (rank(e), rank(l)));
        let counts = [self.rows, self.agreed, self.within_clock, self.reordered];
        VerifyReport::new(
            &self.column,
            counts,
            confusion,
            std::mem::take(&mut self.first),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_as_nginx_logs_them() {
        assert_eq!(Status::parse(b"PASSED"), Some(Status::Passed));
        assert_eq!(
            Status::parse(b" rejected_dry_run "),
            Some(Status::RejectedDryRun)
        );
        assert_eq!(Status::parse(b"-"), Some(Status::None));
        assert_eq!(Status::parse(b""), Some(Status::None));
        assert_eq!(Status::parse(b"OK"), None);
        for s in Status::ALL {
            assert_eq!(Status::parse(s.text().as_bytes()), Some(s));
        }
    }

    fn pending(emulated: Status, logged: Status, line: u64) -> Pending {
        Pending {
            from: 0,
            to: 0,
            at: Nanos(0),
            cost: 1,
            dry: false,
            emulated,
            logged,
            moved: [emulated; 2],
            file: 0,
            line,
        }
    }

    /// A limit of `zone` and `key` that passes every row at once: no order
    /// of a group gives a refused or delayed row its status.
    fn lim(zone: u32, key: u32) -> Lim {
        use crate::policy::nginx::{NginxLimitReq, NginxRate};
        let limit = NginxLimitReq::new(NginxRate::PerSec(1000), 1000, None);
        Lim { zone, key, limit }
    }

    #[test]
    fn a_disagreement_a_1_ms_move_removes_is_counted_apart() {
        let mut v = Verify::new(0, "s", vec!["log".into()]);
        let k = |zone: u32, key: u32| std::iter::once(lim(zone, key));
        use Status::*;
        let mut p = pending(Rejected, Passed, 1);
        p.moved = [Rejected, Passed];
        v.push(p, k(0, 1), 5);
        let mut p = pending(Passed, Rejected, 2);
        p.moved = [Passed, Passed];
        v.push(p, k(0, 1), 6);
        let r = v.report();
        assert_eq!((r.rows, r.disagreed, r.within_clock), (2, 2, 1));
        assert_eq!(
            r.first_disagreements[0].emulated,
            "REJECTED (PASSED 1 ms later: within nginx's clock granularity)"
        );
        assert_eq!(r.first_disagreements[1].emulated, "PASSED");
    }

    #[test]
    fn a_same_millisecond_group_is_compared_as_a_multiset() {
        let mut v = Verify::new(0, "s", vec!["log".into()]);
        let k = |zone: u32, key: u32| std::iter::once(lim(zone, key));
        use Status::*;
        // Same statuses, another order: all agree.
        v.push(pending(Passed, Rejected, 1), k(0, 1), 5);
        v.push(pending(Delayed, Passed, 2), k(0, 1), 5);
        v.push(pending(Rejected, Delayed, 3), k(0, 1), 5);
        // The next millisecond: one row, disagreeing.
        v.push(pending(Rejected, Delayed, 4), k(0, 1), 6);
        // Two rows: one status in common.
        v.push(pending(Passed, Passed, 5), k(0, 1), 7);
        v.push(pending(Rejected, Delayed, 6), k(0, 1), 7);
        // Two keys in one ms: not pooled, each row blamed on its own.
        v.push(pending(Rejected, Passed, 7), k(0, 1), 8);
        v.push(pending(Passed, Rejected, 8), k(0, 2), 8);
        // One zone key named by two locations: one group.
        v.push(pending(Passed, Rejected, 10), k(3, 1), 9);
        v.push(pending(Rejected, Passed, 11), k(3, 1), 9);
        // No key (no limit applied): alone.
        v.push(pending(Passed, Passed, 9), std::iter::empty(), 8);
        v.flush();
        assert_eq!((v.rows, v.agreed), (11, 7));
        assert_eq!(v.confusion[&(Rejected, Passed)], 1);
        assert_eq!(v.confusion[&(Passed, Rejected)], 1);
        assert_eq!(v.confusion[&(Rejected, Delayed)], 2);
        assert_eq!(v.confusion[&(Passed, Passed)], 4);
        let listed: Vec<(&str, &str, &str)> = v
            .first
            .iter()
            .map(|r| (r.at.as_str(), r.emulated.as_str(), r.logged.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                ("log:4", "REJECTED", "DELAYED"),
                (
                    "log:6",
                    "REJECTED (in a group of 2 same-ms rows)",
                    "DELAYED"
                ),
                ("log:7", "REJECTED", "PASSED"),
                ("log:8", "PASSED", "REJECTED"),
            ]
        );
    }
}
