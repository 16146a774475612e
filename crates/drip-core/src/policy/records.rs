//! Per-key records: the states of several policies, of any kinds, kept
//! together in one record per key.
//!
//! Where a [`Store`](super::keyed::Store) keeps one policy's states in a
//! vector of their own, [`Records`] keeps the states of every policy that
//! keys by the same key ids in one arena: key id `k` owns the record at
//! `k · stride`, and each registered policy owns a field at a fixed offset
//! in every record, aligned to its state's alignment. Deciding a row under
//! all of them then touches one record (a few neighbouring cache lines)
//! instead of one line in each of several vectors.
//!
//! The contract is the store's: a key never seen behaves as the policy's
//! `Default` state, the arena holds one record per key id ever used, and a
//! policy whose states hold memory of their own (the sliding log's
//! entries) has its neutral states that hold some reset by a sweep after
//! every `max(keys, 4096)` of its decisions. A field lists the keys whose
//! state took memory, so that a sweep looks at those only, not at every
//! record.
//!
//! A field is reached only through the [`Field`] handle its registration
//! returned, and only with the records that issued it (checked once per
//! [`Records::column`], not per access): that is what lets the typed
//! accesses trust the bytes at a field's offset to be its state.

use super::keyed::{Decides, KeyId, Levels, MIN_SWEEP, decides_through_decide_as};
use super::rule::{Info, Listed, Prefetch, prefetch_line};
use super::{Checked, Decision, Policy};
use crate::time::Nanos;
use std::alloc::Layout;
use std::sync::atomic::{AtomicU64, Ordering};

/// The arena's unit: every offset in it is aligned for any state up to
/// this alignment.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Word([u64; 2]);

const WORD: usize = std::mem::size_of::<Word>();

/// Numbers each `Records`, so that a handle names the records it belongs to.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// How to make and unmake one field's state, with its type forgotten.
#[derive(Clone, Copy)]
struct Slot {
    offset: usize,
    size: usize,
    /// Writes the never-seen state at the pointer (uninitialised memory).
    init: unsafe fn(*mut u8),
    /// Drops the state at the pointer; `None` for states with nothing to drop.
    drop: Option<unsafe fn(*mut u8)>,
}

/// Writes `S::default()` at `p`.
///
/// # Safety
/// `p` is valid for a write of `S` and aligned for it.
unsafe fn init_state<S: Default>(p: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe { p.cast::<S>().write(S::default()) }
}

/// Drops the `S` at `p`.
///
/// # Safety
/// `p` points to an initialised `S` that nothing uses afterwards.
unsafe fn drop_state<S>(p: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::drop_in_place(p.cast::<S>()) }
}

/// One record per key id, each holding one state per registered policy.
pub struct Records {
    /// `keys · stride` bytes of records, rounded up to whole words.
    arena: Vec<Word>,
    /// Bytes from one record to the next: the fields' extent rounded up to
    /// the largest alignment among them.
    stride: usize,
    /// The largest alignment among the fields (1 with none).
    align: usize,
    /// Records initialised, key ids `0..keys`.
    keys: usize,
    slots: Vec<Slot>,
    id: u64,
}

/// A policy's field in every record of one [`Records`], and the handle to
/// reach it: issued only by [`Records::register`].
pub struct Field<P: Listed> {
    policy: Checked<P>,
    info: Info,
    offset: usize,
    /// The records that issued this handle.
    records: u64,
    /// This field's decisions since its last sweep.
    since_sweep: usize,
    /// The keys whose state has taken memory since it was last reset,
    /// each once: what a sweep looks at.
    owners: Vec<KeyId>,
}

impl<P: Listed> Field<P> {
    /// What reports need to know about the policy.
    pub fn info(&self) -> &Info {
        &self.info
    }
}

impl Default for Records {
    fn default() -> Records {
        Records::new()
    }
}

