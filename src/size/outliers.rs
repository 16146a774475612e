//! Outliers: the keys whose traffic is far outside the population's (a
//! credential-stuffing bot, a scraper), so that a limit is sized for the
//! site's clients and not for whoever sends the most.
//!
//! The rule, over the keys a limit sees: a key's busiest span of a length
//! is the most requests it sent within any span of it, for spans of 1 s,
//! 1 min, 10 min and 1 h (a burst, a minute's flood, a sustained run). The
//! reference of a length is the p90 key's busiest span of it (robust to
//! up to a tenth of the keys being bots). A key is an outlier when, at
//! some length, it sent more than [`FACTOR`] times the reference: a decade
//! above nine in ten keys on a log scale. With fewer than [`MIN_KEYS`]
//! keys there is no population to compare with, and no key is an outlier.
//! The targets are then checked without the outliers' rows
//! (`--keep-outliers` sizes for everyone), and the report names each,
//! with what the pick does to it.

use crate::engine::candidates::log::Log;
use crate::policy::parse_spec;
use crate::time::Nanos;
use anyhow::Result;

/// How far above the reference an outlier is.
pub const FACTOR: u64 = 10;
/// The fewest keys a population has.
pub const MIN_KEYS: usize = 10;
/// The spans compared, in seconds, and their names.
pub const SPANS: [(u64, &str); 4] = [(1, "1s"), (60, "1m"), (600, "10m"), (3600, "1h")];

/// One key's traffic, as the rule and the report see it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Busy {
    pub requests: u64,
    /// The most requests within any span of each of [`SPANS`].
    pub spans: [u64; 4],
}

impl Busy {
    /// The traffic of one key's arrival times, in time order.
    pub fn of(times: &[u64]) -> Busy {
        Busy {
            requests: times.len() as u64,
            spans: SPANS.map(|(s, _)| busiest(times, s * Nanos::PER_SEC)),
        }
    }
}

/// The most of `times` (in time order) within any span shorter than `w`.
fn busiest(times: &[u64], w: u64) -> u64 {
    let mut best = 0;
    let mut tail = 0;
    for (i, &t) in times.iter().enumerate() {
        while t - times[tail] >= w {
            tail += 1;
        }
        best = best.max(i + 1 - tail);
    }
    best as u64
}

/// Why a key is an outlier: at span [`SPANS`]`[span]`, it sent `count`
/// where the p90 key sent `reference`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Over {
    pub span: usize,
    pub count: u64,
    pub reference: u64,
}

impl Over {
    /// "1800 in 10m, 45× the p90 key's 40".
    pub fn text(&self) -> String {
        let times = self.count as f64 / self.reference.max(1) as f64;
        format!(
            "{} in {}, {}× the p90 key's {}",
            self.count,
            SPANS[self.span].1,
            super::conf_guard::times(times),
            self.reference
        )
    }
}

/// The p90 key's busiest span of each of [`SPANS`].
pub type References = [u64; 4];

/// The outliers among `keys`' traffic: their indexes in `keys` with the
/// span that is furthest above the reference; and the references.
/// `None` when there are too few keys.
pub fn find(keys: &[Busy]) -> Option<(Vec<(usize, Over)>, References)> {
    if keys.len() < MIN_KEYS {
        return None;
    }
    // The p90 key of each span, by nearest rank.
    let rank = (keys.len() * 9).div_ceil(10) - 1;
    let reference: [u64; 4] = std::array::from_fn(|s| {
        let mut v: Vec<u64> = keys.iter().map(|b| b.spans[s]).collect();
        v.sort_unstable();
        v[rank]
    });
    let over = keys
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            // The span furthest above its reference, as count / reference.
            let mut best: Option<Over> = None;
            for (s, &count) in b.spans.iter().enumerate() {
                let r = reference[s];
                let far = |o: &Over| {
                    u128::from(count) * u128::from(o.reference.max(1))
                        > u128::from(o.count) * u128::from(r.max(1))
                };
                if count > r.saturating_mul(FACTOR) && best.as_ref().is_none_or(far) {
                    best = Some(Over {
                        span: s,
                        count,
                        reference: r,
                    });
                }
            }
            best.map(|o| (i, o))
        })
        .collect();
    Some((over, reference))
}

/// The outliers of a population, busiest first, and its references.
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub reference: [u64; 4],
    /// (key id, its traffic, why it is an outlier).
    pub keys: Vec<(u32, Busy, Over)>,
}

impl Found {
    /// The outliers among `keys` (key id, traffic); `None` with too few.
    pub fn among(keys: &[(u32, Busy)]) -> Option<Found> {
        let busy: Vec<Busy> = keys.iter().map(|k| k.1).collect();
        let (over, reference) = find(&busy)?;
        let mut keys: Vec<(u32, Busy, Over)> = over
            .into_iter()
            .map(|(i, why)| (keys[i].0, keys[i].1, why))
            .collect();
        keys.sort_by(|a, b| b.1.requests.cmp(&a.1.requests).then(a.0.cmp(&b.0)));
        Some(Found { reference, keys })
    }

