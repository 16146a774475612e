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

/// A table slot, 16 bytes: a short key inline as two words (its bytes
/// little-endian, zero-padded, its length in the top byte of `hi`), or a
/// long key's place in the arena (`lo`, with `LONG` as `hi`).
#[derive(Clone, Copy)]
struct Entry {
    lo: u64,
    hi: u32,
    id: u32,
}

const LONG: u32 = 0xff << 24;

/// A short key as the two words of its slot, built in registers (not
/// copied through memory, which would stall the loads that follow).
#[inline]
fn words(value: &[u8]) -> (u64, u32) {
    let n = value.len();
    let hi = match n > 8 {
        true => word(&value[8..]) as u32,
        false => 0,
    };
    (word(&value[..n.min(8)]), hi | (n as u32) << 24)
}

/// Up to eight bytes as a little-endian word.
#[inline]
fn word(v: &[u8]) -> u64 {
    let n = v.len();
    let four = |at: usize| u64::from(u32::from_le_bytes([v[at], v[at + 1], v[at + 2], v[at + 3]]));
    match n {
        8.. => u64::from_le_bytes(v[..8].try_into().expect("eight bytes")),
        // The two halves overlap on equal bytes.
        4..=7 => four(0) | four(n - 4) << (8 * (n - 4)),
        1..=3 => {
            u64::from(v[0])
                | u64::from(v[n / 2]) << (8 * (n / 2))
                | u64::from(v[n - 1]) << (8 * (n - 1))
        }
        0 => 0,
    }
}

fn hash_short(lo: u64, hi: u32) -> u64 {
    let h = lo.wrapping_mul(K).rotate_left(26) ^ u64::from(hi);
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
    let at = e.lo as usize;
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
                    lo: 0,
                    hi: 0,
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
            let (lo, hi) = words(value);
            hash_short(lo, hi)
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
            let (lo, hi) = words(value);
            loop {
                let e = &self.slots[i];
                if e.id == VACANT {
                    break;
                }
                if e.lo == lo && e.hi == hi {
                    return (e.id, false);
                }
                i = (i + 1) & mask;
            }
            self.slots[i] = Entry {
                lo,
                hi,
                id: self.len,
            };
        } else {
            loop {
                let e = &self.slots[i];
                if e.id == VACANT {
                    break;
                }
                if e.hi == LONG && long_key(&self.long, e) == value {
                    return (e.id, false);
                }
                i = (i + 1) & mask;
            }
            let lo = self.long.len() as u64;
            self.long
                .extend_from_slice(&(value.len() as u32).to_le_bytes());
            self.long.extend_from_slice(value);
            self.slots[i] = Entry {
                lo,
                hi: LONG,
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
            lo: 0,
            hi: 0,
            id: VACANT,
        };
        self.slots = vec![vacant; old.len() * 2];
        let mask = self.slots.len() - 1;
        for e in old.into_iter().filter(|e| e.id != VACANT) {
            let h = if e.hi == LONG {
                hash_long(long_key(&self.long, &e))
            } else {
                hash_short(e.lo, e.hi)
            };
            let mut i = h as usize & mask;
            while self.slots[i].id != VACANT {
                i = (i + 1) & mask;
            }
            self.slots[i] = e;
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
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

    /// Whether no name is held.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_key_is_its_bytes_zero_padded_with_its_length() {
        let mut rng = crate::testing::Rng(0x776f_7264);
        for _ in 0..2000 {
            let n = rng.below(INLINE as u64 + 1) as usize;
            let v: Vec<u8> = (0..n)
                .map(|_| [0, 1, b'a', 0xff][rng.below(4) as usize])
                .collect();
            let mut p = [0u8; 12];
            p[..n].copy_from_slice(&v);
            p[11] = n as u8;
            let lo = u64::from_le_bytes(p[..8].try_into().unwrap());
            let hi = u32::from_le_bytes(p[8..].try_into().unwrap());
            assert_eq!(words(&v), (lo, hi), "{v:?}");
        }
    }

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
