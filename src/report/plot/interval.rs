//! Choosing a timeline for a plot made without `--timeline`:
//! [`choose_interval`] and [`coarsen`] pick and build a timeline of a few
//! hundred intervals from a finer one.

use super::super::{Timeline, TimelineRow};

/// Interval lengths a chosen timeline may have: each reads naturally on a
/// clock or a calendar.
const NICE_INTERVALS: [u64; 33] = [
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
    2_000_000_000,
    5_000_000_000,
    10_000_000_000,
    15_000_000_000,
    30_000_000_000,
    60_000_000_000,
    120_000_000_000,
    300_000_000_000,
    600_000_000_000,
    900_000_000_000,
    1_800_000_000_000,
    3_600_000_000_000,
    7_200_000_000_000,
    10_800_000_000_000,
    21_600_000_000_000,
    43_200_000_000_000,
    86_400_000_000_000,
    172_800_000_000_000,
    604_800_000_000_000,
    1_209_600_000_000_000,
    2_592_000_000_000_000,
    8_640_000_000_000_000,
    17_280_000_000_000_000,
];

/// Most intervals a chosen timeline has.
pub const MAX_INTERVALS: u64 = 600;

/// The shortest natural interval that is a whole multiple of `base` (the
/// interval the timeline was kept at) and cuts `span` into at most
/// [`MAX_INTERVALS`] intervals: between about 200 and 600 for any span
/// longer than `200 · base`.
pub fn choose_interval(span: u64, base: u64) -> u64 {
    let base = base.max(1);
    NICE_INTERVALS
        .iter()
        .copied()
        .filter(|&i| i >= base && i.is_multiple_of(base))
        .find(|&i| span / i < MAX_INTERVALS)
        .unwrap_or_else(|| {
            // Longer than any natural interval allows: whole multiples of the
            // longest one that the span needs.
            let top = NICE_INTERVALS[NICE_INTERVALS.len() - 1];
            let top = if top.is_multiple_of(base) { top } else { base };
            top * (span / top / MAX_INTERVALS + 1)
        })
}

/// `timeline` merged into intervals of `interval` (a whole multiple of its
/// own, aligned the same way): counts add up, levels keep their peak; rows
/// stay interval by interval, policies in their order.
pub fn coarsen(timeline: &Timeline, interval: u64) -> Timeline {
    let mut rows: Vec<TimelineRow> = Vec::new();
    let mut first_of_interval = 0;
    for r in &timeline.rows {
        let start = r.start_ns - r.start_ns % interval;
        if rows.last().is_none_or(|l| l.start_ns != start) {
            first_of_interval = rows.len();
        }
        match rows[first_of_interval..]
            .iter_mut()
            .find(|m| m.start_ns == start && m.policy == r.policy)
        {
            Some(m) => {
                m.arrived += r.arrived;
                m.sent += r.sent;
                m.dropped += r.dropped;
                m.level = m.level.max(r.level);
            }
            None => rows.push(TimelineRow {
                start_ns: start,
                ..r.clone()
            }),
        }
    }
    Timeline {
        interval_ns: interval,
        rows,
    }
}

/// Most intervals a plot draws as given; a longer `--timeline` is merged
/// into a few hundred (a note says so).
pub const MAX_PLOTTED: u64 = 2400;

/// Intervals from the timeline's first to its last row.
pub fn intervals(t: &Timeline) -> u64 {
    let starts = t.rows.iter().map(|r| r.start_ns);
    match (starts.clone().min(), starts.max()) {
        (Some(a), Some(b)) => (b - a) / t.interval_ns.max(1) + 1,
        _ => 0,
    }
}

/// `t` merged into [`choose_interval`]'s interval for its span.
pub fn fit(t: &Timeline) -> Timeline {
    let base = t.interval_ns.max(1);
    coarsen(t, choose_interval(intervals(t) * base, base))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    #[test]
    fn chosen_intervals_give_a_few_hundred() {
        // 13 hours kept at 10 s: 2 min gives 390 intervals.
        assert_eq!(choose_interval(13 * 3600 * S, 10 * S), 120 * S);
        // 2 seconds kept at 1 ms: 5 ms gives 400.
        assert_eq!(choose_interval(2 * S, MS), 5 * MS);
        // A week kept at 10 min: 30 min gives 336.
        assert_eq!(choose_interval(7 * 86400 * S, 600 * S), 1800 * S);
        for (span, base) in [(1000 * S, MS), (86400 * S, 60 * S), (90 * S, 100 * MS)] {
            let i = choose_interval(span, base);
            assert!(i.is_multiple_of(base));
            let n = span / i;
            assert!(
                (200..MAX_INTERVALS).contains(&n),
                "{span} at {base}: {i} gives {n}"
            );
        }
        // Shorter than 200 base intervals: the base itself.
        assert_eq!(choose_interval(50 * MS, MS), MS);
    }

    fn row(start: u64, policy: &str, arrived: u64, level: u64) -> TimelineRow {
        TimelineRow {
            start_ns: start,
            policy: policy.into(),
            arrived,
            sent: arrived,
            dropped: 1,
            level,
        }
    }

    #[test]
    fn coarsening_adds_counts_and_keeps_peaks() {
        let t = Timeline {
            interval_ns: S,
            rows: vec![
                row(10 * S, "a", 1, 3),
                row(10 * S, "b", 2, 0),
                row(11 * S, "a", 4, 1),
                row(11 * S, "b", 8, 7),
                row(12 * S, "a", 16, 2),
                row(12 * S, "b", 32, 5),
            ],
        };
        let c = coarsen(&t, 2 * S);
        let got: Vec<(u64, &str, u64, u64, u64)> = c
            .rows
            .iter()
            .map(|r| {
                (
                    r.start_ns / S,
                    r.policy.as_str(),
                    r.arrived,
                    r.dropped,
                    r.level,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (10, "a", 5, 2, 3),
                (10, "b", 10, 2, 7),
                (12, "a", 16, 1, 2),
                (12, "b", 32, 1, 5)
            ]
        );
        assert_eq!(c.interval_ns, 2 * S);
    }
}
