//! One schedule shared by several drip processes (`--share`).
//!
//! Every line reserves its own slot in a schedule kept where all the
//! processes can reach it: a state file under an OS lock on one host
//! ([`file`]), or a Redis key updated by a server-side script on the
//! server's clock ([`redis`]). Both apply the one rule in [`reserve`].
//!
//! [`Sharer`] is what a driver holds: it turns the policy into reservation
//! parameters, asks the backend, and applies `--on-share-error` when the
//! schedule cannot be reached: `wait` (nothing goes out without a slot;
//! retries with backoff, gives up after `--share-timeout`), `fail` (gives
//! up at once) or `local` (an in-process schedule at `--fallback-rate`
//! until the shared one answers again). It never sleeps: it answers how
//! long to wait, so the driver keeps reacting to signals.

pub mod file;
pub mod host;
pub mod redis;
pub mod reserve;
mod resp;
mod sha1;

use crate::cli::{OnShareError, ShareArgs};
use crate::policy::PolicyConfig;
use crate::policy::rule::SharedDelay;
use crate::rate::Rate;
use crate::time::Nanos;
use anyhow::bail;
use reserve::{MICROS, Outcome, Params};
use serde::Serialize;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where a sharing option came from: the command line, or the
/// environment (which a user may have exported for other runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Flag,
    Env,
}

/// The environment variable of the schedule.
pub const ENV_SHARE: &str = "DRIP_SHARE";
/// The environment variable of the schedule's name in Redis.
pub const ENV_SHARE_KEY: &str = "DRIP_SHARE_KEY";

/// An environment variable's value; an empty one counts as unset.
fn from_env(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

impl Origin {
    /// How messages name the schedule's setting.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Flag => "--share",
            Origin::Env => ENV_SHARE,
        }
    }

    /// `e`, with what to do about an environment variable appended.
    fn explain(self, e: anyhow::Error) -> anyhow::Error {
        match self {
            Origin::Flag => e,
            Origin::Env => anyhow::anyhow!(
                "{e:#} ({ENV_SHARE} is set in the environment: correct it, unset it, or pass --share none)"
            ),
        }
    }
}

/// Where the schedule lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A state file on this host.
    File(std::path::PathBuf),
    /// A Redis server: the URL without its `#NAME`, and the name.
    Redis { url: String, name: String },
}

impl Location {
    /// Reads `--share` and `--share-key` (or the environment's
    /// `DRIP_SHARE`, `DRIP_SHARE_KEY`; `origin` says which gave `share`).
    /// A name from the environment yields to one in the URL, and a file
    /// ignores it: it is a default for Redis schedules.
    pub fn parse(
        share: &std::ffi::OsStr,
        origin: Origin,
        key: Option<(&str, Origin)>,
    ) -> anyhow::Result<Location> {
        let flag = origin.name();
        let text = share.to_str().unwrap_or_default();
        let scheme = text.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("redis" | "rediss" | "redis+unix" | "unix") => {
                let (url, fragment) = match text.split_once('#') {
                    Some((u, f)) => (u, Some(f)),
                    None => (text, None),
                };
                let name = match (fragment, key) {
                    (Some(f), Some((k, Origin::Flag))) if f != k => bail!(
                        "{flag} names the schedule '{f}' and --share-key names '{k}'; give the name once"
                    ),
                    (Some(f), _) => f,
                    (None, Some((k, _))) => k,
                    (None, None) => bail!(
                        "{flag} {}: give the schedule a name with --share-key NAME (or {ENV_SHARE_KEY}, or {}#NAME); every pipeline sharing one quota uses the same name",
                        redis::redact(url),
                        redis::redact(url)
                    ),
                };
                if name.is_empty() || name.chars().any(|c| c.is_control() || c.is_whitespace()) {
                    bail!(
                        "--share-key '{}': a schedule name is one word without spaces or control characters",
                        name.escape_debug()
                    );
                }
                Ok(Location::Redis {
                    url: url.to_string(),
                    name: name.to_string(),
                })
            }
            Some(other) if !other.contains('/') && !other.is_empty() => bail!(
                "{flag} '{}': unknown scheme '{other}://'; give a file path, or redis://, rediss:// or redis+unix://",
                redis::redact(text)
            ),
            _ => {
                if let Some((k, Origin::Flag)) = key {
                    bail!(
                        "--share-key '{k}' names a Redis schedule, but {flag} is a file ('{}'), which holds one schedule: use one file per schedule",
                        std::path::Path::new(share).display()
                    );
                }
                if share.is_empty() {
                    bail!(
                        "--share is empty; give a state file path, a redis:// URL, or none (not to share)"
                    );
                }
                Ok(Location::File(share.into()))
            }
        }
    }

    /// The location for messages (a password is hidden).
    pub fn describe(&self) -> String {
        match self {
            Location::File(p) => p.display().to_string(),
            Location::Redis { url, name } => format!("{}#{name}", redis::redact(url)),
        }
    }
}

