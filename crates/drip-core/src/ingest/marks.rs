//! Where the bytes a CSV line splitter stops at are, 64 bytes at a time:
//! one bit per byte for newlines, delimiters, quotes and carriage returns,
//! so a line is cut by walking bits instead of calling a search per field.
//! [`first_of`], [`first_newline`] and [`json_stop_from`] find the next
//! of a few bytes (a field's end, a line's end, the end of a plain run of
//! a JSON string) sixteen at a time.

/// Bit `i` of each mask is set when byte `i` of the block is that byte.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Marks {
    pub newline: u64,
    pub delimiter: u64,
    pub quote: u64,
    pub cr: u64,
}

impl Marks {
    /// The marks of `block` (at most 64 bytes; bits past its end are clear).
    #[inline]
    pub fn of(block: &[u8], delimiter: u8) -> Marks {
        match <&[u8; 64]>::try_from(block) {
            Ok(whole) => whole_block(whole, delimiter),
            Err(_) => {
                let mut padded = [0u8; 64];
                padded[..block.len()].copy_from_slice(block);
                let valid = (1u64 << block.len()) - 1;
                let m = whole_block(&padded, delimiter);
                Marks {
                    newline: m.newline & valid,
                    delimiter: m.delimiter & valid,
                    quote: m.quote & valid,
                    cr: m.cr & valid,
                }
            }
        }
    }
}

/// Thirty-two bytes compared at once where the CPU has AVX2 (asked once,
/// then cached by the standard library), else sixteen (SSE2 is part of
/// every x86-64).
#[cfg(target_arch = "x86_64")]
#[inline]
fn whole_block(block: &[u8; 64], delimiter: u8) -> Marks {
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, just checked.
        unsafe { whole_block_avx2(block, delimiter) }
    } else {
        whole_block_sse2(block, delimiter)
    }
}

/// [`whole_block`] with AVX2.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn whole_block_avx2(block: &[u8; 64], delimiter: u8) -> Marks {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_set1_epi8,
    };
    // SAFETY: AVX2 is enabled for this function (the caller's contract);
    // each load reads 32 bytes inside the 64-byte block (unaligned loads
    // are allowed).
    unsafe {
        let lo = _mm256_loadu_si256(block.as_ptr().cast::<__m256i>());
        let hi = _mm256_loadu_si256(block.as_ptr().add(32).cast::<__m256i>());
        let bits = |b: u8| {
            let w = _mm256_set1_epi8(b as i8);
            let l = _mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, w)) as u32;
            let h = _mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, w)) as u32;
            u64::from(l) | u64::from(h) << 32
        };
        Marks {
            newline: bits(b'\n'),
            delimiter: bits(delimiter),
            quote: bits(b'"'),
            cr: bits(b'\r'),
        }
    }
}

/// [`whole_block`] with SSE2.
#[cfg(target_arch = "x86_64")]
#[inline]
fn whole_block_sse2(block: &[u8; 64], delimiter: u8) -> Marks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is in the x86-64 baseline, so these intrinsics are
    // always available; each load reads 16 bytes inside the 64-byte block
    // (unaligned loads are allowed).
    unsafe {
        let wanted = [b'\n', delimiter, b'"', b'\r'].map(|b| _mm_set1_epi8(b as i8));
        let mut bits = [0u64; 4];
        for part in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * part).cast::<__m128i>());
            for (b, w) in bits.iter_mut().zip(&wanted) {
                let m = _mm_movemask_epi8(_mm_cmpeq_epi8(v, *w)) as u16;
                *b |= u64::from(m) << (16 * part);
            }
        }
        Marks {
            newline: bits[0],
            delimiter: bits[1],
            quote: bits[2],
            cr: bits[3],
        }
    }
}

/// The first position at or after `from` in `s` whose byte `stop` accepts,
/// or `s.len()` when none does: sixteen bytes tested a step by `lanes` (the
/// same test on SSE2 lanes, part of every x86-64), the line's last sixteen
/// for its tail. Fields and lines are short: in line, this beats a call.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn first_stop(
    s: &[u8],
    from: usize,
    lanes: impl Fn(std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i,
    stop: impl Fn(u8) -> bool,
) -> usize {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_movemask_epi8};
    let n = s.len();
    // SAFETY: SSE2 is in the x86-64 baseline; each load reads the 16 bytes
    // from `at`, inside `s` (unaligned loads are allowed).
    let hits = |at: usize| unsafe {
        _mm_movemask_epi8(lanes(_mm_loadu_si128(s.as_ptr().add(at).cast::<__m128i>()))) as u32
    };
    let mut i = from;
    while i + 16 <= n {
        let m = hits(i);
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    if i >= n {
        return n;
    }
    if n < 16 {
        return (i..n).find(|&k| stop(s[k])).unwrap_or(n);
    }
    // The line's last sixteen bytes, those before `i` dropped.
    match hits(n - 16) >> (i + 16 - n) {
        0 => n,
        m => i + m.trailing_zeros() as usize,
    }
}

/// [`first_stop`] byte by byte, where there is no SSE2.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn first_stop(s: &[u8], from: usize, _lanes: (), stop: impl Fn(u8) -> bool) -> usize {
    (from..s.len()).find(|&k| stop(s[k])).unwrap_or(s.len())
}

/// The lanes equal to `a` or `b`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn either(a: u8, b: u8) -> impl Fn(std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_or_si128, _mm_set1_epi8};
    // SAFETY: SSE2 is in the x86-64 baseline.
    let (a, b) = unsafe { (_mm_set1_epi8(a as i8), _mm_set1_epi8(b as i8)) };
    move |v| unsafe { _mm_or_si128(_mm_cmpeq_epi8(v, a), _mm_cmpeq_epi8(v, b)) }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn either(_: u8, _: u8) {}

