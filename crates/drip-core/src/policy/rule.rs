//! What every rule declares, in one place that imports no rule: its name,
//! parameters and parser ([`Listed`]), what reports and drivers need of it
//! ([`Info`]), what stores need of its state ([`Prefetch`]), and what the
//! commands need of it: how `size` sweeps it ([`Sizing`],
//! [`Listed::resized`], [`Listed::worst_within`]), how a shared schedule
//! keeps it ([`Shared`]) and the rate `pace` spaces lines at. The rules
//! import this file; the table (`table.rs`) imports the rules.

use super::Policy;
use super::Window;
use crate::rate::{Rate, parse_duration, parse_rate};
use crate::time::Nanos;
use std::fmt;
use std::num::NonZeroU64;

/// Why a policy's parameters were rejected: one line naming the parameter
/// and what is valid (`burst must be at least 1`), shown as is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError(String);

impl ParamError {
    /// The error saying `message`.
    pub fn new(message: impl Into<String>) -> ParamError {
        ParamError(message.into())
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParamError {}

/// What `level` measures, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelKind {
    /// Bucket level or window count.
    Level,
    /// Requests admitted and waiting to be released.
    Backlog,
}

impl LevelKind {
    /// The word reports print.
    pub fn as_str(self) -> &'static str {
        match self {
            LevelKind::Level => "level",
            LevelKind::Backlog => "backlog",
        }
    }
}

/// What drivers and reports need to know about a configured policy,
/// computed once from its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    /// Admitted requests may be delayed (shaper, nginx without `nodelay`).
    pub shapes: bool,
    /// What `level` measures.
    pub level_kind: LevelKind,
    /// The highest `level` can ever be (`u64::MAX`: no bound), so a driver
    /// tracking a peak can stop asking once it is reached.
    pub max_level: u64,
    /// The largest cost that can ever be admitted: a larger one is refused
    /// with no retry time (see [`Checked`](super::Checked)).
    pub max_cost: u64,
    /// A refusal changes state (fixed-window `count=all`), so a level may
    /// rise after one.
    pub refusal_counts: bool,
    /// A state owns memory beyond its own size (the sliding log's entries),
    /// so resetting neutral states frees memory.
    pub holds_memory: bool,
}

impl Info {
    /// A policy that admits or refuses at once, holds at most `size` units
    /// and refuses nothing but to keep that bound.
    pub fn bounded(size: u64) -> Info {
        Info {
            shapes: false,
            level_kind: LevelKind::Level,
            max_level: size,
            max_cost: size,
            refusal_counts: false,
            holds_memory: false,
        }
    }
}

/// The axis `size` sweeps a policy along.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Rates (the bucket families).
    Rate,
    /// Window lengths (the window families).
    Window,
}

impl Axis {
    /// The parameter that gives the axis point in a spec.
    pub fn param(self) -> &'static str {
        match self {
            Axis::Rate => "rate",
            Axis::Window => "window",
        }
    }
}

/// How a policy's rates are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateForm {
    /// Any exact rate (`5/s`, `0.5/s`, `3/min`).
    Any,
    /// A whole number of requests per second or per minute, as nginx
    /// writes it (`10r/s`, `30r/m`).
    NginxWhole,
}

/// One point of a sweep's axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisPoint {
    /// A rate, on [`Axis::Rate`].
    Rate(Rate),
    /// A window's length, on [`Axis::Window`].
    Window(Nanos),
}

/// What `size` needs to sweep a policy: along which axis, and which
/// parameter it finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizing {
    /// The axis swept.
    pub axis: Axis,
    /// How the axis's rates are written (rate axis only).
    pub rate_form: RateForm,
    /// `burst`, `capacity` or `limit`.
    pub size_param: &'static str,
    /// The smallest size the policy accepts (0 for a shaper's or nginx's
    /// burst).
    pub min_size: u64,
    /// How far `level` after an admit can exceed the size (nginx counts
    /// the admitted request itself: 1).
    pub level_over_size: u64,
    /// Parameters `size` refuses in the swept spec, besides the size
    /// parameter, each with what to give instead.
    pub refused: &'static [(&'static str, &'static str)],
}

impl Sizing {
    /// A bucket family swept along any rate for `size_param` of at least 1.
    pub const fn rates(size_param: &'static str) -> Sizing {
        Sizing {
            axis: Axis::Rate,
            rate_form: RateForm::Any,
            size_param,
            min_size: 1,
            level_over_size: 0,
            refused: &[],
        }
    }

    /// A window family: `limit` swept along window lengths.
    pub const WINDOWS: Sizing = Sizing {
        axis: Axis::Window,
        ..Sizing::rates("limit")
    };
}

/// The delay a shared schedule allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedDelay {
    /// This many intervals of the rate.
    Intervals(u64),
    /// This span.
    Span(Nanos),
}

