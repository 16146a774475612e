//! `drip pace`'s arguments: the policy and backlog, the schedule's
//! lateness, the commands run per record, sharing and replay.

use super::*;

/// What `pace` does with a line that does not fit in the backlog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnFull {
    /// Stop reading until there is room: the upstream writer blocks.
    Block,
    /// Refuse the line, count it, and write it to --rejects if given.
    Drop,
    /// Exit with status 3.
    Fail,
}

/// Prefix for each released line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Stamp {
    /// RFC 3339 UTC with microseconds: 2026-11-29T18:00:00.000123Z
    Rfc3339,
    /// Unix epoch seconds with microseconds: 1795975200.000123
    Epoch,
    /// RFC 9110 IMF-fixdate, as an HTTP Date header: Sun, 29 Nov 2026 18:00:00 GMT
    HttpDate,
}

/// What a process does when the shared schedule cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnShareError {
    /// Send nothing until it answers again, up to --share-timeout (fail closed).
    Wait,
    /// Exit at once; lines read and not written are reported unsent.
    Fail,
    /// Fall back to an in-process schedule at --fallback-rate until it
    /// answers (fail open: N processes then send up to N × that rate).
    Local,
}

/// Sharing one schedule between processes (pace and gate).
#[derive(Debug, Args)]
pub struct ShareArgs {
    /// Share via a state file or redis://HOST/0.
    ///
    /// A state file on this host (PATH), or
    /// redis://[user:pass@]host[:port][/db][#NAME] across hosts (also rediss://,
    /// redis+unix:///path.sock). Default: the environment's DRIP_SHARE (empty
    /// counts as unset); 'none' shares nothing, whatever DRIP_SHARE says.
    #[arg(long, value_name = "PATH|URL|none", help_heading = SHARING)]
    pub share: Option<std::ffi::OsString>,
    /// The shared schedule's name.
    ///
    /// The schedule's name in Redis (the key is drip:{NAME}). Default: the
    /// environment's DRIP_SHARE_KEY. Without --share: this user's schedule
    /// NAME on this host (a state file under $XDG_RUNTIME_DIR or a private
    /// folder in the temporary folder).
    #[arg(long, value_name = "NAME", help_heading = SHARING)]
    pub share_key: Option<String>,
    /// When the shared schedule cannot be reached: wait, fail, or local.
    #[arg(long, value_enum, default_value_t = OnShareError::Wait, help_heading = SHARING, hide_short_help = true)]
    pub on_share_error: OnShareError,
    /// Under --on-share-error wait, give up after this long unreachable (0: never).
    #[arg(long, value_parser = duration_arg, default_value = "30s", value_name = "DUR",
          help_heading = SHARING, hide_short_help = true)]
    pub share_timeout: Nanos,
    /// Under --on-share-error local, this process's own rate meanwhile.
    #[arg(long, value_parser = rate_arg, value_name = "RATE", help_heading = SHARING, hide_short_help = true)]
    pub fallback_rate: Option<Rate>,
    /// Use a state file on a network filesystem (NFS, SMB) anyway, with a warning.
    #[arg(long, help_heading = SHARING, hide_short_help = true)]
    pub share_allow_network_fs: bool,
}

/// Summary format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatsFormat {
    Text,
    Json,
}

/// What a record that leaves late does to the schedule (see the module
/// doc of `pace::schedule`); `--lateness`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Lateness {
    /// The schedule moves by any lateness: no window ever holds more than
    /// the policy allows in it.
    Strict,
    /// Hiccups are made up (half an interval apart at least), stalls move
    /// the schedule: the long-run rate stays exact.
    Average,
    /// Late records leave at once: the long-run schedule is restored.
    CatchUp,
}

