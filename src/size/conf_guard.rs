//! How far `size --nginx-conf` may move a line: a limit that meets the
//! targets as written stays as written (unless `--tighten`), and no zone's
//! rate or line's burst changes by more than `--max-change` times (4 by
//! default). A zone beyond it is kept as written, and the report says what
//! it would need and the flag that allows it.

use super::conf_rows::{Setting, spell};
use crate::policy::nginx::NginxRate;

/// What the command line allows.
#[derive(Clone, Copy, Debug)]
pub struct Guard {
    /// Patch limits that meet the targets as written to the tightest that
    /// still meets them.
    pub tighten: bool,
    /// The largest change factor of a rate or a burst (`None`: any).
    pub max_change: Option<f64>,
}

/// How much a zone's sizing changes it: sized / as written, for the rate
/// and for the burst of the line that moves most (a burst of 0 counts as
/// 1, so 0 → 3 is 3×).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Factor {
    pub rate: f64,
    pub burst: f64,
}

/// How far from 1 a factor is, either way (4 for both 4× and ¼×).
fn distance(f: f64) -> f64 {
    if f >= 1.0 { f } else { 1.0 / f }
}

impl Factor {
    /// Zone `z` under `sized` against `today`, over its lines `lines`.
    pub fn of(today: &Setting, sized: &Setting, z: usize, lines: &[usize]) -> Factor {
        let rate = per_sec(sized.rates[z]) / per_sec(today.rates[z]);
        let burst = lines
            .iter()
            .map(|&u| sized.bursts[u].max(1) as f64 / today.bursts[u].max(1) as f64)
            .fold(1.0, |a, b| if distance(b) > distance(a) { b } else { a });
        Factor { rate, burst }
    }

    /// The larger of the two distances.
    pub fn worst(&self) -> f64 {
        distance(self.rate).max(distance(self.burst))
    }

    /// `rate 60× tighter, burst 3.6× looser`; empty when nothing moves.
    pub fn describe(&self) -> String {
        let one = |what: &str, f: f64| {
            let d = distance(f);
            if (d - 1.0).abs() < 1e-9 {
                return None;
            }
            let way = if f < 1.0 { "tighter" } else { "looser" };
            Some(format!("{what} {}× {way}", times(d)))
        };
        [one("rate", self.rate), one("burst", self.burst)]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A factor as people say it: `60`, `3.6`, `1.25`.
pub fn times(f: f64) -> String {
    let s = if f >= 10.0 {
        format!("{f:.0}")
    } else {
        format!("{f:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn per_sec(rate: NginxRate) -> f64 {
    match rate {
        NginxRate::PerSec(n) => n as f64,
        NginxRate::PerMin(n) => n as f64 / 60.0,
    }
}

/// Why a zone is left as written.
#[derive(Clone, Debug)]
pub enum Kept {
    /// Its lines meet the targets as written; the tightest that would
    /// still meet them (`None`: none tighter found).
    MeetsAsWritten { tightest: Option<(String, Factor)> },
    /// Sizing it needs a change beyond `--max-change`.
    TooFar { needs: String, factor: Factor },
    /// The command line keeps it (`--target ZONE:keep`, `--only-zones`):
    /// the sentence that says so.
    Asked(String),
}

impl Kept {
    /// The sentence for the report.
    pub fn describe(&self, guard: &Guard) -> String {
        match self {
            Kept::MeetsAsWritten { tightest: None } => "meets the targets as written: kept".into(),
            Kept::MeetsAsWritten {
                tightest: Some((s, f)),
            } => format!(
                "meets the targets as written: kept; the tightest that still meets them is {s} ({}), patched with --tighten",
                f.describe()
            ),
            Kept::Asked(why) => why.clone(),
            Kept::TooFar { needs, factor } => format!(
                "the targets need {needs} ({}): kept as written, a change beyond --max-change {}; allow it with --max-change {}",
                factor.describe(),
                guard.max_change.map_or("none".into(), times),
                times(factor.worst().ceil())
            ),
        }
    }
}

/// Zone `z`'s settings under `s`, as nginx writes them: `rate=10r/m,
/// burst=14`, or one burst per line of a zone of several.
pub fn zone_text(s: &Setting, z: usize, lines: &[usize]) -> String {
    let bursts: Vec<String> = lines.iter().map(|&u| s.bursts[u].to_string()).collect();
    match bursts.as_slice() {
        [one] => format!("rate={}, burst={one}", spell(s.rates[z])),
        many => format!("rate={}, bursts {}", spell(s.rates[z]), many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(rate: NginxRate, bursts: &[u64]) -> Setting {
        Setting {
            rates: vec![rate],
            bursts: bursts.to_vec(),
        }
    }

    #[test]
    fn factors_either_way() {
        let today = setting(NginxRate::PerSec(10), &[50, 0]);
        let sized = setting(NginxRate::PerMin(10), &[14, 3]);
        let f = Factor::of(&today, &sized, 0, &[0, 1]);
        assert!((f.rate - 1.0 / 60.0).abs() < 1e-12);
        // 50 → 14 is 3.57× tighter; 0 → 3 is 3× looser: the first moves most.
        assert!((f.burst - 14.0 / 50.0).abs() < 1e-12);
        assert_eq!(f.describe(), "rate 60× tighter, burst 3.57× tighter");
        assert_eq!(f.worst(), 60.0);
        let same = Factor::of(&today, &today, 0, &[0, 1]);
        assert_eq!(same.describe(), "");
        assert_eq!(times(36.0), "36");
        assert_eq!(times(1.5), "1.5");
        assert_eq!(times(4.0), "4");
    }
}
