//! What `size --nginx-conf` sizes and replays: the config's `limit_req`
//! lines, once each, their settings under test, and the log in memory as
//! whole rows.

use crate::ingest::input::{Batch, Event};
use crate::ingest::key_values::KeyValues;
use crate::ingest::keys::Interner;
use crate::ingest::stream::Sink;
use crate::nginx_conf::NginxConf;
use crate::nginx_conf::tree::Pos;
use crate::policy::nginx::NginxRate;
use anyhow::Result;

/// One `limit_req` line as sized.
pub struct Unit {
    pub zone: usize,
    pub pos: Pos,
    /// (location, index in its `limit_req` list) of every place it applies.
    pub members: Vec<(usize, usize)>,
    /// Today's settings.
    pub burst: u64,
    pub delay: Option<u64>,
}

/// The log in memory as the config reads it: whole rows, with the key
/// values of every column the config's keys and routing read.
#[derive(Default)]
pub struct Rows {
    pub events: Vec<Event>,
    pub names: KeyValues,
    interners: Vec<Interner>,
}

impl Rows {
    /// No rows yet, reading `cols` key columns.
    pub fn new(cols: usize) -> Rows {
        Rows {
            names: KeyValues::new(cols),
            interners: (0..cols).map(|_| Interner::default()).collect(),
            ..Rows::default()
        }
    }
}

/// Interns `batch`'s keys (when the reader did not) and keeps the values
/// new to `names`: what a sink that needs key values learns of a batch.
pub fn learn_keys(names: &mut KeyValues, interners: &mut [Interner], batch: &mut Batch) {
    if !batch.interned {
        batch.intern(interners, &mut names.spill);
    }
    for &(c, start, end) in &batch.new_keys {
        names[c as usize].push(&batch.key_bytes[start as usize..end as usize]);
    }
}

impl Sink for Rows {
    fn learn(&mut self, batch: &mut Batch) {
        learn_keys(&mut self.names, &mut self.interners, batch);
    }

    fn take(&mut self, rows: &[Event]) -> Result<()> {
        self.events.extend_from_slice(rows);
        Ok(())
    }
}

/// The config's `limit_req` lines that a location can apply, once each,
/// in the order of the locations that first apply them.
pub fn units(conf: &NginxConf) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::new();
    for (l, loc) in conf.locations.iter().enumerate() {
        if loc.returns {
            continue;
        }
        for (i, lim) in loc.limits.iter().enumerate() {
            match out
                .iter_mut()
                .find(|u| u.pos == lim.pos && u.zone == lim.zone)
            {
                Some(u) => u.members.push((l, i)),
                None => out.push(Unit {
                    zone: lim.zone,
                    pos: lim.pos.clone(),
                    members: vec![(l, i)],
                    burst: lim.burst,
                    delay: lim.delay,
                }),
            }
        }
    }
    out
}

/// A config's settings under test: each zone's rate, each line's burst.
#[derive(Clone, Debug)]
pub struct Setting {
    pub rates: Vec<NginxRate>,
    pub bursts: Vec<u64>,
}

impl Setting {
    /// The config as written.
    pub fn today(conf: &NginxConf, units: &[Unit]) -> Setting {
        Setting {
            rates: conf.zones.iter().map(|z| z.rate).collect(),
            bursts: units.iter().map(|u| u.burst).collect(),
        }
    }

    /// Zone `z`'s rate as nginx spells it.
    pub fn rate_text(&self, z: usize) -> String {
        spell(self.rates[z])
    }
}

/// `rate` in nginx's spelling.
pub fn spell(rate: NginxRate) -> String {
    match rate {
        NginxRate::PerSec(n) => format!("{n}r/s"),
        NginxRate::PerMin(n) => format!("{n}r/m"),
    }
}
