//! The columns a reader takes from each row, resolved once per file
//! against its header or fields, with their names as messages quote them.

use super::input::{InputSpec, key_parts};
use super::rows::Rows;
use crate::quote::shown_str;
use anyhow::Result;

/// Column positions resolved against one file's header, with their names
/// as messages quote them.
pub(super) struct Columns {
    pub(super) time: usize,
    /// The time-of-day column when date and time are split.
    pub(super) time2: Option<usize>,
    /// Per key: its columns, joined into one key when several.
    pub(super) keys: Vec<Vec<usize>>,
    pub(super) cost: Option<usize>,
    /// The request's duration, subtracted from its completion time.
    pub(super) duration: Option<usize>,
    /// The duration's unit in ns, from its name, and an example for messages.
    pub(super) duration_unit: (u64, &'static str),
    /// The access-log format's name; `None` for CSV.
    pub(super) format: Option<&'static str>,
    pub(super) time_name: String,
    pub(super) duration_name: String,
    pub(super) cost_name: String,
    pub(super) key_names: Vec<Vec<String>>,
    pub(super) shape: crate::ingest::log::key::KeyShape,
}

/// The unit of a duration column by its name's ending: `_us`/`_micros`
/// (Apache `%D`, GCS `time_taken_micros`), `_ms` (Squid `elapsed_ms`,
/// Envoy `duration_ms`), else seconds (nginx `request_time`).
fn duration_unit(name: &str) -> (u64, &'static str) {
    if name.ends_with("_us") || name.ends_with("_micros") {
        (1_000, "whole microseconds such as 125000")
    } else if name.ends_with("_ms") {
        (1_000_000, "milliseconds such as 125")
    } else {
        (crate::time::Nanos::PER_SEC, "seconds such as 0.125")
    }
}

impl Columns {
    /// Resolves the spec's columns against the file's header or fields.
    pub(super) fn resolve(rows: &mut impl Rows, spec: &InputSpec, name: &str) -> Result<Columns> {
        let (time, time2) = match spec.time_col.as_deref() {
            Some([sel]) => (rows.column(sel, "time", name)?, None),
            Some([sel, sel2, ..]) => (
                rows.column(sel, "time", name)?,
                Some(rows.column(sel2, "time", name)?),
            ),
            _ => rows.default_time(name)?,
        };
        let keys = spec
            .key_cols
            .iter()
            .map(|k| {
                key_parts(k)
                    .iter()
                    .map(|p| rows.column(p, "key", name))
                    .collect::<Result<Vec<usize>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let cost = spec
            .cost_col
            .as_ref()
            .map(|c| rows.column(c, "cost", name))
            .transpose()?;
        let duration = spec
            .duration_col
            .as_ref()
            .map(|c| rows.column(c, "duration", name))
            .transpose()?;
        let format = rows.format();
        let h = rows.header();
        let col_name = |i: usize| match h.and_then(|h| h.get(i)) {
            Some(n) => n.clone(),
            None if format.is_some() => format!("field{i}"),
            None => format!("#{i}"),
        };
        Ok(Columns {
            time_name: match time2 {
                Some(t2) => format!("{}+{}", col_name(time), col_name(t2)),
                None => col_name(time),
            },
            duration_name: duration.map_or(String::new(), |d| shown_str(&col_name(d))),
            duration_unit: duration_unit(&duration.map_or(String::new(), col_name)),
            cost_name: cost.map_or(String::new(), |c| shown_str(&col_name(c))),
            key_names: keys
                .iter()
                .map(|k| k.iter().map(|&c| shown_str(&col_name(c))).collect())
                .collect(),
            time,
            time2,
            keys,
            cost,
            duration,
            format,
            shape: spec.key_shape,
        })
    }

    /// What a row is called in messages.
    pub(super) fn thing(&self) -> &'static str {
        if self.format.is_some() { "line" } else { "row" }
    }

    /// What a column is called in messages.
    pub(super) fn col(&self) -> &'static str {
        if self.format.is_some() {
            "field"
        } else {
            "column"
        }
    }
}
