//! Rows in flight: every data row becomes an [`Event`] `{at, key ids,
//! cost}`, carried with its key values in a [`Batch`] from the reader to
//! the replay, where [`Batch::intern`] turns the values into ids.

use super::keys::Interner;
use crate::time::Nanos;

/// Key ids an event holds: the fields of several keys, and an nginx.conf's
/// host, port, address and URI routing and verified status beside a
/// two-field key. Each costs 4 bytes a row (an audit of 8 over 4 ran 2 %
/// more instructions; `size --nginx-conf`, which holds the rows, 20 % more
/// memory). A run reading more spills the rest beside the events (see
/// [`key_values`](super::key_values)).
pub const MAX_KEYS: usize = 8;

/// An event's key ids of a run with one key column: `key` first, the
/// rest unused.
pub fn first_key(key: u32) -> [u32; MAX_KEYS] {
    let mut keys = [0; MAX_KEYS];
    keys[0] = key;
    keys
}

/// Rows per batch handed from the reader to the replay.
pub const BATCH: usize = 4096;

/// One request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub at: Nanos,
    /// 1-based data row in input order (headers not counted).
    pub row: u64,
    /// Line of the row in its file, for messages.
    pub line: u64,
    pub file: u32,
    pub cost: u32,
    /// Key id per key column (`EMPTY_KEY` for an empty value), set by
    /// [`Batch::intern`]; until then 0 and unused (the values are in the
    /// batch's `key_bytes`).
    pub keys: [u32; MAX_KEYS],
}

/// Rows read since the last batch, with their key values back to back.
#[derive(Default)]
pub struct Batch {
    pub events: Vec<Event>,
    /// The rows' key values, back to back, row by row, column by column.
    pub key_bytes: Vec<u8>,
    /// Where each value ends in `key_bytes`: one per key column per row.
    pub key_ends: Vec<u32>,
    /// True once the events' `keys` hold ids.
    pub interned: bool,
    /// (key column, start, end) in `key_bytes` of each value first seen in
    /// this batch, in id order.
    pub new_keys: Vec<(u32, u32, u32)>,
    /// Room for the values' places and hashes while interning.
    spans: Vec<(usize, usize, u64)>,
}

impl Batch {
    /// An empty batch with room for as much as this one holds, so that the
    /// next batch fills without growing step by step.
    pub(super) fn empty_like(&self) -> Batch {
        Batch {
            events: Vec::with_capacity(self.events.len()),
            key_bytes: Vec::with_capacity(self.key_bytes.len()),
            key_ends: Vec::with_capacity(self.key_ends.len()),
            interned: false,
            new_keys: Vec::new(),
            spans: Vec::new(),
        }
    }

    /// Empties the batch for the reader to fill again, its room kept: a
    /// batch handed back saves allocating (and faulting in) the next.
    pub fn recycle(&mut self) {
        self.events.clear();
        self.key_bytes.clear();
        self.key_ends.clear();
        self.new_keys.clear();
        self.interned = false;
    }