impl Records {
    /// Records with no fields and no keys.
    pub fn new() -> Records {
        Records {
            arena: Vec::new(),
            stride: 0,
            align: 1,
            keys: 0,
            slots: Vec::new(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Adds a field for `policy` to every record, at the next offset
    /// aligned for its state. Fields are all registered before the first
    /// key is used.
    pub fn register<P: Listed>(&mut self, policy: P) -> Field<P> {
        assert_eq!(self.keys, 0, "fields are registered before any key");
        let layout = Layout::new::<P::State>();
        assert!(layout.align() <= WORD, "a state aligned beyond the arena's");
        let end = self.slots.last().map_or(0, |s| s.offset + s.size);
        let offset = end.next_multiple_of(layout.align());
        self.align = self.align.max(layout.align());
        self.stride = (offset + layout.size()).next_multiple_of(self.align);
        self.slots.push(Slot {
            offset,
            size: layout.size(),
            init: init_state::<P::State>,
            drop: std::mem::needs_drop::<P::State>().then_some(drop_state::<P::State> as _),
        });
        Field {
            policy: Checked::new(policy),
            info: policy.info(),
            offset,
            records: self.id,
            since_sweep: 0,
            owners: Vec::new(),
        }
    }

    /// `field` over every record, for a run of accesses: the handle is
    /// checked here once.
    #[inline]
    pub fn column<'a, P: Listed>(&'a mut self, field: &'a mut Field<P>) -> Column<'a, P> {
        assert_eq!(field.records, self.id, "a field of other records");
        Column {
            records: self,
            field,
        }
    }

    /// The start of key `k`'s record (`k` may be past the last key; the
    /// pointer is then only for address arithmetic).
    #[inline(always)]
    fn record(&self, k: usize) -> *const u8 {
        self.arena
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(k * self.stride)
    }

    /// The state of type `S` at `offset` in key `k`'s record.
    ///
    /// # Safety
    /// Key `k` has a record (`k < keys`), and a field of state type `S`
    /// sits at `offset` (the handle of a field of these records says so).
    #[inline(always)]
    unsafe fn state_mut<S>(&mut self, k: usize, offset: usize) -> &mut S {
        debug_assert!(k < self.keys);
        let p = self.arena.as_mut_ptr().cast::<u8>();
        // SAFETY: key `k` has a record and an `S` lives at `offset` in
        // every record, initialised and aligned (the caller's contract);
        // the unique borrow of the records for the returned lifetime makes
        // this the only reference to it.
        unsafe { &mut *p.add(k * self.stride + offset).cast::<S>() }
    }

    /// Makes records for keys up to `keys` (more than there are).
    #[cold]
    #[inline(never)]
    fn grow_to(&mut self, keys: usize) {
        let bytes = keys * self.stride;
        self.arena.resize(bytes.div_ceil(WORD), Word([0; 2]));
        let base = self.arena.as_mut_ptr().cast::<u8>();
        for k in self.keys..keys {
            for s in &self.slots {
                // SAFETY: `k · stride + offset` lies within the `bytes` just
                // made room for, is aligned for the field's state (the arena
                // is aligned to `WORD`, the stride and the offset to the
                // state's alignment), and holds no state yet.
                unsafe { (s.init)(base.add(k * self.stride + s.offset)) }
            }
        }
        // Counted once every new record is whole: a panic above leaks, and
        // never drops what was not made.
        self.keys = keys;
    }
}

impl Drop for Records {
    fn drop(&mut self) {
        let base = self.arena.as_mut_ptr().cast::<u8>();
        for (offset, drop) in self.slots.iter().filter_map(|s| Some((s.offset, s.drop?))) {
            for k in 0..self.keys {
                // SAFETY: key `k` has a record, so its field holds a state
                // made by `init` for this very type, used by nothing after.
                unsafe { drop(base.add(k * self.stride + offset)) }
            }
        }
    }
}

/// One policy's field over every record, its handle checked: typed access
/// to each key's state.
pub struct Column<'a, P: Listed> {
    records: &'a mut Records,
    field: &'a mut Field<P>,
}

impl<P: Listed> Column<'_, P> {
    /// `key`'s state, if it has a record.
    #[inline]
    pub fn get(&self, key: KeyId) -> Option<&P::State> {
        let k = key as usize;
        (k < self.records.keys).then(|| {
            let p = self
                .records
                .record(k)
                .wrapping_add(self.field.offset)
                .cast::<P::State>();
            // SAFETY: key `k` has a record, and the checked handle says a
            // `P::State` lives at its offset in every record, initialised
            // and aligned; the shared borrow of the records covers it.
            unsafe { &*p }
        })
    }

    /// The state of key `k`.
    ///
    /// # Safety
    /// Key `k` has a record (`k < keys`).
    #[inline(always)]
    unsafe fn state_mut(&mut self, k: usize) -> &mut P::State {
        // SAFETY: the caller's contract, and the checked handle.
        unsafe { self.records.state_mut::<P::State>(k, self.field.offset) }
    }

    /// `decide` for `key` at `now`, and its level just after as far as
    /// `levels` asks (0 where it does not), as a store's member decides;
    /// the key's record made if it had none, the decision counted towards
    /// the field's next sweep.
    #[inline(always)]
    fn decide_as<const RETRY: bool>(
        &mut self,
        key: KeyId,
        now: Nanos,
        cost: u64,
        levels: Levels,
    ) -> (Decision, u64) {
        self.maybe_sweep(now);
        let k = key as usize;
        if k >= self.records.keys {
            self.records.grow_to(k + 1);
        }
        // The state borrows the records, the policy the field: apart.
        let Column { records, field } = self;
        // SAFETY: key `k` has a record now, and the field is of these
        // records (checked when the column was made).
        let s = unsafe { records.state_mut::<P::State>(k, field.offset) };
        let sweeps = std::mem::needs_drop::<P::State>() && field.info.holds_memory;
        let owned = sweeps && s.owns();
        let decided = super::keyed::decide_level::<_, RETRY>(
            &field.policy,
            s,
            now,
            cost,
            levels,
            field.info.refusal_counts,
        );
        if sweeps && !owned && s.owns() {
            field.owners.push(key);
        }
        decided
    }

    /// True for a field whose states may hold memory (see [`Records`]).
    #[inline(always)]
    fn sweeps(&self) -> bool {
        std::mem::needs_drop::<P::State>() && self.field.info.holds_memory
    }

    /// Counts a decision and, every `max(keys, 4096)` of them, resets the
    /// neutral states that hold memory, for policies whose states can.
    #[inline(always)]
    fn maybe_sweep(&mut self, now: Nanos) {
        if !self.sweeps() {
            return;
        }
        self.field.since_sweep += 1;
        if self.field.since_sweep >= self.records.keys.max(MIN_SWEEP) {
            self.sweep(now);
        }
    }

    /// Resets the neutral states among those holding memory and compacts
    /// the others, which stay listed while they still hold some. A state
    /// holding memory keeps it until a sweep, so that each is listed once.
    #[cold]
    #[inline(never)]
    fn sweep(&mut self, now: Nanos) {
        self.field.since_sweep = 0;
        let policy = self.field.policy;
        let mut owners = std::mem::take(&mut self.field.owners);
        owners.retain(|&k| {
            // SAFETY: a listed key has a record.
            let s = unsafe { self.state_mut(k as usize) };
            debug_assert!(s.owns(), "a listed state gave its memory back");
            if policy.is_neutral(s, now) {
                *s = P::State::default();
                return false;
            }
            s.compact();
            s.owns()
        });
        self.field.owners = owners;
    }
}

/// A column decides as a store does, on the records' states.
impl<P: Listed> Decides for Column<'_, P> {
    decides_through_decide_as!(inline(always));

