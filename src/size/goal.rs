//! The targets `size` meets, read from the command line as exact
//! fractions and counts, and the test of a candidate's tally against them.

use crate::cli::{SizeArgs, WaitCap};
use crate::engine::candidates::per::PeriodCount;
use crate::engine::candidates::probe::Probed;
use crate::percent::Percent;
use crate::time::Nanos;
use anyhow::{Result, anyhow, bail};

/// Keys-hurt target: a count or a share of the counted keys.
#[derive(Clone, Copy, Debug)]
pub enum KeysHurt {
    Count(u64),
    Share(Percent),
}

/// The targets, exact.
#[derive(Clone, Debug)]
pub struct Goal {
    pub drop_rate: Option<Percent>,
    pub drops: Option<u64>,
    pub keys_hurt: Option<KeysHurt>,
    pub max_wait: Option<Nanos>,
    /// The wait target is the default one (not given).
    pub wait_default: bool,
    /// Requests and keys the targets count (known once the log is read).
    pub requests: u64,
    pub keys: u64,
}

/// The wait a policy that delays is held to when `--max-wait` is not given.
pub const DEFAULT_WAIT: Nanos = Nanos::from_secs(1);

impl Goal {
    /// No drop or wait target (`size --replicas`, whose target is the
    /// total at the edge).
    pub fn none() -> Goal {
        Goal {
            drop_rate: None,
            drops: None,
            keys_hurt: None,
            max_wait: None,
            wait_default: false,
            requests: 0,
            keys: 0,
        }
    }

    /// The targets of `args` (at least one drop target), counting nothing
    /// yet; `delays`: the swept policy delays requests, so waits are a
    /// target by default.
    pub fn from_args(args: &SizeArgs, delays: bool) -> Result<Goal> {
        if args.max_drop_rate.is_none() && args.max_drops.is_none() && args.max_keys_hurt.is_none()
        {
            bail!(
                "no target given; add --max-drop-rate PCT, --max-drops N or --max-keys-hurt PCT%|N (e.g. --max-drop-rate 0.1)"
            );
        }
        let drop_rate = args
            .max_drop_rate
            .as_deref()
            .map(|t| {
                Percent::parse(t).ok_or_else(|| {
                    anyhow!(
                        "invalid --max-drop-rate '{t}': give a percentage from 0 to 100, e.g. 0.5"
                    )
                })
            })
            .transpose()?;
        let keys_hurt = args.max_keys_hurt.as_deref().map(keys_hurt).transpose()?;
        let (max_wait, wait_default) = match args.max_wait {
            Some(WaitCap::At(w)) => (Some(w), false),
            Some(WaitCap::Lifted) => (None, false),
            None if delays => (Some(DEFAULT_WAIT), true),
            None => (None, false),
        };
        Ok(Goal {
            drop_rate,
            drops: args.max_drops,
            keys_hurt,
            max_wait,
            wait_default,
            requests: 0,
            keys: 0,
        })
    }

    /// The drop targets (drop rate, drops, keys hurt) hold, over the
    /// whole log and (with `--per`) in every period.
    pub fn drops_ok(&self, t: &Probed) -> bool {
        !t.period_miss
            && self.period_ok(PeriodCount {
                dropped: t.dropped,
                keys_hurt: t.keys_hurt,
                requests: self.requests,
                keys: self.keys,
            })
    }

    /// The drop targets hold on the figures `c` (the whole log or a period).
    pub fn period_ok(&self, c: PeriodCount) -> bool {
        self.drop_rate
            .is_none_or(|p| !p.exceeded_by(c.dropped, c.requests))
            && self.drops.is_none_or(|m| c.dropped <= m)
            && self.keys_hurt.is_none_or(|k| match k {
                KeysHurt::Count(m) => c.keys_hurt <= m,
                KeysHurt::Share(p) => !p.exceeded_by(c.keys_hurt, c.keys),
            })
    }

    pub fn wait_ok(&self, t: &Probed) -> bool {
        self.max_wait.is_none_or(|w| t.max_wait <= w.0)
    }

    pub fn ok(&self, t: &Probed) -> bool {
        self.drops_ok(t) && self.wait_ok(t)
    }

    /// True when some drop target allows no drop at all.
    pub fn zero_drops(&self) -> bool {
        self.drop_rate.is_some_and(Percent::is_zero)
            || self.drops == Some(0)
            || match self.keys_hurt {
                Some(KeysHurt::Count(n)) => n == 0,
                Some(KeysHurt::Share(p)) => p.is_zero(),
                None => false,
            }
    }
}

/// `--max-keys-hurt`: a count, or a percentage of keys with `%`.
pub fn keys_hurt(t: &str) -> Result<KeysHurt> {
    let bad = || {
        anyhow!(
            "invalid --max-keys-hurt '{t}': give a count of keys (e.g. 3) or a percentage of keys with '%' (e.g. 1%)"
        )
    };
    if t.trim().ends_with('%') {
        Percent::parse(t).map(KeysHurt::Share).ok_or_else(bad)
    } else {
        t.trim()
            .parse::<u64>()
            .map(KeysHurt::Count)
            .map_err(|_| bad())
    }
}
