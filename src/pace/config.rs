//! `pace`'s configuration, checked once from the arguments: the policy (a
//! `--rate` shaper or any `--policy`), per-key pacing, `--share`,
//! `--replay` and where progress shows.

use super::schedule::Lateness;
use super::share::{Plan, ShareConfig};
use super::{Config, KeyedConfig, interval_of, keys::KeySource, replay};
use crate::cli::PaceArgs;
use crate::ingest::input;
use crate::ingest::lines::LineSpec;
use crate::ingest::timestamp::Zone;
use crate::policy::PolicyConfig;
use crate::policy::shaper::ShaperBound;
use crate::policy::spec::{KeyChoice, parse_spec};
use crate::policy::{Shaper, Spec};
use crate::progress;
use crate::time::Nanos;
use anyhow::{Context, bail};

impl Config {
    pub fn from_args(args: PaceArgs) -> anyhow::Result<Config> {
        if args.replay.replay {
            return Config::replay(args);
        }
        let (spec, target) = policy_of(&args)?;
        let keyed = keyed_config(&args)?;
        let interval = interval_of_spec(&spec, keyed.is_some());
        let progress = shows_progress(&args);
        let share = share_of(&args, &spec, &target, keyed.is_some())?;
        let jobs = jobs_of(&args)?;
        let lateness = lateness_of(&args);
        Ok(Config {
            spec,
            interval,
            target,
            on_full: args.on_full,
            rejects: args.rejects,
            input: super::reader::InputConfig {
                files: args.files.clone(),
                journal: args.journal.clone(),
                separator: if args.null { 0 } else { b'\n' },
            },
            stamp: args.stamp,
            stats: args.stats,
            progress,
            lateness,
            keyed,
            share,
            control: super::LiveConfig {
                fifo: args.control,
                adaptive: args.adaptive,
            },
            replay: None,
            jobs,
        })
    }

    /// The configuration of `--replay`: no policy; each line's release
    /// comes from its logged time.
    fn replay(args: PaceArgs) -> anyhow::Result<Config> {
        let r = &args.replay;
        if args.journal.is_some() {
            bail!(
                "--journal does not work with --replay: a replayed log's header is not a record to skip, and a resumed replay would lose its times' origin; replay the log from the start, or cut the lines already sent off it (tail -n +N) and keep its header"
            );
        }
        if r.merge {
            bail!(
                "--merge: pace --replay reads one log, from stdin, so it has no files to merge; merge the logs by time before the pipe (sort -m on a sortable time column), or use --reorder-window for one slightly unordered log"
            );
        }
        let speed = replay::Speed::parse(&r.speed).map_err(|e| anyhow::anyhow!("--speed: {e}"))?;
        if let Some(config) = ShareConfig::from_args(&args.share)? {
            config.cannot_share(&format!(
                "--replay keeps the log's own times; it cannot be combined with {}",
                config.origin.name()
            ))?;
        }
        if args.max_pending == 0 {
            bail!("--max-pending 0 would hold no line: give at least 1 (default 100000)");
        }
        let time_col = r
            .time_column
            .as_deref()
            .map(input::parse_time_column)
            .transpose()?;
        let time_format = input::parse_time_format(&r.time_format)?;
        let input_format =
            crate::ingest::input::input_format(r.input_format.0, r.log_format.as_deref())?;
        let lines = LineSpec {
            time_col,
            time_format,
            zone: r
                .tz
                .as_deref()
                .map(Zone::parse)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--tz: {e}"))?,
            input_format,
            log_format: r.log_format.clone(),
            delimiter: r
                .delimiter
                .as_deref()
                .map(crate::ingest::input::parse_delimiter)
                .transpose()?,
            no_header: r.no_header,
        };
        let config = replay::ReplayConfig {
            lines,
            speed,
            max_gap: r.max_gap,
            reorder_window: r.reorder_window,
            max_pending: args.max_pending,
        };
        let jobs = jobs_of(&args)?;
        let target = format!("replay at {}x", r.speed.trim());
        let progress = shows_progress(&args);
        Ok(Config {
            spec: Spec {
                text: target.clone(),
                label: target.clone(),
                members: Vec::new(),
                charge_each: false,
                block: None,
            },
            interval: None,
            target,
            on_full: args.on_full,
            rejects: args.rejects,
            input: super::reader::InputConfig {
                files: args.files.clone(),
                journal: args.journal.clone(),
                separator: b'\n',
            },
            stamp: args.stamp,
            stats: args.stats,
            progress,
            // Late lines go at once: the log's times are the schedule.
            lateness: Lateness::CatchUp,
            keyed: None,
            share: None,
            control: super::LiveConfig {
                fifo: args.control,
                adaptive: false,
            },
            replay: Some(config),
            jobs,
        })
    }
}