    /// A hint that `key` will be decided soon: start loading its state's
    /// line (`deep`: what the state points to). Changes nothing.
    #[inline]
    fn prefetch(&self, key: KeyId, deep: bool) {
        if deep {
            if let Some(s) = self.get(key) {
                s.prefetch_deep();
            }
        } else if (key as usize) < self.records.keys {
            prefetch_line(
                self.records
                    .record(key as usize)
                    .wrapping_add(self.field.offset),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::keyed::{Decides, Store};
    use crate::policy::rule::{AxisPoint, ParamError, Params, Sizing};
    use crate::policy::sliding_log::SlidingLog;
    use crate::policy::table::WithPolicy;
    use crate::policy::{PolicyConfig, parse_spec};
    use crate::testing::Rng;
    use std::sync::atomic::AtomicIsize;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    fn config(text: &str) -> PolicyConfig {
        parse_spec(text).unwrap().members[0].config
    }

    /// A field and a store of the same policy, side by side.
    trait Pair {
        /// Decides one request in both; panics where they differ.
        fn step(&mut self, records: &mut Records, key: KeyId, now: Nanos, cost: u64);
    }

    struct Twins<P: Listed>(Field<P>, Store<P>);

    impl<P: Listed> Pair for Twins<P> {
        fn step(&mut self, records: &mut Records, key: KeyId, now: Nanos, cost: u64) {
            let mut column = records.column(&mut self.0);
            let ours = column.decide_level(key, now, cost, Levels::All);
            let theirs = self.1.decide_level(key, now, cost, Levels::All);
            assert_eq!(ours, theirs, "{} key {key} at {now:?}", P::NAME);
        }
    }

    struct Join<'a>(&'a mut Records);

    impl WithPolicy for Join<'_> {
        type Out = Box<dyn Pair>;
        fn run<P: Listed>(self, policy: &P) -> Box<dyn Pair> {
            Box::new(Twins(self.0.register(*policy), Store::new(*policy)))
        }
    }

    #[test]
    fn fields_sit_at_their_alignment_and_the_stride_rounds_to_the_largest() {
        let mut r = Records::new();
        let PolicyConfig::Nginx(n) = config("nginx:rate=5r/s,burst=10") else {
            unreachable!()
        };
        let PolicyConfig::Gcra(g) = config("gcra:rate=5/s,burst=20") else {
            unreachable!()
        };
        let PolicyConfig::SlidingLog(l) = config("sliding-log:limit=5,window=1s") else {
            unreachable!()
        };
        // 24 bytes aligned to 8, then 16 aligned to 16, then 56 aligned to 8.
        let mut fields = (r.register(n), r.register(g), r.register(l));
        assert_eq!(
            (fields.0.offset, fields.1.offset, fields.2.offset),
            (0, 32, 48)
        );
        assert_eq!(r.stride, 112);
        r.grow_to(3);
        assert_eq!(r.keys, 3);
        for k in 0..3 {
            let c = r.column(&mut fields.1);
            let at = c.get(k).unwrap() as *const _ as usize;
            assert_eq!(at % 16, 0);
            assert!(!r.column(&mut fields.0).get(k).unwrap().seen);
            assert!(r.column(&mut fields.2).get(k).unwrap().entries.is_empty());
        }
        assert!(r.column(&mut fields.1).get(3).is_none());
    }

    #[test]
    fn one_record_per_key_decides_as_a_store_per_policy() {
        let texts = [
            "gcra:rate=5/s,burst=20",
            "token-bucket:rate=5/s,burst=20",
            "leaky-bucket:rate=10/s,capacity=5",
            "shaper:rate=2/s,burst=10",
            "fixed-window:limit=100,window=1m",
            "fixed-window:limit=10,window=1s,align=first-hit,count=all",
            "sliding-window:limit=100,window=1m",
            "sliding-log:limit=50,window=10s",
            "nginx:rate=5r/s,burst=10",
            "sliding-log:limit=3,window=1s",
        ];
        let mut records = Records::new();
        let mut pairs: Vec<Box<dyn Pair>> = texts
            .iter()
            .map(|t| config(t).with(Join(&mut records)))
            .collect();
        let mut rng = Rng(0x5eed_0009);
        let mut now = 1_700_000_000 * S;
        // Enough decisions over enough keys for the sliding logs' sweeps
        // to run many times, and for the records to grow key by key and
        // in leaps.
        for _ in 0..200_000 {
            now += rng.below(3 * MS);
            let key = match rng.below(4) {
                0 => rng.below(20),
                _ => rng.below(6_000),
            };
            let cost = 1 + rng.below(4);
            for p in &mut pairs {
                p.step(&mut records, key, Nanos(now), cost);
            }
        }
    }

    #[test]
    fn idle_sliding_logs_give_their_entries_back() {
        let mut r = Records::new();
        let PolicyConfig::Gcra(g) = config("gcra:rate=10/s,burst=2") else {
            unreachable!()
        };
        let PolicyConfig::SlidingLog(l) = config("sliding-log:limit=50,window=1s") else {
            unreachable!()
        };
        let mut gcra = r.register(g);
        let mut log: Field<SlidingLog> = r.register(l);
        // 20k keys each send 10 requests, then go quiet; the clock moves on.
        for k in 0..20_000u64 {
            for i in 0..10 {
                let now = Nanos(k * MS + i);
                r.column(&mut gcra).decide_level(k, now, 1, Levels::None);
                assert!(
                    r.column(&mut log)
                        .decide_level(k, now, 1, Levels::None)
                        .0
                        .is_admit()
                );
            }
        }
        // Only keys active in the last second or two still hold entries.
        let column = r.column(&mut log);
        let holding = (0..20_000)
            .filter(|&k| !column.get(k).unwrap().entries.is_empty())
            .count();
        assert!(holding < 3_000, "{holding} keys hold entries");
    }

    #[test]
    fn a_sweep_lists_each_state_holding_memory_once() {
        let mut r = Records::new();
        let PolicyConfig::SlidingLog(l) = config("sliding-log:limit=6,window=1s") else {
            unreachable!()
        };
        let mut log: Field<SlidingLog> = r.register(l);
        let mut rng = Rng(0x5eed_0011);
        let mut now = 0;
        // Keys busy and idle by turns, over many sweeps.
        for round in 0..40_000u64 {
            now += rng.below(2 * MS);
            let key = match round / 5_000 % 2 {
                0 => rng.below(50),
                _ => rng.below(5_000),
            };
            r.column(&mut log)
                .decide_level(key, Nanos(now), 1, Levels::None);
            if round % 997 == 0 {
                let column = r.column(&mut log);
                let mut listed = column.field.owners.clone();
                listed.sort_unstable();
                let owning: Vec<KeyId> = (0..column.records.keys as KeyId)
                    .filter(|&k| column.get(k).unwrap().owns())
                    .collect();
                assert_eq!(listed, owning, "after {round} decisions");
            }
        }
    }

    #[test]
    fn a_sweep_gives_back_the_queues_that_busy_keys_no_longer_need() {
        let mut r = Records::new();
        let PolicyConfig::SlidingLog(l) = config("sliding-log:limit=500,window=1s") else {
            unreachable!()
        };
        let mut log: Field<SlidingLog> = r.register(l);
        let mut now = 0;
        // 50 keys each send 300 requests in a burst: each takes a queue.
        for k in 0..50u64 {
            for _ in 0..300 {
                now += MS / 100;
                r.column(&mut log)
                    .decide_level(k, Nanos(now), 1, Levels::None);
            }
        }
        // Then each sends one request every 1.2 s (one entry in a window,
        // never idle long at a sweep) or three every 1.2 s.
        for _ in 0..120 {
            now += 1_200 * MS;
            for k in 0..50u64 {
                let n = if k % 2 == 0 { 1 } else { 3 };
                for i in 0..n {
                    let at = Nanos(now + k * MS + i);
                    r.column(&mut log).decide_level(k, at, 1, Levels::None);
                }
            }
        }
        let column = r.column(&mut log);
        for k in 0..50u64 {
            let queue = column.get(k).unwrap().entries.queue();
            if k % 2 == 0 {
                // One entry at a time: back in the state, the queue gone.
                assert!(queue.is_none(), "key {k} kept a queue for one entry");
            } else if let Some(q) = queue {
                // Three: a queue, its room cut down to about them.
                assert!(q.capacity() < 16, "key {k}: room for {}", q.capacity());
            }
        }
    }

    #[test]
    #[should_panic(expected = "a field of other records")]
    fn a_field_reaches_only_the_records_that_issued_it() {
        let PolicyConfig::Gcra(g) = config("gcra:rate=10/s,burst=2") else {
            unreachable!()
        };
        let (mut a, mut b) = (Records::new(), Records::new());
        let _mine = a.register(g);
        let mut theirs = b.register(g);
        a.column(&mut theirs);
    }

    /// States alive now, made and dropped by [`Counting`]'s states.
    static LIVE: AtomicIsize = AtomicIsize::new(0);

    /// A policy whose states count themselves: admits everything, and a
    /// state is neutral once it has seen a request.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Counting;

    struct Counted(Vec<u8>);

    impl Default for Counted {
        fn default() -> Counted {
            LIVE.fetch_add(1, Ordering::SeqCst);
            Counted(Vec::new())
        }
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            LIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl Prefetch for Counted {
        fn owns(&self) -> bool {
            self.0.capacity() > 0
        }
    }

    impl Policy for Counting {
        type State = Counted;
        fn check(&self, _: &Counted, now: Nanos, _: u64) -> Decision {
            Decision::Admit { release: now }
        }
        fn admit(&self, s: &mut Counted, _: Nanos, _: u64) {
            s.0.push(1);
        }
        fn is_neutral(&self, s: &Counted, _: Nanos) -> bool {
            !s.0.is_empty()
        }
        fn level(&self, s: &Counted, _: Nanos) -> u64 {
            s.0.len() as u64
        }
    }

    impl Listed for Counting {
        const NAME: &'static str = "counting";
        const PARAMS: &'static [&'static str] = &[];
        const SIZING: Sizing = Sizing::WINDOWS;
        fn parse(_: &mut Params<'_>) -> Result<Counting, ParamError> {
            Ok(Counting)
        }
        fn info(&self) -> Info {
            Info {
                holds_memory: true,
                ..Info::bounded(u64::MAX)
            }
        }
        fn resized(&self, _: AxisPoint, _: u64) -> Result<Counting, ParamError> {
            Ok(Counting)
        }
        fn worst_within(&self, _: Nanos) -> u64 {
            u64::MAX
        }
    }

    #[test]
    fn every_state_made_is_dropped_once_through_growth_sweeps_and_drop() {
        {
            let mut r = Records::new();
            let PolicyConfig::Gcra(g) = config("gcra:rate=10/s,burst=2") else {
                unreachable!()
            };
            let mut gcra = r.register(g);
            let mut a = r.register(Counting);
            let mut b = r.register(Counting);
            r.grow_to(10);
            assert_eq!(LIVE.load(Ordering::SeqCst), 20);
            // Growth one key at a time and in leaps; sweeps replace states.
            for k in (0..3_000).chain([9_000, 20_000]) {
                r.column(&mut a).decide_level(k, Nanos(k), 1, Levels::All);
                r.column(&mut gcra)
                    .decide_level(k, Nanos(k), 1, Levels::All);
            }
            for k in 0..30_000 {
                r.column(&mut b)
                    .decide_level(k % 5, Nanos(k), 1, Levels::All);
            }
            assert_eq!(LIVE.load(Ordering::SeqCst), 2 * 20_001);
        }
        assert_eq!(LIVE.load(Ordering::SeqCst), 0);
    }
}