/// How a policy is kept in a schedule shared between processes: its state
/// is one number moved by `rate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shared {
    /// The rate the schedule advances at: one interval a unit granted.
    pub rate: Rate,
    /// The longest delay a granted request may get: how far ahead of
    /// `now` the schedule may be for a request to fit.
    pub max_delay: SharedDelay,
    /// A granted request waits its delay (the shaper), or goes at once (a
    /// meter, whose delay only decides admit or refuse).
    pub waits: bool,
}

impl Shared {
    /// A meter of `burst` units at `rate`: a request fits while the
    /// schedule is at most `burst − 1` intervals ahead.
    pub fn meter(rate: Rate, burst: u64) -> Shared {
        Shared {
            rate,
            max_delay: SharedDelay::Intervals(burst.saturating_sub(1)),
            waits: false,
        }
    }
}

/// A policy as the table lists it: its name and parameters as written in
/// specs, its parser, what it tells reports, and what the commands need of
/// it. Implemented by each policy's module; the variant it lives in comes
/// from the table.
pub trait Listed: Policy<State: Prefetch + Send> + Copy + Send + Sync + 'static {
    /// The name in specs.
    const NAME: &'static str;
    /// The parameters it takes (besides `label` and `key`), for errors.
    const PARAMS: &'static [&'static str];
    /// How `size` sweeps it.
    const SIZING: Sizing;
    /// Reads its parameters; every error names the parameter and what is
    /// valid. What parses is valid: nothing is checked again later.
    fn parse(p: &mut Params<'_>) -> Result<Self, ParamError>;
    /// What reports and drivers need, from the parameters.
    fn info(&self) -> Info;
    /// The policy at another point of its [`Sizing::axis`] and another
    /// size, every other parameter kept: what its spec with `rate=` (or
    /// `window=`) and the size parameter replaced would parse to.
    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, ParamError>;
    /// The most requests it lets through (admits, or releases when it
    /// delays) within any span of `h`.
    fn worst_within(&self, h: Nanos) -> u64;
    /// How a shared schedule keeps it; `None` when its state is not one
    /// number.
    fn shared(&self) -> Option<Shared> {
        None
    }
    /// The rate `pace` spaces lines at under it, for the policies that
    /// release on one schedule.
    fn pace_rate(&self) -> Option<Rate> {
        None
    }
}

/// The rate of a rate point; an error naming the policy otherwise.
pub fn rate_point(name: &str, at: AxisPoint) -> Result<Rate, ParamError> {
    match at {
        AxisPoint::Rate(r) => Ok(r),
        AxisPoint::Window(_) => Err(ParamError(format!(
            "{name} is swept along rates, not windows"
        ))),
    }
}

/// The window of a window point; an error naming the policy otherwise.
pub fn window_point(name: &str, at: AxisPoint) -> Result<Window, ParamError> {
    match at {
        AxisPoint::Window(w) => Params::window(w),
        AxisPoint::Rate(_) => Err(ParamError(format!(
            "{name} is swept along windows, not rates"
        ))),
    }
}

/// A size of at least 1, for the parameter `key`.
pub fn positive(key: &str, size: u64) -> Result<NonZeroU64, ParamError> {
    NonZeroU64::new(size).ok_or_else(|| ParamError(format!("{key} must be at least 1")))
}

/// ⌊rate · h⌋: the units `rate` refills within `h`.
pub fn refill_within(rate: Rate, h: Nanos) -> u128 {
    u128::from(h.0) * u128::from(rate.count()) / u128::from(rate.per().0)
}

/// `limit` in each of the ⌈h / window⌉ windows a span `h` touches, and in
/// `more` windows besides: what a window family lets through within `h`.
pub fn limit_per_window(limit: u64, window: Nanos, h: Nanos, more: u64) -> u64 {
    let windows = u128::from(h.0.div_ceil(window.0)) + u128::from(more);
    saturate(u128::from(limit) * windows)
}

/// `v` as a `u64`, saturated.
pub fn saturate(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// Asks the CPU to start loading the cache line at `p`.
#[inline(always)]
pub fn prefetch_line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, even on a bad address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Asks the CPU to start loading every cache line `items` spans.
#[inline(always)]
pub fn prefetch_lines<T>(items: &[T]) {
    const LINE: usize = 64;
    let start = items.as_ptr() as usize;
    let end = start + std::mem::size_of_val(items);
    let mut at = start & !(LINE - 1);
    while at < end {
        prefetch_line(at as *const u8);
        at += LINE;
    }
}

/// What stores need of a policy's state besides the rule: speed hooks
/// (start loading what the state points to, the sliding log's oldest
/// entry, so that a replay can ask a few rows ahead; whether a sweep may
/// skip it) and the memory contract of sweeps (which states hold memory of
/// their own, and giving back what they hold beyond their needs).
pub trait Prefetch {
    /// Starts loading what the state points to, if anything (the sliding
    /// log's queue); changes nothing.
    #[inline(always)]
    fn prefetch_deep(&self) {}
    /// Whether `prefetch_deep` loads anything.
    const DEEP: bool = false;
    /// True when the state is as a new one (resetting it would change
    /// nothing), so that a sweep need not write it; false when unsure.
    #[inline(always)]
    fn is_clear(&self) -> bool {
        false
    }
    /// True when the state holds memory of its own, which a sweep gives
    /// back by resetting it once neutral. Every state says (no default): a
    /// state of a policy whose [`Info::holds_memory`] is set must, since
    /// records sweep only the states that took memory. A state holding
    /// memory keeps holding it until a sweep resets or compacts it.
    fn owns(&self) -> bool;
    /// Gives back what the state holds beyond what its contents need (a
    /// sweep calls it on the states it keeps); changes no decision.
    #[inline(always)]
    fn compact(&mut self) {}
}

/// [`Prefetch`] for a state that holds no memory of its own and points to
/// nothing (every state but the sliding log's).
macro_rules! plain_state {
    ($state:ty) => {
        impl $crate::policy::rule::Prefetch for $state {
            fn owns(&self) -> bool {
                false
            }
        }
    };
}

pub(super) use plain_state;

/// A member's parameters as written, taken one by one by its policy's
/// parser; whatever is left over is an unknown parameter.
pub struct Params<'a> {
    name: &'a str,
    values: Vec<(&'a str, Option<&'a str>)>,
}

