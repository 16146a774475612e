//! Who a run hurt, key by key: the keys with the most drops and, for a run
//! that delays, the keys with the longest waits, as report rows. A key's
//! shares count its rows that reached a limit (`limited`): every row of
//! the key for a policy or a stack; for an nginx.conf, its rows at a
//! location whose limits applied to them.

use super::counts::percent;
use super::tally::KeyWait;
use crate::engine::outcome::{KeyRow, Ranked, WaitKeyRow};
use crate::ingest::keys::KeyNames;

/// The report column's keys: names, rows in the log, rows limited.
pub(super) struct Keys<'a> {
    pub(super) names: &'a KeyNames,
    /// Rows per key id.
    pub(super) requests: &'a [u64],
    /// For an nginx.conf, the rows a limit applied to per key id (a key
    /// past the end had none); `None`: every row of the key.
    pub(super) limited: Option<&'a [u64]>,
}

impl Keys<'_> {
    fn name(&self, id: usize) -> String {
        crate::quote::key_text(self.names.get(id as u32))
    }

    /// `row`, the report row of key `id`, with the key's bytes.
    fn ranked<R>(&self, id: usize, row: R) -> Ranked<R> {
        Ranked {
            bytes: self.names.get(id as u32).to_vec(),
            row,
        }
    }

    fn requests(&self, id: usize) -> u64 {
        self.requests.get(id).copied().unwrap_or(0)
    }

    fn limited(&self, id: usize) -> u64 {
        match self.limited {
            Some(l) => l.get(id).copied().unwrap_or(0),
            None => self.requests(id),
        }
    }

    /// The `top` highest of `scored` (key id, score), highest first, keys
    /// of equal score in the order of their bytes.
    fn top<S: Ord + Copy>(&self, mut scored: Vec<(usize, S)>, top: usize) -> Vec<(usize, S)> {
        let names = self.names;
        let order = |a: &(usize, S), b: &(usize, S)| {
            b.1.cmp(&a.1)
                .then_with(|| names.get(a.0 as u32).cmp(names.get(b.0 as u32)))
        };
        if top == 0 {
            return Vec::new();
        }
        if scored.len() > top {
            scored.select_nth_unstable_by(top - 1, order);
            scored.truncate(top);
        }
        scored.sort_unstable_by(order);
        scored
    }
}

/// The `top` keys with the most drops.
pub(super) fn top_drops(keys: &Keys, drops: &[u32], top: usize) -> Vec<Ranked<KeyRow>> {
    let scored = drops
        .iter()
        .enumerate()
        .filter(|(_, d)| **d > 0)
        .map(|(k, d)| (k, *d))
        .collect();
    keys.top(scored, top)
        .into_iter()
        .map(|(id, dropped)| {
            let (dropped, limited) = (u64::from(dropped), keys.limited(id));
            keys.ranked(
                id,
                KeyRow {
                    key: keys.name(id),
                    requests: keys.requests(id),
                    limited,
                    dropped,
                    drop_pct: percent(dropped, limited),
                },
            )
        })
        .collect()
}

/// The `top` keys with the longest waits (then the most delayed rows).
pub(super) fn top_waits(keys: &Keys, waits: &[KeyWait], top: usize) -> Vec<Ranked<WaitKeyRow>> {
    let scored = waits
        .iter()
        .enumerate()
        .filter(|(_, w)| w.delayed > 0)
        .map(|(k, w)| (k, (w.max, w.delayed)))
        .collect();
    keys.top(scored, top)
        .into_iter()
        .map(|(id, (max, delayed))| {
            let (delayed, limited) = (u64::from(delayed), keys.limited(id));
            keys.ranked(
                id,
                WaitKeyRow {
                    key: keys.name(id),
                    requests: keys.requests(id),
                    limited,
                    delayed,
                    delayed_pct: percent(delayed, limited),
                    wait_max_ns: max,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_waits_come_first_then_the_most_delayed_then_the_key() {
        let mut names = KeyNames::default();
        for k in ["d", "c", "b", "a", "e"] {
            names.push(k.as_bytes());
        }
        let requests = [10, 10, 10, 10, 10];
        let limited = [4, 5, 8, 10, 0];
        let keys = Keys {
            names: &names,
            requests: &requests,
            limited: Some(&limited),
        };
        let w = |max, delayed| KeyWait { max, delayed };
        // e never waited; b and a tie on both: by name.
        let waits = [w(5, 1), w(9, 2), w(9, 3), w(9, 3), w(0, 0)];
        let rows = |top| -> Vec<(String, u64, u64, u64)> {
            let rows = top_waits(&keys, &waits, top);
            rows.into_iter()
                .map(|r| r.row)
                .map(|r| (r.key, r.limited, r.delayed, r.wait_max_ns))
                .collect()
        };
        let all = [
            ("a".to_string(), 10, 3, 9),
            ("b".to_string(), 8, 3, 9),
            ("c".to_string(), 5, 2, 9),
            ("d".to_string(), 4, 1, 5),
        ];
        assert_eq!(rows(10), all);
        for top in 0..4 {
            assert_eq!(rows(top), all[..top], "top {top}");
        }
        let drops = top_drops(&keys, &[2, 0, 1, 0, 0], 5);
        let pct: Vec<(String, f64)> = drops
            .into_iter()
            .map(|r| (r.row.key, r.row.drop_pct))
            .collect();
        assert_eq!(pct, [("d".to_string(), 50.0), ("b".to_string(), 12.5)]);
    }
}
