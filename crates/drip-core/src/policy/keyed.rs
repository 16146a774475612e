//! Per-key state: one store per policy, and a stack of members evaluated as
//! nginx evaluates several `limit_req` lines.
//!
//! Keys are dense ids (audit and pace intern every key value; 0 is the one
//! global bucket), so a store is a vector of states indexed by key id: one
//! indexed access per decision, no hashing. A store may carry several
//! policies of one kind (size's candidates), their states of one key side
//! by side. A key never seen behaves as the
//! policy's `Default` state (empty bucket, full tokens). Memory is one
//! fixed-size state per key id ever used; for a policy whose state holds
//! memory of its own (the sliding log's entries), neutral states are reset
//! to the never-seen state by a sweep after every `max(keys, 4096)`
//! decisions, so that memory follows the keys active within the policy's
//! horizon at amortised O(1) per decision.

use super::rule::{Info, LevelKind, Listed, Prefetch};
pub use super::rule::{prefetch_line, prefetch_lines};
use super::table::WithPolicy;
use super::{Checked, Decision, Policy, PolicyConfig};
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

/// A map from key ids, hashed by [`IdHasher`].
pub type IdMap<V> = HashMap<KeyId, V, BuildHasherDefault<IdHasher>>;

/// Fewest decisions between two sweeps (of a store, or of a field of
/// [`Records`](super::records::Records)).
pub(super) const MIN_SWEEP: usize = 4096;

/// What a loop over requests needs of one policy's per-key states: a
/// store's, or its column of shared [`Records`](super::records::Records).
pub trait Decides {
    /// `decide`, and the key's level just after, as far as `levels` asks
    /// (0 where it does not).
    fn decide_level(
        &mut self,
        key: KeyId,
        now: Nanos,
        cost: u64,
        levels: Levels,
    ) -> (Decision, u64);
    /// `decide_level` for a caller that only counts decisions: a refusal
    /// comes with no retry time (see [`Policy::decide_retry`]).
    fn decide_level_no_retry(
        &mut self,
        key: KeyId,
        now: Nanos,
        cost: u64,
        levels: Levels,
    ) -> (Decision, u64);
    /// A hint that `key` will be decided soon: start loading its state
    /// (`deep`: also what the state points to). Changes nothing.
    fn prefetch(&self, key: KeyId, deep: bool);
    /// Whether a state points to anything a deep prefetch would load (a
    /// loop skips asking when not).
    fn deep(&self) -> bool;
}

/// An object-safe view of a policy with its per-key states.
pub trait Limiter: Decides + Send {
    /// The decision, with no change of state.
    fn check(&self, key: KeyId, now: Nanos, cost: u64) -> Decision;
    /// Records an admitted request.
    fn admit(&mut self, key: KeyId, now: Nanos, cost: u64);
    /// Records a refused request (most policies change nothing).
    fn refuse(&mut self, key: KeyId, now: Nanos, cost: u64);
    /// `check` and record.
    fn decide(&mut self, key: KeyId, now: Nanos, cost: u64) -> Decision;
    /// The key's occupancy after its last request (level, backlog, count).
    fn level(&self, key: KeyId, now: Nanos) -> u64;
    /// What reports need to know about the policy.
    fn info(&self) -> &Info;
}

