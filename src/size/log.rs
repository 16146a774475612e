//! The log in memory, read and parsed once, in time order, as columns:
//! arrival time (ns), key id and cost. Sixteen bytes a row with a cost
//! column, twelve without; key values once each. Every replay of the sweep
//! reads these columns instead of the file.

use crate::ingest::input::{Batch, Event};
use crate::ingest::keys::{EMPTY_KEY, Interner, KeyNames};
use crate::ingest::stream::Sink;
use anyhow::Result;

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

    pub fn len(&self) -> usize {
        self.at.len()
    }

    /// Distinct key ids (1 for a global bucket with rows).
    pub fn keys(&self) -> usize {
        if self.keyed {
            self.names.len()
        } else {
            usize::from(!self.at.is_empty())
        }
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
            keys: [self.key[i], 0, 0, 0],
        }));
    }
}

impl Sink for Log {
    fn learn(&mut self, batch: &mut Batch) {
        let Some(interner) = self.interner.as_mut() else {
            return;
        };
        if !batch.interned {
            batch.intern(std::slice::from_mut(interner));
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
