//! The `--stats` summary: counts, elapsed time, achieved rate and waits.
//!
//! Every line read is in exactly one of `out`, `dropped` (refused, written
//! to `--rejects` when given) or `unsent` (read but not written when the run
//! stopped: downstream closed, a signal, `--on-full fail`), so
//! `lines_in = lines_out + dropped + unsent`. A wait is the time from a
//! line's arrival to its write, kept in nanoseconds by the one wait tally
//! audit uses too: p50 and p99 are nearest-rank percentiles, exact up to a
//! million delayed lines and within 0.1% above past that.

use super::keys::KeySummary;
use crate::time::Nanos;
use crate::wait_stats::WaitStats;
use serde::Serialize;

/// Why the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ending {
    /// Input ended and the backlog was sent.
    Eof,
    /// Downstream closed the pipe.
    BrokenPipe,
    Sigint,
    Sigterm,
    /// `--on-full fail` and the backlog was full.
    Full,
    /// The shared schedule could not be reached (`--on-share-error`).
    ShareError,
    /// SIGHUP (the terminal or session went away): as SIGTERM.
    Sighup,
    /// Standard output could not be written (a full disk, `/dev/full`).
    WriteError,
    /// Standard input could not be read.
    ReadError,
    /// The `--rejects` file could not be written: input was read no
    /// further and what was admitted was sent.
    RejectsError,
    /// A command after `--` could not be started.
    CommandError,
}

/// Counters and the wait histogram of one run.
pub struct Stats {
    pub lines_in: u64,
    pub lines_out: u64,
    pub dropped: u64,
    pub unsent: u64,
    /// Bytes of the first unsent line that reached stdout before the run
    /// stopped (a write cut inside it); that line is counted as unsent.
    pub partial_bytes: u64,
    /// Real time of the first and last write, ns.
    first_write: Option<Nanos>,
    last_write: Nanos,
    waits: WaitStats,
    /// Every record was there at the start (the inputs are files): a wait
    /// is counted from the record's slot, not from when it was read (that
    /// would be only its place in the file).
    pub from_slot: bool,
}

/// The summary as data; rendered as text or JSON.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub lines_in: u64,
    pub lines_out: u64,
    pub dropped: u64,
    pub unsent: u64,
    /// See [`Stats::partial_bytes`].
    pub partial_bytes: u64,
    pub elapsed_s: f64,
    /// Lines per second between the first and the last write.
    pub rate_per_s: Option<f64>,
    pub target: String,
    /// The waits from arrival to write (or, `wait_from` "slot", from each
    /// record's slot: its lateness).
    #[serde(flatten)]
    pub wait: WaitsMs,
    /// "slot" when the inputs were files, all there at the start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_from: Option<&'static str>,
    pub ended: Ending,
    /// Total time the schedule was moved back after stalls, ms.
    pub rebased_ms: f64,
    /// Total time held by `pause` commands, ms.
    pub paused_ms: f64,
    /// Pauses started (by control lines or `--pause-on`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pauses: Option<u64>,
    /// With `--adaptive`: the throttles that cut the rate, and the rate at
    /// the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveSummary>,
    /// Per-key pacing: keys seen and the busiest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeySummary>,
    /// With `--share`: the schedule's reservations, refusals and errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<crate::pace::share::ShareSummary>,
    /// With a command after `--`: the commands' counts and durations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<super::jobs::JobCounts>,
    /// With `--journal`: records done in an earlier run, skipped (not in
    /// `lines_in`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal_skipped: Option<u64>,
}

/// What `--adaptive` did.
#[derive(Debug, Serialize)]
pub struct AdaptiveSummary {
    pub throttles: u64,
    pub rate_per_s_now: f64,
}