/// The slot a policy reserves, and how its grant is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub params: Params,
    /// A granted line waits its delay (the shaper), or goes at once (the
    /// bucket family: a meter, whose delay only decides admit or refuse).
    pub waits: bool,
}

/// The interval of `rate` in whole microseconds, rounded up, so a shared
/// schedule never runs faster than the rate (3/s: 333 334 µs).
pub fn interval_micros(rate: Rate) -> u64 {
    let us = u128::from(rate.per().0).div_ceil(u128::from(rate.count()) * u128::from(MICROS));
    u64::try_from(us).unwrap_or(u64::MAX).max(1)
}

impl Plan {
    /// The plan for a policy, or why it cannot be shared.
    pub fn of(config: &PolicyConfig) -> Result<Plan, String> {
        let Some(shared) = config.shared() else {
            return Err(
                "only the shaper (--rate) and the bucket family (gcra, token-bucket, leaky-bucket) can be shared: their state is one number"
                    .into(),
            );
        };
        let interval = interval_micros(shared.rate);
        let max_delay = match shared.max_delay {
            SharedDelay::Intervals(n) => interval.saturating_mul(n),
            SharedDelay::Span(w) => w.0 / MICROS,
        };
        Ok(Plan {
            params: Params {
                interval,
                max_delay,
                slots: 1,
            },
            waits: shared.waits,
        })
    }
}

/// A place a schedule is kept.
pub trait Backend: Send {
    /// Makes sure the schedule can be reached (a connection for Redis),
    /// waiting about `patience` at most.
    fn connect(&mut self, patience: Duration) -> Result<(), String>;
    /// Reserves per `params` on the authority's clock, waiting at most
    /// about `patience` for a busy schedule (a state file's lock) before
    /// calling it an error.
    fn reserve(&mut self, params: Params, patience: Duration) -> Result<Outcome, String>;
}

/// Opens the backend for `location`. Errors here are the user's to fix
/// (a network filesystem, a file that is not a state file, a bad URL).
pub fn open(location: &Location, allow_network_fs: bool) -> anyhow::Result<Box<dyn Backend>> {
    Ok(match location {
        Location::File(path) => Box::new(file::FileBackend::open(path, allow_network_fs)?),
        Location::Redis { url, name } => Box::new(redis::RedisBackend::open(url, name)?),
    })
}

/// Sharing, as configured.
#[derive(Clone, Debug)]
pub struct ShareConfig {
    pub location: Location,
    pub on_error: OnShareError,
    /// Give up waiting for an unreachable schedule after this (None: never).
    pub timeout: Option<Nanos>,
    /// The in-process rate under `--on-share-error local`.
    pub fallback: Option<Rate>,
    pub allow_network_fs: bool,
    /// Where the schedule was given.
    pub origin: Origin,
}