#[derive(Debug, Args)]
pub struct PaceArgs {
    /// Files to read in order, as cat does ('-' is stdin; none: stdin).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Lines per period: 5/s, 300/min, 1/200ms, 10 (= 10/s).
    ///
    /// Also 2/h, 0.5/s, 10k/s: any count over any length.
    #[arg(long, short, value_parser = rate_arg, help_heading = POLICIES)]
    pub rate: Option<Rate>,
    /// Lines allowed to wait in the backlog (default 0).
    ///
    /// With 0, a line is read when it can go.
    #[arg(long, short, conflicts_with = "max_wait", value_name = "N", help_heading = POLICIES)]
    pub burst: Option<u64>,
    /// Longest a line may wait instead of a --burst count (500ms, 2s, 1m).
    #[arg(long, value_parser = duration_arg, value_name = "DUR", help_heading = POLICIES, hide_short_help = true)]
    pub max_wait: Option<Nanos>,
    /// Any audit policy spec instead of the shaper.
    ///
    /// For example token-bucket:rate=5/s,burst=10.
    #[arg(long, short, conflicts_with_all = ["rate", "burst", "max_wait"], value_name = "SPEC",
          help_heading = POLICIES)]
    pub policy: Option<String>,
    /// When the backlog is full: block reading, drop the line, or fail.
    #[arg(long, value_enum, default_value_t = OnFull::Block, help_heading = POLICIES,
          hide_short_help = true)]
    pub on_full: OnFull,
    /// What a late line or start does to the schedule.
    ///
    /// strict: the schedule moves by any lateness, so no window ever holds
    /// more than the policy allows (the default with a command); average:
    /// hiccups are made up at half an interval apart, stalls move it, the
    /// long-run rate stays exact (the default for lines); catch-up: late
    /// lines go at once to restore the long-run schedule.
    #[arg(long, value_enum, value_name = "HOW", conflicts_with_all = ["strict", "catch_up"],
          help_heading = POLICIES, hide_short_help = true)]
    pub lateness: Option<Lateness>,
    /// Follow the API: each throttle (--throttle-on, or 'throttle' written to
    /// $DRIP_CONTROL) cuts the rate to 70 %, which then recovers toward --rate
    /// within 10 s, flat around the rate the throttle came at.
    #[arg(long, help_heading = POLICIES, hide_short_help = true)]
    pub adaptive: bool,
    /// --lateness strict: no window holds more lines than the policy allows.
    #[arg(long, conflicts_with = "catch_up", help_heading = POLICIES, hide_short_help = true)]
    pub strict: bool,
    /// --lateness catch-up: after a stall, send late lines at once to restore
    /// the long-run schedule.
    #[arg(long, help_heading = POLICIES, hide_short_help = true)]
    pub catch_up: bool,
    /// Pace per key: REGEX's first group is the key.
    ///
    /// The key is REGEX's first capture group (or its whole match), e.g.
    /// '^https?://([^/:]+)'. Members with key=none stay global.
    #[arg(long, value_name = "REGEX", conflicts_with = "key_field", help_heading = POLICIES)]
    pub key: Option<String>,
    /// Pace each key separately; the key is field N (1 is the first), split by --field-sep.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..),
          help_heading = POLICIES, hide_short_help = true)]
    pub key_field: Option<u64>,
    /// Pace per key: the JSON value at PATH (a.b).
    ///
    /// PATH is dotted (request.customer); the value is found in each JSON
    /// line whatever its spacing and key order.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["key", "key_field"], help_heading = POLICIES)]
    pub key_json: Option<String>,
    /// The separator for --key-field: one character, or 'tab' (default: runs of spaces and tabs).
    #[arg(long, value_name = "C", requires = "key_field", help_heading = POLICIES, hide_short_help = true)]
    pub field_sep: Option<String>,
    /// With a key: lines leave in input order, each waiting for the lines ahead of it
    /// (default: in order of release, so a line for an idle key overtakes a busy key's).
    #[arg(long, help_heading = POLICIES, hide_short_help = true)]
    pub keep_order: bool,
    /// With a key: the most lines held at once across keys, waiting or scheduled;
    /// at the bound reading stops (--on-full block) or --on-full applies.
    #[arg(long, value_name = "N", default_value_t = 100_000, help_heading = POLICIES,
          hide_short_help = true)]
    pub max_pending: usize,
    #[command(flatten)]
    pub run: RunArgs,
    /// Write dropped and unsent lines to FILE.
    ///
    /// The lines dropped, and the unsent backlog when the run stops early,
    /// each as it came: a rerun on FILE resumes.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub rejects: Option<PathBuf>,
    /// Print a summary on stderr: text or json.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "text", help_heading = OUTPUT, hide_possible_values = true)]
    pub stats: Option<StatsFormat>,
    /// Prefix each released line with its release time and a tab.
    #[arg(long, value_enum, help_heading = OUTPUT, hide_short_help = true)]
    pub stamp: Option<Stamp>,
    /// Show a progress line on stderr (default when stderr is a terminal).
    #[arg(long, overrides_with = "no_progress", help_heading = OUTPUT, hide_short_help = true)]
    pub progress: bool,
    /// Never show a progress line.
    #[arg(long, help_heading = OUTPUT, hide_short_help = true)]
    pub no_progress: bool,
    /// Records are separated by NUL bytes instead of newlines.
    #[arg(short = '0', long = "null", help_heading = INPUT, hide_short_help = true)]
    pub null: bool,
    #[command(flatten)]
    pub share: ShareArgs,
    #[command(flatten)]
    pub replay: ReplayArgs,
    /// Read live commands from the FIFO at PATH (created if absent): pause DUR,
    /// pause, resume, rate R, burst N, stats.
    #[arg(long, value_name = "PATH", help_heading = CONTROL, hide_short_help = true)]
    pub control: Option<PathBuf>,
    /// Keep in FILE which records are done: resume after Ctrl-C.
    ///
    /// A record is done when it was written, or its command exited 0; a rerun
    /// on the same input with the same FILE skips those.
    #[arg(long, value_name = "FILE", help_heading = CONTROL, hide_short_help = true)]
    pub journal: Option<PathBuf>,
}

