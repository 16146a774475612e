//! What `size` sweeps: a policy spec with its swept parameters left out
//! (`gcra`, `nginx:nodelay`, `fixed-window:align=first-hit,count=all`),
//! the axis it is swept along (rates for the bucket families, windows for
//! the window families), and the complete spec of every (axis point, size)
//! pair — text that `drip audit -p` accepts as it is.

use crate::policy::{KeyChoice, PolicyConfig, parse_spec};
use crate::rate::{Rate, parse_duration, parse_rate};
use crate::time::Nanos;
use anyhow::{Result, bail};

/// The largest size a spec accepts (burst, capacity or limit).
pub const CAP: u64 = 1_000_000_000;

/// Bucket families are swept along rates, window families along windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    Rate,
    Window,
}

/// A policy with its swept parameters left out.
#[derive(Clone, Debug)]
pub struct Family {
    pub name: &'static str,
    pub axis: Axis,
    /// `burst`, `capacity` or `limit`.
    pub size_param: &'static str,
    /// The smallest size the spec accepts (0 for a shaper's or nginx's burst).
    pub min_size: u64,
    /// Every other parameter, as written.
    kept: Vec<String>,
    /// `rate=` or `window=` given in the spec: the one axis point.
    pub fixed: Option<String>,
    pub key: KeyChoice,
}

/// One point of the axis: its text in a spec and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub text: String,
    pub value: PointValue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointValue {
    Rate(Rate),
    Window(Nanos),
}

