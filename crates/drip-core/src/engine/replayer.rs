//! Rows replayed through policies by a program, without a log file: the
//! same engine as `drip audit`, fed one row at a time. Each row has a time,
//! a key (empty: exempt from every keyed limit) and a cost; rows come in
//! time order. The outcome merges with the outcomes of replays of other
//! keys ([`Outcome::merge`]), so a log split by key can be replayed in
//! parts, on several threads or machines.

use super::conf::{ConfExec, ConfOptions};
use super::merge::Outcome;
use super::replay::Replay;
use super::run::Run;
use crate::engine::loops::Slot;
use crate::ingest::input::{Event, MAX_KEYS};
use crate::ingest::keys::EMPTY_KEY;
use crate::nginx_conf::NginxConf;
use crate::notes::Notes;
use crate::policy::spec::{KeyChoice, parse_spec};
use crate::time::Nanos;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Rows handed to the engine at a time.
const CHUNK: usize = 4096;

/// A replay of rows through policy specs, every spec keyed by the row's
/// key, or through an nginx.conf, each row its named fields.
pub struct Replayer {
    replay: Replay,
    /// Per field, the ids of its values in order of first appearance.
    ids: Vec<HashMap<Vec<u8>, u32>>,
    chunk: Vec<Event>,
    rows: u64,
    last: Nanos,
}

/// What stopped a replay: a spec that cannot be replayed here, a row out
/// of time order, or the engine's own error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayError(String);

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReplayError {}

impl From<anyhow::Error> for ReplayError {
    fn from(e: anyhow::Error) -> ReplayError {
        ReplayError(format!("{e:#}"))
    }
}

impl Replayer {
    /// A replay through `specs` (the policy language of `drip audit -p`,
    /// `+` stacks included), keeping the `top` keys hurt most per spec. A
    /// member's `key=none` makes it one bucket for every row; `key=COLUMN`
    /// is refused (a row here has one key).
    pub fn new<S: AsRef<str>>(specs: &[S], top: usize) -> Result<Replayer, ReplayError> {
        let mut runs = Vec::with_capacity(specs.len());
        for (order, text) in specs.iter().enumerate() {
            let spec = parse_spec(text.as_ref()).map_err(|e| ReplayError(e.to_string()))?;
            let slots = spec
                .members
                .iter()
                .map(|m| match &m.key {
                    KeyChoice::Default => Ok(Slot::Column(0)),
                    KeyChoice::Global => Ok(Slot::Global),
                    KeyChoice::Column(c) => Err(ReplayError(format!(
                        "policy '{}' takes its key from column '{c}'; a replayed row has one key",
                        spec.text
                    ))),
                })
                .collect::<Result<Vec<Slot>, ReplayError>>()?;
            runs.push(Run::new(&spec, slots, order));
        }
        Replayer::with_runs(runs, 1, top)
    }

    /// A replay through the nginx config `conf`: every `limit_req` as nginx
    /// applies it (routing, zone keys, maps, the order of limits). A row
    /// has the values of `fields`, the log's field names as nginx would
    /// log them (`remote_addr`, `uri` or `request`, `host`, or any field a
    /// zone key or map reads), at most four. What the replay assumes of
    /// the rows (a config with several servers and no `host` field, rewrites
    /// without a URI) is said to `notes`.
    pub fn nginx(
        conf: NginxConf,
        label: &str,
        fields: &[&str],
        top: usize,
        notes: &Notes,
    ) -> Result<Replayer, ReplayError> {
        if fields.len() > MAX_KEYS {
            return Err(ReplayError(format!(
                "{} fields given; a replayed row has at most {MAX_KEYS}",
                fields.len()
            )));
        }
        let names: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
        let overrides = HashMap::new();
        let opts = ConfOptions {
            log_fields: Some(&names),
            overrides: &overrides,
            location: None,
            verify: None,
            files: vec!["<rows>".into()],
            static_files: None,
        };
        let exec = ConfExec::new(Arc::new(conf), &opts, notes, &mut |f| {
            fields.iter().position(|&g| g == f).ok_or_else(|| {
                anyhow::anyhow!("the config reads the field '{f}'; give it among the row's fields")
            })
        })?;
        let run = Run::nginx(exec, label.to_string(), label.to_string(), 0);
        Replayer::with_runs(vec![run], fields.len(), top)
    }

    fn with_runs(runs: Vec<Run>, fields: usize, top: usize) -> Result<Replayer, ReplayError> {
        Ok(Replayer {
            replay: Replay::new(runs, fields, None, None, top)?,
            ids: vec![HashMap::new(); fields],
            chunk: Vec::with_capacity(CHUNK),
            rows: 0,
            last: Nanos::ZERO,
        })
    }

    /// Decides one row arriving at `at` (no earlier than the row before),
    /// of `key` (its bytes; empty: exempt) and `cost` (1 for a request).
    pub fn push(&mut self, at: Nanos, key: &[u8], cost: u32) -> Result<(), ReplayError> {
        self.push_fields(at, &[key], cost)
    }

    /// Decides one row arriving at `at` with the values of the fields the
    /// replay was made with, in their order (empty: not logged).
    pub fn push_fields(
        &mut self,
        at: Nanos,
        values: &[&[u8]],
        cost: u32,
    ) -> Result<(), ReplayError> {
        if values.len() != self.ids.len() {
            return Err(ReplayError(format!(
                "row {} has {} values for {} fields",
                self.rows + 1,
                values.len(),
                self.ids.len()
            )));
        }
        if at < self.last {
            return Err(ReplayError(format!(
                "row {} at {} ns comes before the row before it ({} ns); rows must be in time order",
                self.rows + 1,
                at.0,
                self.last.0
            )));
        }
        self.last = at;
        self.rows += 1;
        let mut keys = [0; MAX_KEYS];
        for (column, value) in values.iter().enumerate() {
            keys[column] = self.id(column, value);
        }
        self.chunk.push(Event {
            at,
            row: self.rows,
            line: self.rows,
            file: 0,
            cost,
            keys,
        });
        if self.chunk.len() == CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// Every row is in: what each spec did.
    pub fn finish(mut self) -> Result<Outcome, ReplayError> {
        self.flush()?;
        Ok(self.replay.finish_outcome()?.0)
    }

    /// The id of `value` in field `column`, learning a new one.
    fn id(&mut self, column: usize, value: &[u8]) -> u32 {
        if value.is_empty() {
            return EMPTY_KEY;
        }
        let ids = &mut self.ids[column];
        if let Some(&id) = ids.get(value) {
            return id;
        }
        let id = ids.len() as u32;
        ids.insert(value.to_vec(), id);
        self.replay.learn_key(column, value);
        id
    }

    fn flush(&mut self) -> Result<(), ReplayError> {
        self.replay.decide_chunk(&self.chunk)?;
        self.chunk.clear();
        Ok(())
    }
}
