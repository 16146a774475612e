//! Fixed window counter: at most `limit` units per window of length `W`.
//!
//! `align=epoch` (default): windows are `[k·W, (k+1)·W)` on the timestamps'
//! own axis (Unix epoch in audit). `align=first-hit`: a key's window opens at
//! its first hit and lasts `W`; the next hit after it closes opens the next.
//! A request of `cost` c is admitted iff `count + c ≤ limit`.
//! `count=admitted` (default) counts admitted units only; `count=all` counts
//! refused units too, as the Redis `INCR` + `EXPIRE` limiter (and Python
//! `limits`) does: with `align=first-hit,count=all` this is that limiter.
//! A refusal's retry time is the start of the next window; a cost above
//! `limit` can never fit and gets none. With `count=all` every hit adds its
//! cost to the counter, a cost above `limit` too (Redis `INCRBY` and
//! Python `limits` count it); the window's end frees the key.
//!
//! `window=month` and `window=year` are calendar windows in UTC (the
//! timestamps read as Unix time): each month (year) from its first day at
//! 00:00:00 to the next one's, as Kong's rate-limiting plugin counts its
//! `month` and `year` periods (`kong/tools/timestamp.lua`: the period's
//! start is the UTC calendar month's or year's). A 30-day month, as
//! Envoy's ratelimit service has it, is `window=30d`.
//!
//! Spec: `fixed-window:limit=N,window=DURATION|month|year
//! [,align=epoch|first-hit][,count=admitted|all]`.

use super::rule::{
    AxisPoint, Info, Listed, ParamError, Params, Sizing, limit_per_window, positive, window_point,
};
use super::{Decision, Policy, Window};
use crate::time::Nanos;
use std::num::NonZeroU64;

/// Where a key's window starts (`align=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// `[k·W, (k+1)·W)` on the timestamps' axis (`epoch`, the default).
    Epoch,
    /// At the key's first hit after its last window closed (`first-hit`).
    FirstHit,
}

/// Which units the window's counter counts (`count=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountMode {
    /// Admitted units only (`admitted`, the default).
    Admitted,
    /// Refused units too, as Redis `INCR` + `EXPIRE` does (`all`).
    All,
}

/// A calendar window in UTC (`window=month|year`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Calendar {
    /// From the first of a month, 00:00 UTC, to the next month's.
    Month,
    /// From January 1, 00:00 UTC, to the next year's.
    Year,
}