impl Family {
    /// Reads `-p SPEC`: one policy, no `+` stack, swept parameters left out.
    pub fn parse(text: &str) -> Result<Family> {
        let text = text.trim();
        if text.contains('+') {
            bail!(
                "invalid policy '{text}': size sweeps one policy, not a '+' stack; give one spec such as gcra or nginx:nodelay"
            );
        }
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let name = name.trim();
        let (name, axis, size_param, min_size): (&'static str, _, _, _) = match name {
            "token-bucket" => ("token-bucket", Axis::Rate, "burst", 1),
            "gcra" => ("gcra", Axis::Rate, "burst", 1),
            "leaky-bucket" => ("leaky-bucket", Axis::Rate, "capacity", 1),
            "shaper" => ("shaper", Axis::Rate, "burst", 0),
            "nginx" => ("nginx", Axis::Rate, "burst", 0),
            "fixed-window" => ("fixed-window", Axis::Window, "limit", 1),
            "sliding-window" => ("sliding-window", Axis::Window, "limit", 1),
            "sliding-log" => ("sliding-log", Axis::Window, "limit", 1),
            _ => {
                // The core's message lists the valid names.
                parse_spec(text)?;
                bail!("invalid policy '{text}': unknown policy '{name}'");
            }
        };
        let axis_param = match axis {
            Axis::Rate => "rate",
            Axis::Window => "window",
        };
        let mut kept = Vec::new();
        let mut fixed = None;
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (item, None),
            };
            if k == size_param {
                bail!(
                    "invalid policy '{text}': {size_param}= is what size finds; leave it out (-p {name}{})",
                    strip_param(rest, k)
                );
            }
            if name == "shaper" && k == "max-wait" {
                bail!(
                    "invalid policy '{text}': size finds the shaper's burst; give the longest acceptable wait as the target --max-wait instead of max-wait="
                );
            }
            if k == axis_param {
                fixed = v.map(str::to_string);
                continue;
            }
            kept.push(item.to_string());
        }
        let mut family = Family {
            name,
            axis,
            size_param,
            min_size,
            kept,
            fixed,
            key: KeyChoice::Default,
        };
        // Any other mistake in the spec, in the core's words.
        let probe = match axis {
            Axis::Rate if name == "nginx" => "1r/s",
            Axis::Rate => "1/s",
            Axis::Window => "1s",
        };
        let axis_text = family.fixed.clone().unwrap_or_else(|| probe.to_string());
        let whole = parse_spec(&family.spec(&axis_text, family.min_size.max(1)))?;
        family.key = whole.members[0].key.clone();
        Ok(family)
    }

    /// True for the families swept along rates.
    pub fn is_bucket(&self) -> bool {
        self.axis == Axis::Rate
    }

    pub fn is_nginx(&self) -> bool {
        self.name == "nginx"
    }

    /// True when nginx delays (no `nodelay`): admitted requests may wait.
    pub fn nginx_delays(&self) -> bool {
        self.is_nginx() && !self.kept.iter().any(|k| k == "nodelay")
    }

    /// nginx's `delay=` as given (0 when absent).
    pub fn nginx_delay(&self) -> u64 {
        self.kept
            .iter()
            .find_map(|k| k.strip_prefix("delay="))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// The complete spec at one axis point and size.
    pub fn spec(&self, axis_text: &str, size: u64) -> String {
        let axis_param = match self.axis {
            Axis::Rate => "rate",
            Axis::Window => "window",
        };
        let mut s = format!(
            "{}:{axis_param}={axis_text},{}={size}",
            self.name, self.size_param
        );
        for k in &self.kept {
            s.push(',');
            s.push_str(k);
        }
        s
    }

    /// The policy at one axis point and size.
    pub fn config(&self, axis_text: &str, size: u64) -> Result<PolicyConfig> {
        let spec = parse_spec(&self.spec(axis_text, size))?;
        Ok(spec.members[0].config)
    }

    /// The axis points from `--rate`/`--window`, or the spec's own one.
    pub fn points(&self, rate: Option<&str>, window: Option<&str>) -> Result<Option<Vec<Point>>> {
        let given = match self.axis {
            Axis::Rate => {
                if window.is_some() {
                    bail!(
                        "--window applies to the window families (fixed-window, sliding-window, sliding-log); {} is swept along --rate",
                        self.name
                    );
                }
                rate
            }
            Axis::Window => {
                if rate.is_some() {
                    bail!(
                        "--rate applies to the bucket families (token-bucket, leaky-bucket, gcra, shaper, nginx); {} is swept along --window",
                        self.name
                    );
                }
                window
            }
        };
        let flag = match self.axis {
            Axis::Rate => "--rate",
            Axis::Window => "--window",
        };
        if let Some(f) = &self.fixed {
            if given.is_some() {
                bail!(
                    "the spec gives {}={f} and {flag} is given too; give one",
                    match self.axis {
                        Axis::Rate => "rate",
                        Axis::Window => "window",
                    }
                );
            }
            return Ok(Some(vec![self.point(f, flag)?]));
        }
        let Some(given) = given else {
            return Ok(None);
        };
        if let Some((a, b)) = given.split_once("..") {
            if self.axis == Axis::Window {
                bail!("invalid --window '{given}': give a list such as 1s,10s,1m");
            }
            let (a, b) = (self.point(a, flag)?, self.point(b, flag)?);
            let (PointValue::Rate(ra), PointValue::Rate(rb)) = (a.value, b.value) else {
                unreachable!("rates on the rate axis")
            };
            if per_sec_cmp(ra, rb) == std::cmp::Ordering::Greater {
                bail!("invalid --rate '{given}': the range goes from the lower rate to the higher");
            }
            let ladder = self.ladder(ra, rb);
            if ladder.is_empty() {
                bail!(
                    "invalid --rate '{given}': no round rate (1, 2 or 5 × 10^k per second, minute or hour) lies in the range; give a list instead"
                );
            }
            return Ok(Some(ladder));
        }
        let mut points: Vec<Point> = Vec::new();
        for t in given.split(',').map(str::trim) {
            if t.is_empty() {
                bail!("invalid {flag} '{given}': an empty item; separate values with commas");
            }
            let p = self.point(t, flag)?;
            if !points.iter().any(|q| q.value == p.value) {
                points.push(p);
            }
        }
        Ok(Some(points))
    }

    /// One axis point as written.
    fn point(&self, text: &str, flag: &str) -> Result<Point> {
        let text = text.trim();
        match self.axis {
            Axis::Window => {
                let w = parse_duration(text).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
                if w == Nanos::ZERO {
                    bail!("{flag}: the window '{text}' is zero; give a length such as 1s or 1m");
                }
                Ok(Point {
                    text: text.to_string(),
                    value: PointValue::Window(w),
                })
            }
            Axis::Rate if self.is_nginx() => {
                let rate = parse_rate(text).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
                let text = nginx_rate_text(rate).ok_or_else(|| {
                    anyhow::anyhow!(
                        "{flag}: nginx takes a whole number of requests per second or per minute; '{text}' is neither (e.g. 10r/s, 30r/m)"
                    )
                })?;
                // nginx's own reading of it (r/m truncation included).
                let value = self.config(&text, 0).map(|_| rate)?;
                Ok(Point {
                    text,
                    value: PointValue::Rate(value),
                })
            }
            Axis::Rate => {
                let rate = parse_rate(text).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
                Ok(Point {
                    text: text.to_string(),
                    value: PointValue::Rate(rate),
                })
            }
        }
    }

    /// The round rates from `lo` to `hi`, both included: 1, 2 and 5 × 10^k
    /// per second, and below one a second 1, 2, 5, 10, 20, 50 per minute,
    /// and below one a minute the same per hour. nginx takes whole `r/s`
    /// or `r/m`, so its ladder stops at one a minute.
    pub fn ladder(&self, lo: Rate, hi: Rate) -> Vec<Point> {
        let mut all: Vec<(u64, u64, &str)> = Vec::new(); // (count, period s, unit)
        if !self.is_nginx() {
            for n in [1, 2, 5, 10, 20, 50] {
                all.push((n, 3600, "h"));
            }
        }
        for n in [1, 2, 5, 10, 20, 50] {
            all.push((n, 60, if self.is_nginx() { "r/m" } else { "min" }));
        }
        let mut n = 1u64;
        while n <= CAP {
            for m in [1, 2, 5] {
                all.push((n * m, 1, if self.is_nginx() { "r/s" } else { "s" }));
            }
            n *= 10;
        }
        all.into_iter()
            .filter_map(|(n, secs, unit)| {
                let rate = Rate::new(n, Nanos::from_secs(secs)).ok()?;
                let inside = per_sec_cmp(rate, lo) != std::cmp::Ordering::Less
                    && per_sec_cmp(rate, hi) != std::cmp::Ordering::Greater;
                inside.then(|| Point {
                    text: if unit.starts_with('r') {
                        format!("{n}{unit}")
                    } else {
                        format!("{n}/{unit}")
                    },
                    value: PointValue::Rate(rate),
                })
            })
            .collect()
    }

    /// The smallest round rate at or above `r`, as a ladder point.
    pub fn round_up(&self, r: Rate) -> Option<Point> {
        let top = Rate::new(CAP, Nanos::from_secs(1)).ok()?;
        self.ladder(r, top).into_iter().next()
    }
}

