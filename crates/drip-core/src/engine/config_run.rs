//! A gateway's config as one kind of run: the trait the executors of an
//! nginx.conf (`conf`), a haproxy.cfg (`haproxy`) and a Traefik config
//! (`traefik`) implement, each in its own module, so the replay, its
//! replicas and the report treat them alike; and what they share.

use super::outcome::{Gateway, NginxReport};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::ingest::keys::EMPTY_KEY;
use crate::policy::Decision;
use anyhow::Result;

/// What the executors of a haproxy.cfg and a Traefik config need from
/// the command line.
pub struct ConfigOptions<'a> {
    /// The log's field names, when they can be known before reading.
    pub log_fields: Option<&'a [String]>,
    /// `--verify-column`.
    pub verify: Option<&'a str>,
    /// The logs' names, for the places of disagreements.
    pub files: Vec<String>,
}

/// Counts a row a limit applied to for key `id` of the report's column
/// (none for the empty key), as [`ConfigRun::take_limited_by_key`] gives.
#[inline]
pub fn count_limited(counts: &mut Vec<u64>, id: u32) {
    if id == EMPTY_KEY {
        return;
    }
    let i = id as usize;
    if i >= counts.len() {
        counts.resize(i + 1, 0);
    }
    counts[i] += 1;
}

/// A config's section once its rows are decided: each part with a limit
/// that no row reached (`untested`) and each limit nothing uses (`unused`)
/// is said in a note too, with the words that follow its name.
pub fn section(
    mut report: NginxReport,
    (untested, untested_words): (Vec<String>, &str),
    (unused, unused_words): (Vec<String>, &str),
) -> NginxReport {
    for u in &untested {
        report.notes.push(format!(
            "{u} {untested_words} and no row of the log reached it: untested (--fail-untested makes this fail)"
        ));
    }
    for u in &unused {
        report.notes.push(format!("{u} {unused_words}"));
    }
    report.untested = untested;
    report.unused_zones = unused;
    report
}

/// A gateway's config replayed as one run: it routes and keys each row
/// itself, and adds its own section to the report.
pub trait ConfigRun: Send {
    /// Decides one row (`levels`: also its level).
    fn decide(&mut self, ev: &Event, names: &KeyValues, levels: bool) -> Result<(Decision, u64)>;
    /// The gateway and the report's section, once every row is decided.
    fn section(&mut self) -> (Gateway, NginxReport);
    /// Rows a limit applied to, per key id of the report's key column.
    fn take_limited_by_key(&mut self) -> Vec<u64>;
    /// True when admitted requests may be delayed.
    fn shapes(&self) -> bool;
    /// The highest level a row can reach (`u64::MAX`: no bound).
    fn max_level(&self) -> u64;
    /// The key column the report counts drops by.
    fn report_slot(&self) -> Option<usize>;
}