/// The command to start per record, after `--`, with its options checked.
fn jobs_of(args: &PaceArgs) -> anyhow::Result<Option<super::jobs::JobsConfig>> {
    // `--` with nothing after it: a command was meant and left out (clap
    // gives no command either way; only a final `--` tells them apart).
    if args.run.command.is_empty() && std::env::args_os().last().is_some_and(|a| a == "--") {
        bail!(
            "nothing follows --: name the command to start per record (as in drip pace --rate 5/s urls.txt -- curl -sS {{}}), or drop the -- to write the records to stdout"
        );
    }
    let Some(jobs) = super::jobs::JobsConfig::from_args(&args.run, args.keep_order) else {
        return Ok(None);
    };
    super::shell_script::check(&args.run.command)?;
    if args.stamp.is_some() {
        bail!(
            "--stamp prefixes lines written to stdout; with a command after -- no line is written: give the command the time itself (e.g. date) or drop --stamp"
        );
    }
    Ok(Some(jobs))
}

/// The per-key options, checked.
fn keyed_config(args: &PaceArgs) -> anyhow::Result<Option<KeyedConfig>> {
    let source = match (&args.key, args.key_field) {
        (None, None) if args.key_json.is_some() => {
            let path = args.key_json.clone().unwrap_or_default();
            if path.is_empty() || path.split('.').any(str::is_empty) {
                bail!(
                    "invalid --key-json '{path}': give a dotted path into each JSON line, e.g. request.customer"
                );
            }
            KeySource::Json(path)
        }
        (Some(pattern), _) => {
            let re = regex::bytes::Regex::new(pattern).map_err(|e| {
                // The regex crate's message spans lines; its last says what.
                let text = e.to_string();
                let what = text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("invalid pattern")
                    .trim()
                    .trim_start_matches("error: ")
                    .to_string();
                anyhow::anyhow!(
                    "invalid --key '{pattern}': {what}; give a regular expression whose first group is the key, e.g. '^https?://([^/:]+)'"
                )
            })?;
            KeySource::Pattern(re)
        }
        (None, Some(n)) => {
            let sep = match &args.field_sep {
                Some(text) => Some(crate::ingest::input::parse_delimiter(text).map_err(|_| {
                    anyhow::anyhow!(
                        "invalid --field-sep '{text}': give one ASCII character, or 'tab'"
                    )
                })?),
                None => None,
            };
            KeySource::Field {
                index: usize::try_from(n).unwrap_or(usize::MAX),
                sep,
            }
        }
        (None, None) => {
            if args.keep_order && args.run.command.is_empty() {
                bail!(
                    "--keep-order applies to per-key pacing or to commands: add --key REGEX, --key-field N or --key-json PATH, or a command after --"
                );
            }
            return Ok(None);
        }
    };
    if args.max_pending == 0 {
        bail!("--max-pending 0 would hold no line: give at least 1 (default 100000)");
    }
    Ok(Some(KeyedConfig {
        source,
        keep_order: args.keep_order,
        max_pending: args.max_pending,
    }))
}