/// Waits from arrival to write, ms: nearest-rank p50 and p99, and the
/// longest.
#[derive(Debug, Serialize)]
pub struct WaitsMs {
    #[serde(rename = "wait_p50_ms")]
    pub p50: f64,
    #[serde(rename = "wait_p99_ms")]
    pub p99: f64,
    #[serde(rename = "wait_max_ms")]
    pub max: f64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            lines_in: 0,
            lines_out: 0,
            dropped: 0,
            unsent: 0,
            partial_bytes: 0,
            first_write: None,
            last_write: Nanos::ZERO,
            waits: WaitStats::new(),
            from_slot: false,
        }
    }

    /// Records one written line (or started command): when it arrived,
    /// its slot (real time) and when it went out.
    pub fn sent(&mut self, arrived: Nanos, slot: Nanos, at: Nanos) {
        self.lines_out += 1;
        self.first_write.get_or_insert(at);
        self.last_write = at;
        let from = if self.from_slot { slot } else { arrived };
        self.waits.record(at.saturating_sub(from).0);
    }

    /// The summary at real instant `now`.
    pub fn summary(&self, now: Nanos, target: String, ended: Ending, rebased: Nanos) -> Summary {
        let ms = |ns: u64| ns as f64 / 1e6;
        // Sorting needs its own copy: a summary may come mid-run.
        let waits = self.waits.clone().percentiles();
        let rate_per_s = match self.first_write {
            Some(first) if self.lines_out > 1 && self.last_write > first => {
                Some((self.lines_out - 1) as f64 * 1e9 / (self.last_write.0 - first.0) as f64)
            }
            _ => None,
        };
        Summary {
            lines_in: self.lines_in,
            lines_out: self.lines_out,
            dropped: self.dropped,
            unsent: self.unsent,
            partial_bytes: self.partial_bytes,
            elapsed_s: now.0 as f64 / 1e9,
            rate_per_s,
            target,
            wait: WaitsMs {
                p50: ms(waits.p50),
                p99: ms(waits.p99),
                max: ms(waits.max),
            },
            wait_from: self.from_slot.then_some("slot"),
            ended,
            rebased_ms: rebased.0 as f64 / 1e6,
            paused_ms: 0.0,
            pauses: None,
            adaptive: None,
            keys: None,
            share: None,
            commands: None,
            journal_skipped: None,
        }
    }
}

impl Summary {
    /// The text form: a few aligned lines for people.
    pub fn to_text(&self) -> String {
        let rate = self
            .rate_per_s
            .map_or("-".to_string(), |r| format!("{r:.3}/s"));
        let ended = match self.ended {
            Ending::Eof => "end of input",
            Ending::BrokenPipe => "downstream closed",
            Ending::Sigint => "interrupted (SIGINT)",
            Ending::Sigterm => "terminated (SIGTERM)",
            Ending::Full => "backlog full (--on-full fail)",
            Ending::ShareError => "shared schedule unreachable",
            Ending::Sighup => "hung up (SIGHUP)",
            Ending::WriteError => "standard output could not be written",
            Ending::ReadError => "standard input could not be read",
            Ending::RejectsError => "the rejects file could not be written",
            Ending::CommandError => "a command could not be started",
        };
        let partial = if self.partial_bytes > 0 {
            format!(
                " ({} bytes of the first unsent line reached stdout)",
                self.partial_bytes
            )
        } else {
            String::new()
        };
        let keys = self
            .keys
            .as_ref()
            .map_or(String::new(), KeySummary::to_text);
        let share = self.share.as_ref().map_or(String::new(), |s| {
            format!(
                "  share    {}: {} reservations, {} refusals, {} errors, {} local fallback ({} refused)\n",
                s.schedule,
                s.reservations,
                s.refusals,
                s.errors,
                s.fallback_grants,
                s.fallback_refusals
            )
        });
        let commands = self.commands.as_ref().map_or(String::new(), |c| {
            format!(
                "  commands started {}, succeeded {}, failed {}, retried {}, running at the stop {}; duration p50 {:.3}ms, p99 {:.3}ms\n",
                c.started,
                c.succeeded,
                c.failed,
                c.retried,
                c.running_at_stop,
                c.duration_p50_ms,
                c.duration_p99_ms
            )
        });
        let adaptive = self.adaptive.as_ref().map_or(String::new(), |a| {
            format!(
                "  adaptive {} throttle(s) cut the rate; {:.3}/s at the end\n",
                a.throttles, a.rate_per_s_now
            )
        });
        let journal = self.journal_skipped.map_or(String::new(), |n| {
            format!("  journal  {n} record(s) skipped, done in an earlier run\n")
        });
        let (wait_word, wait_note) = match self.wait_from {
            Some(_) => (
                "late    ",
                " (behind each record's slot: the files were all there at the start)",
            ),
            None => ("wait    ", ""),
        };
        format!(
            "drip pace: {ended}\n  lines    in {}, out {}, dropped {}, unsent {}{partial}\n  elapsed  {:.3}s\n  rate     {rate} (target {})\n  {wait_word} p50 {:.3}ms, p99 {:.3}ms, max {:.3}ms{wait_note}\n{keys}{share}{commands}{adaptive}{journal}",
            self.lines_in,
            self.lines_out,
            self.dropped,
            self.unsent,
            self.elapsed_s,
            self.target,
            self.wait.p50,
            self.wait.p99,
            self.wait.max,
        )
    }

