//! Command-line surface: clap derive types and value parsers, no logic.
//! Each driver turns its arguments into its own configuration once.

use crate::rate::{Rate, parse_duration, parse_rate};
use crate::time::Nanos;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

use crate::ingest::input::{
    ColSel, InputSpec, input_format, parse_delimiter, parse_time_column, parse_time_format,
};
pub use crate::ingest::log::InputFormat;
use crate::ingest::log::key::KeyShape;
use anyhow::{Result, anyhow, bail};

/// Pace traffic and audit rate limits, exactly.
#[derive(Debug, Parser)]
#[command(name = "drip", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per run: the size difference between variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Release stdin lines to stdout at a fixed rate, evenly spaced.
    Pace(PaceArgs),
    /// Replay timestamped request logs through rate-limit policies.
    Audit(AuditArgs),
    /// Wait for one slot of a shared schedule, then exit 0 or run a command.
    Gate(GateArgs),
    /// Find the smallest limit that real traffic needs, from its log.
    Size(SizeArgs),
    /// Print a shell completion script to stdout.
    Completions(CompletionsArgs),
}

#[derive(Debug, Args)]
pub struct GateArgs {
    /// Slots per period, as every process sharing the schedule gives it: 5/s, 300/min.
    #[arg(long, short, value_parser = rate_arg)]
    pub rate: Rate,
    /// Slots that may be reserved ahead, as the schedule's pacers give it (default 0).
    #[arg(long, short, default_value_t = 0, value_name = "N")]
    pub burst: u64,
    /// Exit 3 at once when the wait for a slot would be longer than this.
    #[arg(long, value_parser = duration_arg, value_name = "DUR")]
    pub max_wait: Option<Nanos>,
    /// Say how long the gate waited, in seconds: on stdout, or on stderr
    /// when a command runs.
    #[arg(long)]
    pub print_wait: bool,
    #[command(flatten)]
    pub share: ShareArgs,
    /// The command to run when the slot comes (after '--'); its exit status
    /// is the gate's.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

fn rate_arg(s: &str) -> Result<Rate, String> {
    parse_rate(s).map_err(|e| e.to_string())
}

fn duration_arg(s: &str) -> Result<Nanos, String> {
    parse_duration(s)
}

/// `--max-wait` of `size`: a bound, or `none` (no wait target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitCap {
    At(Nanos),
    Lifted,
}

fn wait_cap_arg(s: &str) -> Result<WaitCap, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(WaitCap::Lifted);
    }
    parse_duration(s).map(WaitCap::At)
}

fn positive_duration_arg(s: &str) -> Result<Nanos, String> {
    match parse_duration(s)? {
        Nanos::ZERO => Err(format!("'{s}' is zero; give a length such as 1s or 1m")),
        d => Ok(d),
    }
}

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
    /// Share one schedule with other drip processes: a state file on this
    /// host (PATH), or redis://[user:pass@]host[:port][/db][#NAME] across
    /// hosts (also rediss://, redis+unix:///path.sock). Default: the
    /// environment's DRIP_SHARE (empty counts as unset); 'none' shares
    /// nothing, whatever DRIP_SHARE says.
    #[arg(long, value_name = "PATH|URL|none")]
    pub share: Option<std::ffi::OsString>,
    /// The schedule's name in Redis (the key is drip:{NAME}). Default: the
    /// environment's DRIP_SHARE_KEY. Without --share: this user's schedule
    /// NAME on this host (a state file under $XDG_RUNTIME_DIR or a private
    /// folder in the temporary folder).
    #[arg(long, value_name = "NAME")]
    pub share_key: Option<String>,
    /// When the shared schedule cannot be reached: wait, fail, or local.
    #[arg(long, value_enum, default_value_t = OnShareError::Wait)]
    pub on_share_error: OnShareError,
    /// Under --on-share-error wait, give up after this long unreachable (0: never).
    #[arg(long, value_parser = duration_arg, default_value = "30s", value_name = "DUR")]
    pub share_timeout: Nanos,
    /// Under --on-share-error local, this process's own rate meanwhile.
    #[arg(long, value_parser = rate_arg, value_name = "RATE")]
    pub fallback_rate: Option<Rate>,
    /// Use a state file on a network filesystem (NFS, SMB) anyway, with a warning.
    #[arg(long)]
    pub share_allow_network_fs: bool,
}

