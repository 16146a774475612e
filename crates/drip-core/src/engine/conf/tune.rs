//! What `size --nginx-conf` needs of a replay: the limits that saw the
//! last row and what each did to it, another `limit_req` line's settings
//! in place of a line's, a fresh start, and what each zone held.

use super::ConfExec;
use super::key::{Activity, KeyPlan};
use crate::ingest::key_values::KeyValues;
use crate::policy::NginxLimitReq;

/// What the last row met.
#[derive(Default)]
pub(super) struct Last {
    /// Kept at all (`size` asks; `audit` does not).
    pub(super) on: bool,
    pub(super) location: usize,
    /// The index (in its location's list) of the limit that refused it,
    /// and the row's key in its zone.
    pub(super) refused: Option<(usize, u32)>,
    /// Scratch: set by the check that refuses.
    pub(super) refused_index: usize,
    /// Each applied limit's own delay, ns, in `applied` order.
    pub(super) delays: Vec<u64>,
}

/// What one limit did to the last row: its index in the location's list,
/// the row's key id in its zone, and its own delay (`None`: it refused
/// the row).
pub type Met = (usize, u32, Option<u64>);

/// What a zone held over a replay.
#[derive(Clone, Copy, Debug, Default)]
pub struct ZoneUse {
    /// The most keys active within 60 s (nginx keeps a state at least
    /// that long).
    pub peak: u64,
    /// The longest key, bytes as the log gives it.
    pub longest: usize,
}

impl ConfExec {
    /// The location that decided the last row, and what each limit that
    /// checked it did: every limit that admitted it with its own delay,
    /// then the one that refused it (nginx checks no limit after a
    /// refusal). With a refusal, the others stored nothing and delayed
    /// nothing.
    pub fn last_row(&self, out: &mut Vec<Met>) -> usize {
        out.clear();
        match self.last.refused {
            Some((r, k)) => {
                out.extend(self.applied.iter().map(|&(i, _, k)| (i, k, Some(0))));
                out.push((r, k, None));
            }
            None => out.extend(
                self.applied
                    .iter()
                    .zip(&self.last.delays)
                    .map(|(&(i, _, k), &d)| (i, k, Some(d))),
            ),
        }
        self.last.location
    }

    /// Keeps what each row met, for [`ConfExec::last_row`].
    pub fn trace(&mut self) {
        self.last.on = true;
    }

    /// Location `l`'s `i`th limit decides by `policy` from now on.
    pub fn set_limit(&mut self, l: usize, i: usize, policy: NginxLimitReq) {
        self.locs[l].limits[i].1 = policy;
    }

    /// Every zone empty and every count 0, as before the first row; the
    /// keys keep their ids.
    pub fn restart(&mut self) {
        for z in &mut self.keys.zones {
            z.states.clear();
            z.activity = Activity::default();
        }
        for l in &mut self.locs {
            l.counts = [0; 6];
        }
    }

    /// The text of key `id` in zone `z` (`names`: the log's key values).
    pub fn key_name<'a>(&'a self, z: usize, id: u32, names: &'a KeyValues) -> &'a [u8] {
        let run = &self.keys.zones[z];
        match run.plan {
            KeyPlan::Field(slot) => names[slot].get(id),
            KeyPlan::Expr => run.names.get(id),
        }
    }

    /// What zone `z` held over the replay (`names`: the log's key values).
    pub fn zone_use(&self, z: usize, names: &KeyValues) -> ZoneUse {
        let run = &self.keys.zones[z];
        let longest = match run.plan {
            KeyPlan::Field(slot) => (0..run.states.len() as u32)
                .map(|id| names[slot].get(id).len())
                .max()
                .unwrap_or(0),
            KeyPlan::Expr => run.longest,
        };
        ZoneUse {
            peak: run.activity.peak,
            longest,
        }
    }
}