    pub fn to_json(&self) -> String {
        let mut s =
            serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_counts_rate_and_waits() {
        let mut s = Stats::new();
        s.lines_in = 5;
        s.dropped = 1;
        s.unsent = 1;
        // Three lines, 500 ms apart, waiting 0, 10 and 20 ms.
        for k in 0..3u64 {
            let at = Nanos(k * 500_000_000);
            s.sent(Nanos(at.0 - k * 10_000_000), at, at);
        }
        let sum = s.summary(Nanos(2_000_000_000), "2/s".into(), Ending::Eof, Nanos::ZERO);
        assert_eq!(sum.lines_out, 3);
        assert_eq!(sum.rate_per_s, Some(2.0));
        // Nearest rank of three: p50 is the 2nd wait, p99 the 3rd, exactly.
        assert_eq!(sum.wait.p50, 10.0, "{sum:?}");
        assert_eq!(sum.wait.p99, 20.0, "{sum:?}");
        assert_eq!(sum.wait.max, 20.0);
        let v: serde_json::Value = serde_json::from_str(&sum.to_json()).unwrap();
        assert_eq!(v["ended"], "eof");
        assert_eq!(v["lines_in"], 5);
        assert!(sum.to_text().contains("in 5, out 3, dropped 1, unsent 1"));
    }

    #[test]
    fn the_json_summary_keeps_its_fields_and_order() {
        let mut s = Stats::new();
        s.lines_in = 2;
        s.sent(Nanos(0), Nanos(0), Nanos(1_500_000));
        s.sent(Nanos(0), Nanos(0), Nanos(500_000_000));
        let mut sum = s.summary(
            Nanos(2_000_000_000),
            "2/s".into(),
            Ending::Eof,
            Nanos(3_000_000),
        );
        sum.paused_ms = 1.5;
        let want = r#"{"lines_in":2,"lines_out":2,"dropped":0,"unsent":0,"partial_bytes":0,"elapsed_s":2.0,"rate_per_s":2.0060180541624875,"target":"2/s","wait_p50_ms":1.5,"wait_p99_ms":500.0,"wait_max_ms":500.0,"ended":"eof","rebased_ms":3.0,"paused_ms":1.5}"#;
        assert_eq!(sum.to_json(), format!("{want}\n"));
    }

    #[test]
    fn no_rate_without_two_writes() {
        let s = Stats::new();
        let sum = s.summary(Nanos(1), "1/s".into(), Ending::Sigint, Nanos::ZERO);
        assert_eq!(sum.rate_per_s, None);
        assert_eq!(sum.wait.max, 0.0);
    }
}