/// Summary format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatsFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct PaceArgs {
    /// Files to read in order, as cat does ('-' is stdin; none: stdin).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Lines per period: 5/s, 300/min, 2/h, 1/200ms, 0.5/s, 10k/s, or 10 (= 10/s).
    #[arg(long, short, value_parser = rate_arg)]
    pub rate: Option<Rate>,
    /// Lines allowed to wait in the backlog (default 0: a line is read when it can go).
    #[arg(long, short, conflicts_with = "max_wait", value_name = "N")]
    pub burst: Option<u64>,
    /// Longest a line may wait instead of a --burst count (500ms, 2s, 1m).
    #[arg(long, value_parser = duration_arg, value_name = "DUR")]
    pub max_wait: Option<Nanos>,
    /// When the backlog is full: block reading, drop the line, or fail.
    #[arg(long, value_enum, default_value_t = OnFull::Block)]
    pub on_full: OnFull,
    /// Write dropped lines, and the unsent backlog when the run stops early, to FILE.
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<PathBuf>,
    /// Any audit policy spec instead of the shaper (e.g. token-bucket:rate=5/s,burst=10).
    #[arg(long, short, conflicts_with_all = ["rate", "burst", "max_wait"], value_name = "SPEC")]
    pub policy: Option<String>,
    /// Records are separated by NUL bytes instead of newlines.
    #[arg(short = '0', long = "null")]
    pub null: bool,
    /// Prefix each released line with its release time and a tab.
    #[arg(long, value_enum)]
    pub stamp: Option<Stamp>,
    /// Print a summary to stderr at exit (text or json).
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "text")]
    pub stats: Option<StatsFormat>,
    /// Show a progress line on stderr (default when stderr is a terminal).
    #[arg(long, overrides_with = "no_progress")]
    pub progress: bool,
    /// Never show a progress line.
    #[arg(long)]
    pub no_progress: bool,
    /// After a stall, send late lines at once to restore the long-run schedule
    /// (default: the schedule moves, and lines resume at the rate).
    #[arg(long)]
    pub catch_up: bool,
    /// Pace each key separately; the key is REGEX's first capture group (or its
    /// whole match), e.g. '^https?://([^/:]+)'. Members with key=none stay global.
    #[arg(long, value_name = "REGEX", conflicts_with = "key_field")]
    pub key: Option<String>,
    /// Pace each key separately; the key is field N (1 is the first), split by --field-sep.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub key_field: Option<u64>,
    /// Pace each key separately; the key is the value at PATH (dotted:
    /// request.customer) of each JSON line, whatever its spacing and key order.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["key", "key_field"])]
    pub key_json: Option<String>,
    /// The separator for --key-field: one character, or 'tab' (default: runs of spaces and tabs).
    #[arg(long, value_name = "C", requires = "key_field")]
    pub field_sep: Option<String>,
    /// With a key: lines leave in input order, each waiting for the lines ahead of it
    /// (default: in order of release, so a line for an idle key overtakes a busy key's).
    #[arg(long)]
    pub keep_order: bool,
    /// With a key: the most lines held at once across keys, waiting or scheduled;
    /// at the bound reading stops (--on-full block) or --on-full applies.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub max_pending: usize,
    #[command(flatten)]
    pub share: ShareArgs,
    /// Read live commands from the FIFO at PATH (created if absent): pause DUR,
    /// pause, resume, rate R, burst N, stats.
    #[arg(long, value_name = "PATH")]
    pub control: Option<PathBuf>,
    #[command(flatten)]
    pub replay: ReplayArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `pace -- COMMAND`: one command started per record at its slot.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// With a command: at most N commands run at once; at the cap the
    /// schedule waits, then moves on without a burst (default 64).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..), requires = "command")]
    pub jobs: u64,
    /// With a command: prefix each line it prints with its record and a tab.
    #[arg(long, requires = "command")]
    pub tag: bool,
    /// With a command: write each record whose command failed (after its
    /// retries) to FILE, as it came; a rerun on FILE retries only those.
    #[arg(long, value_name = "FILE", requires = "command")]
    pub failed: Option<PathBuf>,
    /// With a command: run a failed command again up to N times, each in a
    /// slot of its own after a backoff (--retry-delay, doubled each time).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "command")]
    pub retry: u32,
    /// The exit statuses that are retried, e.g. 75 or 1-125,137 (default: any failure).
    #[arg(long, value_name = "CODES", requires = "retry", value_parser = codes_arg)]
    pub retry_on: Option<Codes>,
    /// The backoff before the first retry; each further retry waits twice as long.
    #[arg(long, value_name = "DUR", value_parser = duration_arg, default_value = "1s", requires = "retry")]
    pub retry_delay: Nanos,
    /// With a command: an exit status meaning "rate limited" (a wrapper turns
    /// HTTP 429 into it): it pauses the whole schedule for --pause-for.
    #[arg(long, value_name = "CODES", value_parser = codes_arg, requires = "command")]
    pub pause_on: Option<Codes>,
    /// How long --pause-on pauses the schedule.
    #[arg(long, value_name = "DUR", value_parser = positive_duration_arg, default_value = "10s", requires = "pause_on")]
    pub pause_for: Nanos,
    /// The command started for each record (after '--'): '{}' in its
    /// arguments is replaced by the record, else the record is its last
    /// argument. Run directly, never through a shell.
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
    /// Release each line at its logged time's offset from the first line's
    /// (divided by --speed), instead of at a rate.
    #[arg(long, conflicts_with_all = ["rate", "policy", "burst", "max_wait", "key", "key_field", "key_json", "keep_order", "null", "catch_up"])]
    pub replay: bool,
    /// Replay this many times faster (10, 1000, 0.5).
    #[arg(long, default_value = "1", value_name = "X", requires = "replay")]
    pub speed: String,
    /// Never wait longer than DUR between two lines (real time); the time cut
    /// out is cut from everything after.
    #[arg(long, value_parser = positive_duration_arg, value_name = "DUR", requires = "replay")]
    pub max_gap: Option<Nanos>,
    /// The timestamp column: header name, 0-based index, or field name
    /// (default: ts, time, timestamp, ...); DATE,TIME joins two with a space.
    #[arg(long, value_name = "NAME|INDEX", requires = "replay")]
    pub time_column: Option<String>,
    /// auto, rfc3339, epoch-s, epoch-ms, epoch-us, epoch-ns, clf, or a strftime pattern.
    #[arg(
        long,
        default_value = "auto",
        value_name = "FORMAT",
        requires = "replay"
    )]
    pub time_format: String,
    /// How lines are written (default: detected from the first lines; a byte
    /// order mark and blank lines are skipped).
    #[arg(long, value_enum, default_value_t = InputFormat::Auto, value_name = "FORMAT", requires = "replay")]
    pub input_format: InputFormat,
    /// An nginx log_format string or an Apache LogFormat string (told by its
    /// % directives), for --input-format nginx.
    #[arg(long, value_name = "FORMAT", requires = "replay")]
    pub log_format: Option<String>,
    /// Time zone of timestamps written without a UTC offset (Europe/Paris, UTC, +02:00).
    #[arg(long, value_name = "ZONE", requires = "replay")]
    pub tz: Option<String>,
    /// CSV field delimiter: one character, or 'tab' (default ',', or tab
    /// when the first line has tabs and no commas).
    #[arg(long, value_name = "C", requires = "replay")]
    pub delimiter: Option<String>,
    /// The first CSV line is data; name the time column by 0-based index.
    #[arg(long, requires = "replay")]
    pub no_header: bool,
    /// Sort lines at most this much out of order (log time).
    #[arg(long, value_parser = duration_arg, default_value = "5s", value_name = "DUR", requires = "replay")]
    pub reorder_window: Nanos,
    /// Not for pace: --replay reads one log from stdin, so there are no files to merge.
    #[arg(long, requires = "replay")]
    pub merge: bool,
}

