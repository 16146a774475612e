//! One policy (or stack, or nginx.conf) being replayed: how it decides,
//! where its members take their keys from, and what it has counted. The
//! replay and its threads hold runs; a run knows nothing of either.

use super::counts::Counts;
use super::exec::Exec;
use super::loops::Slot;
use super::tally::Tally;
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::ingest::keys::EMPTY_KEY;
use crate::policy::keyed::{KeyId, Levels};
use crate::policy::records::Records;
use crate::policy::{Decision, Spec};
use crate::time::Nanos;
use crate::wait_stats::WaitStats;
use anyhow::Result;

/// One policy (or stack) being replayed.
pub struct Run {
    pub order: usize,
    pub label: String,
    pub spec: String,
    /// The spec, to build a copy with empty state for another replay
    /// thread (none for an nginx.conf).
    pub(super) source: Option<Spec>,
    /// The key column every member keys by, if there is one: the run is
    /// then independent per key of it, and can be split by key.
    pub(super) split: Option<usize>,
    pub(super) exec: Exec,
    pub(super) slots: Vec<Slot>,
    pub(super) keys: Vec<Option<KeyId>>,
    pub(super) tally: Tally,
}

impl Run {
    /// Decides `events` (in time order) under this run, counting each
    /// decision and, when `out` is given, keeping it there by position.
    /// `records`: those of the run's key column, for a member of them.
    pub(super) fn decide_chunk(
        &mut self,
        events: &[Event],
        names: &KeyValues,
        timeline: Option<(Nanos, u64)>,
        records: Option<&mut Records>,
        out: Option<&mut [Decision]>,
    ) -> Result<()> {
        let Run {
            exec,
            slots,
            keys,
            tally,
            ..
        } = self;
        match exec {
            // One policy: the loop is compiled per policy type.
            Exec::One(one) => one.decide_chunk(events, slots[0], tally, timeline, out)?,
            // One policy, its states in the records of its key column.
            Exec::Member(m) => {
                let records = records.expect("a member decides with its column's records");
                m.decide_chunk(records, events, slots[0], tally, timeline, out)?;
            }
            Exec::Stack(stack) => each_row(events, tally, timeline, out, |ev, levels| {
                for (k, s) in keys.iter_mut().zip(slots.iter()) {
                    *k = s.key(ev);
                }
                Ok(stack.decide_level(keys, ev.at, u64::from(ev.cost), levels))
            })?,
            // Routed per row: the row's location chooses the limits.
            Exec::Conf(conf) => each_row(events, tally, timeline, out, |ev, levels| {
                conf.decide(ev, names, !matches!(levels, Levels::None))
            })?,
            // Balanced per row: the instance it goes to decides.
            Exec::Replicas(r) => {
                let report = tally.report_slot;
                let hash = r.hash_slot();
                each_row(events, tally, timeline, out, |ev, levels| {
                    for (k, s) in keys.iter_mut().zip(slots.iter()) {
                        *k = s.key(ev);
                    }
                    let key = report.map(|c| ev.keys[c]).filter(|&id| id != EMPTY_KEY);
                    let value = hash.map_or(&b""[..], |c| names.value(ev, c));
                    r.decide(keys, (key, value), (ev, names), levels)
                })?
            }
        }
        tally.share_waits();
        Ok(())
    }
}

/// Decides `events` one row at a time by `decide` (given the row and the
/// levels the tally asks for), counting each decision and, when `out` is
/// given, keeping it there by position: the loop of the runs that have no
/// loop compiled per policy type (a stack, an nginx.conf).
#[inline(always)]
fn each_row(
    events: &[Event],
    tally: &mut Tally,
    timeline: Option<(Nanos, u64)>,
    mut out: Option<&mut [Decision]>,
    mut decide: impl FnMut(&Event, Levels) -> Result<(Decision, u64)>,
) -> Result<()> {
    let on = timeline.is_some();
    let mark = tally.mark();
    for (i, ev) in events.iter().enumerate() {
        let (d, level) = decide(ev, tally.levels(on))?;
        tally.count(ev, d, level, timeline)?;
        if let Some(out) = out.as_deref_mut() {
            out[i] = d;
        }
    }
    tally.settle(events.len(), mark);
    Ok(())
}