/// `pace -- COMMAND`: one command started per record at its slot.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// With a command: at most N at once.
    ///
    /// At the cap the schedule waits, then moves on without a burst.
    #[arg(long, short = 'j', value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..), requires = "command", help_heading = COMMANDS)]
    pub jobs: u64,
    /// With a command: prefix each line it prints with its record and a tab.
    #[arg(long, requires = "command", help_heading = COMMANDS, hide_short_help = true)]
    pub tag: bool,
    /// With a command: write the records that failed to FILE.
    ///
    /// Each record whose command failed (after its retries), as it came; a
    /// rerun on FILE retries only those.
    #[arg(long, value_name = "FILE", requires = "command", help_heading = COMMANDS)]
    pub failed: Option<PathBuf>,
    /// With a command: run a failed command again up to N times, each in a
    /// slot of its own after a backoff (--retry-delay, doubled each time).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "command", help_heading = COMMANDS, hide_short_help = true)]
    pub retry: u32,
    /// The exit statuses that are retried, e.g. 75 or 1-125,137 (default: any failure).
    #[arg(long, value_name = "CODES", requires = "retry", value_parser = codes_arg, help_heading = COMMANDS, hide_short_help = true)]
    pub retry_on: Option<Codes>,
    /// The backoff before the first retry; each further retry waits twice as long.
    #[arg(long, value_name = "DUR", value_parser = duration_arg, default_value = "1s", requires = "retry", help_heading = COMMANDS, hide_short_help = true)]
    pub retry_delay: Nanos,
    /// With a command: an exit status meaning "rate limited" (a wrapper turns
    /// HTTP 429 into it): it pauses the whole schedule for --pause-for.
    #[arg(long, value_name = "CODES", value_parser = codes_arg, requires = "command", help_heading = COMMANDS, hide_short_help = true)]
    pub pause_on: Option<Codes>,
    /// With --adaptive: exit statuses meaning "throttled" (a wrapper's HTTP
    /// 429 or 503): each cuts the rate (from a command started after the last cut).
    #[arg(long, value_name = "CODES", value_parser = codes_arg, requires_all = ["command", "adaptive"], help_heading = COMMANDS, hide_short_help = true)]
    pub throttle_on: Option<Codes>,
    /// How long --pause-on pauses the schedule.
    #[arg(long, value_name = "DUR", value_parser = positive_duration_arg, default_value = "10s", requires = "pause_on", help_heading = COMMANDS, hide_short_help = true)]
    pub pause_for: Nanos,
    /// The command to start per record (after --).
    ///
    /// '{}' in its arguments is replaced by the record, else the record is
    /// its last argument. Run directly, never through a shell.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// A set of exit statuses: `75`, `1-125,137`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Codes(pub Vec<(i32, i32)>);