impl ShareConfig {
    /// The sharing options, or None without `--share` (and without
    /// `DRIP_SHARE`, or with `--share none`).
    pub fn from_args(args: &ShareArgs) -> anyhow::Result<Option<ShareConfig>> {
        let given = match &args.share {
            Some(s) => Some((s.clone(), Origin::Flag)),
            None => from_env(ENV_SHARE).map(|s| (s, Origin::Env)),
        };
        // `--share-key NAME` alone: the per-user state file of NAME.
        let host_file = match (&given, &args.share_key) {
            (None, Some(name)) if name.is_empty() => {
                bail!("--share-key is empty; give the schedule a name")
            }
            (None, Some(name)) => Some(host::state_file(name)?),
            _ => None,
        };
        let given = given.or_else(|| {
            host_file
                .as_ref()
                .map(|f| (f.clone().into_os_string(), Origin::Flag))
        });
        let Some((share, origin)) = given.filter(|(s, _)| s != "none") else {
            if args.fallback_rate.is_some() {
                bail!("--fallback-rate is for --on-share-error local with --share; remove it");
            }
            return Ok(None);
        };
        let env_key = from_env(ENV_SHARE_KEY).map(|k| k.to_string_lossy().into_owned());
        let key = match (&args.share_key, &env_key) {
            (Some(k), _) => Some((k.as_str(), Origin::Flag)),
            (None, Some(k)) => Some((k.as_str(), Origin::Env)),
            (None, None) => None,
        };
        let location = match host_file {
            Some(f) => Location::File(f),
            None => Location::parse(&share, origin, key).map_err(|e| origin.explain(e))?,
        };
        match (args.on_share_error, args.fallback_rate) {
            (OnShareError::Local, None) => bail!(
                "--on-share-error local needs --fallback-rate RATE: the rate each process sends at alone (for example the shared rate divided by the number of processes)"
            ),
            (OnShareError::Wait | OnShareError::Fail, Some(_)) => bail!(
                "--fallback-rate is used only with --on-share-error local; add that, or remove --fallback-rate"
            ),
            _ => {}
        }
        if args.share_allow_network_fs && !matches!(location, Location::File(_)) {
            bail!("--share-allow-network-fs is for a state file; remove it with redis://");
        }
        Ok(Some(ShareConfig {
            location,
            on_error: args.on_share_error,
            timeout: (args.share_timeout != Nanos::ZERO).then_some(args.share_timeout),
            fallback: args.fallback_rate,
            allow_network_fs: args.share_allow_network_fs,
            origin,
        }))
    }

    /// This run cannot share, for `why`. Asked for with `--share`, that
    /// is an error; inherited from `DRIP_SHARE`, meant for other runs, it
    /// is a note and the run goes on with its own schedule.
    pub fn cannot_share(&self, why: &str) -> anyhow::Result<()> {
        match self.origin {
            Origin::Flag => bail!("{why}"),
            Origin::Env => {
                crate::say!(
                    "drip: note: {ENV_SHARE} is set in the environment, but this run cannot share a schedule ({why}); it paces on its own (--share none says so without this note)"
                );
                Ok(())
            }
        }
    }
}

/// What the driver does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A slot: act this long after the reply arrived (0 for a meter).
    Go { delay: Nanos },
    /// No slot within the bound; the same call is granted after this.
    Refused { retry_after: Nanos },
    /// The schedule cannot be reached: nothing may go; ask again after this.
    Unreachable { retry_after: Nanos },
}

/// Counters for `--stats`.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct ShareSummary {
    /// The schedule (file path, or redis URL#name without a password).
    pub schedule: String,
    /// Slots granted by the shared schedule.
    pub reservations: u64,
    /// Calls the shared schedule refused (no slot within the bound).
    pub refusals: u64,
    /// Attempts to reach the shared schedule that failed (unreachable,
    /// lock not taken in time), the first connection included.
    pub errors: u64,
    /// Slots granted by the local fallback schedule.
    pub fallback_grants: u64,
    /// Calls the local fallback schedule refused (no slot within the bound).
    pub fallback_refusals: u64,
}

/// Backoff between attempts to reach an unreachable schedule.
const BACKOFF_FIRST: Nanos = Nanos::from_millis(50);
const BACKOFF_MAX: Nanos = Nanos::from_millis(1_000);
/// A warning while the schedule stays unreachable, this often.
const WARN_EVERY: Nanos = Nanos::from_secs(10);

struct Outage {
    since: Nanos,
    warned: Nanos,
    backoff: Nanos,
    /// Next attempt of the shared schedule (local mode).
    probe_at: Nanos,
    error: String,
}

/// A backend with the `--on-share-error` policy applied.
pub struct Sharer {
    backend: Box<dyn Backend>,
    config: ShareConfig,
    plan: Plan,
    /// The local fallback: its plan and state (µs on the monotonic clock).
    fallback: Option<(Params, u64)>,
    /// The local fallback of a Redis key: this user's state file of the
    /// same name on this host, so successive processes stay limited.
    fallback_file: Option<Box<dyn Backend>>,
    outage: Option<Outage>,
    /// Under `fail`: the first connection's error, given up at the first
    /// reservation (so a driver's summary is printed before it exits).
    startup_error: Option<String>,
    jitter: u64,
    summary: ShareSummary,
}