impl Calendar {
    /// The start of the window that holds `now` and the start of the next.
    fn bounds(self, now: Nanos) -> (Nanos, Nanos) {
        let day = 86_400 * Nanos::PER_SEC;
        let (y, m, _) = civil_from_days((now.0 / day) as i64);
        let (start, next) = match self {
            Calendar::Month => ((y, m), if m == 12 { (y + 1, 1) } else { (y, m + 1) }),
            Calendar::Year => ((y, 1), (y + 1, 1)),
        };
        let at = |(y, m): (i64, u32)| {
            Nanos((days_from_civil(y, m, 1).max(0) as u64).saturating_mul(day))
        };
        (at(start), at(next))
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day since 1970-01-01 (`civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// At most `limit` units per window of length `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedWindow {
    limit: u64,
    /// The window's length (a calendar window's shortest).
    window: Nanos,
    align: Align,
    count: CountMode,
    calendar: Option<Calendar>,
}

impl FixedWindow {
    /// At most `limit` units per `window`, its windows placed by `align`
    /// and counted by `count`.
    pub fn new(limit: NonZeroU64, window: Window, align: Align, count: CountMode) -> Self {
        FixedWindow {
            limit: limit.get(),
            window: window.span(),
            align,
            count,
            calendar: None,
        }
    }

    /// At most `limit` units per calendar month or year, in UTC.
    pub fn calendar(limit: NonZeroU64, calendar: Calendar, count: CountMode) -> Self {
        let day = 86_400 * Nanos::PER_SEC;
        let shortest = match calendar {
            Calendar::Month => 28 * day,
            Calendar::Year => 365 * day,
        };
        FixedWindow {
            limit: limit.get(),
            window: Nanos(shortest),
            align: Align::Epoch,
            count,
            calendar: Some(calendar),
        }
    }

    /// The end of the window that starts at `start`.
    fn end(&self, start: Nanos) -> Nanos {
        match self.calendar {
            Some(c) => c.bounds(start).1,
            None => start.saturating_add(self.window),
        }
    }

    /// (window start, count so far) of the window that holds `now`.
    fn current(&self, s: &FixedWindowState, now: Nanos) -> (Nanos, u64) {
        if s.count > 0 && now < self.end(s.start) && now >= s.start {
            return (s.start, s.count);
        }
        let start = match (self.calendar, self.align) {
            (Some(c), _) => c.bounds(now).0,
            (None, Align::Epoch) => Nanos(now.0 - now.0 % self.window.0),
            (None, Align::FirstHit) => now,
        };
        (start, 0)
    }
}

/// The open window's start and count; count 0 means no open window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedWindowState {
    /// The instant the open window started.
    pub start: Nanos,
    /// Units counted in it (see [`CountMode`]).
    pub count: u64,
}

super::rule::plain_state!(FixedWindowState);

/// `count=`.
fn count_mode(p: &mut Params<'_>) -> Result<CountMode, ParamError> {
    match p.value("count")? {
        None | Some("admitted") => Ok(CountMode::Admitted),
        Some("all") => Ok(CountMode::All),
        Some(v) => Err(ParamError::new(format!(
            "count='{v}': valid: admitted, all"
        ))),
    }
}

impl Listed for FixedWindow {
    const NAME: &'static str = "fixed-window";
    const PARAMS: &'static [&'static str] = &["limit", "window", "align", "count"];
    const SIZING: Sizing = Sizing::WINDOWS;

    fn parse(p: &mut Params<'_>) -> Result<Self, ParamError> {
        let calendar = match p.get("window") {
            Some(Some("month")) => Some(Calendar::Month),
            Some(Some("year")) => Some(Calendar::Year),
            _ => None,
        };
        if let Some(c) = calendar {
            p.take("window");
            let limit = p.positive("limit", None)?;
            if p.value("align")?.is_some_and(|a| a != "epoch") {
                return Err(ParamError::new(
                    "window=month and window=year are calendar windows in UTC: align= does not apply",
                ));
            }
            return Ok(FixedWindow::calendar(limit, c, count_mode(p)?));
        }
        let (limit, window) = p.limit_window()?;
        let align = match p.value("align")? {
            None | Some("epoch") => Align::Epoch,
            Some("first-hit") => Align::FirstHit,
            Some(v) => {
                return Err(ParamError::new(format!(
                    "align='{v}': valid: epoch, first-hit"
                )));
            }
        };
        let count = count_mode(p)?;
        Ok(FixedWindow::new(
            limit,
            Params::window(window)?,
            align,
            count,
        ))
    }

    fn info(&self) -> Info {
        Info {
            refusal_counts: self.count == CountMode::All,
            // `count=all` counts refused hits too: no bound.
            max_level: match self.count {
                CountMode::Admitted => self.limit,
                CountMode::All => u64::MAX,
            },
            ..Info::bounded(self.limit)
        }
    }

    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, ParamError> {
        let window = window_point(Self::NAME, at)?;
        Ok(FixedWindow::new(
            positive("limit", size)?,
            window,
            self.align,
            self.count,
        ))
    }

    /// `limit` in each window `h` touches, and one more before them.
    fn worst_within(&self, h: Nanos) -> u64 {
        limit_per_window(self.limit, self.window, h, 1)
    }
}

impl Policy for FixedWindow {
    type State = FixedWindowState;