/// The first byte at or after `from` in `s` that is `bytes[0]` or
/// `bytes[1]`, or `s.len()` when none is.
#[inline(always)]
pub fn first_of(s: &[u8], from: usize, [a, b]: [u8; 2]) -> usize {
    first_stop(s, from, either(a, b), |c| c == a || c == b)
}

/// The first newline at or after `from` in `s`, or `s.len()` when there
/// is none: thirty-two bytes a step (two SSE2 compares), then `memchr`.
#[inline(always)]
pub fn first_newline(s: &[u8], from: usize) -> usize {
    let mut i = from;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is in the x86-64 baseline; the two loads read the 32
        // bytes `s[i..i + 32]`, inside `s` (unaligned loads are allowed).
        unsafe {
            let newline = _mm_set1_epi8(b'\n' as i8);
            let p = s.as_ptr();
            while i + 32 <= s.len() {
                let lo = _mm_loadu_si128(p.add(i).cast());
                let hi = _mm_loadu_si128(p.add(i + 16).cast());
                let m = _mm_movemask_epi8(_mm_cmpeq_epi8(lo, newline)) as u32
                    | (_mm_movemask_epi8(_mm_cmpeq_epi8(hi, newline)) as u32) << 16;
                if m != 0 {
                    return i + m.trailing_zeros() as usize;
                }
                i += 32;
            }
        }
    }
    s.get(i..)
        .and_then(|rest| memchr::memchr(b'\n', rest))
        .map_or(s.len(), |k| i + k)
}

/// The lanes that end a plain run of a JSON string.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn json_lanes() -> impl Fn(std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_or_si128, _mm_set1_epi8};
    // SAFETY: SSE2 is in the x86-64 baseline.
    unsafe {
        let (quote, backslash) = (_mm_set1_epi8(b'"' as i8), _mm_set1_epi8(b'\\' as i8));
        // Signed: a byte above ASCII is negative, so below a space too.
        let space = _mm_set1_epi8(b' ' as i8);
        move |v| {
            _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                _mm_cmplt_epi8(v, space),
            )
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn json_lanes() {}

/// The first byte at or after `from` in `s` that ends a plain run of a
/// JSON string (a quote, a backslash, a control character or a byte above
/// ASCII), or `s.len()` when none does.
#[inline(always)]
pub fn json_stop_from(s: &[u8], from: usize) -> usize {
    first_stop(s, from, json_lanes(), |b| {
        b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b)
    })
}

/// Bit `i` is set when byte `i` of `block` ends a plain run of a JSON
/// string (a quote, a backslash, a control character or a byte above
/// ASCII), byte by byte: what [`json_stop_from`] must find.
#[cfg(test)]
fn json_stops_bytewise(block: &[u8; 64]) -> u64 {
    let stop = |b: u8| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b);
    (0..64).fold(0, |m, i| m | u64::from(stop(block[i])) << i)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn whole_block(block: &[u8; 64], delimiter: u8) -> Marks {
    bytewise(block, delimiter)
}

/// The marks byte by byte: what the fast version must equal.
#[cfg_attr(target_arch = "x86_64", cfg(test))]
fn bytewise(block: &[u8; 64], delimiter: u8) -> Marks {
    let mut m = Marks::default();
    for (i, &b) in block.iter().enumerate() {
        let bit = 1u64 << i;
        m.newline |= bit * u64::from(b == b'\n');
        m.delimiter |= bit * u64::from(b == delimiter);
        m.quote |= bit * u64::from(b == b'"');
        m.cr |= bit * u64::from(b == b'\r');
    }
    m
}

#[cfg(test)]
mod tests {
    use super::{Marks, bytewise, first_newline, json_stop_from, json_stops_bytewise};
    use crate::testing::Rng;

    #[test]
    fn marks_are_those_found_byte_by_byte() {
        let mut rng = Rng(0x6d61_726b);
        let alphabet: &[u8] = b"\n,\"\r;\t\0ab\xff\x80\\ !\x1f\x7f";
        for _ in 0..2000 {
            let mut block = [0u8; 64];
            for b in &mut block {
                *b = alphabet[rng.below(alphabet.len() as u64) as usize];
            }
            // The search from any place of any prefix: the first stop.
            let len = rng.below(65) as usize;
            let from = rng.below(len as u64 + 2) as usize;
            let bits = json_stops_bytewise(&block);
            let want = (from..len).find(|&k| bits >> k & 1 == 1).unwrap_or(len);
            assert_eq!(json_stop_from(&block[..len], from), want, "{len} {from}");
            let want = (from..len).find(|&k| block[k] == b'\n').unwrap_or(len);
            assert_eq!(first_newline(&block[..len], from), want, "{len} {from}");
            for delimiter in [b',', b';', b'\t', 0, 0xff] {
                assert_eq!(Marks::of(&block, delimiter), bytewise(&block, delimiter));
                #[cfg(target_arch = "x86_64")]
                assert_eq!(
                    super::whole_block_sse2(&block, delimiter),
                    bytewise(&block, delimiter)
                );
                let len = rng.below(64) as usize;
                let mut padded = [0u8; 64];
                padded[..len].copy_from_slice(&block[..len]);
                let whole = bytewise(&padded, delimiter);
                let valid = (1u64 << len) - 1;
                assert_eq!(
                    Marks::of(&block[..len], delimiter),
                    Marks {
                        newline: whole.newline & valid,
                        delimiter: whole.delimiter & valid,
                        quote: whole.quote & valid,
                        cr: whole.cr & valid,
                    }
                );
            }
        }
    }
}
