//! Candidate replays: one policy at K sizes through one pass over a log
//! held in memory as columns, K states per key laid out together, each
//! decided by the policy core's own `decide`. This is the engine operator
//! `drip size` searches with; what a probe counts ends in the same
//! [`Counts`](super::counts::Counts) an audit replay's report is made from.
//!
//! - [`log`]: the log in memory (arrival, key id, cost), read once.
//! - [`per`]: the periods (`--per`) each target must hold in.
//! - [`probe`]: the replays, [`probe::NeedJob`] (each key's zero-drop size
//!   under unbounded candidates) and [`probe::ProbeJob`] (K sizes at once).

pub mod log;
pub mod per;
pub mod probe;

use crate::engine::outcome::PolicyReport;
use crate::engine::replay::{Replay, Run, Slot};
use crate::engine::replicas::Balance;
use crate::ingest::stream::CHUNK;
use crate::policy::parse_spec;
use crate::time::Nanos;
use anyhow::Result;
use log::Log;

/// The audit replay of one spec over the in-memory log: the figures
/// `drip audit -p SPEC` reports.
pub fn audit(log: &Log, spec_text: &str, keyed: bool, top: usize) -> Result<PolicyReport> {
    let spec = parse_spec(spec_text)?;
    let slot = if keyed { Slot::Column(0) } else { Slot::Global };
    let run = Run::new(&spec, vec![slot; spec.members.len()], 0);
    Ok(audit_runs(log, vec![run], keyed, top)?.remove(0))
}

/// The audit replay of one spec as `n` instances behind `balance` (see
/// [`Replicas`](super::replicas::Replicas)), admitted requests counted per
/// `window`: the figures `drip audit -p SPEC --replicas N` reports.
pub fn audit_replicated(
    log: &Log,
    spec_text: &str,
    keyed: bool,
    (n, balance, window): (u32, Balance, Nanos),
) -> Result<PolicyReport> {
    let spec = parse_spec(spec_text)?;
    let slot = if keyed { Slot::Column(0) } else { Slot::Global };
    let slots = vec![slot; spec.members.len()];
    let run = Run::replicated(&spec, slots, 0, (n, balance, window));
    Ok(audit_runs(log, vec![run], keyed, 0)?.remove(0))
}

/// The audit replay of `runs` (keyed by the log's key column 0 when
/// `keyed`) over the in-memory log, one report per run.
fn audit_runs(log: &Log, runs: Vec<Run>, keyed: bool, top: usize) -> Result<Vec<PolicyReport>> {
    let mut replay = Replay::new(runs, usize::from(keyed), None, None, top)?;
    if keyed {
        for id in 0..log.names.len() {
            replay.learn_key(0, log.names.get(id as u32));
        }
    }
    let mut buf = Vec::with_capacity(CHUNK);
    let mut start = 0;
    while start < log.len() {
        log.events(start, CHUNK, &mut buf);
        replay.decide_chunk(&buf)?;
        start += CHUNK;
    }
    let (reports, _) = replay.finish()?;
    Ok(reports)
}
