//! `drip gate`: one reservation in a shared schedule, for shell loops and
//! cron jobs that are not pipelines.
//!
//! The gate reserves one slot with the same rule, backends and
//! `--on-share-error` handling as `drip pace --share`, sleeps until the
//! slot, and then exits 0 or replaces itself with the command given after
//! `--` (so the command's exit status, signals and stdio are its own). When
//! the slot is further away than `--max-wait`, it exits 3 at once, before
//! waiting (a slot already reserved is then left unused: the quota is
//! under-used, never over-used). A refused reservation (no slot within
//! `--burst` intervals) sleeps until the schedule has room and asks again.

use crate::cli::GateArgs;
use crate::clock::{Clock, MonotonicClock};
use crate::pace::share::{Answer, Plan, ShareConfig, Sharer};
use crate::policy::PolicyConfig;
use crate::policy::Shaper;
use crate::policy::shaper::ShaperBound;
use crate::time::Nanos;
use anyhow::bail;
use std::io::Write;

/// Exit status when the wait would exceed `--max-wait`.
pub const TOO_LONG: u8 = 3;

/// Runs `gate` and returns the exit status (only when no command ran).
pub fn run(args: GateArgs) -> anyhow::Result<u8> {
    let Some(config) = ShareConfig::from_args(&args.share)? else {
        bail!(
            "drip gate needs --share-key NAME (this user's schedule NAME on this host) or --share PATH|redis://... (or DRIP_SHARE): the schedule it takes a slot in"
        );
    };
    let shaper = Shaper::new(args.rate, ShaperBound::Burst(args.burst));
    let plan = Plan::of(&PolicyConfig::Shaper(shaper)).map_err(anyhow::Error::msg)?;
    let clock = MonotonicClock::new();
    let start = clock.now();
    let mut sharer = Sharer::start(config, plan, start)?;
    let too_long = |waited: Nanos, what: &str| -> Option<u8> {
        let limit = args.max_wait?;
        if waited <= limit {
            return None;
        }
        crate::say!(
            "drip gate: {what} in {}s, more than --max-wait {}",
            secs(waited),
            humantime::format_duration(limit.to_duration())
        );
        Some(TOO_LONG)
    };
    loop {
        let answer = sharer.reserve(clock.now())?;
        let now = clock.now();
        let waited = now.saturating_sub(start);
        match answer {
            Answer::Go { delay } => {
                if let Some(code) = too_long(waited.saturating_add(delay), "the slot comes") {
                    return Ok(code);
                }
                clock.sleep_until(now.saturating_add(delay));
                break;
            }
            Answer::Refused { retry_after } | Answer::Unreachable { retry_after } => {
                let what = if matches!(answer, Answer::Refused { .. }) {
                    "the schedule has room"
                } else {
                    "the next attempt to reach the schedule is"
                };
                if let Some(code) = too_long(waited.saturating_add(retry_after), what) {
                    return Ok(code);
                }
                clock.sleep_until(now.saturating_add(retry_after));
            }
        }
    }
    let waited = clock.now().saturating_sub(start);
    if args.print_wait {
        if args.command.is_empty() {
            let mut out = std::io::stdout();
            let written = writeln!(out, "{}", secs(waited)).and_then(|()| out.flush());
            match written {
                Ok(()) => {}
                // Nobody reads the wait: not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                Err(e) => bail!(
                    "cannot write the wait (--print-wait) to standard output: {e}; the slot was taken all the same (free space, or send stdout elsewhere)"
                ),
            }
        } else {
            crate::say!("drip gate: waited {}s", secs(waited));
        }
    }
    let Some((program, rest)) = args.command.split_first() else {
        return Ok(0);
    };
    use std::os::unix::process::CommandExt;
    // `exec` returns only when the command could not be started.
    let e = std::process::Command::new(program).args(rest).exec();
    let code = if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    crate::say!(
        "drip: cannot run '{}': {e}",
        program.to_string_lossy().escape_debug()
    );
    Ok(code)
}

/// A span in seconds with microseconds: `0.105023`.
fn secs(span: Nanos) -> String {
    let us = span.0 / 1_000;
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_print_as_seconds() {
        assert_eq!(secs(Nanos(105_023_999)), "0.105023");
        assert_eq!(secs(Nanos::from_secs(3)), "3.000000");
    }
}
