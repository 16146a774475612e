//! Per-key state: one map per policy, and a stack of members evaluated as
//! nginx evaluates several `limit_req` lines.
//!
//! A key never seen behaves as the policy's `Default` state (empty bucket,
//! full tokens). Keys whose state is back to neutral are forgotten by a
//! sweep that runs whenever the map has doubled since the last one, so the
//! map follows the keys active within the policy's horizon at amortised
//! O(1) per decision, not every key ever seen.

use super::{Decision, Policy};
use crate::time::Nanos;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A key, as the driver numbers it (0 for a single global bucket).
pub type KeyId = u64;

/// A fast hasher for integer key ids (not for untrusted input).
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, n: u64) {
        // Multiply-fold: spreads sequential ids over all bits, including the
        // top seven that the table's control bytes use.
        let m = u128::from(n ^ 0x2d35_8dcc_aa6c_78a5).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
}

pub type IdMap<V> = HashMap<KeyId, V, BuildHasherDefault<IdHasher>>;

const MIN_SWEEP: usize = 4096;

/// An object-safe view of a policy with its per-key states.
pub trait Limiter: Send {
    /// The decision, with no change of state.
    fn check(&self, key: KeyId, now: Nanos, cost: u64) -> Decision;
    /// Records an admitted request.
    fn admit(&mut self, key: KeyId, now: Nanos, cost: u64);
    /// Records a refused request (most policies change nothing).
    fn refuse(&mut self, key: KeyId, now: Nanos, cost: u64);
    /// `check` and record.
    fn decide(&mut self, key: KeyId, now: Nanos, cost: u64) -> Decision;
    /// `decide`, and the key's level just after, as far as `levels` asks
    /// (0 where it does not).
    fn decide_level(
        &mut self,
        key: KeyId,
        now: Nanos,
        cost: u64,
        levels: Levels,
    ) -> (Decision, u64);
    /// The highest level the policy can reach (`u64::MAX`: no bound).
    fn max_level(&self) -> u64;
    /// The key's occupancy after its last request (level, backlog, count).
    fn level(&self, key: KeyId, now: Nanos) -> u64;
    /// Keys currently held in memory.
    fn tracked(&self) -> usize;
    /// True when admitted requests may be delayed.
    fn shapes(&self) -> bool;
    /// What `level` measures (see [`Policy::level_kind`]).
    fn level_kind(&self) -> &'static str;
    /// A hint that `key` will be decided soon: start loading its state
    /// (`deep`: also what the state points to). Changes nothing.
    fn prefetch(&self, _key: KeyId, _deep: bool) {}
}

/// Asks the CPU to start loading the cache line at `p`.
#[inline(always)]
pub fn prefetch_line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, even on a bad address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Which levels a caller of `decide_level` needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Levels {
    /// None (a peak already at the policy's `max_level`).
    None,
    /// After admits and after refusals that change state: enough for a
    /// running peak, since a level only rises then.
    Rises,
    /// After every decision (a timeline's per-interval level).
    All,
}

/// `decide`, and the level after it as far as `levels` asks (else 0).
#[inline]
fn decide_level<P: Policy>(
    policy: &P,
    s: &mut P::State,
    now: Nanos,
    cost: u64,
    levels: Levels,
) -> (Decision, u64) {
    let d = policy.decide(s, now, cost);
    let wanted = match levels {
        Levels::None => false,
        Levels::Rises => d.is_admit() || policy.refusal_counts(),
        Levels::All => true,
    };
    (d, if wanted { policy.level(s, now) } else { 0 })
}

/// A policy and its per-key states.
pub struct Keyed<P: Policy> {
    policy: P,
    states: IdMap<P::State>,
    sweep_at: usize,
}

impl<P: Policy> Keyed<P> {
    pub fn new(policy: P) -> Self {
        Keyed {
            policy,
            states: IdMap::default(),
            sweep_at: MIN_SWEEP,
        }
    }

    /// Forgets neutral keys when the map has doubled since the last sweep
    /// and `key` would add an entry.
    fn maybe_sweep(&mut self, key: KeyId, now: Nanos) {
        if self.states.len() >= self.sweep_at && !self.states.contains_key(&key) {
            let policy = &self.policy;
            self.states.retain(|_, s| !policy.is_neutral(s, now));
            self.sweep_at = (self.states.len() * 2).max(MIN_SWEEP);
        }
    }
}

