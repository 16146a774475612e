//! Key interning: each distinct value of a key column gets a dense `u32` id,
//! so policies key their state by small integers and every per-key table is
//! a vector. The empty value is not a key: a row whose key is empty is not
//! limited by the policies counting by that column (as nginx exempts an
//! empty `limit_req_zone` key).

use std::hash::Hasher;

/// The id of the empty value: the request is exempt from that key's limits.
pub const EMPTY_KEY: u32 = u32::MAX;

/// A fast non-cryptographic hasher for key bytes, eight bytes at a time.
/// Logs are the user's own data, not an adversary's.
#[derive(Default, Clone, Copy)]
pub struct BytesHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl Hasher for BytesHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let v = u64::from_le_bytes(c.try_into().expect("chunk of eight"));
            h = (h ^ v).wrapping_mul(K).rotate_left(26);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            h = (h ^ u64::from_le_bytes(buf))
                .wrapping_mul(K)
                .rotate_left(26);
        }
        self.0 = h ^ bytes.len() as u64;
    }
    #[inline]
    fn write_u8(&mut self, _: u8) {
        // The `str`/`[u8]` hash terminator: the length is already mixed in.
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.0 ^= n as u64;
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Fold the high bits down: the table uses the top seven for tags.
        let m = u128::from(self.0).wrapping_mul(u128::from(K));
        (m as u64) ^ ((m >> 64) as u64)
    }
}

/// Keys of at most this many bytes are stored inside the table itself.
const INLINE: usize = 11;

/// A table slot, 16 bytes: a short key inline (zero-padded, its length in
/// the last byte), or a long key's place in the arena (`LONG` in the last
/// byte).
#[derive(Clone, Copy)]
struct Entry {
    inline: [u8; 12],
    id: u32,
}

const LONG: u8 = 0xff;

fn pad(value: &[u8]) -> [u8; 12] {
    let mut p = [0u8; 12];
    p[..value.len()].copy_from_slice(value);
    p[11] = value.len() as u8;
    p
}

fn hash_short(p: &[u8; 12]) -> u64 {
    let a = u64::from_le_bytes(p[..8].try_into().expect("eight bytes"));
    let b = u32::from_le_bytes(p[8..].try_into().expect("four bytes"));
    let h = a.wrapping_mul(K).rotate_left(26) ^ u64::from(b);
    let m = u128::from(h).wrapping_mul(u128::from(K));
    (m as u64) ^ ((m >> 64) as u64)
}

fn hash_long(value: &[u8]) -> u64 {
    let mut h = BytesHasher::default();
    h.write(value);
    h.finish()
}

/// A long key stored in the arena at `at`: a u32 length, then the bytes.
fn long_key<'a>(arena: &'a [u8], e: &Entry) -> &'a [u8] {
    let at = u64::from_le_bytes(e.inline[..8].try_into().expect("eight bytes")) as usize;
    let len = u32::from_le_bytes(arena[at..at + 4].try_into().expect("four bytes")) as usize;
    &arena[at + 4..at + 4 + len]
}

/// An empty table slot.
const VACANT: u32 = u32::MAX;

/// Distinct values of one column → dense ids, in order of first appearance.
///
/// An open-addressing table of 16-byte slots with linear probing, at most
/// at most three quarters full. Short keys (most client ids and IPv4 addresses) live inside
/// their slot, so a lookup usually touches one cache line and compares two
/// words; `prefetch` lets a caller start that load early.
pub struct Interner {
    slots: Vec<Entry>,
    len: u32,
    long: Vec<u8>,
}

impl Default for Interner {
    fn default() -> Self {
        Interner {
            slots: vec![
                Entry {
                    inline: [0; 12],
                    id: VACANT
                };
                1024
            ],
            len: 0,
            long: Vec::new(),
        }
    }
}

impl Interner {
    /// The hash the table files `value` under.
    #[inline]
    pub fn hash(value: &[u8]) -> u64 {
        if value.len() <= INLINE {
            hash_short(&pad(value))
        } else {
            hash_long(value)
        }
    }

    /// Starts loading the slot where a value with hash `h` would be.
    #[inline]
    pub fn prefetch(&self, h: u64) {
        let i = h as usize & (self.slots.len() - 1);
        crate::policy::keyed::prefetch_line(&self.slots[i]);
    }

