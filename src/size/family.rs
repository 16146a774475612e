//! What `size` sweeps: a policy spec with its swept parameters left out
//! (`gcra`, `nginx:nodelay`, `fixed-window:align=first-hit,count=all`),
//! the axis it is swept along (rates for the bucket families, windows for
//! the window families, as the policy declares in its [`Sizing`]), each
//! candidate as a policy value at one (axis point, size) pair, and its
//! complete spec — text that `drip audit -p` accepts as it is.

use crate::policy::nginx::NginxRate;
use crate::policy::rule::{Axis, AxisPoint, RateForm, Sizing};
use crate::policy::table::{POLICY_NAMES, sizing_of};
use crate::policy::{KeyChoice, NginxLimitReq, PolicyConfig, parse_spec};
use crate::rate::{Rate, parse_duration, parse_rate};
use crate::time::Nanos;
use anyhow::{Result, anyhow, bail};

/// The largest size a spec accepts (burst, capacity or limit).
pub const CAP: u64 = 1_000_000_000;

/// A policy with its swept parameters left out.
#[derive(Clone, Debug)]
pub struct Family {
    pub name: &'static str,
    /// How the policy is swept: its axis, size parameter and smallest size.
    pub sizing: Sizing,
    /// The policy as given, at a probe point and its smallest size: every
    /// candidate is this, resized.
    base: PolicyConfig,
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
    pub value: AxisPoint,
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
        let Some((name, sizing)) = sizing_of(name) else {
            // The core's message lists the valid names.
            parse_spec(text)?;
            bail!("invalid policy '{text}': unknown policy '{name}'");
        };
        let (kept, fixed) = split_params(text, name, rest, &sizing)?;
        // Any other mistake in the spec, in the core's words.
        let probe = match (sizing.axis, sizing.rate_form) {
            (Axis::Rate, RateForm::NginxWhole) => "1r/s",
            (Axis::Rate, RateForm::Any) => "1/s",
            (Axis::Window, _) => "1s",
        };
        let axis_text = fixed.as_deref().unwrap_or(probe);
        let whole = parse_spec(&spec_text(
            name,
            &sizing,
            &kept,
            axis_text,
            sizing.min_size.max(1),
        ))?;
        let member = &whole.members[0];
        Ok(Family {
            name,
            sizing,
            base: member.config,
            kept,
            fixed,
            key: member.key.clone(),
        })
    }

    /// True for the families swept along rates.
    pub fn is_bucket(&self) -> bool {
        self.sizing.axis == Axis::Rate
    }

    /// True when the policy delays admitted requests (a shaper, nginx
    /// without `nodelay`): waits are measured.
    pub fn shapes(&self) -> bool {
        self.base.info().shapes
    }

    /// The swept policy when it is nginx's, whose directives the report
    /// writes.
    pub fn nginx(&self) -> Option<NginxLimitReq> {
        self.base.nginx()
    }

    /// The complete spec at one axis point and size.
    pub fn spec(&self, axis_text: &str, size: u64) -> String {
        spec_text(self.name, &self.sizing, &self.kept, axis_text, size)
    }

    /// The policy at one axis point and size.
    pub fn config(&self, point: &Point, size: u64) -> Result<PolicyConfig> {
        self.base
            .resized(point.value, size)
            .map_err(|e| anyhow!("invalid policy '{}': {e}", self.spec(&point.text, size)))
    }

    /// The axis points from `--rate`/`--window`, or the spec's own one.
    pub fn points(&self, rate: Option<&str>, window: Option<&str>) -> Result<Option<Vec<Point>>> {
        let axis = self.sizing.axis;
        let given = match axis {
            Axis::Rate => {
                if window.is_some() {
                    bail!(
                        "--window applies to the window families ({}); {} is swept along --rate",
                        names_on(Axis::Window),
                        self.name
                    );
                }
                rate
            }
            Axis::Window => {
                if rate.is_some() {
                    bail!(
                        "--rate applies to the bucket families ({}); {} is swept along --window",
                        names_on(Axis::Rate),
                        self.name
                    );
                }
                window
            }
        };
        let flag = format!("--{}", axis.param());
        let flag = flag.as_str();
        let calendar = |t: &str| matches!(t.trim(), "month" | "year");
        if self.fixed.as_deref().is_some_and(calendar)
            || given.is_some_and(|g| g.split(',').any(calendar))
        {
            bail!(
                "size sweeps window lengths; a calendar window (month, year) is not one: size with window lengths (30d) or audit the calendar limit"
            );
        }
        if let Some(f) = &self.fixed {
            if given.is_some() {
                bail!(
                    "the spec gives {}={f} and {flag} is given too; give one",
                    axis.param()
                );
            }
            return Ok(Some(vec![self.point(f, flag)?]));
        }
        let Some(given) = given else {
            return Ok(None);
        };
        if let Some((a, b)) = given.split_once("..") {
            if axis == Axis::Window {
                bail!("invalid --window '{given}': give a list such as 1s,10s,1m");
            }
            let (a, b) = (self.point(a, flag)?, self.point(b, flag)?);
            let (AxisPoint::Rate(ra), AxisPoint::Rate(rb)) = (a.value, b.value) else {
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
        match (self.sizing.axis, self.sizing.rate_form) {
            (Axis::Window, _) => {
                let w = parse_duration(text).map_err(|e| anyhow!("{flag}: {e}"))?;
                if w == Nanos::ZERO {
                    bail!("{flag}: the window '{text}' is zero; give a length such as 1s or 1m");
                }
                Ok(Point {
                    text: text.to_string(),
                    value: AxisPoint::Window(w),
                })
            }
            (Axis::Rate, RateForm::NginxWhole) => {
                let rate = parse_rate(text).map_err(|e| anyhow!("{flag}: {e}"))?;
                let text = NginxRate::spell(rate).ok_or_else(|| {
                    anyhow!(
                        "{flag}: nginx takes a whole number of requests per second or per minute; '{text}' is neither (e.g. 10r/s, 30r/m)"
                    )
                })?;
                let point = Point {
                    text,
                    value: AxisPoint::Rate(rate),
                };
                // nginx's own reading of it (r/m truncation included).
                self.config(&point, self.sizing.min_size)?;
                Ok(point)
            }
            (Axis::Rate, RateForm::Any) => {
                let rate = parse_rate(text).map_err(|e| anyhow!("{flag}: {e}"))?;
                Ok(Point {
                    text: text.to_string(),
                    value: AxisPoint::Rate(rate),
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
        let nginx = self.sizing.rate_form == RateForm::NginxWhole;
        if !nginx {
            for n in [1, 2, 5, 10, 20, 50] {
                all.push((n, 3600, "h"));
            }
        }
        for n in [1, 2, 5, 10, 20, 50] {
            all.push((n, 60, if nginx { "r/m" } else { "min" }));
        }
        let mut n = 1u64;
        while n <= CAP {
            for m in [1, 2, 5] {
                all.push((n * m, 1, if nginx { "r/s" } else { "s" }));
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
                    value: AxisPoint::Rate(rate),
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

/// The complete spec of policy `name` at one axis point and size, with
/// the `kept` parameters.
fn spec_text(name: &str, sizing: &Sizing, kept: &[String], axis_text: &str, size: u64) -> String {
    let mut s = format!(
        "{name}:{}={axis_text},{}={size}",
        sizing.axis.param(),
        sizing.size_param
    );
    for k in kept {
        s.push(',');
        s.push_str(k);
    }
    s
}

/// The parameters of `-p SPEC` (`rest`, after `name:`) other than the
/// swept ones, and the axis point if given; the size parameter and the
/// parameters the policy's sizing refuses are errors.
fn split_params(
    text: &str,
    name: &str,
    rest: &str,
    sizing: &Sizing,
) -> Result<(Vec<String>, Option<String>)> {
    let mut kept = Vec::new();
    let mut fixed = None;
    for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (item, None),
        };
        if k == sizing.size_param {
            bail!(
                "invalid policy '{text}': {}= is what size finds; leave it out (-p {name}{})",
                sizing.size_param,
                strip_param(rest, k)
            );
        }
        if let Some((_, instead)) = sizing.refused.iter().find(|(p, _)| *p == k) {
            bail!("invalid policy '{text}': {instead}");
        }
        if k == sizing.axis.param() {
            fixed = v.map(str::to_string);
            continue;
        }
        kept.push(item.to_string());
    }
    Ok((kept, fixed))
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

/// The names of the policies swept along `axis`, in the table's order.
fn names_on(axis: Axis) -> String {
    POLICY_NAMES
        .iter()
        .filter(|n| sizing_of(n).is_some_and(|(_, s)| s.axis == axis))
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
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
        assert_eq!(f.sizing.min_size, 0);
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