impl Sharer {
    /// Opens the schedule for `plan` and tries to reach it once: under
    /// `fail` an unreachable schedule is an error at the first
    /// reservation; otherwise the outage starts now.
    pub fn start(config: ShareConfig, plan: Plan, now: Nanos) -> anyhow::Result<Sharer> {
        let backend = open(&config.location, config.allow_network_fs)
            .map_err(|e| config.origin.explain(e))?;
        let fallback = config.fallback.map(|rate| {
            let interval = interval_micros(rate);
            let slots_waiting = plan.params.max_delay / plan.params.interval.max(1);
            (
                Params {
                    interval,
                    max_delay: interval.saturating_mul(slots_waiting),
                    slots: 1,
                },
                0,
            )
        });
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.subsec_nanos() as u64)
            ^ u64::from(std::process::id()) << 32;
        let fallback_file = match (&config.location, config.on_error) {
            (Location::Redis { name, .. }, OnShareError::Local) => host::state_file(name)
                .and_then(|p| file::FileBackend::open(&p, false))
                .ok()
                .map(|b| Box::new(b) as Box<dyn Backend>),
            _ => None,
        };
        let mut sharer = Sharer {
            backend,
            fallback_file,
            summary: ShareSummary {
                schedule: config.location.describe(),
                ..ShareSummary::default()
            },
            config,
            plan,
            fallback,
            outage: None,
            startup_error: None,
            jitter: seed | 1,
        };
        let started = Instant::now();
        if let Err(e) = sharer.backend.connect(sharer.patience(now)) {
            sharer.summary.errors += 1;
            if sharer.config.on_error == OnShareError::Fail {
                sharer.startup_error = Some(e);
            } else {
                // The outage started when the attempt did.
                let spent = Nanos(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
                sharer.failed(e, now, now.saturating_add(spent))?;
            }
        }
        Ok(sharer)
    }

    pub fn summary(&self) -> ShareSummary {
        self.summary.clone()
    }

