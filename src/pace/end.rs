//! The end of a run: the reader stopped, every line read and not written
//! accounted for (counted as unsent, and kept in `--rejects`), the summary
//! printed when asked for or when lines were left, the error said, and the
//! exit status chosen.

use super::reader::{Guard, Record};
use super::shaper_loop;
use super::stats::Ending;
use super::{BUSIEST_KEYS, Pacer};
use crate::cli::StatsFormat;
use crate::clock::Clock;
use anyhow::Context;
use std::io::{self, Write};

impl Pacer {
    /// Ends the run that `ending` stopped; the exit status.
    pub(super) fn finish(mut self, g: Guard<'_>, ending: Ending) -> anyhow::Result<u8> {
        let shared = std::sync::Arc::clone(&self.shared);
        let g = self.wait_for_jobs(g, &shared);
        self.close_journal(&g);
        let read_error = self.stop_reading(g);
        self.rejects.flush();
        self.tally.finish();
        if let Some(lanes) = self.intake.lanes() {
            lanes.keys().check_unmatched();
        }
        self.print_summary(ending);
        let stats = &self.tally.stats;
        self.rejects.say_failure(stats.dropped, stats.unsent);
        if let Some((e, from)) = read_error {
            return Err(e).context(format!("reading {from}"));
        }
        if let Some(e) = self.output.take_error() {
            anyhow::bail!(
                "cannot write standard output: {e}; {} line(s) not written are counted as unsent{}",
                self.tally.stats.unsent,
                self.rejects.kept_in()
            );
        }
        Ok(self.exit_status(ending))
    }

    /// Stops the reader and accounts for every line read and not written,
    /// in input order; returns the read error and the input it came
    /// from, if reading failed.
    fn stop_reading(&mut self, mut g: Guard<'_>) -> Option<(io::Error, String)> {
        g.stop = true;
        let records: Vec<Record> = g.records.drain(..).collect();
        let partial = std::mem::take(&mut g.partial);
        let from = match std::mem::take(&mut g.reading) {
            name if name.is_empty() => "standard input".to_string(),
            name => name,
        };
        let read_error = g.read_error.take().map(|e| (e, from));
        self.tally.stats.lines_in = g.lines_in - self.tally.journal_skipped.unwrap_or(0);
        drop(g);
        self.shared.reader_cv.notify_one();
        let mut backlog: Vec<(u64, Vec<u8>)> =
            self.schedule.take_all().map(|p| (p.seq, p.item)).collect();
        self.intake.take_all(&mut backlog);
        let unsent = backlog
            .into_iter()
            .map(|(_, item)| item)
            .chain(records.into_iter().map(|r| r.bytes));
        for item in unsent {
            self.unsent(&item);
        }
        if !partial.is_empty() {
            self.tally.stats.lines_in += 1;
            self.unsent(&partial);
        }
        read_error
    }

    /// Prints the summary on stderr with `--stats`, and also without it
    /// when lines were left unsent (after a signal or an error), so the
    /// count is never lost.
    fn print_summary(&self, ending: Ending) {
        let early = self.rejects.failed()
            || matches!(
                ending,
                Ending::Sigint
                    | Ending::Sigterm
                    | Ending::ShareError
                    | Ending::Sighup
                    | Ending::ReadError
                    | Ending::WriteError
                    | Ending::RejectsError
                    | Ending::CommandError
            );
        if self.config.stats.is_none() && !early {
            return;
        }
        let mut summary = self.tally.stats.summary(
            self.clock.now(),
            self.config.target.clone(),
            ending,
            self.schedule.slip(),
        );
        summary.keys = self.intake.lanes().map(|l| l.keys().summary(BUSIEST_KEYS));
        summary.share = self.sharing.summary();
        summary.commands = self.jobs.as_ref().map(|j| j.counts());
        summary.paused_ms = self.schedule.paused().0 as f64 / 1e6;
        summary.pauses = Some(self.control.pauses()).filter(|&n| n > 0);
        summary.adaptive =
            self.control
                .adaptive_summary(self.clock.now())
                .map(
                    |(throttles, rate_per_s_now)| super::stats::AdaptiveSummary {
                        throttles,
                        rate_per_s_now,
                    },
                );
        summary.journal_skipped = self.tally.journal_skipped;
        if let Some(text) = self.control.retuned() {
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
        let lost = self.rejects.failed() || self.journal_failed();
        match ending {
            // Lines not kept in the rejects file make it an I/O error.
            Ending::Eof | Ending::BrokenPipe if lost => 2,
            // A command failed for good (its record is in --failed).
            Ending::Eof | Ending::BrokenPipe
                if self.jobs.as_ref().is_some_and(|j| j.any_failed()) =>
            {
                1
            }
            Ending::Eof | Ending::BrokenPipe => 0,
            Ending::ReadError | Ending::WriteError | Ending::RejectsError => 2,
            Ending::Sighup => 129,
            Ending::Full => {
                crate::say!(
                    "drip: backlog full at input line {}: lines arrive faster than {} allows; use --on-full block (wait) or drop, or a larger --burst/--max-wait",
                    self.intake.full_at.unwrap_or(0),
                    self.config.target
                );
                3
            }
            Ending::CommandError => {
                let e = self
                    .jobs
                    .as_mut()
                    .and_then(|j| j.error.take())
                    .expect("a command error ends the run");
                crate::say!(
                    "drip: {e:#}; check the command after --; {} record(s) not started{}",
                    self.tally.stats.unsent,
                    self.rejects.kept_in()
                );
                2
            }
            Ending::Sigint => 130,
            Ending::Sigterm => 143,
            Ending::ShareError => {
                let e = self
                    .sharing
                    .take_error()
                    .expect("a share error ends the run");
                crate::say!(
                    "drip: {e:#}; {} line(s) read and not written",
                    self.tally.stats.unsent
                );
                2
            }
        }
    }

    /// Accounts for a line read and not written (a retry on its way
    /// fails for good instead).
    fn unsent(&mut self, item: &[u8]) {
        if self.left_over(item) {
            return;
        }
        shaper_loop::unsent(&mut self.tally, &mut self.rejects, item);
    }
}
