//! `--decisions FILE`: every decision of the replay as a CSV row (`row,
//! policy, key, cost, admit, wait_ms, retry_after_ms`), keys as read (the
//! CSV writer quotes them). A reader that stops reading (`--decisions - |
//! head`) ends the file quietly and the replay goes on, so thresholds are
//! still checked; any other failure names the file.

use crate::engine::replay::{Decided, DecisionSink};
use crate::policy::Decision;
use crate::time::fmt_millis;
use anyhow::{Result, anyhow};
use std::io::Write;

/// The decisions file, open; `None` once its reader has gone.
pub struct CsvDecisions {
    writer: Option<csv::Writer<Box<dyn Write + Send>>>,
    /// The file as given, for messages.
    name: String,
}

impl CsvDecisions {
    /// Starts the file on `out` with its header; `name` names it in messages.
    pub fn new(out: Box<dyn Write + Send>, name: String) -> Result<CsvDecisions> {
        let mut d = CsvDecisions {
            writer: Some(csv::Writer::from_writer(out)),
            name,
        };
        d.write(
            [
                "row",
                "policy",
                "key",
                "cost",
                "admit",
                "wait_ms",
                "retry_after_ms",
            ]
            .map(str::as_bytes),
        )?;
        Ok(d)
    }

    /// Writes one record (nothing once the reader has gone).
    fn write<'a>(&mut self, record: impl IntoIterator<Item = &'a [u8]>) -> Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        let r = w.write_record(record);
        self.written(r)
    }

    /// The outcome of a write: a broken pipe closes the file quietly.
    fn written(&mut self, r: csv::Result<()>) -> Result<()> {
        let Err(e) = r else { return Ok(()) };
        let text = e.to_string();
        let name = &self.name;
        match e.into_kind() {
            csv::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe => {
                // Dropping it tries its buffer once more, quietly.
                self.writer = None;
                Ok(())
            }
            csv::ErrorKind::Io(io) => {
                Err(anyhow::Error::new(io).context(format!("cannot write the decisions to {name}")))
            }
            _ => Err(anyhow!("cannot write the decisions to {name}: {text}")),
        }
    }
}

impl DecisionSink for CsvDecisions {
    fn take(&mut self, d: &Decided<'_>) -> Result<()> {
        if self.writer.is_none() {
            return Ok(());
        }
        let now = d.at;
        let (admit, wait, retry) = match d.decision {
            Decision::Admit { release } => {
                ("1", fmt_millis(release.saturating_sub(now)), String::new())
            }
            Decision::Refuse { retry_at } => (
                "0",
                String::new(),
                retry_at.map_or(String::new(), |t| fmt_millis(t.saturating_sub(now))),
            ),
        };
        self.write([
            d.row.to_string().as_bytes(),
            d.policy.as_bytes(),
            d.key,
            d.cost.to_string().as_bytes(),
            admit.as_bytes(),
            wait.as_bytes(),
            retry.as_bytes(),
        ])
    }

    fn finish(&mut self) -> Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        let r = w.flush().map_err(csv::Error::from);
        self.written(r)?;
        self.writer = None;
        Ok(())
    }
}