/// `policy.decide_retry::<RETRY>` on `state`, and the level just after as
/// far as `levels` asks (0 where it does not); `refusal_counts`: a refusal
/// can raise it.
#[inline(always)]
pub fn decide_level<P: Policy, const RETRY: bool>(
    policy: &P,
    state: &mut P::State,
    now: Nanos,
    cost: u64,
    levels: Levels,
    refusal_counts: bool,
) -> (Decision, u64) {
    let d = policy.decide_retry::<RETRY>(state, now, cost);
    let wanted = match levels {
        Levels::None => false,
        Levels::Rises => d.is_admit() || refusal_counts,
        Levels::All => true,
    };
    let level = match (wanted, d.is_admit()) {
        (false, _) => 0,
        (true, true) => policy.admitted_level(state, now),
        (true, false) => policy.level(state, now),
    };
    (d, level)
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

/// [`Decides`]' `deep`, `decide_level` and `decide_level_no_retry` for a
/// type with per-key states of one policy `P` and an inherent
/// `decide_as::<RETRY>`, each decision marked `#[$inline]`.
macro_rules! decides_through_decide_as {
    ($inline:meta) => {
        #[inline(always)]
        fn deep(&self) -> bool {
            <P::State as $crate::policy::rule::Prefetch>::DEEP
        }

        decides_through_decide_as!(@one $inline, decide_level, true);
        decides_through_decide_as!(@one $inline, decide_level_no_retry, false);
    };
    (@one $inline:meta, $method:ident, $retry:literal) => {
        #[$inline]
        fn $method(
            &mut self,
            key: KeyId,
            now: Nanos,
            cost: u64,
            levels: Levels,
        ) -> (Decision, u64) {
            self.decide_as::<$retry>(key, now, cost, levels)
        }
    };
}

pub(super) use decides_through_decide_as;

/// Policies of one kind with their per-key states in a vector indexed by
/// key id (see the module's contract): one policy for a driver's member,
/// or a row of candidates, each key's states side by side.
pub struct Store<P: Policy> {
    /// The first policy of the row (the only one of a driver's member).
    policy: Checked<P>,
    /// Every policy of the row, `policy` first.
    row: Box<[Checked<P>]>,
    /// What every policy of the row tells reports (they differ in size
    /// only, so in nothing a store reads).
    info: Info,
    states: Vec<P::State>,
    since_sweep: usize,
}

impl<P: Listed> Store<P> {
    /// A store of one policy, no key seen.
    pub fn new(policy: P) -> Self {
        Store::rows(&[policy])
    }

    /// A store of several policies of one kind (at least one): each key
    /// holds one state per policy, side by side, decided through
    /// [`row_mut`](Self::row_mut).
    pub fn rows(policies: &[P]) -> Self {
        let row: Box<[Checked<P>]> = policies.iter().map(|&p| Checked::new(p)).collect();
        Store {
            info: policies[0].info(),
            policy: row[0],
            row,
            states: Vec::new(),
            since_sweep: 0,
        }
    }

    /// What reports need to know about the (first) policy.
    pub fn info(&self) -> &Info {
        &self.info
    }

    /// The per-key states, by key id (a row of them per key).
    #[cfg(test)]
    pub fn states(&self) -> &[P::State] {
        &self.states
    }

    /// The policies of the row, in the order of each key's states.
    pub fn row(&self) -> &[Checked<P>] {
        &self.row
    }

    /// `key`'s states under the row's policies, for one request at `now`
    /// (counted towards the next sweep).
    #[inline(always)]
    pub fn row_mut(&mut self, key: KeyId, now: Nanos) -> &mut [P::State] {
        self.maybe_sweep(now);
        let i = self.grow(key);
        &mut self.states[i..i + self.row.len()]
    }

    /// A hint that `key`'s row will be decided soon: starts loading every
    /// cache line of its states (a key not yet stored loads nothing).
    #[inline(always)]
    pub fn prefetch_row(&self, key: KeyId) {
        let width = self.row.len();
        let i = key as usize * width;
        if let Some(row) = self.states.get(i..i + width) {
            prefetch_lines(row);
        }
    }

    /// Counts a decision and, every `max(states, 4096)` of them, resets the
    /// neutral states of policies whose states hold memory.
    #[inline]
    fn maybe_sweep(&mut self, now: Nanos) {
        // A state that owns nothing frees nothing when reset.
        if !std::mem::needs_drop::<P::State>() || !self.info.holds_memory {
            return;
        }
        self.since_sweep += 1;
        if self.since_sweep >= self.states.len().max(MIN_SWEEP) {
            self.since_sweep = 0;
            for row in self.states.chunks_exact_mut(self.row.len()) {
                for (s, p) in row.iter_mut().zip(&self.row) {
                    if s.is_clear() {
                        continue;
                    }
                    if p.is_neutral(s, now) {
                        *s = P::State::default();
                    } else {
                        s.compact();
                    }
                }
            }
        }
    }

    /// Makes room for `key`; returns the index of its first state.
    #[inline]
    fn grow(&mut self, key: KeyId) -> usize {
        let width = self.row.len();
        let i = key as usize * width;
        if i + width > self.states.len() {
            self.grow_to(i + width);
        }
        i
    }

    #[cold]
    #[inline(never)]
    fn grow_to(&mut self, len: usize) {
        self.states.resize_with(len, P::State::default);
    }

    /// Keys with a state (every id up to the highest seen).
    #[cfg(test)]
    pub fn tracked(&self) -> usize {
        self.states.len() / self.row.len()
    }

    /// Makes room for keys `0..keys` at once (a driver that knows them).
    pub fn reserve_keys(&mut self, keys: usize) {
        let len = keys * self.row.len();
        if len > self.states.len() {
            self.grow_to(len);
        }
    }

    /// [`Decides::decide_level`], a refusal's retry time worked out only
    /// when `RETRY`.
    #[inline(always)]
    fn decide_as<const RETRY: bool>(
        &mut self,
        key: KeyId,
        now: Nanos,
        cost: u64,
        levels: Levels,
    ) -> (Decision, u64) {
        self.maybe_sweep(now);
        let i = self.grow(key);
        let s = &mut self.states[i];
        let refusal_counts = self.info.refusal_counts;
        decide_level::<_, RETRY>(&self.policy, s, now, cost, levels, refusal_counts)
    }
}

/// As a [`Limiter`], a store decides under its first policy (a driver's
/// member is a store of one).
impl<P: Listed> Limiter for Store<P> {
    fn check(&self, key: KeyId, now: Nanos, cost: u64) -> Decision {
        match self.states.get(key as usize * self.row.len()) {
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

    fn level(&self, key: KeyId, now: Nanos) -> u64 {
        self.states
            .get(key as usize * self.row.len())
            .map_or(0, |s| self.policy.level(s, now))
    }

    fn info(&self) -> &Info {
        &self.info
    }
}

impl<P: Listed> Decides for Store<P> {
    decides_through_decide_as!(inline);

    #[inline]
    fn prefetch(&self, key: KeyId, deep: bool) {
        if let Some(s) = self.states.get(key as usize * self.row.len()) {
            if deep {
                s.prefetch_deep();
            } else {
                prefetch_line(s);
            }
        }
    }
}

struct Boxed;

impl WithPolicy for Boxed {
    type Out = Box<dyn Limiter>;
    fn run<P: Listed>(self, policy: &P) -> Box<dyn Limiter> {
        Box::new(Store::new(*policy))
    }
}

impl PolicyConfig {
    /// The policy with empty per-key state.
    pub fn build(&self) -> Box<dyn Limiter> {
        self.with(Boxed)
    }
}

/// Several limiters evaluated together, as nginx evaluates several
/// `limit_req` lines: in order, stopping at the first refusal; admitted only
/// if every applicable member admits; released at the latest member release
/// (the delay is the maximum, not the sum); and a refusal records nothing in
/// any member except the refusing one's own flavour (fixed-window
/// `count=all` counts the refused hit). A member whose key is `None` (an
/// empty key) does not apply to the request.
///
/// [`Stack::charging_each`] makes a stack charge each member as it admits,
/// in order, so a refusal refunds none of the members before it: Envoy's
/// local rate limit consumes a request's descriptors' tokens so
/// (`LocalRateLimiterImpl::requestAllowed`, its descriptors sorted by
/// tokens a second, the fewest first).
///
/// [`Stack::blocking`] adds a penalty box: a member that refuses a key
/// refuses it for a while after, whatever its own state says (Cloudflare's
/// mitigation timeout, fail2ban's ban); a request refused by a block is
/// charged to no member.
pub struct Stack {
    members: Vec<Box<dyn Limiter>>,
    /// Members admitting before a refusal keep their charge.
    charge_each: bool,
    /// How long a refusal blocks the refused key, and each member's
    /// blocked keys with the end of their block.
    block: Option<(Nanos, Vec<IdMap<Nanos>>)>,
}

impl Stack {
    /// The stack of `members`, evaluated in this order.
    pub fn new(members: Vec<Box<dyn Limiter>>) -> Stack {
        Stack {
            members,
            charge_each: false,
            block: None,
        }
    }

    /// The same stack blocking a key refused by a member for `block`.
    pub fn blocking(mut self, block: Option<Nanos>) -> Stack {
        let n = self.members.len();
        self.block = block.map(|b| (b, (0..n).map(|_| IdMap::default()).collect()));
        self
    }

    /// The latest end of a block on the request's keys, if one is on.
    fn blocked(&self, keys: &[Option<KeyId>], now: Nanos) -> Option<Nanos> {
        let (_, blocked) = self.block.as_ref()?;
        (blocked.iter().zip(keys))
            .filter_map(|(b, k)| b.get(&(*k)?).copied())
            .filter(|&until| until > now)
            .max()
    }

    /// The same stack charging each member as it admits (no refund).
    pub fn charging_each(mut self, on: bool) -> Stack {
        self.charge_each = on;
        self
    }

    /// Replaces member `i` (a new policy, with empty state) and returns it.
    pub fn replace(&mut self, i: usize, member: Box<dyn Limiter>) -> &mut dyn Limiter {
        self.members[i] = member;
        &mut *self.members[i]
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the stack has no member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Decides one request; `keys[i]` is member i's key.
    pub fn decide(&mut self, keys: &[Option<KeyId>], now: Nanos, cost: u64) -> Decision {
        self.decide_level(keys, now, cost, Levels::None).0
    }

    /// `decide`, and the largest member level for these keys just after
    /// (see [`Decides::decide_level`]).
    pub fn decide_level(
        &mut self,
        keys: &[Option<KeyId>],
        now: Nanos,
        cost: u64,
        levels: Levels,
    ) -> (Decision, u64) {
        if let ([only], None) = (self.members.as_mut_slice(), &self.block) {
            return match keys[0] {
                Some(k) => only.decide_level(k, now, cost, levels),
                None => (Decision::Admit { release: now }, 0),
            };
        }
        let d = self.decide_many(keys, now, cost);
        (d, self.level(keys, now))
    }

    fn decide_many(&mut self, keys: &[Option<KeyId>], now: Nanos, cost: u64) -> Decision {
        if let Some(until) = self.blocked(keys, now) {
            return Decision::Refuse {
                retry_at: Some(until),
            };
        }
        let (d, refuser) = self.decide_counting(keys, now, cost, true, self.charge_each);
        match (d, refuser, &mut self.block) {
            (Decision::Refuse { retry_at }, Some(i), Some((b, blocked))) => {
                let until = now.saturating_add(*b);
                blocked[i].insert(keys[i].expect("a refusing member has a key"), until);
                Decision::Refuse {
                    retry_at: retry_at.map(|r| r.max(until)),
                }
            }
            _ => d,
        }
    }

    /// Decides a request that is only sent if admitted (a pacer's): a
    /// refusal is not a hit, so no member counts it (`fixed-window
    /// count=all` and `haproxy` count the hits a log shows), and its retry
    /// time is when every member would admit it.
    pub fn offer(&mut self, keys: &[Option<KeyId>], now: Nanos, cost: u64) -> Decision {
        self.decide_counting(keys, now, cost, false, false).0
    }

    /// Every member checks the request in order; the first refusal ends
    /// it (recorded by that member when `count_refusal`; its index beside
    /// it), else every member admits it. With `charge_each` a member is
    /// charged as it admits, so those before a refusal keep their charge.
    fn decide_counting(
        &mut self,
        keys: &[Option<KeyId>],
        now: Nanos,
        cost: u64,
        count_refusal: bool,
        charge_each: bool,
    ) -> (Decision, Option<usize>) {
        let mut release = now;
        for (i, m) in self.members.iter_mut().enumerate() {
            let Some(k) = keys[i] else { continue };
            match m.check(k, now, cost) {
                Decision::Admit { release: r } => {
                    if charge_each {
                        m.admit(k, now, cost);
                    }
                    release = release.max(r);
                }
                Decision::Refuse { .. } => {
                    if count_refusal {
                        m.refuse(k, now, cost);
                    }
                    let retry_at = self.retry_at(keys, now, cost);
                    return (Decision::Refuse { retry_at }, Some(i));
                }
            }
        }
        if !charge_each {
            for (i, m) in self.members.iter_mut().enumerate() {
                if let Some(k) = keys[i] {
                    m.admit(k, now, cost);
                }
            }
        }
        (Decision::Admit { release }, None)
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

    /// What reports need to know about the stack as a whole: it shapes
    /// when any member does, its level is the highest member level (a
    /// backlog only when every member measures one), and a cost fits only
    /// where it fits every member.
    pub fn info(&self) -> Info {
        let all = || self.members.iter().map(|m| m.info());
        Info {
            shapes: all().any(|i| i.shapes),
            level_kind: if all().all(|i| i.level_kind == LevelKind::Backlog) {
                LevelKind::Backlog
            } else {
                LevelKind::Level
            },
            max_level: all().map(|i| i.max_level).max().unwrap_or(0),
            max_cost: all().map(|i| i.max_cost).min().unwrap_or(u64::MAX),
            refusal_counts: all().any(|i| i.refusal_counts),
            holds_memory: all().any(|i| i.holds_memory),
        }
    }
}
