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

mod pace;
pub use pace::*;

/// `--input-format`'s value: a log format, with the names and one-line
/// descriptions the core gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogFormat(pub InputFormat);

impl clap::ValueEnum for LogFormat {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [LogFormat; InputFormat::ALL.len()] = {
            let mut all = [LogFormat(InputFormat::Auto); InputFormat::ALL.len()];
            let mut i = 0;
            while i < all.len() {
                all[i] = LogFormat(InputFormat::ALL[i]);
                i += 1;
            }
            all
        };
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let about = self.0.about();
        Some(
            clap::builder::PossibleValue::new(self.0.name())
                .help(about.strip_suffix('.').unwrap_or(about)),
        )
    }
}

/// The headings options are grouped under in `-h`, `--help` and the man
/// pages. A new flag names one with `help_heading = heading::X` in its
/// `#[arg(...)]`; a heading's place in a command is where its first flag is.
pub mod heading {
    pub const POLICIES: &str = "Policies";
    /// The gateway configs (nginx.conf, haproxy.cfg) and their options.
    pub const GATEWAYS: &str = "Gateways";
    pub const THRESHOLDS: &str = "Thresholds";
    pub const TARGETS: &str = "Targets";
    pub const SIZING: &str = "Sizing";
    pub const COMMANDS: &str = "Commands";
    pub const OUTPUT: &str = "Output";
    pub const INPUT: &str = "Input";
    pub const SHARING: &str = "Sharing";
    pub const CONTROL: &str = "Control";
    pub const REPLAY: &str = "Replay";
}
use heading::*;

/// Pace traffic and audit rate limits, exactly.
#[derive(Debug, Parser)]
#[command(name = "drip", version, about, long_about = None, propagate_version = true,
          disable_help_subcommand = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per run: the size difference between variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Send lines on at a fixed rate, or run a command per line.
    Pace(PaceArgs),
    /// Replay timestamped request logs through rate-limit policies.
    Audit(AuditArgs),
    /// Take a slot of a shared schedule, then exit 0 or run a command.
    Gate(GateArgs),
    /// Find the smallest limit that real traffic needs, from its log.
    Size(SizeArgs),
    /// Print a shell completion script to stdout.
    Completions(CompletionsArgs),
    /// Show the manual of drip or of a command (man, else plain text).
    Help(HelpArgs),
}

#[derive(Debug, Args)]
pub struct GateArgs {
    /// Slots per period: 5/s, 300/min.
    ///
    /// As every process sharing the schedule gives it.
    #[arg(long, short, value_parser = rate_arg, help_heading = POLICIES)]
    pub rate: Rate,
    /// Slots that may be reserved ahead.
    ///
    /// As the schedule's pacers give it (default 0).
    #[arg(long, short, default_value_t = 0, value_name = "N", help_heading = POLICIES)]
    pub burst: u64,
    #[command(flatten)]
    pub share: ShareArgs,
    /// Say how long the gate waited, in seconds.
    ///
    /// On stdout, or on stderr when a command runs.
    #[arg(long, help_heading = OUTPUT)]
    pub print_wait: bool,
    /// Exit 3 at once when the wait for a slot would be longer than this.
    #[arg(long, value_parser = duration_arg, value_name = "DUR", help_heading = CONTROL)]
    pub max_wait: Option<Nanos>,
    /// The command to run at the slot (after --).
    ///
    /// Its exit status is the gate's.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct HelpArgs {
    /// The command whose manual to show (none: drip's own).
    #[arg(value_parser = ["pace", "audit", "gate", "size", "completions", "help"])]
    pub command: Option<String>,
}

fn rate_arg(s: &str) -> Result<Rate, String> {
    parse_rate(s).map_err(|e| e.to_string())
}

fn duration_arg(s: &str) -> Result<Nanos, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// `--max-wait` of `size`: a bound, or `none` (no wait target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitCap {
    At(Nanos),
    Lifted,
}

pub fn wait_cap_arg(s: &str) -> Result<WaitCap, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(WaitCap::Lifted);
    }
    parse_duration(s)
        .map(WaitCap::At)
        .map_err(|e| e.to_string())
}

/// `--max-change` of `size --nginx-conf`: the largest factor by which a
/// rate or burst may move (`None`: `none`, any).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaxChange(pub Option<f64>);