impl Codes {
    /// Whether `code` is in the set.
    pub fn contains(&self, code: i32) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&code))
    }
}

fn codes_arg(s: &str) -> Result<Codes, String> {
    let one = |t: &str| -> Result<i32, String> {
        t.trim()
            .parse::<i32>()
            .ok()
            .filter(|c| (1..=255).contains(c))
            .ok_or_else(|| format!("'{t}' is not an exit status from 1 to 255"))
    };
    s.split(',')
        .map(|part| match part.split_once('-') {
            Some((lo, hi)) => Ok((one(lo)?, one(hi)?)),
            None => one(part).map(|c| (c, c)),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Codes)
}

/// `pace --replay`: lines at their logged times. The reading options mean
/// what they mean for `audit`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Send each line at its logged time (--speed: faster).
    ///
    /// Each line leaves at its logged time's offset from the first line's
    /// (divided by --speed), instead of at a rate.
    #[arg(long, conflicts_with_all = ["rate", "policy", "burst", "max_wait", "key", "key_field", "key_json", "keep_order", "null", "catch_up"], help_heading = REPLAY, hide_short_help = true)]
    pub replay: bool,
    /// Replay this many times faster (10, 1000, 0.5).
    #[arg(long, default_value = "1", value_name = "X", requires = "replay", help_heading = REPLAY, hide_short_help = true)]
    pub speed: String,
    /// Never wait longer than DUR between two lines (real time); the time cut
    /// out is cut from everything after.
    #[arg(long, value_parser = positive_duration_arg, value_name = "DUR", requires = "replay", help_heading = REPLAY, hide_short_help = true)]
    pub max_gap: Option<Nanos>,
    /// The timestamp column: header name, 0-based index, or field name
    /// (default: ts, time, timestamp, ...); DATE,TIME joins two with a space.
    #[arg(long, value_name = "NAME|INDEX", requires = "replay", help_heading = REPLAY, hide_short_help = true)]
    pub time_column: Option<String>,
    /// auto, rfc3339, epoch-s, epoch-ms, epoch-us, epoch-ns, clf, or a strftime pattern.
    #[arg(
        long,
        default_value = "auto",
        value_name = "FORMAT",
        requires = "replay"
    , help_heading = REPLAY, hide_short_help = true)]
    pub time_format: String,
    /// How lines are written (default: detected from the first lines; a byte
    /// order mark and blank lines are skipped).
    #[arg(long, value_enum, default_value_t = LogFormat(InputFormat::Auto), value_name = "FORMAT", requires = "replay", help_heading = REPLAY, hide_short_help = true)]
    pub input_format: LogFormat,
    /// An nginx log_format string or an Apache LogFormat string (told by its
    /// % directives), for --input-format nginx.
    #[arg(long, value_name = "FORMAT", requires = "replay", help_heading = REPLAY, hide_short_help = true)]
    pub log_format: Option<String>,
    /// Time zone of timestamps written without a UTC offset (Europe/Paris, UTC, +02:00).
    #[arg(long, value_name = "ZONE", requires = "replay", help_heading = REPLAY, hide_short_help = true)]
    pub tz: Option<String>,
    /// CSV field delimiter: one character, or 'tab' (default ',', or tab
    /// when the first line has tabs and no commas).
    #[arg(long, value_name = "C", requires = "replay", help_heading = REPLAY, hide_short_help = true)]
    pub delimiter: Option<String>,
    /// The first CSV line is data; name the time column by 0-based index.
    #[arg(long, requires = "replay", help_heading = REPLAY, hide_short_help = true)]
    pub no_header: bool,
    /// Sort lines at most this much out of order (log time).
    #[arg(long, value_parser = duration_arg, default_value = "5s", value_name = "DUR", requires = "replay", help_heading = REPLAY, hide_short_help = true)]
    pub reorder_window: Nanos,
    /// Not for pace: --replay reads one log from stdin, so there are no files to merge.
    #[arg(long, requires = "replay", help_heading = REPLAY, hide_short_help = true)]
    pub merge: bool,
}