    /// Reserves one slot at monotonic instant `now` (the local fallback's
    /// clock). An error means: give up (`fail`, or `wait` past its timeout).
    pub fn reserve(&mut self, now: Nanos) -> anyhow::Result<Answer> {
        if let Some(e) = self.startup_error.take() {
            self.failed(e, now, now)?;
        }
        if let Some(o) = &self.outage
            && self.config.on_error == OnShareError::Local
            && now < o.probe_at
        {
            return Ok(self.local(now));
        }
        let started = Instant::now();
        match self.backend.reserve(self.plan.params, self.patience(now)) {
            Ok(outcome) => {
                if self.outage.take().is_some() {
                    crate::say!(
                        "drip: shared schedule {} answers again; back on it",
                        self.summary.schedule
                    );
                }
                match outcome {
                    Outcome::Granted { .. } => self.summary.reservations += 1,
                    Outcome::Refused { .. } => self.summary.refusals += 1,
                }
                Ok(self.answer(outcome))
            }
            Err(e) => {
                self.summary.errors += 1;
                let spent = Nanos(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
                let retry_after = self.failed(e, now, now.saturating_add(spent))?;
                Ok(match self.config.on_error {
                    OnShareError::Local => self.local(now),
                    _ => Answer::Unreachable { retry_after },
                })
            }
        }
    }

    /// How long one attempt may wait for a busy schedule: under `wait`
    /// with a timeout, no longer than the time left before giving up.
    fn patience(&self, now: Nanos) -> Duration {
        let mut patience = file::LOCK_DEADLINE;
        if let (OnShareError::Wait, Some(limit)) = (self.config.on_error, self.config.timeout) {
            let since = self.outage.as_ref().map_or(now, |o| o.since);
            let left = since.saturating_add(limit).saturating_sub(now);
            patience = patience.min(left.to_duration().max(Duration::from_millis(1)));
        }
        patience
    }

    /// Records a failure of an attempt made at `tried` that ended at
    /// `now`: an error under `fail` or past the timeout, else the wait
    /// before the next attempt.
    fn failed(&mut self, error: String, tried: Nanos, now: Nanos) -> anyhow::Result<Nanos> {
        let schedule = &self.summary.schedule;
        if self.config.on_error == OnShareError::Fail {
            bail!(
                "shared schedule {schedule} unreachable: {error} (--on-share-error fail; 'wait' waits for it up to --share-timeout, 'local' falls back to --fallback-rate)"
            );
        }
        let first = self.outage.is_none();
        let o = self.outage.get_or_insert(Outage {
            since: tried,
            warned: tried,
            backoff: BACKOFF_FIRST,
            probe_at: now,
            error: String::new(),
        });
        o.error = error;
        let down = now.saturating_sub(o.since);
        if let (OnShareError::Wait, Some(limit)) = (self.config.on_error, self.config.timeout)
            && down >= limit
        {
            bail!(
                "shared schedule {schedule} unreachable for {}: {} (waited --share-timeout; 0 waits forever)",
                humantime::format_duration(
                    Nanos::from_millis(down.0 / Nanos::PER_MS).to_duration()
                ),
                o.error
            );
        }
        let what = match (self.config.on_error, self.config.fallback) {
            (OnShareError::Local, Some(rate)) => {
                format!("sending at the local --fallback-rate {rate} until it answers")
            }
            _ => match self.config.timeout {
                Some(t) => format!(
                    "nothing goes out until it answers (giving up after {})",
                    humantime::format_duration(t.to_duration())
                ),
                None => "nothing goes out until it answers".to_string(),
            },
        };
        if first {
            crate::say!(
                "drip: shared schedule {schedule} unreachable: {}; {what}",
                o.error
            );
        } else if now.saturating_sub(o.warned) >= WARN_EVERY {
            o.warned = now;
            crate::say!(
                "drip: shared schedule {schedule} still unreachable after {}s: {}; {what}",
                down.0 / Nanos::PER_SEC,
                o.error
            );
        }
        // 50 ms doubling to 1 s, each with up to a quarter more at random,
        // so processes that lost the schedule together do not retry together.
        let base = o.backoff;
        o.backoff = Nanos(o.backoff.0.saturating_mul(2)).min(BACKOFF_MAX);
        self.jitter ^= self.jitter << 13;
        self.jitter ^= self.jitter >> 7;
        self.jitter ^= self.jitter << 17;
        let mut wait = Nanos(base.0 + self.jitter % (base.0 / 4 + 1));
        if let (OnShareError::Wait, Some(limit)) = (self.config.on_error, self.config.timeout) {
            // The last attempt comes at the timeout, not a backoff after it.
            let left = o.since.saturating_add(limit).saturating_sub(now);
            wait = wait.min(left.max(Nanos::from_millis(1)));
        }
        o.probe_at = now.saturating_add(wait);
        Ok(wait)
    }

    /// A slot from the local fallback schedule.
    fn local(&mut self, now: Nanos) -> Answer {
        let Some((params, state)) = &mut self.fallback else {
            return Answer::Unreachable {
                retry_after: BACKOFF_FIRST,
            };
        };
        let file = self
            .fallback_file
            .as_mut()
            .and_then(|b| b.reserve(*params, file::LOCK_DEADLINE).ok());
        let outcome = match file {
            Some(outcome) => outcome,
            None => {
                let (s, outcome) = reserve::reserve(*state, now.0 / MICROS, *params);
                *state = s;
                outcome
            }
        };
        match outcome {
            Outcome::Granted { .. } => self.summary.fallback_grants += 1,
            Outcome::Refused { .. } => self.summary.fallback_refusals += 1,
        }
        self.answer(outcome)
    }

    /// The answer for a schedule's outcome (µs): a grant's delay is waited
    /// only by a policy that waits for its slot.
    fn answer(&self, outcome: Outcome) -> Answer {
        match outcome {
            Outcome::Granted { delay } => Answer::Go {
                delay: if self.plan.waits {
                    Nanos(delay.saturating_mul(MICROS))
                } else {
                    Nanos::ZERO
                },
            },
            Outcome::Refused { retry_after } => Answer::Refused {
                retry_after: Nanos(retry_after.saturating_mul(MICROS)),
            },
        }
    }
}

/// The wall clock in whole microseconds since the Unix epoch.
pub fn wall_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::spec::parse_spec;
    use std::ffi::OsStr;