/// Report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
    Markdown,
    /// One self-contained HTML file: tables and the timeline plot inline.
    Html,
}

/// Where the log comes from and how its rows are read: shared by every
/// command that reads request logs.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Logs (plain or .gz), read in order as one log; '-' or none for stdin.
    /// Each once: a file given twice is refused.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// How the lines are written (auto: from the first lines; see --log-format for
    /// nginx log_format and Apache LogFormat strings).
    #[arg(long, value_enum, default_value_t = InputFormat::Auto, value_name = "FORMAT")]
    pub input_format: InputFormat,
    /// An nginx log_format string as in nginx.conf, e.g.
    /// '$remote_addr [$time_local] "$request" $status $request_time', or an Apache
    /// LogFormat string, e.g. '%h %l %u %t "%r" %>s %b %D' (%D is request_time_us);
    /// implies --input-format nginx.
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// A request's duration (seconds, e.g. request_time; ms or µs when its name
    /// ends in _ms, _us or _micros), subtracted from the time column's completion
    /// time to replay arrival times.
    #[arg(long, value_name = "NAME|INDEX")]
    pub duration_column: Option<String>,
    /// The timestamp column: header name or 0-based index (default: ts, time, timestamp, ...);
    /// DATE,TIME joins a date and a time column with a space.
    #[arg(long, value_name = "NAME|INDEX")]
    pub time_column: Option<String>,
    /// auto, rfc3339, epoch-s, epoch-ms, epoch-us, epoch-ns, clf, or a strftime pattern.
    #[arg(long, default_value = "auto", value_name = "FORMAT")]
    pub time_format: String,
    /// The key column (one bucket per key); without it, one global bucket.
    /// A,B joins several columns into one key (a route and a client).
    #[arg(long, value_name = "NAME|INDEX")]
    pub key_column: Option<String>,
    /// Count addresses in keys by network: IPv4 by /V4, IPv6 by /V6 (e.g. 24,64).
    #[arg(long, value_name = "V4[,V6]")]
    pub key_prefix: Option<String>,
    /// The cost column (a positive whole number per row; default 1).
    #[arg(long, value_name = "NAME|INDEX")]
    pub cost_column: Option<String>,
    /// Field delimiter: one character, or 'tab' (default: ',', or tab for .tsv files
    /// and when the first line has tabs and no commas).
    #[arg(long, short, value_name = "C")]
    pub delimiter: Option<String>,
    /// Time zone of timestamps written without a UTC offset: an IANA name
    /// (Europe/Paris), UTC, or an offset (+02:00). Default: UTC, with a note.
    #[arg(long, value_name = "ZONE")]
    pub tz: Option<String>,
    /// Key values `host:port` or `[v6]:port` (ALB, HAProxy, Envoy) count without the port.
    #[arg(long)]
    pub strip_port: bool,
    /// The first row is data; name columns by 0-based index.
    #[arg(long)]
    pub no_header: bool,
    /// Re-sort rows that are at most this much out of order. Default: 5s for
    /// CSV; 60s for access-log lines (combined, common, nginx, ALB, W3C, JSON
    /// lines, ...), which are written when a request completes and so come
    /// late by up to its duration (60s: the default request timeouts of
    /// Apache, nginx and AWS load balancers). A row later than the window
    /// stops the run with the window the whole log needs.
    #[arg(long, value_parser = duration_arg, value_name = "DUR")]
    pub reorder_window: Option<Nanos>,
    /// The files cover the same period (one per server): read each in time
    /// order, within --reorder-window, and merge them by time into one log
    /// (ties: file order, then line order), instead of one after another.
    #[arg(long)]
    pub merge: bool,
    /// Skip and count rows that cannot be read instead of failing.
    #[arg(long)]
    pub skip_bad: bool,
    /// The longest line read: a longer one (a file without line ends,
    /// binary data) is never held in memory. A CSV line stops the run with
    /// its line number; an access-log line is a bad line, which --skip-bad
    /// skips and counts. Bytes, or K, M, G (powers of 1024).
    #[arg(long, default_value = "1M", value_name = "SIZE")]
    pub max_line: String,
}

