//! The counts of a run and the progress line that shows them on stderr.
//! The progress line's current rate is measured over the last second or
//! more of writes; nothing wakes up just to redraw.

use super::stats::{Ending, Stats};
use crate::clock::{Clock, MonotonicClock};
use crate::time::Nanos;
use indicatif::ProgressBar;

/// The counts so far, and the progress line.
pub(super) struct Tally {
    pub(super) stats: Stats,
    bar: ProgressBar,
    /// (time, lines out) when the shown rate was last measured.
    rate_mark: (Nanos, u64),
    /// Lines per second over the last measured span, for the progress
    /// line (`None` before a second of writes was measured).
    shown_rate: Option<f64>,
    /// The input's size in bytes, when it is known (files, not a pipe),
    /// and the bytes of the lines done so far: the progress line's ETA.
    input_size: Option<u64>,
    pub(super) bytes_done: u64,
    /// `--journal`: the records (and their bytes) done in earlier runs and
    /// skipped in this one.
    pub(super) journal_skipped: Option<u64>,
    pub(super) bytes_skipped: u64,
}

impl Tally {
    /// No counts yet; the progress line shows when `progress`.
    pub(super) fn new(progress: bool, input_size: Option<u64>) -> Tally {
        Tally {
            stats: Stats::new(),
            bar: crate::progress::status_line(progress),
            rate_mark: (Nanos::ZERO, 0),
            shown_rate: None,
            input_size,
            bytes_done: 0,
            journal_skipped: None,
            bytes_skipped: 0,
        }
    }

    /// The time left at the pace so far, when the input's size is known.
    fn eta(&self, now: Nanos) -> String {
        let (Some(total), done) = (self.input_size, self.bytes_done + self.bytes_skipped) else {
            return String::new();
        };
        if done == 0 || done >= total {
            return String::new();
        }
        // Display only: a float is fine here.
        let left = now.0 as f64 * (total - done) as f64 / done as f64;
        let secs = std::time::Duration::from_secs((left / 1e9).round() as u64);
        format!(", ETA {}", humantime::format_duration(secs))
    }

    /// Redraws the progress line (indicatif limits the redraw rate), with
    /// `waiting` lines in the schedule and what the run adds (`more`: the
    /// commands, the adaptive rate).
    pub(super) fn update(&mut self, clock: &MonotonicClock, waiting: usize, more: &str) {
        if self.bar.is_hidden() {
            return;
        }
        let now = clock.now();
        let (at, out) = self.rate_mark;
        let span = now.saturating_sub(at);
        if span >= Nanos::from_secs(1) {
            // Display only: a float is fine here.
            self.shown_rate = Some((self.stats.lines_out - out) as f64 * 1e9 / span.0 as f64);
            self.rate_mark = (now, self.stats.lines_out);
        }
        let rate = self
            .shown_rate
            .map_or("-/s".to_string(), |r| format!("{r:.1}/s"));
        self.bar.set_message(format!(
            "{} sent, {} dropped, {waiting} waiting, {rate}{more}{}",
            self.stats.lines_out,
            self.stats.dropped,
            self.eta(now)
        ));
        self.bar.tick();
    }

    /// Whether the progress line is drawn.
    pub(super) fn shown(&self) -> bool {
        !self.bar.is_hidden()
    }

    /// Clears the progress line at the end of the run.
    pub(super) fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// One line of counts, like `dd`'s on SIGUSR1: `lines_in` read,
    /// `waiting` not yet written, the schedule moved back by `slip`.
    pub(super) fn line(&self, now: Nanos, target: &str, slip: Nanos, counts: Counts) -> String {
        let s = self
            .stats
            .summary(now, target.to_string(), Ending::Eof, slip);
        let rate = s
            .rate_per_s
            .map_or("-".to_string(), |r| format!("{r:.3}/s"));
        let paused = if counts.paused { ", paused" } else { "" };
        let Counts {
            lines_in, waiting, ..
        } = counts;
        format!(
            "drip pace: {lines_in} in, {} out, {} dropped, {waiting} waiting; {rate} over {:.3}s; wait p50 {:.3}ms, p99 {:.3}ms, max {:.3}ms{paused}\n",
            s.lines_out, s.dropped, s.elapsed_s, s.wait.p50, s.wait.p99, s.wait.max,
        )
    }
}

/// What the stats line says beyond the tally: lines read, lines waiting,
/// and whether a pause is in force.
#[derive(Clone, Copy)]
pub(super) struct Counts {
    pub(super) lines_in: u64,
    pub(super) waiting: usize,
    pub(super) paused: bool,
}