    /// The id of `value`, and whether it is new.
    #[inline]
    pub fn intern(&mut self, value: &[u8]) -> (u32, bool) {
        self.intern_hashed(value, Self::hash(value))
    }

    /// `intern` with the value's `hash` already computed.
    #[inline]
    pub fn intern_hashed(&mut self, value: &[u8], h: u64) -> (u32, bool) {
        if value.is_empty() {
            return (EMPTY_KEY, false);
        }
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        if value.len() <= INLINE {
            let p = pad(value);
            loop {
                let e = &self.slots[i];
                if e.id == VACANT {
                    break;
                }
                if e.inline == p {
                    return (e.id, false);
                }
                i = (i + 1) & mask;
            }
            self.slots[i] = Entry {
                inline: p,
                id: self.len,
            };
        } else {
            loop {
                let e = &self.slots[i];
                if e.id == VACANT {
                    break;
                }
                if e.inline[11] == LONG && long_key(&self.long, e) == value {
                    return (e.id, false);
                }
                i = (i + 1) & mask;
            }
            let mut inline = [0u8; 12];
            inline[..8].copy_from_slice(&(self.long.len() as u64).to_le_bytes());
            inline[11] = LONG;
            self.long
                .extend_from_slice(&(value.len() as u32).to_le_bytes());
            self.long.extend_from_slice(value);
            self.slots[i] = Entry {
                inline,
                id: self.len,
            };
        }
        let id = self.len;
        self.len += 1;
        if self.len as usize * 4 > self.slots.len() * 3 {
            self.grow();
        }
        (id, true)
    }

    /// Doubles the table and files every entry again.
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let vacant = Entry {
            inline: [0; 12],
            id: VACANT,
        };
        self.slots = vec![vacant; old.len() * 2];
        let mask = self.slots.len() - 1;
        for e in old.into_iter().filter(|e| e.id != VACANT) {
            let h = if e.inline[11] == LONG {
                hash_long(long_key(&self.long, &e))
            } else {
                hash_short(&e.inline)
            };
            let mut i = h as usize & mask;
            while self.slots[i].id != VACANT {
                i = (i + 1) & mask;
            }
            self.slots[i] = e;
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len as usize
    }
}

/// Key values by id, packed in one buffer.
#[derive(Default)]
pub struct KeyNames {
    bytes: Vec<u8>,
    ends: Vec<u32>,
}

impl KeyNames {
    /// Appends the value of the next id.
    pub fn push(&mut self, value: &[u8]) {
        self.bytes.extend_from_slice(value);
        // Key text beyond 4 GiB in one column is not a log this reads.
        self.ends
            .push(u32::try_from(self.bytes.len()).unwrap_or(u32::MAX));
    }

    pub fn get(&self, id: u32) -> &[u8] {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_and_stable() {
        let mut i = Interner::default();
        assert_eq!(i.intern(b"a"), (0, true));
        assert_eq!(i.intern(b"bb"), (1, true));
        assert_eq!(i.intern(b"a"), (0, false));
        assert_eq!(i.intern(b""), (EMPTY_KEY, false));
        assert_eq!(i.len(), 2);
        for n in 0..10_000u32 {
            i.intern(format!("client-{n}").as_bytes());
        }
        assert_eq!(i.intern(b"client-9999"), (10_001, false));
        // Long keys (beyond the inline size) and near-misses.
        let long = b"2001:db8:85a3::8a2e:370:7334/with-a-long-suffix";
        assert_eq!(i.intern(long), (10_002, true));
        assert_eq!(i.intern(&long[..long.len() - 1]), (10_003, true));
        assert_eq!(i.intern(long), (10_002, false));
        assert_eq!(i.intern(b"client-999\0"), (10_004, true));
        for n in 0..10_000u32 {
            let v = format!("a-rather-long-client-name-{n}");
            assert_eq!(i.intern(v.as_bytes()).0, 10_005 + n);
        }
        assert_eq!(i.intern(b"a-rather-long-client-name-77"), (10_082, false));
        let mut names = KeyNames::default();
        names.push(b"a");
        names.push(b"bcd");
        assert_eq!(names.get(1), b"bcd");
        assert_eq!(names.get(0), b"a");
    }
}
