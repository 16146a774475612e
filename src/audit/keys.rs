//! Key interning: each distinct value of a key column gets a dense `u32` id,
//! so policies key their state by small integers and every per-key table is
//! a vector. The empty value is not a key: a row whose key is empty is not
//! limited by the policies counting by that column (as nginx exempts an
//! empty `limit_req_zone` key).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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

/// Distinct values of one column → dense ids, in order of first appearance.
#[derive(Default)]
pub struct Interner {
    ids: HashMap<Box<[u8]>, u32, BuildHasherDefault<BytesHasher>>,
}

impl Interner {
    /// The id of `value`, and whether it is new.
    #[inline]
    pub fn intern(&mut self, value: &[u8]) -> (u32, bool) {
        if value.is_empty() {
            return (EMPTY_KEY, false);
        }
        if let Some(&id) = self.ids.get(value) {
            return (id, false);
        }
        let id = self.ids.len() as u32;
        self.ids.insert(value.into(), id);
        (id, true)
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
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
    }
}