impl MaxChange {
    /// The default: 4×, either way.
    pub const DEFAULT: MaxChange = MaxChange(Some(4.0));
}

fn max_change_arg(s: &str) -> Result<MaxChange, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(MaxChange(None));
    }
    match s.trim().trim_end_matches(['x', '×']).parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 1.0 => Ok(MaxChange(Some(f))),
        _ => Err(format!(
            "'{s}' is not a factor of 1 or more; give one such as 4 (a rate or burst may move 4 times either way), or none"
        )),
    }
}

fn positive_duration_arg(s: &str) -> Result<Nanos, String> {
    match parse_duration(s).map_err(|e| e.to_string())? {
        Nanos::ZERO => Err(format!("'{s}' is zero; give a length such as 1s or 1m")),
        d => Ok(d),
    }
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
    /// Logs (plain or .gz), read as one log; none or '-': stdin.
    ///
    /// Each once: a file given twice is refused.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The key column: one bucket per key.
    ///
    /// Header name or 0-based index. Without it, one global bucket. A,B
    /// joins several columns into one key (a route and a client).
    #[arg(long, value_name = "NAME|INDEX", help_heading = POLICIES, display_order = 1)]
    pub key_column: Option<String>,
    /// How the lines are written (auto: from the first lines; see --log-format for
    /// nginx log_format and Apache LogFormat strings).
    #[arg(long, value_enum, default_value_t = LogFormat(InputFormat::Auto), value_name = "FORMAT", help_heading = INPUT, hide_short_help = true)]
    pub input_format: LogFormat,
    /// The time column (default: ts, time, ...).
    ///
    /// Header name or 0-based index; DATE,TIME joins a date and a time
    /// column with a space.
    #[arg(long, value_name = "NAME|INDEX", help_heading = INPUT)]
    pub time_column: Option<String>,
    /// An nginx log_format string as in nginx.conf, e.g.
    /// '$remote_addr [$time_local] "$request" $status $request_time', or an Apache
    /// LogFormat string, e.g. '%h %l %u %t "%r" %>s %b %D' (%D is request_time_us);
    /// implies --input-format nginx.
    #[arg(long, value_name = "FORMAT", help_heading = INPUT, hide_short_help = true)]
    pub log_format: Option<String>,
    /// The cost column (a positive whole number per row; default 1).
    #[arg(long, value_name = "NAME|INDEX", help_heading = INPUT, hide_short_help = true)]
    pub cost_column: Option<String>,
    /// A request's duration (seconds, e.g. request_time; ms or µs when its name
    /// ends in _ms, _us or _micros), subtracted from the time column's completion
    /// time to replay arrival times.
    #[arg(long, value_name = "NAME|INDEX", help_heading = INPUT, hide_short_help = true)]
    pub duration_column: Option<String>,
    /// auto, rfc3339, epoch-s, epoch-ms, epoch-us, epoch-ns, clf, or a strftime pattern.
    #[arg(long, default_value = "auto", value_name = "FORMAT", help_heading = INPUT, hide_short_help = true)]
    pub time_format: String,
    /// Time zone of timestamps written without a UTC offset: an IANA name
    /// (Europe/Paris), UTC, or an offset (+02:00). Default: UTC, with a note.
    #[arg(long, value_name = "ZONE", help_heading = INPUT, hide_short_help = true)]
    pub tz: Option<String>,
    /// Count addresses in keys by network: IPv4 by /V4, IPv6 by /V6 (e.g. 24,64).
    #[arg(long, value_name = "V4[,V6]", help_heading = INPUT, hide_short_help = true)]
    pub key_prefix: Option<String>,
    /// Key values `host:port` or `[v6]:port` (ALB, HAProxy, Envoy) count without the port.
    #[arg(long, help_heading = INPUT, hide_short_help = true)]
    pub strip_port: bool,
    /// Field delimiter: one character, or 'tab' (default: ',', or tab for .tsv files
    /// and when the first line has tabs and no commas).
    #[arg(long, short, value_name = "C", help_heading = INPUT, hide_short_help = true)]
    pub delimiter: Option<String>,
    /// The first row is data; name columns by 0-based index.
    #[arg(long, help_heading = INPUT, hide_short_help = true)]
    pub no_header: bool,
    /// Re-sort rows that are at most this much out of order. Default: 5s for
    /// CSV; 60s for access-log lines (combined, common, nginx, ALB, W3C, JSON
    /// lines, ...), which are written when a request completes and so come
    /// late by up to its duration (60s: the default request timeouts of
    /// Apache, nginx and AWS load balancers). A row later than the window
    /// stops the run with the window the whole log needs.
    #[arg(long, value_parser = duration_arg, value_name = "DUR", help_heading = INPUT, hide_short_help = true)]
    pub reorder_window: Option<Nanos>,
    /// The files cover the same period (one per server): read each in time
    /// order, within --reorder-window, and merge them by time into one log
    /// (ties: file order, then line order), instead of one after another.
    #[arg(long, help_heading = INPUT, hide_short_help = true)]
    pub merge: bool,
    /// Skip and count rows that cannot be read instead of failing.
    #[arg(long, help_heading = INPUT, hide_short_help = true)]
    pub skip_bad: bool,
    /// The longest line read: a longer one (a file without line ends,
    /// binary data) is never held in memory. A CSV line stops the run with
    /// its line number; an access-log line is a bad line, which --skip-bad
    /// skips and counts. Bytes, or K, M, G (powers of 1024).
    #[arg(long, default_value = "1M", value_name = "SIZE", help_heading = INPUT, hide_short_help = true)]
    pub max_line: String,
}