impl<P> Limiter for Keyed<P>
where
    P: Policy + Send,
    P::State: Send,
{
    fn check(&self, key: KeyId, now: Nanos, cost: u64) -> Decision {
        match self.states.get(&key) {
            Some(s) => self.policy.check(s, now, cost),
            None => self.policy.check(&P::State::default(), now, cost),
        }
    }

    fn admit(&mut self, key: KeyId, now: Nanos, cost: u64) {
        self.maybe_sweep(key, now);
        let s = self.states.entry(key).or_default();
        self.policy.admit(s, now, cost);
    }

    fn refuse(&mut self, key: KeyId, now: Nanos, cost: u64) {
        if let Some(s) = self.states.get_mut(&key) {
            self.policy.refuse(s, now, cost);
        } else {
            let mut s = P::State::default();
            self.policy.refuse(&mut s, now, cost);
            if !self.policy.is_neutral(&s, now) {
                self.maybe_sweep(key, now);
                self.states.insert(key, s);
            }
        }
    }

    fn decide(&mut self, key: KeyId, now: Nanos, cost: u64) -> Decision {
        self.decide_level(key, now, cost, Levels::None).0
    }

    fn decide_level(
        &mut self,
        key: KeyId,
        now: Nanos,
        cost: u64,
        levels: Levels,
    ) -> (Decision, u64) {
        // One lookup; a refused key never seen leaves a neutral entry that
        // the next sweep forgets.
        self.maybe_sweep(key, now);
        let s = self.states.entry(key).or_default();
        decide_level(&self.policy, s, now, cost, levels)
    }

    fn level(&self, key: KeyId, now: Nanos) -> u64 {
        self.states
            .get(&key)
            .map_or(0, |s| self.policy.level(s, now))
    }

    fn tracked(&self) -> usize {
        self.states.len()
    }

    fn shapes(&self) -> bool {
        self.policy.shapes()
    }

    fn level_kind(&self) -> &'static str {
        self.policy.level_kind()
    }

    fn max_level(&self) -> u64 {
        self.policy.max_level()
    }
}

/// A policy with its per-key states in a vector indexed by key id, for a
/// driver whose keys are dense ids (audit interns every key value): one
/// indexed access per decision, no hashing. Memory is one fixed-size state
/// per key id ever used; for a policy whose state holds memory of its own
/// (the sliding log's entries), neutral states are reset to the never-seen
/// state by a sweep after every `max(keys, 4096)` decisions, so that memory
/// follows the active keys (amortised O(1) per decision).
pub struct Dense<P: Policy> {
    policy: P,
    states: Vec<P::State>,
    since_sweep: usize,
}

impl<P: Policy> Dense<P> {
    pub fn new(policy: P) -> Self {
        Dense {
            policy,
            states: Vec::new(),
            since_sweep: 0,
        }
    }

    #[inline]
    fn maybe_sweep(&mut self, now: Nanos) {
        if !self.policy.holds_memory() {
            return;
        }
        self.since_sweep += 1;
        if self.since_sweep >= self.states.len().max(MIN_SWEEP) {
            self.since_sweep = 0;
            for s in &mut self.states {
                if self.policy.is_neutral(s, now) {
                    *s = P::State::default();
                }
            }
        }
    }

    /// The per-key states, by key id.
    pub fn states(&self) -> &[P::State] {
        &self.states
    }

    /// Makes room for `key`; returns its index.
    #[inline]
    fn grow(&mut self, key: KeyId) -> usize {
        let i = key as usize;
        if i >= self.states.len() {
            self.states.resize_with(i + 1, P::State::default);
        }
        i
    }
}

impl<P> Limiter for Dense<P>
where
    P: Policy + Send,
    P::State: Send,
{
    fn check(&self, key: KeyId, now: Nanos, cost: u64) -> Decision {
        match self.states.get(key as usize) {
            Some(s) => self.policy.check(s, now, cost),
            None => self.policy.check(&P::State::default(), now, cost),
        }
    }

    fn admit(&mut self, key: KeyId, now: Nanos, cost: u64) {
        self.maybe_sweep(now);
        let i = self.grow(key);
        self.policy.admit(&mut self.states[i], now, cost);
    }

    fn refuse(&mut self, key: KeyId, now: Nanos, cost: u64) {
        self.maybe_sweep(now);
        let i = self.grow(key);
        self.policy.refuse(&mut self.states[i], now, cost);
    }

    fn decide(&mut self, key: KeyId, now: Nanos, cost: u64) -> Decision {
        self.decide_level(key, now, cost, Levels::None).0
    }

    #[inline]
    fn decide_level(
        &mut self,
        key: KeyId,
        now: Nanos,
        cost: u64,
        levels: Levels,
    ) -> (Decision, u64) {
        self.maybe_sweep(now);
        let i = self.grow(key);
        decide_level(&self.policy, &mut self.states[i], now, cost, levels)
    }

    fn level(&self, key: KeyId, now: Nanos) -> u64 {
        self.states
            .get(key as usize)
            .map_or(0, |s| self.policy.level(s, now))
    }

    fn tracked(&self) -> usize {
        self.states.len()
    }

    fn shapes(&self) -> bool {
        self.policy.shapes()
    }

    fn level_kind(&self) -> &'static str {
        self.policy.level_kind()
    }

    fn max_level(&self) -> u64 {
        self.policy.max_level()
    }

    #[inline]
    fn prefetch(&self, key: KeyId, deep: bool) {
        if let Some(s) = self.states.get(key as usize) {
            if deep {
                self.policy.prefetch(s);
            } else {
                prefetch_line(s);
            }
        }
    }
}

