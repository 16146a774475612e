//! The per-chunk decision loops, compiled per policy type: a single
//! policy's own store ([`OneLoop`]) or its field of a key column's records
//! ([`MemberLoop`]), with the states of the rows ahead fetched early.

use super::tally::Tally;
use crate::ingest::input::{Event, MAX_KEYS};
use crate::ingest::keys::EMPTY_KEY;
use crate::policy::keyed::{Decides, KeyId, Levels, Limiter, Store};
use crate::policy::records::{Field, Records};
use crate::policy::table::Info;
use crate::policy::{Decision, Listed};
use crate::time::Nanos;
use anyhow::Result;

/// Where a member takes its key from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// One bucket for everything.
    Global,
    /// The event's key id in this key column.
    Column(usize),
}

impl Slot {
    /// The member's key for `ev`; `None` when its value is empty (exempt).
    #[inline]
    pub(super) fn key(self, ev: &Event) -> Option<KeyId> {
        match self {
            Slot::Global => Some(0),
            Slot::Column(c) => {
                let id = ev.keys[c];
                (id != EMPTY_KEY).then_some(KeyId::from(id))
            }
        }
    }
}

/// How far ahead of the row being decided its successors' states are
/// fetched: the state slot at `FAR`, what it points to at `NEAR`.
pub(super) const PREFETCH_FAR: usize = 16;
pub(super) const PREFETCH_NEAR: usize = 3;

/// A single policy's replay loop over a chunk, compiled per policy type
/// (implemented by the store of each), chosen once per chunk.
pub trait OneLoop: Limiter {
    /// Decides `events` under the policy, keyed by `slot`, counting each
    /// decision and, when `out` is given, keeping it there by position.
    fn decide_chunk(
        &mut self,
        events: &[Event],
        slot: Slot,
        tally: &mut Tally,
        timeline: Option<(Nanos, u64)>,
        out: Option<&mut [Decision]>,
    ) -> Result<()>;
}

/// A single policy's replay loop over a chunk when its states are a field
/// of its key column's records, compiled per policy type (implemented by
/// the field of each), chosen once per chunk.
pub trait MemberLoop: Send {
    /// As [`OneLoop::decide_chunk`], the states in `records` (those that
    /// issued the field).
    fn decide_chunk(
        &mut self,
        records: &mut Records,
        events: &[Event],
        slot: Slot,
        tally: &mut Tally,
        timeline: Option<(Nanos, u64)>,
        out: Option<&mut [Decision]>,
    ) -> Result<()>;

    /// What reports need to know about the policy.
    fn info(&self) -> &Info;
}

impl<P: Listed> MemberLoop for Field<P> {
    fn decide_chunk(
        &mut self,
        records: &mut Records,
        events: &[Event],
        slot: Slot,
        tally: &mut Tally,
        timeline: Option<(Nanos, u64)>,
        out: Option<&mut [Decision]>,
    ) -> Result<()> {
        decide_rows(
            &mut records.column(self),
            events,
            slot,
            tally,
            timeline,
            out,
        )
    }

    fn info(&self) -> &Info {
        Field::info(self)
    }
}

/// Decides `events` (in time order) under one policy keyed by `slot`,
/// fetching the states of the rows ahead, counting each decision and,
/// when `out` is given, keeping it there by position.
#[inline(always)]
pub(super) fn decide_rows(
    states: &mut impl Decides,
    events: &[Event],
    slot: Slot,
    tally: &mut Tally,
    timeline: Option<(Nanos, u64)>,
    out: Option<&mut [Decision]>,
) -> Result<()> {
    let column = |c: usize| {
        // Checked once here, so that no row checks it again.
        assert!(c < MAX_KEYS, "a key column past the last");
        move |ev: &Event| {
            let id = ev.keys[c];
            (id != EMPTY_KEY).then_some(KeyId::from(id))
        }
    };
    match slot {
        Slot::Global => decide_with(states, events, |_: &Event| Some(0), tally, timeline, out),
        Slot::Column(c) => decide_with(states, events, column(c), tally, timeline, out),
    }
}

/// `decide_rows` with the rows' keys taken by `key`, through a loop
/// compiled for what the chunk needs: with or without a timeline, so that
/// a replay without one tests nothing for it per row; without levels once
/// the peak is at its cap, so that one tests nothing for them either; and
/// without refusals' retry times unless decisions are kept in `out`.
#[inline(always)]
pub(super) fn decide_with<S: Decides, K: Fn(&Event) -> Option<KeyId>>(
    states: &mut S,
    events: &[Event],
    key: K,
    tally: &mut Tally,
    timeline: Option<(Nanos, u64)>,
    out: Option<&mut [Decision]>,
) -> Result<()> {
    let levels = tally.levels(timeline.is_some()) != Levels::None;
    match (timeline.is_some(), levels, out.is_some()) {
        (false, false, false) => {
            decide_by::<_, _, false, false, false>(states, events, key, tally, None, out)
        }
        (false, true, false) => {
            decide_by::<_, _, false, true, false>(states, events, key, tally, None, out)
        }
        (true, _, false) => {
            decide_by::<_, _, true, true, false>(states, events, key, tally, timeline, out)
        }
        (false, _, true) => {
            decide_by::<_, _, false, true, true>(states, events, key, tally, None, out)
        }
        (true, _, true) => {
            decide_by::<_, _, true, true, true>(states, events, key, tally, timeline, out)
        }
    }
}

/// `decide_rows` with the rows' keys taken by `key`; `TIMELINE`: whether
/// `timeline` is given; `LEVELS`: whether levels may be needed (false once
/// the peak is at its cap without a timeline: it stays there); `RETRY`:
/// whether a refusal's retry time is worked out (for `out`).
#[inline(always)]
pub(super) fn decide_by<
    S: Decides,
    K: Fn(&Event) -> Option<KeyId>,
    const TIMELINE: bool,
    const LEVELS: bool,
    const RETRY: bool,
>(
    states: &mut S,
    events: &[Event],
    key: K,
    tally: &mut Tally,
    timeline: Option<(Nanos, u64)>,
    mut out: Option<&mut [Decision]>,
) -> Result<()> {
    let timeline = timeline.filter(|_| TIMELINE);
    let mark = tally.mark();
    for (i, ev) in events.iter().enumerate() {
        if let Some(k) = events.get(i + PREFETCH_FAR).and_then(&key) {
            states.prefetch(k, false);
        }
        if states.deep()
            && let Some(k) = events.get(i + PREFETCH_NEAR).and_then(&key)
        {
            states.prefetch(k, true);
        }
        let levels = match LEVELS {
            true => tally.levels(TIMELINE),
            false => Levels::None,
        };
        let (d, level) = match key(ev) {
            Some(k) if RETRY => states.decide_level(k, ev.at, u64::from(ev.cost), levels),
            Some(k) => states.decide_level_no_retry(k, ev.at, u64::from(ev.cost), levels),
            None => (Decision::Admit { release: ev.at }, 0),
        };
        tally.count(ev, d, level, timeline)?;
        if let Some(out) = out.as_deref_mut() {
            out[i] = d;
        }
    }
    tally.settle(events.len(), mark);
    Ok(())
}

impl<P: Listed> OneLoop for Store<P> {
    fn decide_chunk(
        &mut self,
        events: &[Event],
        slot: Slot,
        tally: &mut Tally,
        timeline: Option<(Nanos, u64)>,
        out: Option<&mut [Decision]>,
    ) -> Result<()> {
        decide_rows(self, events, slot, tally, timeline, out)
    }
}
