//! The end of a run: the reader stopped, every line read and not written
//! accounted for (counted as unsent, and kept in `--rejects`), the summary
//! printed when asked for or when lines were left, the error said, and the
//! exit status chosen.

use super::reader::{Guard, Record};
use super::share::Sharer;
use super::stats::Ending;
use super::{BUSIEST_KEYS, Pacer};
use crate::cli::StatsFormat;
use crate::clock::Clock;
use anyhow::Context;
use std::io::{self, Write};
use std::path::Path;

impl Pacer {
    /// Ends the run that `ending` stopped; the exit status.
    pub(super) fn finish(mut self, g: Guard<'_>, ending: Ending) -> anyhow::Result<u8> {
        let read_error = self.stop_reading(g);
        if let Some(w) = &mut self.rejects
            && let Err(e) = w.flush()
        {
            self.rejects = None;
            self.rejects_error = Some(e);
        }
        self.progress.finish_and_clear();
        self.print_summary(ending);
        if let Some(e) = &self.rejects_error {
            let path = self.config.rejects.as_deref().unwrap_or(Path::new(""));
            crate::say!(
                "drip: cannot write the rejects file '{}': {e}; input was read no further, and of the {} line(s) dropped and {} unsent not all are in that file; free space there or give another --rejects FILE",
                path.display(),
                self.stats.dropped,
                self.stats.unsent
            );
        }
        if let Some(e) = read_error {
            return Err(e).context("reading standard input");
        }
        if let Some(e) = self.write_error.take() {
            let kept = match &self.config.rejects {
                Some(_) if self.rejects_error.is_some() => String::new(),
                Some(p) => format!(" and kept in '{}'", p.display()),
                None => " (give --rejects FILE to keep them)".into(),
            };
            anyhow::bail!(
                "cannot write standard output: {e}; {} line(s) not written are counted as unsent{kept}",
                self.stats.unsent
            );
        }
        Ok(self.exit_status(ending))
    }

    /// Stops the reader and accounts for every line read and not written,
    /// in input order; returns the read error, if reading failed.
    fn stop_reading(&mut self, mut g: Guard<'_>) -> Option<io::Error> {
        g.stop = true;
        let records: Vec<Record> = g.records.drain(..).collect();
        let partial = std::mem::take(&mut g.partial);
        let read_error = g.read_error.take();
        self.stats.lines_in = g.lines_in;
        drop(g);
        self.shared.reader_cv.notify_one();
        let mut backlog: Vec<(u64, Vec<u8>)> =
            self.schedule.take_all().map(|p| (p.seq, p.item)).collect();
        if let Some(lanes) = &mut self.lanes {
            // Scheduled and waiting lines, back in input order.
            backlog.extend(lanes.take_all());
            backlog.sort_by_key(|(line, _)| *line);
        }
        if let Some(replay) = &mut self.replay {
            backlog.extend(replay.take_all());
            backlog.sort_by_key(|(line, _)| *line);
        }
        for (_, item) in backlog {
            self.unsent(&item);
        }
        for r in records {
            self.unsent(&r.bytes);
        }
        if !partial.is_empty() {
            self.stats.lines_in += 1;
            self.unsent(&partial);
        }
        read_error
    }

    /// Prints the summary on stderr with `--stats`, and also without it
    /// when lines were left unsent (after a signal or an error), so the
    /// count is never lost.
    fn print_summary(&self, ending: Ending) {
        let early = self.rejects_error.is_some()
            || matches!(
                ending,
                Ending::Sigint
                    | Ending::Sigterm
                    | Ending::ShareError
                    | Ending::Sighup
                    | Ending::ReadError
                    | Ending::WriteError
                    | Ending::RejectsError
            );
        if self.config.stats.is_none() && !early {
            return;
        }
        let mut summary = self.stats.summary(
            self.clock.now(),
            self.config.target.clone(),
            ending,
            self.schedule.slip(),
        );
        summary.keys = self.lanes.as_ref().map(|l| l.keys().summary(BUSIEST_KEYS));
        summary.share = self.share.as_ref().map(Sharer::summary);
        summary.paused_ms = self.schedule.paused().0 as f64 / 1e6;
        if let Some(text) = &self.retuned {
            summary.target = format!("{} (shaper now {text})", summary.target);
        }
        let text = match self.config.stats {
            Some(StatsFormat::Json) => summary.to_json(),
            _ => summary.to_text(),
        };
        // stderr may be gone too; nothing else to tell then.
        let _ = io::stderr().write_all(text.as_bytes());
    }

    /// The exit status for `ending`, saying why when it is not plain.
    fn exit_status(&mut self, ending: Ending) -> u8 {
        let lost = self.rejects_error.is_some();
        match ending {
            // Lines not kept in the rejects file make it an I/O error.
            Ending::Eof | Ending::BrokenPipe if lost => 2,
            Ending::Eof | Ending::BrokenPipe => 0,
            Ending::ReadError | Ending::WriteError | Ending::RejectsError => 2,
            Ending::Sighup => 129,
            Ending::Full => {
                crate::say!(
                    "drip: backlog full at input line {}: lines arrive faster than {} allows; use --on-full block (wait) or drop, or a larger --burst/--max-wait",
                    self.full_at.unwrap_or(0),
                    self.config.target
                );
                3
            }
            Ending::Sigint => 130,
            Ending::Sigterm => 143,
            Ending::ShareError => {
                let e = self.share_error.take().expect("a share error ends the run");
                crate::say!(
                    "drip: {e:#}; {} line(s) read and not written",
                    self.stats.unsent
                );
                2
            }
        }
    }
}