/// Whether a command that reads logs shows its progress bar.
#[derive(Debug, Args)]
pub struct ProgressArgs {
    /// Show a progress bar on stderr (default when stderr is a terminal).
    #[arg(long, overrides_with = "no_progress", help_heading = OUTPUT, hide_short_help = true)]
    pub progress: bool,
    /// Never show a progress bar.
    #[arg(long, help_heading = OUTPUT, hide_short_help = true)]
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
#[command(group(clap::ArgGroup::new("configs").args(["nginx_conf", "haproxy_cfg", "traefik_config"]).multiple(true)))]
pub struct AuditArgs {
    /// A policy spec: NAME[:PARAM=VALUE,...].
    ///
    /// '+' joins a stack: admitted only if every member admits, delayed by
    /// the largest member delay; a refusal charges no member (charge=each:
    /// those before it keep their charge, as Envoy's local rate limit).
    /// block=DUR keeps a refused key refused that long; label=NAME names it
    /// in reports.
    #[arg(long = "policy", short = 'p', value_name = "SPEC", help_heading = POLICIES)]
    pub policies: Vec<String>,
    /// A file of policy specs, one per line.
    ///
    /// '#' starts a comment.
    #[arg(long = "policies", value_name = "FILE", help_heading = POLICIES)]
    pub policies_file: Option<PathBuf>,
    /// Run each policy or config as N instances behind a balancer.
    ///
    /// As local limits are (an nginx zone per instance, Envoy's local rate
    /// limit, Traefik's middleware per pod): each row goes to one instance
    /// (--balance), whose decision is the row's; the report says what the
    /// clients got per --edge-window against the policy as written.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024), help_heading = POLICIES, hide_short_help = true)]
    pub replicas: Option<u32>,
    /// How rows are spread over the replicas: round-robin (default),
    /// random[:SEED], or hash(COLUMN) (every row of one value to one
    /// instance, as sticky sessions and `hash $remote_addr` do).
    #[arg(long, value_name = "MODE", requires = "replicas", help_heading = POLICIES, hide_short_help = true)]
    pub balance: Option<String>,
    /// The span the replicas' report counts admitted requests over
    /// (aligned to the epoch; default 1s).
    #[arg(long, value_parser = positive_duration_arg, value_name = "DUR", requires = "replicas", help_heading = POLICIES, hide_short_help = true)]
    pub edge_window: Option<Nanos>,
    /// An nginx.conf, audited as nginx applies it.
    ///
    /// Its limit_req_zone, limit_req, map and location blocks, each row
    /// routed by its URI. Repeatable: each config is one policy in the report.
    #[arg(long, value_name = "FILE", help_heading = GATEWAYS)]
    pub nginx_conf: Vec<PathBuf>,
    /// A haproxy.cfg, audited as HAProxy applies it.
    ///
    /// Its stick-tables, track-sc and deny/tarpit rules, ACLs and
    /// use_backend, each row entering the frontend its httplog line names.
    /// Repeatable: each config is one policy in the report.
    #[arg(long, value_name = "FILE", help_heading = GATEWAYS)]
    pub haproxy_cfg: Vec<PathBuf>,
    /// A Traefik dynamic configuration, audited as Traefik applies it.
    ///
    /// The file provider's YAML or TOML, or Middleware and IngressRoute
    /// resources: each row goes through the rateLimit middlewares of the
    /// router its access log names. Repeatable: each config is one policy.
    #[arg(long, value_name = "FILE", help_heading = GATEWAYS, hide_short_help = true)]
    pub traefik_config: Vec<PathBuf>,
    /// Check drip against the status logged in FIELD.
    ///
    /// Compares each row's emulated $limit_req_status with the logged one
    /// (for a haproxy.cfg, its fate with the logged termination_state; for
    /// a Traefik config, 429 in DownstreamStatus).
    #[arg(long, value_name = "FIELD", requires = "configs", help_heading = GATEWAYS, hide_short_help = true)]
    pub verify_column: Option<String>,
    /// Send every row to this location of the config (e.g. '/api/', '= /login',
    /// '~* \.php$') instead of routing by URI.
    #[arg(long, value_name = "PATH", requires = "nginx_conf", help_heading = GATEWAYS, hide_short_help = true)]
    pub nginx_location: Option<String>,
    /// Read nginx variable NAME from log field FIELD (repeatable), e.g.
    /// remote_addr=client_ip or uri=path.
    #[arg(long, value_name = "NAME=FIELD", requires = "nginx_conf", help_heading = GATEWAYS, hide_short_help = true)]
    pub nginx_var: Vec<String>,
    /// URIs (a regex on the path) of files that exist: `try_files … @name`
    /// serves them itself. Other rows of such a location go to @name, and
    /// those of a location with `error_page 404` to its page: the log
    /// cannot say whether the file existed.
    #[arg(long = "static", value_name = "REGEX", requires = "nginx_conf", help_heading = GATEWAYS, hide_short_help = true)]
    pub static_files: Option<String>,
    /// Stop when an include of the nginx.conf names no file (by default
    /// it is read as empty, and the report says so). A wildcard include
    /// matching nothing is empty, as for nginx, its folder missing too.
    #[arg(long, requires = "nginx_conf", help_heading = GATEWAYS, hide_short_help = true)]
    pub strict_includes: bool,
    /// Fail (exit 1) above PCT % dropped (1 = 1 %).
    ///
    /// PCT is a percentage: 1 means 1 % of the requests, 0.01 means one in
    /// ten thousand. LABEL=PCT applies to one policy.
    #[arg(long, value_name = "[LABEL=]PCT", help_heading = THRESHOLDS)]
    pub max_drop_rate: Vec<String>,
    /// Fail (exit 1) when a request waits over DUR.
    ///
    /// DUR or LABEL=DUR.
    #[arg(long, value_name = "[LABEL=]DUR", help_heading = THRESHOLDS)]
    pub max_wait: Vec<String>,
    /// Fail (exit 1) when a policy drops more than N requests: N or LABEL=N.
    #[arg(long, value_name = "[LABEL=]N", help_heading = THRESHOLDS, hide_short_help = true)]
    pub max_drops: Vec<String>,
    /// Fail (exit 1) when a policy drops requests of more than N keys (or
    /// PCT% of the keys): N, PCT% or LABEL=N.
    #[arg(long, value_name = "[LABEL=]N|PCT%", help_heading = THRESHOLDS, hide_short_help = true)]
    pub max_keys_hurt: Vec<String>,
    /// Fail (exit 1) when more than PCT percent of verified rows disagree.
    ///
    /// A disagreement that a 1 ms move of the row removes is within
    /// nginx's clock granularity (nginx decides on its own cached clock,
    /// the log holds $msec): the report counts it apart, and it does not
    /// count here unless --verify-strict is given.
    #[arg(long, value_name = "PCT", default_value = "0", help_heading = THRESHOLDS, hide_short_help = true)]
    pub max_disagree: String,
    /// Count disagreements within nginx's clock granularity against
    /// --max-disagree too.
    #[arg(long, requires = "verify_column", help_heading = THRESHOLDS, hide_short_help = true)]
    pub verify_strict: bool,
    /// Fail (exit 1) when a location with limit_req matched no row of the
    /// log: what was not tested is not passed.
    #[arg(long, requires = "configs", help_heading = THRESHOLDS, hide_short_help = true)]
    pub fail_untested: bool,
    /// With --compare: fail (exit 1) when a policy drops more than N rows
    /// (or PCT% of the rows) that the first policy admitted.
    #[arg(long, value_name = "[LABEL=]N|PCT%", requires = "compare", help_heading = THRESHOLDS, hide_short_help = true)]
    pub max_newly_dropped: Vec<String>,
    /// With --compare: fail (exit 1) when more than N keys (or PCT% of the
    /// keys) see drops under a policy and none under the first.
    #[arg(long, value_name = "[LABEL=]N|PCT%", requires = "compare", help_heading = THRESHOLDS, hide_short_help = true)]
    pub max_keys_newly_hurt: Vec<String>,
    /// Report: table (default), json, csv, markdown, html.
    ///
    /// html is one self-contained file: the tables and the timeline plot
    /// inline.
    #[arg(long, short, value_enum, default_value_t = Format::Table, help_heading = OUTPUT,
          hide_possible_values = true, hide_default_value = true)]
    pub format: Format,
    /// The table report with every line whole, however wide.
    ///
    /// By default it fits $COLUMNS, else the terminal, else 80 columns:
    /// prose wraps, a wide table is cut into groups of columns behind its
    /// first (or a record per row). Other formats are never fitted.
    #[arg(long, help_heading = OUTPUT, hide_short_help = true)]
    pub wide: bool,
    /// Draw the timeline to FILE.svg.
    ///
    /// A panel per policy, per --timeline interval (or about 200-600
    /// intervals over the log's span).
    #[arg(long, value_name = "FILE.svg", help_heading = OUTPUT)]
    pub plot: Option<PathBuf>,
    /// Add per-interval rows (arrived, sent, dropped, level) of this length.
    #[arg(long, value_parser = positive_duration_arg, value_name = "DUR", help_heading = OUTPUT, hide_short_help = true)]
    pub timeline: Option<Nanos>,
    /// Keys listed per policy: most drops, and longest waits.
    ///
    /// The keys with the most drops and, for a policy that delays, those
    /// with the longest waits.
    #[arg(long, default_value_t = 10, value_name = "N", help_heading = OUTPUT, hide_short_help = true)]
    pub top: usize,
    /// Write one CSV row per (row, policy) decision to FILE ('-': to stdout, instead of the report).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT, hide_short_help = true)]
    pub decisions: Option<PathBuf>,
    /// Compare each policy after the first with the first, row by row: requests
    /// newly dropped and admitted, keys newly hurt and relieved.
    #[arg(long, help_heading = OUTPUT, hide_short_help = true)]
    pub compare: bool,
    /// No progress bar, no notes on stderr.
    ///
    /// Errors and threshold crossings only.
    #[arg(long, short, help_heading = OUTPUT, hide_short_help = true)]
    pub quiet: bool,
    #[command(flatten)]
    pub progress: ProgressArgs,
    #[command(flatten)]
    pub input: InputArgs,
    /// Replay threads (default: one per four policies, leaving the reader a
    /// core; on two cores, two past eight policies). Policies keyed by one
    /// column are split by key across them; the report is the same for any N.
    #[arg(long, value_name = "N", help_heading = CONTROL, hide_short_help = true)]
    pub threads: Option<std::num::NonZeroUsize>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("size_configs").args(["nginx_conf", "haproxy_cfg"])))]
