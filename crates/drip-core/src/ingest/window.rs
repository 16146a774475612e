//! The reorder window: its default for each format, and what is said of a
//! row too late for it — once, with the window the whole log needs.
//!
//! Access-log lines are written when a request completes, so a line whose
//! time is the arrival comes late by up to the request's duration (Apache's
//! `%t`, ALB's `request_creation_time`), and lines from several workers
//! interleave. Their default window is [`COMPLETION_WINDOW`]: 60 s, the
//! default request timeouts of Apache (`Timeout 60`), nginx
//! (`proxy_read_timeout 60s`, `client_body_timeout 60s`) and AWS load
//! balancers (idle timeout 60 s), past which a request is rarely still
//! served. elastic/examples' 10,000-line Apache log needs 59 s. CSV keeps
//! [`CSV_WINDOW`].
//!
//! A row later than the window is not refused on the spot when the input
//! is regular files: the rest is read (not replayed) for its largest
//! lateness, so the message names the window that reads the whole log. A
//! row that jumped far ahead just before the refused one is out of place
//! only when no later row ever comes up to its time (a far-future time no
//! window explains): then, and only then, `--skip-bad` is offered.

use super::batch::Event;
use super::log::InputFormat;
use super::order::Scan;
use crate::time::{Nanos, instant};
use anyhow::{Error, anyhow};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The default window of CSV and TSV logs.
pub const CSV_WINDOW: Nanos = Nanos::from_secs(5);
/// The default window of access-log line formats (see the module's notes).
pub const COMPLETION_WINDOW: Nanos = Nanos::from_secs(60);

/// The format the reader detected, for the window that depends on it.
pub type Detected = Arc<OnceLock<InputFormat>>;

/// The reorder window: as given, or by the log's format.
#[derive(Clone, Default)]
pub struct Window {
    pub given: Option<Nanos>,
    pub detected: Detected,
}

impl Window {
    /// The window, once the reader knows the format (`given`: the format
    /// set by `--input-format`).
    pub fn resolve(&self, given: InputFormat) -> Nanos {
        self.given.unwrap_or_else(|| match self.format(given) {
            InputFormat::Auto | InputFormat::Csv | InputFormat::Tsv => CSV_WINDOW,
            _ => COMPLETION_WINDOW,
        })
    }

    fn format(&self, given: InputFormat) -> InputFormat {
        match given {
            InputFormat::Auto => self.detected.get().copied().unwrap_or(given),
            f => f,
        }
    }

    /// How the window is named in messages: its length, and where a
    /// default comes from.
    pub fn shown(&self, given: InputFormat) -> String {
        let w = self.resolve(given);
        match (self.given, self.format(given)) {
            (Some(_), _) | (None, InputFormat::Auto | InputFormat::Csv | InputFormat::Tsv) => {
                w.to_string()
            }
            (None, f) => format!("{w}, the default for {} lines", f.name()),
        }
    }
}

/// The first row too late for the window.
pub struct Refusal {
    pub row: Event,
    pub newest: Nanos,
    pub newest_file: u32,
    /// The row just before it when that row jumped ahead by more than the
    /// window and this one goes back to where the log was, with the newest
    /// time before the jump.
    pub jumped: Option<(Event, Nanos)>,
}

/// Whether the input from file `from` on can be read to its end to learn
/// the window it needs: regular files (not a pipe that may never end).
pub fn scannable(files: &[PathBuf], from: usize) -> bool {
    !files.is_empty()
        && files[from.min(files.len())..]
            .iter()
            .all(|f| f.as_os_str() != "-" && std::fs::metadata(f).is_ok_and(|m| m.is_file()))
}

/// Starts the scan of the rest of the log after `r`.
pub fn scan_after(r: &Refusal, max_behind: Nanos) -> Scan {
    Scan::start(r.newest, max_behind, &r.row, r.jumped.map(|(j, _)| j))
}

/// A window in whole seconds that covers `late`.
fn covering(late: Nanos) -> Nanos {
    Nanos::from_secs(late.0.div_ceil(Nanos::PER_SEC).max(1))
}

/// The error for the refused row `r`, with what the scan of the rest of
/// the log found (`None`: the input could not be scanned).
pub fn refused(
    r: &Refusal,
    scan: Option<&Scan>,
    window: &str,
    names: &[String],
    merging: bool,
) -> Error {
    let ev = r.row;
    let behind = Nanos(r.newest.0 - ev.at.0);
    if let Some((jumped, before)) = r.jumped
        && scan.is_none_or(|s| s.out_of_place().is_some())
    {
        let after = match scan {
            Some(_) => "and no row after it comes back to its time",
            None => "and the next row goes back",
        };
        return anyhow!(
            "{}:{}: this row's time {} is {} after the rows before it ({}), {after} to {}: the row is out of place; fix or remove it, or pass --skip-bad to skip and count such rows",
            names[jumped.file as usize],
            jumped.line,
            instant(jumped.at.0),
            Nanos(jumped.at.0 - before.0),
            instant(before.0),
            instant(ev.at.0),
        );
    }
    let at = format!(
        "{}:{}: this row's time {} is {behind} older",
        names[ev.file as usize],
        ev.line,
        instant(ev.at.0)
    );
    if ev.file != r.newest_file && !merging {
        return anyhow!(
            "{at} than a row of {} read before it ({}), beyond the reorder window of {window}: these overlap in time: pass --merge if they are logs of one period (one per server)",
            names[r.newest_file as usize],
            instant(r.newest.0),
        );
    }
    let newest = instant(r.newest.0);
    match scan {
        Some(s) => {
            let (file, line) = s.worst;
            let worst = if (file, line) == (ev.file, ev.line) {
                String::new()
            } else {
                format!(
                    " (its latest row, {}:{line}, is {} behind)",
                    names[file as usize], s.needed
                )
            };
            anyhow!(
                "{at} than an earlier row's {newest}, beyond the reorder window of {window}; the log needs --reorder-window {}{worst}, or sort it by time",
                covering(s.needed),
            )
        }
        None => anyhow!(
            "{at} than an earlier row's {newest}, beyond the reorder window of {window}; raise --reorder-window above {behind} or sort the log by time"
        ),
    }
}
