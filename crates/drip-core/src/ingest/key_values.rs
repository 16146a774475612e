//! Key values of every key column, by id, and the ids an event has no room
//! for. An [`Event`] holds `MAX_KEYS` ids. A run reading more key columns
//! (an nginx.conf whose routing and keys read many log fields) keeps the
//! first `SPILL_AT` in the event and interns the ids of the rest, as one
//! tuple, into a table here; the event's last slot holds the tuple's id.
//! Runs that read `MAX_KEYS` columns or fewer never spill, so what a row
//! costs does not grow with the columns a few configs need.

use super::batch::Event;
pub use super::batch::{SPILL_AT, Spill};
use super::keys::KeyNames;

/// Key values per key column, by id, with the spilled ids.
#[derive(Default)]
pub struct KeyValues {
    names: Vec<KeyNames>,
    pub spill: Spill,
}

impl KeyValues {
    /// Room for `columns` key columns.
    pub fn new(columns: usize) -> KeyValues {
        KeyValues {
            names: (0..columns).map(|_| KeyNames::default()).collect(),
            spill: Spill::new(columns),
        }
    }

    /// The id of column `c` in `ev`.
    #[inline]
    pub fn id(&self, ev: &Event, c: usize) -> u32 {
        self.spill.id(ev, c)
    }

    /// The value of column `c` in `ev` (empty for none).
    #[inline]
    pub fn value(&self, ev: &Event, c: usize) -> &[u8] {
        match self.id(ev, c) {
            super::keys::EMPTY_KEY => b"",
            id => self.names[c].get(id),
        }
    }
}

impl std::ops::Deref for KeyValues {
    type Target = [KeyNames];
    fn deref(&self) -> &[KeyNames] {
        &self.names
    }
}

impl std::ops::DerefMut for KeyValues {
    fn deref_mut(&mut self) -> &mut [KeyNames] {
        &mut self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::batch::MAX_KEYS;
    use crate::ingest::keys::EMPTY_KEY;

    #[test]
    fn ids_past_the_event_come_back_from_the_spill() {
        let mut kv = KeyValues::new(MAX_KEYS + 2);
        assert!(kv.spill.used());
        let mut ev = Event {
            at: crate::time::Nanos(0),
            row: 1,
            line: 1,
            file: 0,
            cost: 1,
            keys: [5; MAX_KEYS],
        };
        let tuples = [[1, 2, EMPTY_KEY], [3, 4, 0], [1, 2, EMPTY_KEY]];
        let ids: Vec<u32> = tuples.iter().map(|t| kv.spill.intern(t)).collect();
        assert_eq!(ids, [0, 1, 0]);
        ev.keys[SPILL_AT] = 1;
        assert_eq!(kv.id(&ev, 0), 5);
        assert_eq!(kv.id(&ev, SPILL_AT), 3);
        assert_eq!(kv.id(&ev, SPILL_AT + 2), 0);
        ev.keys[SPILL_AT] = 0;
        assert_eq!(kv.id(&ev, SPILL_AT + 2), EMPTY_KEY);
        assert!(!KeyValues::new(MAX_KEYS).spill.used());
        assert_eq!(KeyValues::new(MAX_KEYS).id(&ev, SPILL_AT), 0);
    }
}