    fn loc(share: &str, key: Option<&str>) -> Result<Location, String> {
        Location::parse(
            OsStr::new(share),
            Origin::Flag,
            key.map(|k| (k, Origin::Flag)),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn locations() {
        assert_eq!(
            loc("/tmp/x.state", None),
            Ok(Location::File("/tmp/x.state".into()))
        );
        assert_eq!(
            loc("redis://h:6380/2#jobs", None),
            Ok(Location::Redis {
                url: "redis://h:6380/2".into(),
                name: "jobs".into()
            })
        );
        assert_eq!(
            loc("rediss://u:secret@h", Some("api")),
            Ok(Location::Redis {
                url: "rediss://u:secret@h".into(),
                name: "api".into()
            })
        );
        assert!(loc("redis+unix:///run/redis.sock#q", None).is_ok());
        // A name from the environment is a default: the URL's wins, and a
        // file has no use for it.
        let env = |share: &str, key: &str| {
            Location::parse(OsStr::new(share), Origin::Env, Some((key, Origin::Env)))
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            env("redis://h#a", "b"),
            Ok(Location::Redis {
                url: "redis://h".into(),
                name: "a".into()
            })
        );
        assert_eq!(env("/tmp/x", "b"), Ok(Location::File("/tmp/x".into())));
        let e = env("ftp://h", "b").unwrap_err();
        assert!(e.starts_with("DRIP_SHARE 'ftp://h': unknown scheme"), "{e}");
        let e = loc("redis://u:secret@h", None).unwrap_err();
        assert!(e.contains("--share-key") && !e.contains("secret"), "{e}");
        assert!(loc("redis://h#a", Some("b")).unwrap_err().contains("once"));
        assert!(loc("redis://h#a b", None).is_err());
        assert!(
            loc("/tmp/x", Some("k"))
                .unwrap_err()
                .contains("one schedule")
        );
        assert!(
            loc("http://h", None)
                .unwrap_err()
                .contains("unknown scheme")
        );
        assert_eq!(
            Location::Redis {
                url: "redis://u:pw@h:1/0".into(),
                name: "n".into()
            }
            .describe(),
            "redis://u:***@h:1/0#n"
        );
    }

    fn plan(spec: &str) -> Result<Plan, String> {
        Plan::of(&parse_spec(spec).unwrap().members[0].config)
    }

    #[test]
    fn plans_follow_the_policy() {
        let p = plan("shaper:rate=200/s,burst=8").unwrap();
        assert_eq!(
            p,
            Plan {
                params: Params {
                    interval: 5_000,
                    max_delay: 40_000,
                    slots: 1
                },
                waits: true
            }
        );
        assert_eq!(
            plan("shaper:rate=3/s,max-wait=2s").unwrap().params,
            Params {
                interval: 333_334,
                max_delay: 2_000_000,
                slots: 1
            }
        );
        // gcra(burst=B) ≡ token bucket ≡ leaky meter: D = (B−1)·I, no wait.
        for spec in [
            "gcra:rate=10/s,burst=4",
            "token-bucket:rate=10/s,burst=4",
            "leaky-bucket:rate=10/s,capacity=4",
        ] {
            let p = plan(spec).unwrap();
            assert_eq!((p.params.max_delay, p.waits), (300_000, false), "{spec}");
        }
        assert!(plan("sliding-log:limit=5,window=1s").is_err());
        assert_eq!(interval_micros(Rate::new(1, Nanos(1)).unwrap()), 1);
    }

    #[test]
    fn a_bucket_grants_its_burst_at_once_then_one_per_interval() {
        // gcra(10/s, burst 3) through reserve() admits what the policy admits.
        use crate::policy::{
            Decision, Policy,
            gcra::{Gcra, GcraState},
        };
        let rate = Rate::new(10, Nanos::from_secs(1)).unwrap();
        let g = Gcra::new(rate, std::num::NonZeroU64::new(3).unwrap());
        let p = plan("gcra:rate=10/s,burst=3").unwrap().params;
        let mut gs = GcraState::default();
        let mut state = 0;
        let mut rng = crate::testing::Rng(11);
        let mut now = 1_000_000u64;
        for _ in 0..5_000 {
            now += rng.below(150_000);
            let d = g.decide(&mut gs, Nanos(now * MICROS), 1);
            let (s, out) = reserve::reserve(state, now, p);
            state = s;
            match (d, out) {
                (Decision::Admit { .. }, Outcome::Granted { .. }) => {}
                (Decision::Refuse { retry_at: Some(r) }, Outcome::Refused { retry_after }) => {
                    assert_eq!(r, Nanos((now + retry_after) * MICROS));
                }
                other => panic!("at {now}: {other:?}"),
            }
        }
    }
}