    /// Turns each event's key values into ids, in row order (so ids follow
    /// first appearance), noting values never seen before in `new_keys`.
    /// The ids of columns past `SPILL_AT` go to `spill` when it is used.
    pub fn intern(&mut self, interners: &mut [Interner], spill: &mut Spill) {
        let spills = spill.used();
        let mut tuple = Vec::new();
        const AHEAD: usize = 8;
        let cols = interners.len();
        // Key columns read per row; interners beyond them see empty values.
        let read = self
            .key_ends
            .len()
            .checked_div(self.events.len())
            .unwrap_or(0);
        // Hash every value first, so each table slot can be fetched from
        // memory a few values before it is probed.
        let mut spans = std::mem::take(&mut self.spans);
        spans.clear();
        let mut start = 0usize;
        for n in 0..self.events.len() {
            for c in 0..cols {
                let end = match c < read {
                    true => self.key_ends[n * read + c] as usize,
                    false => start,
                };
                spans.push((start, end, Interner::hash(&self.key_bytes[start..end])));
                start = end;
            }
            if read > 0 {
                start = self.key_ends[n * read + read - 1] as usize;
            }
        }
        // Row by row, column by column: the value `AHEAD` rows on in the
        // same column is fetched for its own interner.
        let mut i = 0;
        for row in 0..self.events.len() {
            for (c, interner) in interners.iter_mut().enumerate() {
                let (start, end, h) = spans[i];
                if let Some(&(_, _, ahead)) = spans.get(i + AHEAD * cols) {
                    interner.prefetch(ahead);
                }
                let (id, new) = interner.intern_hashed(&self.key_bytes[start..end], h);
                if new {
                    self.new_keys.push((c as u32, start as u32, end as u32));
                }
                match spills && c >= SPILL_AT {
                    false => self.events[row].keys[c] = id,
                    true => tuple.push(id),
                }
                i += 1;
            }
            if spills {
                self.events[row].keys[SPILL_AT] = spill.intern(&tuple);
                tuple.clear();
            }
        }
        self.spans = spans;
        self.interned = true;
    }
}

/// What the reader learned.
#[derive(Clone, Debug, Default)]
pub struct InputSummary {
    pub rows: u64,
    pub bad_rows: u64,
    /// Lines kept though their last quoted field was cut off.
    pub truncated: u64,
    /// Lines the server wrote about itself, not requests.
    pub notices: u64,
    /// Lines read as another variant of their file's format (Common lines
    /// in a Combined log), by variant.
    pub read_as: std::collections::BTreeMap<String, u64>,
    pub time_column: String,
    pub time_format: String,
}

/// Key columns an event holds itself when a run spills (see
/// [`key_values`](super::key_values)).
pub const SPILL_AT: usize = MAX_KEYS - 1;

/// The ids of the key columns past `SPILL_AT`, one tuple per distinct
/// combination seen, numbered in order of first appearance.
#[derive(Default)]
pub struct Spill {
    /// Columns per tuple; 0 when the run does not spill.
    width: usize,
    /// The tuples, back to back.
    ids: Vec<u32>,
    /// The tuples' ids, when used (an empty spill allocates nothing).
    tuples: Option<Interner>,
    bytes: Vec<u8>,
}

impl Spill {
    /// The spill of a run reading `columns` key columns.
    pub fn new(columns: usize) -> Spill {
        let used = columns > MAX_KEYS;
        Spill {
            width: if used { columns - SPILL_AT } else { 0 },
            tuples: used.then(Interner::default),
            ..Spill::default()
        }
    }

    /// The id of column `c` in `ev`.
    #[inline]
    pub fn id(&self, ev: &Event, c: usize) -> u32 {
        match self.width {
            0 => ev.keys[c],
            _ if c < SPILL_AT => ev.keys[c],
            w => self.ids[ev.keys[SPILL_AT] as usize * w + c - SPILL_AT],
        }
    }

    /// Whether a run's events spill.
    pub fn used(&self) -> bool {
        self.width > 0
    }