/// Whether a command that reads logs shows its progress bar.
#[derive(Debug, Args)]
pub struct ProgressArgs {
    /// Show a progress bar on stderr (default when stderr is a terminal).
    #[arg(long, overrides_with = "no_progress")]
    pub progress: bool,
    /// Never show a progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

impl ProgressArgs {
    /// The command line's say on progress, with `--quiet`.
    pub fn wanted(&self, quiet: bool) -> crate::progress::Wanted {
        crate::progress::Wanted {
            quiet,
            no_progress: self.no_progress,
            progress: self.progress,
        }
    }
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// A policy spec (repeatable): NAME[:PARAM=VALUE,...], '+' for a stack.
    #[arg(long = "policy", short = 'p', value_name = "SPEC")]
    pub policies: Vec<String>,
    /// A file of policy specs, one per line, '#' comments allowed.
    #[arg(long = "policies", value_name = "FILE")]
    pub policies_file: Option<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Report format.
    #[arg(long, short, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Add per-interval rows (arrived, sent, dropped, level) of this length.
    #[arg(long, value_parser = positive_duration_arg, value_name = "DUR")]
    pub timeline: Option<Nanos>,
    /// Draw the timeline to FILE.svg: a panel per policy, per --timeline interval
    /// (or about 200-600 intervals over the log's span).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Keys listed per policy, most drops first.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Write one CSV row per (row, policy) decision to FILE ('-': to stdout, instead of the report).
    #[arg(long, value_name = "FILE")]
    pub decisions: Option<PathBuf>,
    /// Fail (exit 1) when a policy drops more than PCT percent: PCT or LABEL=PCT.
    #[arg(long, value_name = "[LABEL=]PCT")]
    pub max_drop_rate: Vec<String>,
    /// Fail (exit 1) when a policy drops more than N requests: N or LABEL=N.
    #[arg(long, value_name = "[LABEL=]N")]
    pub max_drops: Vec<String>,
    /// Fail (exit 1) when a request waits longer than DUR: DUR or LABEL=DUR.
    #[arg(long, value_name = "[LABEL=]DUR")]
    pub max_wait: Vec<String>,
    /// An nginx.conf to audit as nginx applies it: its limit_req_zone,
    /// limit_req, map and location blocks, each row routed by its URI.
    /// Repeatable: each config is one policy in the report.
    #[arg(long, value_name = "FILE")]
    pub nginx_conf: Vec<PathBuf>,
    /// Send every row to this location of the config (e.g. '/api/', '= /login',
    /// '~* \.php$') instead of routing by URI.
    #[arg(long, value_name = "PATH", requires = "nginx_conf")]
    pub nginx_location: Option<String>,
    /// Read nginx variable NAME from log field FIELD (repeatable), e.g.
    /// remote_addr=client_ip or uri=path.
    #[arg(long, value_name = "NAME=FIELD", requires = "nginx_conf")]
    pub nginx_var: Vec<String>,
    /// Compare each row's emulated $limit_req_status with the one logged in FIELD.
    #[arg(long, value_name = "FIELD", requires = "nginx_conf")]
    pub verify_column: Option<String>,
    /// Stop when an include of the nginx.conf names no file (by default
    /// it is read as empty, and the report says so).
    #[arg(long, requires = "nginx_conf")]
    pub strict_includes: bool,
    /// Fail (exit 1) when a location with limit_req matched no row of the
    /// log: what was not tested is not passed.
    #[arg(long, requires = "nginx_conf")]
    pub fail_untested: bool,
    /// URIs (a regex on the path) of files that exist: `try_files … @name`
    /// serves them itself. Other rows of such a location go to @name: the
    /// log cannot say whether the file existed.
    #[arg(long = "static", value_name = "REGEX", requires = "nginx_conf")]
    pub static_files: Option<String>,
    /// Fail (exit 1) when more than PCT percent of verified rows disagree.
    #[arg(long, value_name = "PCT", default_value = "0")]
    pub max_disagree: String,
    /// Compare each policy after the first with the first, row by row: requests
    /// newly dropped and admitted, keys newly hurt and relieved.
    #[arg(long)]
    pub compare: bool,
    /// Fail (exit 1) when a policy drops requests of more than N keys (or
    /// PCT% of the keys): N, PCT% or LABEL=N.
    #[arg(long, value_name = "[LABEL=]N|PCT%")]
    pub max_keys_hurt: Vec<String>,
    /// With --compare: fail (exit 1) when a policy drops more than N rows
    /// (or PCT% of the rows) that the first policy admitted.
    #[arg(long, value_name = "[LABEL=]N|PCT%", requires = "compare")]
    pub max_newly_dropped: Vec<String>,
    /// With --compare: fail (exit 1) when more than N keys (or PCT% of the
    /// keys) see drops under a policy and none under the first.
    #[arg(long, value_name = "[LABEL=]N|PCT%", requires = "compare")]
    pub max_keys_newly_hurt: Vec<String>,
    /// Replay threads (default: one per four policies, leaving the reader a
    /// core; on two cores, two past eight policies). Policies keyed by one
    /// column are split by key across them; the report is the same for any N.
    #[arg(long, value_name = "N")]
    pub threads: Option<std::num::NonZeroUsize>,
    #[command(flatten)]
    pub progress: ProgressArgs,
    /// No progress bar and no notes on stderr; errors and threshold crossings only.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct SizeArgs {
    /// The policy with its swept parameters left out: gcra, nginx:nodelay,
    /// shaper:key=none, fixed-window:align=first-hit,count=all, sliding-log.
    #[arg(
        long = "policy",
        short = 'p',
        value_name = "SPEC",
        required_unless_present = "nginx_conf"
    )]
    pub policy: Option<String>,
    /// Size each limit_req of this nginx.conf (zone x location, routed as
    /// audit --nginx-conf routes) on the rows it sees, and print a patch
    /// that changes only rate=, burst= and the zone sizes (instead of -p).
    #[arg(long, value_name = "FILE")]
    pub nginx_conf: Option<PathBuf>,
    /// With --nginx-conf: write the patch to FILE instead of printing it;
    /// apply it with `patch -p1 < FILE` in the config's folder.
    #[arg(long, value_name = "FILE", requires = "nginx_conf")]
    pub patch: Option<PathBuf>,
    /// With --nginx-conf: read nginx variable NAME from log field FIELD.
    #[arg(long, value_name = "NAME=FIELD", requires = "nginx_conf")]
    pub nginx_var: Vec<String>,
    /// Rates to try (bucket families): a list (1/s,2/s,5/s) or a range A..B
    /// (a ladder of round values); default: the log's average rate to its busiest second.
    #[arg(long, value_name = "LIST|A..B")]
    pub rate: Option<String>,
    /// Windows to try (window families): a list (1s,10s,1m); default 1s,10s,1m,10m,1h.
    #[arg(long, value_name = "LIST")]
    pub window: Option<String>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Target: drop at most PCT percent of the requests.
    #[arg(long, value_name = "PCT")]
    pub max_drop_rate: Option<String>,
    /// Target: drop at most N requests.
    #[arg(long, value_name = "N")]
    pub max_drops: Option<u64>,
    /// Target: at most PCT% of the keys (or N keys) see any drop.
    #[arg(long, value_name = "PCT%|N")]
    pub max_keys_hurt: Option<String>,
    /// Target for policies that delay: no request waits longer than DUR
    /// (default 1s for them; `none` lifts it).
    #[arg(long, value_parser = wait_cap_arg, value_name = "DUR|none")]
    pub max_wait: Option<WaitCap>,
    /// The recommendation admits the fewest requests in any window of this length.
    #[arg(long, value_parser = positive_duration_arg, default_value = "1m", value_name = "DUR")]
    pub horizon: Nanos,
    /// Draw the frontier (recommendation marked) and the per-key need to FILE.svg.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// The config in force: audited next to the recommendation.
    #[arg(long, value_name = "SPEC")]
    pub current: Option<String>,
    /// Keys (one per line) left out of the targets; still replayed and reported.
    #[arg(long, value_name = "FILE")]
    pub exclude_keys: Option<PathBuf>,
    /// Keys listed in the per-key need table, largest need first.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub top: usize,
    /// The targets hold in every period of DUR (e.g. 1h, 1d: no hour drops
    /// more than the target), not only over the whole log.
    #[arg(long, value_parser = positive_duration_arg, value_name = "DUR")]
    pub per: Option<Nanos>,
    /// Size for the same requests arriving F times as fast (their times
    /// compressed by F around the first row), e.g. 1.5.
    #[arg(long, value_name = "F")]
    pub headroom: Option<String>,
    /// Every column, and the notes on how the sizes were found.
    #[arg(long, short)]
    pub verbose: bool,
    /// Report format.
    #[arg(long, short, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub progress: ProgressArgs,
    /// No progress bar and no notes on stderr; errors only.
    #[arg(long, short)]
    pub quiet: bool,
}