impl<'a> Params<'a> {
    /// The parameters `values` of policy `name`, none taken yet.
    pub fn new(name: &'a str, values: Vec<(&'a str, Option<&'a str>)>) -> Params<'a> {
        Params { name, values }
    }

    /// The policy's name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The first parameter no parser took, if any.
    pub fn leftover(&self) -> Option<&'a str> {
        self.values.first().map(|(k, _)| *k)
    }

    /// The parameter `key` if given: `Some(None)` for a bare flag.
    pub fn take(&mut self, key: &str) -> Option<Option<&'a str>> {
        let i = self.values.iter().position(|(k, _)| *k == key)?;
        Some(self.values.remove(i).1)
    }

    /// The value of `key` if given, left to be taken.
    pub fn get(&self, key: &str) -> Option<Option<&'a str>> {
        self.values.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// True when `key` is given (and not yet taken).
    pub fn has(&self, key: &str) -> bool {
        self.values.iter().any(|(k, _)| *k == key)
    }

    /// The value of `key` if given; a bare `key` is an error.
    pub fn value(&mut self, key: &str) -> Result<Option<&'a str>, ParamError> {
        match self.take(key) {
            None => Ok(None),
            Some(Some(v)) => Ok(Some(v)),
            Some(None) => Err(ParamError(format!("'{key}' needs a value: {key}=VALUE"))),
        }
    }

    /// The value of `key`, which must be given.
    pub fn required(&mut self, key: &str, example: &str) -> Result<&'a str, ParamError> {
        self.value(key)?.ok_or_else(|| {
            ParamError(format!(
                "{} needs {key}= (for example {example})",
                self.name
            ))
        })
    }

    /// `rate=`, required.
    pub fn rate(&mut self) -> Result<Rate, ParamError> {
        let v = self.required("rate", &format!("{}:rate=5/s", self.name))?;
        parse_rate(v).map_err(|e| ParamError(e.to_string()))
    }

    /// A whole number from 0 to 10⁹; `default` when not given (`None`:
    /// required).
    pub fn count(&mut self, key: &str, default: Option<u64>) -> Result<u64, ParamError> {
        let v = match self.value(key)? {
            Some(v) => v,
            None => {
                return default.ok_or_else(|| {
                    ParamError(format!("{} needs {key}= (for example {key}=10)", self.name))
                });
            }
        };
        v.parse::<u64>()
            .ok()
            .filter(|n| *n <= 1_000_000_000)
            .ok_or_else(|| {
                ParamError(format!(
                    "{key}='{v}' is not a whole number from 0 to 1000000000"
                ))
            })
    }

    /// A [`count`](Self::count) of at least 1.
    pub fn positive(&mut self, key: &str, default: Option<u64>) -> Result<NonZeroU64, ParamError> {
        positive(key, self.count(key, default)?)
    }

    /// A duration, if given.
    pub fn duration(&mut self, key: &str) -> Result<Option<Nanos>, ParamError> {
        self.value(key)?
            .map(|v| parse_duration(v).map_err(|e| ParamError(format!("{key}: {e}"))))
            .transpose()
    }

    /// `limit=` (at least 1) and `window=`, both required, for the window
    /// family; the window's length is checked by [`window`](Self::window)
    /// once the policy's other parameters are read.
    pub fn limit_window(&mut self) -> Result<(NonZeroU64, Nanos), ParamError> {
        let limit = self.positive("limit", None)?;
        let name = self.name;
        let window = self.duration("window")?.ok_or_else(|| {
            ParamError(format!(
                "{name} needs window= (for example {name}:limit=100,window=1m)"
            ))
        })?;
        Ok((limit, window))
    }

    /// A window's length, longer than zero.
    pub fn window(span: Nanos) -> Result<Window, ParamError> {
        Window::new(span).ok_or_else(|| ParamError::new("window must be longer than zero"))
    }
}