pub struct SizeArgs {
    /// The policy: gcra, nginx, token-bucket, ...
    ///
    /// Its swept parameters left out: gcra, nginx:nodelay, shaper:key=none,
    /// fixed-window:align=first-hit,count=all, sliding-log.
    #[arg(long = "policy", short = 'p', value_name = "SPEC", help_heading = POLICIES,
          required_unless_present_any = ["nginx_conf", "haproxy_cfg"])]
    pub policy: Option<String>,
    /// Target: at most PCT % dropped (1 = 1 %).
    ///
    /// PCT is a percentage: 1 means 1 %, 0.01 means one in ten thousand.
    #[arg(long, value_name = "PCT", help_heading = TARGETS)]
    pub max_drop_rate: Option<String>,
    /// Target: the longest wait (default 1s if delaying).
    ///
    /// For policies that delay, no request waits longer than DUR (default
    /// 1s for them; `none` lifts it).
    #[arg(long, value_parser = wait_cap_arg, value_name = "DUR|none", help_heading = TARGETS)]
    pub max_wait: Option<WaitCap>,
    /// Target: drop at most N requests.
    #[arg(long, value_name = "N", help_heading = TARGETS, hide_short_help = true)]
    pub max_drops: Option<u64>,
    /// Target: at most PCT% of the keys (or N keys) see any drop.
    #[arg(long, value_name = "PCT%|N", help_heading = TARGETS, hide_short_help = true)]
    pub max_keys_hurt: Option<String>,
    /// The targets hold in every period of DUR (1h, 1d).
    ///
    /// No hour (with 1h) drops more than the target, not only the whole
    /// log.
    #[arg(long, value_parser = positive_duration_arg, value_name = "DUR", help_heading = TARGETS, hide_short_help = true)]
    pub per: Option<Nanos>,
    /// Keys (one per line) left out of the targets; still replayed and reported.
    #[arg(long, value_name = "FILE", help_heading = TARGETS, hide_short_help = true)]
    pub exclude_keys: Option<PathBuf>,
    /// Size for every key, outliers too.
    ///
    /// By default a key whose busiest minute holds more than 10× the
    /// requests of the p90 key's (a bot, a scraper) is an outlier: named in
    /// the report, replayed, and left out of the targets.
    #[arg(long, help_heading = TARGETS, hide_short_help = true)]
    pub keep_outliers: bool,
    /// Size a policy run as N replicas behind a balancer, for --total.
    ///
    /// The largest per-replica value such that no key (or, unkeyed, all
    /// rows) gets more than --total through all N instances together.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024), help_heading = SIZING, hide_short_help = true)]
    pub replicas: Option<u32>,
    /// With --replicas: how rows are spread (round-robin, random[:SEED],
    /// hash(KEY_COLUMN)).
    #[arg(long, value_name = "MODE", requires = "replicas", help_heading = SIZING, hide_short_help = true)]
    pub balance: Option<String>,
    /// With --replicas: what one key should get through all replicas, per
    /// the rate's period (10/s, 600/min).
    #[arg(long, value_name = "RATE", requires = "replicas", help_heading = SIZING, hide_short_help = true)]
    pub total: Option<String>,
    /// The config in force: audited next to the recommendation.
    #[arg(long, value_name = "SPEC", help_heading = POLICIES, hide_short_help = true)]
    pub current: Option<String>,
    /// Rates to try: a list (1/s,2/s) or a range (1/s..50/s).
    ///
    /// For bucket families; a range A..B is a ladder of round values.
    /// Default: the log's average rate to its busiest second.
    #[arg(long, value_name = "LIST|A..B", help_heading = SIZING, hide_short_help = true)]
    pub rate: Option<String>,
    /// Windows to try (window families): a list (1s,10s,1m); default 1s,10s,1m,10m,1h.
    #[arg(long, value_name = "LIST", help_heading = SIZING, hide_short_help = true)]
    pub window: Option<String>,
    /// The recommendation admits the fewest requests in any window of this length.
    #[arg(long, value_parser = positive_duration_arg, default_value = "1m", value_name = "DUR", help_heading = SIZING, hide_short_help = true)]
    pub horizon: Nanos,
    /// Size for the same traffic F times as fast (1.5).
    ///
    /// The requests' times are compressed by F around the first row.
    #[arg(long, value_name = "F", help_heading = SIZING, hide_short_help = true)]
    pub headroom: Option<String>,
    /// Size this nginx.conf's limit_req lines.
    ///
    /// Each limit_req (zone x location, routed as audit --nginx-conf routes)
    /// is sized on the rows it sees; the answer is a patch that changes only
    /// rate=, burst= and the zone sizes.
    #[arg(long, value_name = "FILE", conflicts_with = "haproxy_cfg", help_heading = GATEWAYS)]
    pub nginx_conf: Option<PathBuf>,
    /// Size this haproxy.cfg's request-rate limits.
    ///
    /// Each rule refusing above sc_http_req_rate (deny, tarpit) is sized on
    /// the rows it applies to; the answer is a patch of the numbers,
    /// checked with haproxy -c.
    #[arg(long, value_name = "FILE", help_heading = GATEWAYS, hide_short_help = true)]
    pub haproxy_cfg: Option<PathBuf>,
    /// With --nginx-conf: read nginx variable NAME from log field FIELD.
    #[arg(long, value_name = "NAME=FIELD", requires = "nginx_conf", help_heading = GATEWAYS, hide_short_help = true)]
    pub nginx_var: Vec<String>,
    /// With --nginx-conf: patch limits that meet the targets as written too.
    ///
    /// Without it, a limit whose lines meet the targets as written is left
    /// as written; the report shows the tightest that would still meet them.
    #[arg(long, requires = "size_configs", help_heading = GATEWAYS, hide_short_help = true)]
    pub tighten: bool,
    /// With --nginx-conf: move no rate or burst more than F times (default 4).
    ///
    /// Either way: 4 allows 10r/s to become 2.5r/s or 40r/s. A limit whose
    /// sizing needs more is kept as written, and the report says what it
    /// would need and the F that allows it. `none`: any change.
    #[arg(long, value_name = "F|none", value_parser = max_change_arg, requires = "size_configs", help_heading = GATEWAYS, hide_short_help = true)]
    pub max_change: Option<MaxChange>,
    /// With --nginx-conf: targets of one zone, location or line of its own.
    ///
    /// SCOPE is a zone (login), a location with limit_req lines of its own
    /// (`= /login`, `/api/`) or a line (nginx.conf:42); TARGETS a list of
    /// max-drop-rate=PCT, max-drops=N, max-keys-hurt=PCT%|N, max-wait=DUR|none,
    /// or keep (left as written). Unnamed lines keep the global targets.
    /// Repeatable; a line's own value wins over its location's, that over
    /// its zone's.
    #[arg(long, value_name = "SCOPE:TARGETS", requires = "nginx_conf", help_heading = GATEWAYS, hide_short_help = true)]
    pub target: Vec<String>,
    /// With --nginx-conf: size only these zones (a,b); keep the others as written.
    #[arg(long, value_name = "ZONES", requires = "nginx_conf", help_heading = GATEWAYS, hide_short_help = true)]
    pub only_zones: Option<String>,
    /// Report: table (default), json, csv, markdown, html.
    ///
    /// html is one self-contained file: the tables and the timeline plot
    /// inline.
    #[arg(long, short, value_enum, default_value_t = Format::Table, help_heading = OUTPUT,
          hide_possible_values = true, hide_default_value = true)]
    pub format: Format,
    /// The table report with every line whole, however wide.
    ///
    /// By default it fits $COLUMNS, else the terminal, else 80 columns:
    /// prose wraps, a wide table is cut into groups of columns behind its
    /// first (or a record per row). Other formats are never fitted.
    #[arg(long, help_heading = OUTPUT, hide_short_help = true)]
    pub wide: bool,
    /// Draw the frontier and the per-key need to FILE.svg.
    ///
    /// The recommendation is marked on the frontier.
    #[arg(long, value_name = "FILE.svg", help_heading = OUTPUT)]
    pub plot: Option<PathBuf>,
    /// Every column, and the notes on how the sizes were found.
    #[arg(long, short, help_heading = OUTPUT)]
    pub verbose: bool,
    /// Keys named in the per-key need table and under each pick (those it refuses).
    #[arg(long, default_value_t = 3, value_name = "N", help_heading = OUTPUT, hide_short_help = true)]
    pub top: usize,
    /// With --nginx-conf: write the patch to FILE.
    ///
    /// Instead of printing it in the report ('-': the patch alone on
    /// stdout). The report prints the command that applies it: `cd` to the
    /// folder that holds every changed file, then `patch -p1 < FILE`.
    #[arg(long, value_name = "FILE", requires = "size_configs", help_heading = OUTPUT, hide_short_help = true)]
    pub patch: Option<PathBuf>,
    /// No progress bar and no notes on stderr; errors only.
    #[arg(long, short, help_heading = OUTPUT, hide_short_help = true)]
    pub quiet: bool,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub progress: ProgressArgs,
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
        let input_format = input_format(args.input_format.0, args.log_format.as_deref())?;
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
            notes: crate::notes(quiet),
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