/// The policy: `--policy SPEC` as given, or a shaper at `--rate` with
/// `--burst` or `--max-wait`; and the text the summary names it by.
fn policy_of(args: &PaceArgs) -> anyhow::Result<(Spec, String)> {
    Ok(match (&args.policy, args.rate) {
        (Some(text), _) => {
            let spec = parse_spec(text).with_context(|| "--policy".to_string())?;
            let calendar = |m: &crate::policy::Member| {
                (m.text.split([',', ':']).map(str::trim))
                    .any(|p| p == "window=month" || p == "window=year")
            };
            if spec.members.iter().any(calendar) {
                bail!(
                    "--policy '{}': window=month and window=year are UTC calendar windows of a log's times; pace's clock starts with the run: give a length (window=30d)",
                    crate::quote::shown_str(text)
                );
            }
            if let Some((m, c)) = spec.members.iter().find_map(|m| match &m.key {
                KeyChoice::Column(c) => Some((m, c)),
                _ => None,
            }) {
                bail!(
                    "--policy '{}': key={c} has no meaning in pace (lines have no columns); use --key or --key-field for per-key pacing, key=none for a global member",
                    m.text
                );
            }
            (spec, text.trim().to_string())
        }
        (None, Some(rate)) => {
            let bound = match (args.burst, args.max_wait) {
                (_, Some(w)) => ShaperBound::MaxWait(w),
                (b, None) => ShaperBound::Burst(b.unwrap_or(0)),
            };
            let mut text = format!("shaper:rate={rate}");
            match bound {
                ShaperBound::Burst(b) => text.push_str(&format!(",burst={b}")),
                ShaperBound::MaxWait(w) => text.push_str(&format!(",max-wait={w}")),
            }
            let config = PolicyConfig::Shaper(Shaper::new(rate, bound));
            let spec = Spec {
                text: text.clone(),
                label: text.clone(),
                members: vec![crate::policy::Member {
                    config,
                    key: KeyChoice::Default,
                    text,
                }],
                charge_each: false,
                block: None,
            };
            (spec, rate.to_string())
        }
        (None, None) => bail!("give --rate RATE (for example --rate 5/s) or --policy SPEC"),
    })
}

/// The shaping interval (the shortest of the members' pace rates: the
/// shapers' and GCRAs'); with `keyed`, that of the global members first.
fn interval_of_spec(spec: &Spec, keyed: bool) -> Option<Nanos> {
    let interval_among = |global_only: bool| {
        spec.members
            .iter()
            .filter(|m| !global_only || m.key == KeyChoice::Global)
            .filter_map(|m| m.config.pace_rate().map(interval_of))
            .min()
    };
    // Per key, the global members' interval is the one all lines keep.
    if keyed {
        interval_among(true).or_else(|| interval_among(false))
    } else {
        interval_among(false)
    }
}

/// `--share`: the schedule and how this policy reserves in it, or none
/// when the run cannot share (said, or an error, as the origin wants).
fn share_of(
    args: &PaceArgs,
    spec: &Spec,
    target: &str,
    keyed: bool,
) -> anyhow::Result<Option<(ShareConfig, Plan)>> {
    Ok(match ShareConfig::from_args(&args.share)? {
        None => None,
        Some(config) if keyed => {
            config.cannot_share(&format!(
                "{} keeps one schedule for all lines; it cannot be combined with --key, --key-field or --key-json",
                config.origin.name()
            ))?;
            None
        }
        Some(config) => {
            let plan = match spec.members.as_slice() {
                [m] => Plan::of(&m.config),
                _ => Err("a '+' stack keeps several states".to_string()),
            };
            match plan {
                Ok(plan) => Some((config, plan)),
                Err(why) => {
                    config.cannot_share(&format!(
                        "{} cannot share '{target}': {why}",
                        config.origin.name()
                    ))?;
                    None
                }
            }
        }
    })
}

/// Progress shows as for every command (pace has no `--quiet`).
fn shows_progress(args: &PaceArgs) -> bool {
    progress::Wanted {
        quiet: false,
        no_progress: args.no_progress,
        progress: args.progress,
    }
    .show()
}

/// What a late record does: as asked (`--lateness`, `--strict`,
/// `--catch-up`), else strict with a command (an API counts the starts)
/// and the long-run average for lines written out.
fn lateness_of(args: &PaceArgs) -> Lateness {
    if let Some(l) = args.lateness {
        l
    } else if args.strict {
        Lateness::Strict
    } else if args.catch_up {
        Lateness::CatchUp
    } else if args.run.command.is_empty() {
        Lateness::Average
    } else {
        Lateness::Strict
    }
}