impl Run {
    /// `slots[i]`: where member i of `spec` takes its key from; `order`:
    /// the run's place in the report.
    pub fn new(spec: &Spec, slots: Vec<Slot>, order: usize) -> Run {
        let report_slot = slots.iter().find_map(|s| match s {
            Slot::Column(c) => Some(*c),
            Slot::Global => None,
        });
        let split = match slots.first() {
            Some(&Slot::Column(c)) if slots.iter().all(|s| *s == Slot::Column(c)) => Some(c),
            _ => None,
        };
        let mut run = Run::with_exec(
            Exec::new(spec),
            spec.label.clone(),
            spec.text.clone(),
            slots,
            report_slot,
            order,
        );
        run.source = Some(spec.clone());
        run.split = split;
        run
    }

    /// `spec` as `n` instances behind `balance` (see
    /// [`Replicas`](super::replicas::Replicas)), admitted requests counted
    /// per `window`. Decided whole on one thread: a balancer spreads all
    /// rows, not one key's.
    pub fn replicated(
        spec: &Spec,
        slots: Vec<Slot>,
        order: usize,
        (n, balance, window): (u32, super::replicas::Balance, Nanos),
    ) -> Run {
        let report_slot = slots.iter().find_map(|s| match s {
            Slot::Column(c) => Some(*c),
            Slot::Global => None,
        });
        let exec = super::replicas::Replicas::new(spec, n, balance, window);
        Run::with_exec(
            Exec::Replicas(Box::new(exec)),
            spec.label.clone(),
            spec.text.clone(),
            slots,
            report_slot,
            order,
        )
    }

    /// A gateway config's run as `parts` behind `balance`, `written` one
    /// more instance seeing every row (see [`Replicas::of_config`]).
    ///
    /// [`Replicas::of_config`]: super::replicas::Replicas::of_config
    pub fn replicated_config(
        (parts, written): super::replicas::Instances,
        (label, spec, order): (String, String, usize),
        (balance, window): (super::replicas::Balance, Nanos),
    ) -> Run {
        let report_slot = written.report_slot();
        let exec = super::replicas::Replicas::of_config(parts, written, balance, window);
        Run::with_exec(
            Exec::Replicas(Box::new(exec)),
            label,
            spec,
            Vec::new(),
            report_slot,
            order,
        )
    }

    /// The same run with empty state.
    pub(super) fn fresh(&self) -> Option<Run> {
        let spec = self.source.as_ref()?;
        Some(Run::new(spec, self.slots.clone(), self.order))
    }

    /// An nginx.conf run: it keys and routes rows itself.
    pub fn nginx(conf: super::conf::ConfExec, label: String, spec: String, order: usize) -> Run {
        Run::config(Box::new(conf), label, spec, order)
    }

    /// A gateway config's run (nginx.conf, haproxy.cfg): it keys and
    /// routes rows itself.
    pub fn config(
        conf: Box<dyn super::exec::ConfigRun>,
        label: String,
        spec: String,
        order: usize,
    ) -> Run {
        let report_slot = conf.report_slot();
        Run::with_exec(
            Exec::Conf(conf),
            label,
            spec,
            Vec::new(),
            report_slot,
            order,
        )
    }

    /// True for runs that need the key values (not only ids) of each row.
    pub fn reads_names(&self) -> bool {
        match &self.exec {
            Exec::Conf(_) => true,
            Exec::Replicas(r) => r.hash_slot().is_some() || r.config_slot().is_some(),
            _ => false,
        }
    }

    pub(super) fn with_exec(
        exec: Exec,
        label: String,
        spec: String,
        slots: Vec<Slot>,
        report_slot: Option<usize>,
        order: usize,
    ) -> Run {
        let peak_cap = exec.max_level();
        Run {
            order,
            label,
            spec,
            source: None,
            split: None,
            exec,
            keys: vec![None; slots.len()],
            slots,
            tally: Tally {
                peak_cap,
                report_slot,
                counts: Counts::default(),
                waits: WaitStats::new(),
                peak: 0,
                drops_by_key: Vec::new(),
                waits_by_key: Vec::new(),
                shared_waits: None,
                bins: Vec::new(),
            },
        }
    }
}