    fn check(&self, s: &FixedWindowState, now: Nanos, cost: u64) -> Decision {
        let (start, count) = self.current(s, now);
        if count + cost <= self.limit {
            Decision::Admit { release: now }
        } else {
            Decision::Refuse {
                retry_at: Some(self.end(start)),
            }
        }
    }

    fn admit(&self, s: &mut FixedWindowState, now: Nanos, cost: u64) {
        let (start, count) = self.current(s, now);
        *s = FixedWindowState {
            start,
            count: count + cost,
        };
    }

    fn refuse(&self, s: &mut FixedWindowState, now: Nanos, cost: u64) {
        // An oversized hit counts too, as `INCRBY` does; it cannot wedge the
        // key because the window's end resets the counter.
        if self.count == CountMode::All {
            let (start, count) = self.current(s, now);
            *s = FixedWindowState {
                start,
                count: count.saturating_add(cost),
            };
        }
    }

    /// `check`, then `admit` or `refuse`, finding the current window once.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        s: &mut FixedWindowState,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        let (start, count) = self.current(s, now);
        if count + cost <= self.limit {
            *s = FixedWindowState {
                start,
                count: count + cost,
            };
            return Decision::Admit { release: now };
        }
        if self.count == CountMode::All {
            *s = FixedWindowState {
                start,
                count: count.saturating_add(cost),
            };
        }
        Decision::Refuse {
            retry_at: RETRY.then(|| self.end(start)),
        }
    }

    fn is_neutral(&self, s: &FixedWindowState, now: Nanos) -> bool {
        self.current(s, now).1 == 0
    }

    fn level(&self, s: &FixedWindowState, now: Nanos) -> u64 {
        self.current(s, now).1
    }
}

#[cfg(test)]
mod calendar_tests {
    use super::*;
    use crate::policy::parse_spec;
    use crate::policy::spec::Spec;

    const DAY: u64 = 86_400 * Nanos::PER_SEC;

    /// Nanoseconds of a UTC date and second of the day.
    fn at(y: i64, m: u32, d: u32, secs: f64) -> Nanos {
        Nanos(days_from_civil(y, m, d) as u64 * DAY + (secs * 1e9) as u64)
    }

    #[test]
    fn months_and_years_run_from_their_first_day_in_utc() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
        // February of a leap year, December into January, a year.
        assert_eq!(
            Calendar::Month.bounds(at(2024, 2, 15, 3600.0)),
            (at(2024, 2, 1, 0.0), at(2024, 3, 1, 0.0))
        );
        assert_eq!(
            Calendar::Month.bounds(at(2026, 12, 31, 86_399.9)),
            (at(2026, 12, 1, 0.0), at(2027, 1, 1, 0.0))
        );
        assert_eq!(
            Calendar::Year.bounds(at(2026, 7, 4, 0.0)),
            (at(2026, 1, 1, 0.0), at(2027, 1, 1, 0.0))
        );
        for z in (0..40_000).step_by(37) {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn a_month_refuses_until_the_next_one_starts() {
        let spec: Spec = parse_spec("fixed-window:limit=2,window=month").unwrap();
        let mut stack = spec.build();
        let keys = [Some(0)];
        let mut d = |t: Nanos| stack.decide(&keys, t, 1);
        assert!(matches!(d(at(2026, 1, 1, 0.0)), Decision::Admit { .. }));
        assert!(matches!(
            d(at(2026, 1, 31, 86_399.0)),
            Decision::Admit { .. }
        ));
        // The third in January waits for February 1, 00:00 UTC.
        assert_eq!(
            d(at(2026, 1, 31, 86_399.5)),
            Decision::Refuse {
                retry_at: Some(at(2026, 2, 1, 0.0))
            }
        );
        assert!(matches!(d(at(2026, 2, 1, 0.0)), Decision::Admit { .. }));
        assert!(parse_spec("fixed-window:limit=2,window=month,align=first-hit").is_err());
        assert!(parse_spec("fixed-window:limit=2,window=year,count=all").is_ok());
    }
}