    /// The id of one row's tuple of spilled ids.
    pub fn intern(&mut self, ids: &[u32]) -> u32 {
        debug_assert_eq!(ids.len(), self.width);
        self.bytes.clear();
        for id in ids {
            self.bytes.extend_from_slice(&id.to_le_bytes());
        }
        let tuples = self.tuples.as_mut().expect("a spill in use");
        let (id, new) = tuples.intern(&self.bytes);
        if new {
            self.ids.extend_from_slice(ids);
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::{Batch, Event, MAX_KEYS, Spill};
    use crate::ingest::keys::{EMPTY_KEY, Interner};
    use crate::time::Nanos;

    /// A batch of rows with `N` key columns each, values back to back.
    fn batch<const N: usize>(rows: &[[&str; N]]) -> Batch {
        let mut b = Batch::default();
        for (n, values) in rows.iter().enumerate() {
            for v in values {
                b.key_bytes.extend_from_slice(v.as_bytes());
                b.key_ends.push(b.key_bytes.len() as u32);
            }
            b.events.push(Event {
                at: Nanos(n as u64),
                row: n as u64 + 1,
                line: n as u64 + 2,
                file: 0,
                cost: 1,
                keys: [0; MAX_KEYS],
            });
        }
        b
    }

    #[test]
    fn interning_gives_ids_by_first_appearance_per_column() {
        let mut b = batch(&[["a", "x"], ["bb", ""], ["a", "yy"], ["", "x"]]);
        let mut interners = vec![Interner::default(), Interner::default()];
        b.intern(&mut interners, &mut Spill::default());
        assert!(b.interned);
        let keys: Vec<[u32; 2]> = b.events.iter().map(|e| [e.keys[0], e.keys[1]]).collect();
        assert_eq!(keys, [[0, 0], [1, EMPTY_KEY], [0, 1], [EMPTY_KEY, 0]]);
        let new: Vec<(u32, &[u8])> = b
            .new_keys
            .iter()
            .map(|&(c, s, e)| (c, &b.key_bytes[s as usize..e as usize]))
            .collect();
        assert_eq!(new, [(0, &b"a"[..]), (1, b"x"), (0, b"bb"), (1, b"yy")]);
        // A second batch knows the first one's values.
        let mut again = batch(&[["bb", "zz"]]);
        again.intern(&mut interners, &mut Spill::default());
        assert_eq!(again.events[0].keys[..2], [1, 2]);
        assert_eq!(again.new_keys, [(1, 2, 4)]);
    }

    #[test]
    fn interners_beyond_the_columns_read_see_empty_values() {
        // Rows read with two key columns, interned by one: the second
        // column's values are skipped, not run into the next row's.
        let mut b = batch(&[["a", "x"], ["b", "y"], ["a", "z"]]);
        let mut one = vec![Interner::default()];
        b.intern(&mut one, &mut Spill::default());
        let firsts: Vec<u32> = b.events.iter().map(|e| e.keys[0]).collect();
        assert_eq!(firsts, [0, 1, 0]);
        // And with more interners than columns, the extra ones see empty keys.
        let mut b = batch(&[["a", "x"], ["b", "y"]]);
        let mut three = vec![
            Interner::default(),
            Interner::default(),
            Interner::default(),
        ];
        b.intern(&mut three, &mut Spill::default());
        let keys: Vec<[u32; 3]> = b
            .events
            .iter()
            .map(|e| [e.keys[0], e.keys[1], e.keys[2]])
            .collect();
        assert_eq!(keys, [[0, 0, EMPTY_KEY], [1, 1, EMPTY_KEY]]);
    }

    #[test]
    fn columns_past_an_events_room_spill_and_read_back() {
        use crate::ingest::key_values::KeyValues;
        let row =
            |r: usize| -> [String; 10] { std::array::from_fn(|c| format!("v{}", (r * c) % 4)) };
        let texts: Vec<[String; 10]> = (0..6).map(row).collect();
        let rows: Vec<[&str; 10]> = texts
            .iter()
            .map(|t| std::array::from_fn(|c| t[c].as_str()))
            .collect();
        let mut b = batch(&rows);
        let mut interners: Vec<Interner> = (0..10).map(|_| Interner::default()).collect();
        let mut kv = KeyValues::new(10);
        b.intern(&mut interners, &mut kv.spill);
        for &(c, s, e) in &b.new_keys {
            kv[c as usize].push(&b.key_bytes[s as usize..e as usize]);
        }
        for (r, ev) in b.events.iter().enumerate() {
            for c in 0..10 {
                assert_eq!(
                    kv[c].get(kv.id(ev, c)),
                    texts[r][c].as_bytes(),
                    "row {r} column {c}"
                );
            }
        }
    }
}
