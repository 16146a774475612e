//! The log in memory, read and parsed once, in time order, as columns:
//! arrival time (ns), key id and cost. Sixteen bytes a row with a cost
//! column, twelve without; key values once each; four more for the rows
//! grouped by key, built on first use. Every replay of the sweep reads
//! these columns instead of the file.

use crate::ingest::input::{Batch, Event, first_key};
use crate::ingest::keys::{EMPTY_KEY, Interner, KeyNames};
use crate::ingest::stream::Sink;
use anyhow::Result;
use std::ops::Range;
use std::sync::OnceLock;

#[derive(Default)]
pub struct Log {
    /// Arrival instants, ns since the epoch, in time order.
    pub at: Vec<u64>,
    /// Key id per row (`EMPTY_KEY`: the row is exempt; 0 for every row
    /// when the spec counts one global bucket).
    pub key: Vec<u32>,
    /// Cost per row; `None` when every cost is 1.
    pub cost: Option<Vec<u32>>,
    /// Key values by id.
    pub names: KeyNames,
    /// Requests per key id.
    pub requests_by_key: Vec<u64>,
    keyed: bool,
    interner: Option<Interner>,
    by_key: OnceLock<ByKey>,
}

/// The rows of each key, in time order, keys one after another: a replay
/// that takes the keys one by one keeps one key's states in cache for all
/// its rows (keys are independent). Four bytes a row; exempt rows left out.
pub struct ByKey {
    /// `rows[start[key]..start[key + 1]]`: key's rows.
    start: Vec<usize>,
    rows: Vec<u32>,
}

impl ByKey {
    fn of(log: &Log) -> ByKey {
        let keys = log.keys();
        let mut start = vec![0usize; keys + 1];
        for (k, &n) in log.requests_by_key.iter().enumerate().take(keys) {
            start[k + 1] = start[k] + n as usize;
        }
        let mut next = start.clone();
        let mut rows = vec![0u32; start[keys]];
        for (i, &k) in log.key.iter().enumerate() {
            if let Some(at) = next.get_mut(k as usize).filter(|_| k != EMPTY_KEY) {
                rows[*at] = i as u32;
                *at += 1;
            }
        }
        ByKey { start, rows }
    }

    /// Every key's rows, key after key.
    pub fn rows(&self) -> &[u32] {
        &self.rows
    }

    /// Where key's rows are in [`rows`](Self::rows).
    pub fn of_key(&self, key: usize) -> Range<usize> {
        self.start[key]..self.start[key + 1]
    }
}

impl Log {
    /// `keyed`: rows carry one key column; `costs`: a cost column is read.
    pub fn new(keyed: bool, costs: bool) -> Log {
        Log {
            cost: costs.then(Vec::new),
            keyed,
            interner: keyed.then(Interner::default),
            ..Log::default()
        }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// True when no row is held.
    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Distinct key ids (1 for a global bucket with rows).
    pub fn keys(&self) -> usize {
        if self.keyed {
            self.names.len()
        } else {
            usize::from(!self.at.is_empty())
        }
    }

    /// The rows grouped by key (built on first use); `None` when row
    /// numbers do not fit four bytes.
    pub fn by_key(&self) -> Option<&ByKey> {
        (self.len() <= u32::MAX as usize).then(|| self.by_key.get_or_init(|| ByKey::of(self)))
    }

    #[inline]
    pub fn cost(&self, i: usize) -> u64 {
        self.cost.as_ref().map_or(1, |c| u64::from(c[i]))
    }

    /// True when some row costs more than 1.
    pub fn costs_vary(&self) -> bool {
        self.cost.as_ref().is_some_and(|c| c.iter().any(|&c| c > 1))
    }

    /// The rows from `start`, as events for the audit replay (key column 0).
    pub fn events(&self, start: usize, n: usize, out: &mut Vec<Event>) {
        out.clear();
        let end = (start + n).min(self.len());
        out.extend((start..end).map(|i| Event {
            at: crate::time::Nanos(self.at[i]),
            row: i as u64 + 1,
            line: 0,
            file: 0,
            cost: self.cost.as_ref().map_or(1, |c| c[i]),
            keys: first_key(self.key[i]),
        }));
    }
}

impl Sink for Log {
    fn learn(&mut self, batch: &mut Batch) {
        let Some(interner) = self.interner.as_mut() else {
            return;
        };
        if !batch.interned {
            batch.intern(std::slice::from_mut(interner), &mut Default::default());
        }
        for &(_, start, end) in &batch.new_keys {
            self.names
                .push(&batch.key_bytes[start as usize..end as usize]);
            self.requests_by_key.push(0);
        }
    }

    fn take(&mut self, rows: &[Event]) -> Result<()> {
        self.at.reserve(rows.len());
        self.key.reserve(rows.len());
        for ev in rows {
            self.at.push(ev.at.0);
            let k = if self.keyed { ev.keys[0] } else { 0 };
            self.key.push(k);
            if k != EMPTY_KEY {
                if !self.keyed && self.requests_by_key.is_empty() {
                    self.requests_by_key.push(0);
                }
                self.requests_by_key[k as usize] += 1;
            }
            if let Some(c) = self.cost.as_mut() {
                c.push(ev.cost);
            }
        }
        Ok(())
    }
}