/// The spec's text without `param=...`, for a message's suggestion.
fn strip_param(rest: &str, param: &str) -> String {
    let others: Vec<&str> = rest
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.split('=').next().map(str::trim) != Some(param))
        .collect();
    if others.is_empty() {
        String::new()
    } else {
        format!(":{}", others.join(","))
    }
}

/// Compares two rates as events per second, exactly.
pub fn per_sec_cmp(a: Rate, b: Rate) -> std::cmp::Ordering {
    (u128::from(a.count()) * u128::from(b.per().0))
        .cmp(&(u128::from(b.count()) * u128::from(a.per().0)))
}

/// A rate in nginx's spelling when it is a whole number per second or per
/// minute.
pub fn nginx_rate_text(r: Rate) -> Option<String> {
    let per_sec = u128::from(r.count()) * u128::from(Nanos::PER_SEC);
    if per_sec.is_multiple_of(u128::from(r.per().0)) {
        return Some(format!("{}r/s", per_sec / u128::from(r.per().0)));
    }
    let per_min = per_sec * 60;
    if per_min.is_multiple_of(u128::from(r.per().0)) {
        return Some(format!("{}r/m", per_min / u128::from(r.per().0)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(ps: &[Point]) -> Vec<String> {
        ps.iter().map(|p| p.text.clone()).collect()
    }

    #[test]
    fn specs_keep_every_other_parameter() {
        let f = Family::parse("nginx:nodelay,key=host").unwrap();
        assert_eq!(
            f.spec("10r/s", 12),
            "nginx:rate=10r/s,burst=12,nodelay,key=host"
        );
        let f = Family::parse("fixed-window:align=first-hit,count=all").unwrap();
        assert_eq!(
            f.spec("1m", 100),
            "fixed-window:window=1m,limit=100,align=first-hit,count=all"
        );
        assert!(parse_spec(&f.spec("1m", 100)).is_ok());
        let f = Family::parse("shaper:key=none").unwrap();
        assert_eq!(f.key, KeyChoice::Global);
        assert_eq!(f.min_size, 0);
    }

    #[test]
    fn swept_parameters_and_stacks_are_refused() {
        let e = |t: &str| Family::parse(t).unwrap_err().to_string();
        assert!(e("gcra:burst=5").contains("burst= is what size finds"));
        assert!(e("gcra+shaper").contains("not a '+' stack"));
        assert!(e("shaper:max-wait=2s").contains("--max-wait"));
        assert!(e("bogus").contains("unknown policy 'bogus'"));
        assert!(e("gcra:align=epoch").contains("unknown parameter 'align'"));
    }

    #[test]
    fn ranges_are_ladders_of_round_rates() {
        let f = Family::parse("gcra").unwrap();
        let p = f.points(Some("1/s..50/s"), None).unwrap().unwrap();
        assert_eq!(texts(&p), ["1/s", "2/s", "5/s", "10/s", "20/s", "50/s"]);
        let p = f.points(Some("0.1/s..3/s"), None).unwrap().unwrap();
        assert_eq!(texts(&p), ["10/min", "20/min", "50/min", "1/s", "2/s"]);
        let n = Family::parse("nginx").unwrap();
        let p = n.points(Some("0.5/s..10r/s"), None).unwrap().unwrap();
        assert_eq!(texts(&p), ["50r/m", "1r/s", "2r/s", "5r/s", "10r/s"]);
        let p = n.points(Some("2/s,30/min"), None).unwrap().unwrap();
        assert_eq!(texts(&p), ["2r/s", "30r/m"]);
        assert!(n.points(Some("1/7s"), None).is_err());
        let w = Family::parse("sliding-log").unwrap();
        let p = w.points(None, Some("1s,1m")).unwrap().unwrap();
        assert_eq!(texts(&p), ["1s", "1m"]);
        assert!(w.points(Some("1/s"), None).is_err());
    }
}