impl InputArgs {
    /// The reading options as given on the command line, checked once, with
    /// the distinct key columns the policies count by (`quiet`: no notes).
    pub fn spec(&self, key_cols: Vec<ColSel>, quiet: bool) -> Result<InputSpec> {
        let args = self;
        let delimiter = args.delimiter.as_deref().map(parse_delimiter).transpose()?;
        let time_col = args
            .time_column
            .as_deref()
            .map(parse_time_column)
            .transpose()?;
        let time_format = parse_time_format(&args.time_format)?;
        if args.merge && args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
            bail!(
                "--merge reads its files side by side, so standard input ('-') can be one of them only once; save the other stream to a file"
            );
        }
        for f in &args.files {
            if f.as_os_str() != "-" && !f.exists() {
                bail!("cannot open '{}': no such file", f.display());
            }
            if f.is_dir() {
                bail!(
                    "'{}' is a directory; give the log files in it (e.g. '{}'/*.csv.gz)",
                    f.display(),
                    f.display()
                );
            }
        }
        let input_format = input_format(args.input_format, args.log_format.as_deref())?;
        Ok(InputSpec {
            files: args.files.clone(),
            duration_col: args.duration_column.as_deref().map(ColSel::parse),
            input_format,
            log_format: args.log_format.clone(),
            time_col,
            time_format,
            key_cols,
            cost_col: args.cost_column.as_deref().map(ColSel::parse),
            delimiter,
            no_header: args.no_header,
            key_shape: KeyShape {
                strip_port: args.strip_port,
                prefix: args
                    .key_prefix
                    .as_deref()
                    .map(crate::ingest::log::key::parse_prefix)
                    .transpose()
                    .map_err(|e| anyhow!(e))?,
            },
            zone: args
                .tz
                .as_deref()
                .map(crate::ingest::timestamp::Zone::parse)
                .transpose()
                .map_err(|e| anyhow!("--tz: {e}"))?,
            tolerance: crate::ingest::input::Tolerance {
                skip_bad: args.skip_bad,
                max_line: crate::ingest::input::parse_max_line(&args.max_line)?,
            },
            quiet,
            merge: args.merge,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