    /// True when key `id` is one of them.
    pub fn has(&self, id: u32) -> bool {
        self.keys.iter().any(|k| k.0 == id)
    }

    /// Each line's outliers, from the (line, key, time) of every row a line
    /// saw, in time order.
    pub fn per_line(mut seen: Vec<(u32, u32, u64)>, lines: usize) -> Vec<Option<Found>> {
        // Stable: each (line, key)'s times stay in order.
        seen.sort_by_key(|&(u, k, _)| (u, k));
        let mut by_line: Vec<Vec<(u32, Busy)>> = vec![Vec::new(); lines];
        let mut times = Vec::new();
        for group in seen.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            times.clear();
            times.extend(group.iter().map(|g| g.2));
            by_line[group[0].0 as usize].push((group[0].1, Busy::of(&times)));
        }
        by_line.iter().map(|keys| Found::among(keys)).collect()
    }
}

/// The rule in words, for the report.
pub fn rule_text(reference: &[u64; 4]) -> String {
    let refs: Vec<String> = SPANS
        .iter()
        .zip(reference)
        .map(|((_, name), r)| format!("{r} in {name}"))
        .collect();
    format!(
        "an outlier sent more than {FACTOR}× the p90 key's busiest span of 1s, 1m, 10m or 1h (the p90 key: {})",
        refs.join(", ")
    )
}

/// How often `spec` (counting by the log's key) refuses each of `keys`:
/// keys are independent, so each is replayed alone.
pub fn refused(log: &Log, spec: &str, keys: &[u32]) -> Result<Vec<u64>> {
    let spec = parse_spec(spec)?;
    let Some(by_key) = log.by_key() else {
        return Ok(vec![0; keys.len()]);
    };
    Ok(keys
        .iter()
        .map(|&k| {
            let mut stack = spec.build();
            let id = [Some(u64::from(k))];
            by_key.rows()[by_key.of_key(k as usize)]
                .iter()
                .filter(|&&r| {
                    let r = r as usize;
                    !stack.decide(&id, Nanos(log.at[r]), log.cost(r)).is_admit()
                })
                .count() as u64
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = Nanos::PER_SEC;

    #[test]
    fn busiest_counts_spans_shorter_than_the_window() {
        assert_eq!(busiest(&[], S), 0);
        assert_eq!(busiest(&[0, 0, 0], S), 3);
        // 0 and 1 s are a second apart: not within one span shorter than 1 s.
        assert_eq!(busiest(&[0, S - 1, S, 2 * S], S), 2);
        let b = Busy::of(&[0, 10, 20, 61 * S, 61 * S + 1, 700 * S]);
        assert_eq!((b.requests, b.spans), (6, [3, 3, 5, 6]));
    }

    fn busy(minute: u64) -> Busy {
        Busy {
            spans: [1, minute, minute, minute],
            ..Busy::default()
        }
    }

    #[test]
    fn a_key_a_decade_above_the_p90_key_is_an_outlier() {
        // Twenty clients of 1..=20 a minute, a bot of 250 and one of 200:
        // the p90 of the 22 keys is the 20th, 20 a minute.
        let mut keys: Vec<Busy> = (1..=20).map(busy).collect();
        keys.push(busy(250));
        keys.push(busy(200));
        let (over, reference) = find(&keys).unwrap();
        assert_eq!(reference, [1, 20, 20, 20]);
        assert_eq!(over.len(), 1);
        assert_eq!(over[0].0, 20);
        assert_eq!(over[0].1.text(), "250 in 1m, 12× the p90 key's 20");
    }

    #[test]
    fn the_span_furthest_above_names_the_outlier() {
        // A sustained run: ordinary in a second and a minute, not in an hour.
        let mut keys: Vec<Busy> = (0..20)
            .map(|_| Busy {
                requests: 30,
                spans: [3, 10, 20, 30],
            })
            .collect();
        keys.push(Busy {
            requests: 1800,
            spans: [3, 180, 1800, 1800],
        });
        let (over, _) = find(&keys).unwrap();
        assert_eq!(
            over,
            vec![(
                20,
                Over {
                    span: 2,
                    count: 1800,
                    reference: 20
                }
            )]
        );
    }

    #[test]
    fn too_few_keys_have_no_outliers() {
        let mut keys: Vec<Busy> = (0..8).map(|_| busy(1)).collect();
        keys.push(busy(1000));
        assert_eq!(find(&keys), None);
        keys.push(busy(1));
        let (over, _) = find(&keys).unwrap();
        assert_eq!(over.iter().map(|o| o.0).collect::<Vec<_>>(), vec![8]);
    }

    #[test]
    fn a_tenth_of_bots_still_leaves_the_reference_a_client() {
        // 18 clients and 2 bots: the p90 key is the 18th, a client.
        let mut keys: Vec<Busy> = (0..18).map(|_| busy(5)).collect();
        keys.extend([busy(900), busy(180)]);
        let (over, reference) = find(&keys).unwrap();
        assert_eq!(reference[1], 5);
        assert_eq!(over.iter().map(|o| o.0).collect::<Vec<_>>(), vec![18, 19]);
    }
}
