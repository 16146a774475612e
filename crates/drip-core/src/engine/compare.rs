//! `--compare`: every policy after the first against the first, row by
//! row: requests newly dropped (the first admitted them) and newly
//! admitted, and by key — keys newly hurt (no drop before, some now) and
//! keys relieved (drops before, none now), most affected first. This is the
//! question a change to a limiter config raises: who does it hurt?

use crate::engine::outcome::{CompareReport, KeyChange};
use crate::ingest::input::Event;
use crate::ingest::keys::{EMPTY_KEY, KeyNames};
use crate::policy::Decision;

/// Counts for one policy against the first.
#[derive(Default)]
struct Pair {
    newly_dropped: u64,
    newly_admitted: u64,
    /// Drops per key id before (the first policy) and now.
    before: Vec<u32>,
    now: Vec<u32>,
}

/// Row-by-row comparison of the runs' decisions.
pub struct Compare {
    /// The key column keys are compared by (`None`: one global key).
    slot: Option<usize>,
    pairs: Vec<Pair>,
}

impl Compare {
    pub fn new(slot: Option<usize>, runs: usize) -> Compare {
        Compare {
            slot,
            pairs: (1..runs).map(|_| Pair::default()).collect(),
        }
    }

    /// Records a chunk: `outcomes[r * n + i]` is run r's decision of row i.
    pub fn record(&mut self, events: &[Event], outcomes: &[Decision]) {
        let n = events.len();
        for (i, ev) in events.iter().enumerate() {
            let key = match self.slot {
                Some(c) if ev.keys[c] != EMPTY_KEY => Some(ev.keys[c] as usize),
                Some(_) => None,
                None => Some(0),
            };
            let first = outcomes[i].is_admit();
            for (p, pair) in self.pairs.iter_mut().enumerate() {
                let other = outcomes[(p + 1) * n + i].is_admit();
                pair.newly_dropped += u64::from(first && !other);
                pair.newly_admitted += u64::from(!first && other);
                if let Some(k) = key {
                    if k >= pair.before.len() {
                        pair.before.resize(k + 1, 0);
                        pair.now.resize(k + 1, 0);
                    }
                    pair.before[k] = pair.before[k].saturating_add(u32::from(!first));
                    pair.now[k] = pair.now[k].saturating_add(u32::from(!other));
                }
            }
        }
    }

    /// The comparison of each policy after the first; `labels` in run
    /// order, `requests` per key id of the compared column.
    pub fn report(
        &self,
        labels: &[String],
        names: &[KeyNames],
        requests: &[Vec<u64>],
        top: usize,
    ) -> Vec<CompareReport> {
        let name = |k: usize| match self.slot {
            Some(c) => crate::quote::key_text(names[c].get(k as u32)),
            None => "(all)".into(),
        };
        let reqs = |k: usize| match self.slot {
            Some(c) => requests[c].get(k).copied().unwrap_or(0),
            None => 0,
        };
        self.pairs
            .iter()
            .enumerate()
            .map(|(p, pair)| {
                let change = |k: usize| KeyChange {
                    key: name(k),
                    requests: reqs(k),
                    dropped_before: u64::from(pair.before[k]),
                    dropped_now: u64::from(pair.now[k]),
                };
                let mut hurt: Vec<usize> = (0..pair.now.len())
                    .filter(|&k| pair.before[k] == 0 && pair.now[k] > 0)
                    .collect();
                let mut relieved: Vec<usize> = (0..pair.now.len())
                    .filter(|&k| pair.before[k] > 0 && pair.now[k] == 0)
                    .collect();
                hurt.sort_by(|&a, &b| {
                    pair.now[b]
                        .cmp(&pair.now[a])
                        .then_with(|| name(a).cmp(&name(b)))
                });
                relieved.sort_by(|&a, &b| {
                    pair.before[b]
                        .cmp(&pair.before[a])
                        .then_with(|| name(a).cmp(&name(b)))
                });
                CompareReport {
                    policy: labels[p + 1].clone(),
                    against: labels[0].clone(),
                    newly_dropped: pair.newly_dropped,
                    newly_admitted: pair.newly_admitted,
                    keys_newly_hurt: hurt.len() as u64,
                    keys_relieved: relieved.len() as u64,
                    top_hurt: hurt.iter().take(top).map(|&k| change(k)).collect(),
                    top_relieved: relieved.iter().take(top).map(|&k| change(k)).collect(),
                }
            })
            .collect()
    }
}