/// Several limiters evaluated together, as nginx evaluates several
/// `limit_req` lines: in order, stopping at the first refusal; admitted only
/// if every applicable member admits; released at the latest member release
/// (the delay is the maximum, not the sum); and a refusal records nothing in
/// any member except the refusing one's own flavour (fixed-window
/// `count=all` counts the refused hit). A member whose key is `None` (an
/// empty key) does not apply to the request.
pub struct Stack {
    members: Vec<Box<dyn Limiter>>,
}

impl Stack {
    pub fn new(members: Vec<Box<dyn Limiter>>) -> Stack {
        Stack { members }
    }

    pub fn members(&self) -> &[Box<dyn Limiter>] {
        &self.members
    }

    /// Replaces member `i` (a new policy, with empty state) and returns it.
    pub fn replace(&mut self, i: usize, member: Box<dyn Limiter>) -> &mut dyn Limiter {
        self.members[i] = member;
        &mut *self.members[i]
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Decides one request; `keys[i]` is member i's key.
    pub fn decide(&mut self, keys: &[Option<KeyId>], now: Nanos, cost: u64) -> Decision {
        self.decide_level(keys, now, cost, Levels::None).0
    }

    /// `decide`, and the largest member level for these keys just after
    /// (see [`Limiter::decide_level`]).
    pub fn decide_level(
        &mut self,
        keys: &[Option<KeyId>],
        now: Nanos,
        cost: u64,
        levels: Levels,
    ) -> (Decision, u64) {
        if let [only] = self.members.as_mut_slice() {
            return match keys[0] {
                Some(k) => only.decide_level(k, now, cost, levels),
                None => (Decision::Admit { release: now }, 0),
            };
        }
        let d = self.decide_many(keys, now, cost);
        (d, self.level(keys, now))
    }

    fn decide_many(&mut self, keys: &[Option<KeyId>], now: Nanos, cost: u64) -> Decision {
        let mut release = now;
        for (i, m) in self.members.iter_mut().enumerate() {
            let Some(k) = keys[i] else { continue };
            match m.check(k, now, cost) {
                Decision::Admit { release: r } => release = release.max(r),
                Decision::Refuse { .. } => {
                    m.refuse(k, now, cost);
                    return Decision::Refuse {
                        retry_at: self.retry_at(keys, now, cost),
                    };
                }
            }
        }
        for (i, m) in self.members.iter_mut().enumerate() {
            if let Some(k) = keys[i] {
                m.admit(k, now, cost);
            }
        }
        Decision::Admit { release }
    }

    /// The first instant every member admits, if nothing else arrives.
    /// Every policy here only loosens as time passes, so it is the latest
    /// of the members' own answers.
    fn retry_at(&self, keys: &[Option<KeyId>], now: Nanos, cost: u64) -> Option<Nanos> {
        let mut at = now;
        for (i, m) in self.members.iter().enumerate() {
            let Some(k) = keys[i] else { continue };
            match m.check(k, now, cost) {
                Decision::Admit { .. } => {}
                Decision::Refuse { retry_at } => at = at.max(retry_at?),
            }
        }
        Some(at)
    }

    /// The largest level among members for their keys.
    pub fn level(&self, keys: &[Option<KeyId>], now: Nanos) -> u64 {
        self.members
            .iter()
            .zip(keys)
            .filter_map(|(m, k)| k.map(|k| m.level(k, now)))
            .max()
            .unwrap_or(0)
    }

    pub fn tracked(&self) -> usize {
        self.members.iter().map(|m| m.tracked()).sum()
    }

    pub fn shapes(&self) -> bool {
        self.members.iter().any(|m| m.shapes())
    }

    /// The highest level any member can reach.
    pub fn max_level(&self) -> u64 {
        self.members
            .iter()
            .map(|m| m.max_level())
            .max()
            .unwrap_or(0)
    }

    /// "backlog" when every member measures one, else "level".
    pub fn level_kind(&self) -> &'static str {
        if self.members.iter().all(|m| m.level_kind() == "backlog") {
            "backlog"
        } else {
            "level"
        }
    }
}
