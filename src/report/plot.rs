//! Plots as SVG, drawn with plotters from plain report data.
//!
//! [`timeline_svg`] draws one panel per policy over one shared time axis:
//! requests arrived, sent (admitted, counted when released) and dropped per
//! interval above, and the interval's peak backlog or level against the
//! policy's bound below. Time runs left to right in real time, labelled in
//! the zone given (UTC by default) on boundaries that read naturally there
//! (whole minutes, hours, days).
//!
//! [`choose_interval`] and [`coarsen`] pick and build a timeline of a few
//! hundred intervals from a finer one, for plots made without `--timeline`.
//!
//! [`size_svg`] draws a sizing sweep: the frontier (the smallest size per
//! rate or window, the recommendation marked) over the per-key need
//! quantiles, on one axis of the rates or windows tried.

use super::{Timeline, TimelineRow};
use crate::time::span;
use anyhow::{Result, anyhow};
use jiff::tz::TimeZone;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use std::ops::Range;

/// Width of a plot, in pixels.
pub const WIDTH: u32 = 1200;
/// Height of the title band above the panels.
const HEADER: u32 = 44;
/// Height of one policy's panel (counts and level).
pub const PANEL: u32 = 380;

/// The stated size of a timeline plot of `policies` panels.
pub fn timeline_size(policies: usize) -> (u32, u32) {
    (WIDTH, HEADER + PANEL * policies.max(1) as u32)
}

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

/// One policy's panel: its rows of the timeline and its bound.
pub struct Panel<'a> {
    /// The policy's label: the panel's title.
    pub label: &'a str,
    /// The policy's spec, shown beside the title.
    pub spec: &'a str,
    /// "backlog" or "level".
    pub level_kind: &'a str,
    /// The highest backlog or level the policy allows, if bounded.
    pub bound: Option<u64>,
}

/// A time axis in seconds after `origin_ns`, with ticks on natural
/// boundaries of `zone`.
#[derive(Clone)]
struct TimeAxis {
    range: Range<f64>,
    origin_ns: u64,
    zone: TimeZone,
}

/// Tick steps in seconds, for the time axis.
const TICK_STEPS: [f64; 30] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0,
    120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 10800.0, 21600.0, 43200.0, 86400.0,
    172800.0, 604800.0, 2592000.0,
];

impl TimeAxis {
    /// Seconds east of UTC in `zone` at `secs` after the origin.
    fn offset_at(&self, secs: f64) -> f64 {
        let ns = self.origin_ns as f64 + secs * 1e9;
        jiff::Timestamp::from_nanosecond(ns as i128)
            .map(|t| f64::from(self.zone.to_offset(t).seconds()))
            .unwrap_or(0.0)
    }

    /// The tick step for at most `n` ticks.
    fn tick_step(&self, n: usize) -> f64 {
        let width = self.range.end - self.range.start;
        let n = n.clamp(2, 10) as f64;
        TICK_STEPS
            .iter()
            .copied()
            .find(|s| width / s <= n)
            .unwrap_or_else(|| (width / n / 86400.0).ceil() * 86400.0)
    }

    /// The label of the tick at `secs`, as precise as the step needs.
    fn label(&self, secs: f64, step: f64) -> String {
        let ns = (self.origin_ns as f64 + secs * 1e9).round() as i128;
        let Ok(ts) = jiff::Timestamp::from_nanosecond(ns) else {
            return String::new();
        };
        let local = ts.to_zoned_datetime(self.zone.clone());
        let width = self.range.end - self.range.start;
        let pattern = if step < 1.0 {
            "%H:%M:%S%.3f"
        } else if step < 60.0 {
            "%H:%M:%S"
        } else if step >= 86400.0 {
            "%Y-%m-%d"
        } else if width > 86400.0 {
            "%m-%d %H:%M"
        } else {
            "%H:%M"
        };
        local.strftime(pattern).to_string()
    }
}

impl Ranged for TimeAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let width = self.range.end - self.range.start;
        let f = (value - self.range.start) / width;
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let step = self.tick_step(hint.bold_points());
        // Ticks fall on multiples of the step in local time.
        let offset = self.offset_at(self.range.start);
        let origin_local = self.origin_ns as f64 / 1e9 + offset;
        let first = ((origin_local + self.range.start) / step).ceil() * step - origin_local;
        let mut ticks = Vec::new();
        let mut t = first;
        while t <= self.range.end + step * 1e-9 && ticks.len() < 64 {
            ticks.push(t);
            t += step;
        }
        ticks
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// A zone's name for the axis: its IANA name, or its offset.
fn zone_name(zone: &TimeZone, at_ns: u64) -> String {
    match zone.iana_name() {
        Some(n) => n.to_string(),
        None => jiff::Timestamp::from_nanosecond(i128::from(at_ns))
            .map(|t| zone.to_offset(t).to_string())
            .unwrap_or_default(),
    }
}

fn draw_err<E: std::error::Error + Send + Sync>(
    e: plotters::drawing::DrawingAreaErrorKind<E>,
) -> anyhow::Error {
    anyhow!("cannot draw the plot: {e}")
}

const ARRIVED: RGBColor = RGBColor(160, 180, 210);
const SENT: RGBColor = RGBColor(30, 140, 60);
const DROPPED: RGBColor = RGBColor(210, 40, 40);
const LEVEL: RGBColor = RGBColor(110, 60, 170);
const BOUND: RGBColor = RGBColor(230, 130, 0);

/// Points of a step line: each interval's value held across it.
fn steps(values: &[(f64, u64)], interval: f64) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(values.len() * 2);
    for &(x, v) in values {
        pts.push((x, v as f64));
        pts.push((x + interval, v as f64));
    }
    pts
}

/// The top of a count axis: a little above the highest value.
fn headroom(max: u64) -> f64 {
    (max.max(1) as f64 * 1.12).max(1.0)
}

/// The timeline plot as an SVG document of [`timeline_size`]: one panel per
/// entry of `panels`, in order, from `timeline`'s rows with the same policy
/// label. `title` heads the plot; times are labelled in `zone`.
pub fn timeline_svg(
    title: &str,
    panels: &[Panel],
    timeline: &Timeline,
    zone: &TimeZone,
) -> Result<String> {
    let (w, h) = timeline_size(panels.len());
    let interval = timeline.interval_ns.max(1);
    let origin = timeline.rows.iter().map(|r| r.start_ns).min().unwrap_or(0);
    let end = timeline
        .rows
        .iter()
        .map(|r| r.start_ns + interval)
        .max()
        .unwrap_or(origin + interval);
    let secs = |ns: u64| (ns - origin) as f64 / 1e9;
    let axis = TimeAxis {
        range: 0.0..secs(end).max(1e-9),
        origin_ns: origin,
        zone: zone.clone(),
    };
    let step_secs = interval as f64 / 1e9;
    let from = jiff::Timestamp::from_nanosecond(i128::from(origin))
        .map(|t| {
            t.to_zoned_datetime(zone.clone())
                .strftime("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_default();
    let x_desc = format!("time ({}), from {from}", zone_name(zone, origin));

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (head, body) = root.split_vertically(HEADER);
        head.draw(&Text::new(
            title.to_string(),
            (16, 12),
            ("sans-serif", 20).into_font().color(&BLACK),
        ))
        .map_err(draw_err)?;
        let areas = body.split_evenly((panels.len().max(1), 1));
        for (panel, area) in panels.iter().zip(&areas) {
            let rows: Vec<&TimelineRow> = timeline
                .rows
                .iter()
                .filter(|r| r.policy == panel.label)
                .collect();
            let series = |f: fn(&TimelineRow) -> u64| -> Vec<(f64, u64)> {
                rows.iter().map(|r| (secs(r.start_ns), f(r))).collect()
            };
            let (arrived, sent, dropped, level) = (
                series(|r| r.arrived),
                series(|r| r.sent),
                series(|r| r.dropped),
                series(|r| r.level),
            );
            let count_max = rows
                .iter()
                .map(|r| r.arrived.max(r.sent).max(r.dropped))
                .max()
                .unwrap_or(0);
            let level_max = rows
                .iter()
                .map(|r| r.level)
                .max()
                .unwrap_or(0)
                .max(panel.bound.unwrap_or(0));

            let (counts_area, level_area) = area.split_vertically(PANEL * 60 / 100);
            let mut counts = ChartBuilder::on(&counts_area)
                .caption(
                    if panel.label == panel.spec {
                        panel.label.to_string()
                    } else {
                        format!("{}  ({})", panel.label, panel.spec)
                    },
                    ("sans-serif", 17).into_font(),
                )
                .margin_left(12)
                .margin_right(24)
                .margin_top(6)
                .x_label_area_size(0)
                .y_label_area_size(70)
                .build_cartesian_2d(axis.clone(), 0.0..headroom(count_max))
                .map_err(draw_err)?;
            counts
                .configure_mesh()
                .y_desc(format!("requests per {}", span(interval)))
                .y_labels(5)
                .y_label_formatter(&|v| format!("{v:.0}"))
                .x_labels(10)
                .light_line_style(WHITE)
                .bold_line_style(BLACK.mix(0.12))
                .draw()
                .map_err(draw_err)?;
            // Arrivals wide and pale underneath, so sent shows where they part.
            for (name, color, width, data) in [
                ("arrived", ARRIVED, 3, &arrived),
                ("sent", SENT, 1, &sent),
                ("dropped", DROPPED, 2, &dropped),
            ] {
                counts
                    .draw_series(LineSeries::new(
                        steps(data, step_secs),
                        color.stroke_width(width),
                    ))
                    .map_err(draw_err)?
                    .label(name)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                    });
            }
            counts
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.4))
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(draw_err)?;

            let mut levels = ChartBuilder::on(&level_area)
                .margin_top(10)
                .margin_left(12)
                .margin_right(24)
                .margin_bottom(8)
                .x_label_area_size(42)
                .y_label_area_size(70)
                .build_cartesian_2d(axis.clone(), 0.0..headroom(level_max))
                .map_err(draw_err)?;
            levels
                .configure_mesh()
                .y_desc(format!("peak {}", panel.level_kind))
                .y_labels(4)
                .y_label_formatter(&|v| format!("{v:.0}"))
                .x_labels(10)
                .x_label_formatter(&|x| axis.label(*x, axis.tick_step(10)))
                .x_desc(x_desc.as_str())
                .light_line_style(WHITE)
                .bold_line_style(BLACK.mix(0.12))
                .draw()
                .map_err(draw_err)?;
            levels
                .draw_series(AreaSeries::new(
                    steps(&level, step_secs),
                    0.0,
                    LEVEL.mix(0.25),
                ))
                .map_err(draw_err)?;
            levels
                .draw_series(LineSeries::new(
                    steps(&level, step_secs),
                    LEVEL.stroke_width(1),
                ))
                .map_err(draw_err)?
                .label(format!("peak {}", panel.level_kind))
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], LEVEL.stroke_width(3))
                });
            if let Some(b) = panel.bound {
                levels
                    .draw_series(LineSeries::new(
                        [(axis.range.start, b as f64), (axis.range.end, b as f64)],
                        BOUND.stroke_width(2),
                    ))
                    .map_err(draw_err)?
                    .label(format!("bound ({b})"))
                    .legend(|(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], BOUND.stroke_width(3))
                    });
            }
            levels
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.4))
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// The points of a sweep (rates or windows) as evenly spaced categories,
/// in the order given.
#[derive(Clone)]
struct CategoryAxis {
    labels: Vec<String>,
}

impl CategoryAxis {
    fn label(&self, x: f64) -> String {
        let i = x.round();
        if i < 0.0 || (i - x).abs() > 1e-6 {
            return String::new();
        }
        self.labels.get(i as usize).cloned().unwrap_or_default()
    }
}

impl Ranged for CategoryAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let r = self.range();
        let f = (value - r.start) / (r.end - r.start);
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let n = self.labels.len();
        let most = hint.bold_points().max(1);
        let every = n.div_ceil(most).max(1);
        (0..n).step_by(every).map(|i| i as f64).collect()
    }

    fn range(&self) -> Range<f64> {
        -0.5..(self.labels.len().max(1) as f64 - 0.5)
    }
}

/// One row of a sizing frontier: at this rate or window, the smallest size
/// that meets the targets (or, when none does, the size whose figures
/// were shown).
pub struct FrontierPoint<'a> {
    /// The rate or window as written (`5/s`, `1m`).
    pub point: &'a str,
    pub size: u64,
    pub feasible: bool,
}

/// The zero-drop size across keys at one rate or window: p50, p90, p99,
/// p99.9 and max (None: some request never fits at any size).
pub struct NeedPoint<'a> {
    pub point: &'a str,
    pub keys: u64,
    pub quantiles: [Option<u64>; 5],
}

/// What a sizing plot shows, as plain data.
pub struct SizePlot<'a> {
    pub title: &'a str,
    /// `rate` or `window`.
    pub axis: &'a str,
    /// `burst`, `capacity` or `limit`.
    pub size_param: &'a str,
    pub frontier: Vec<FrontierPoint<'a>>,
    /// The recommended frontier point and its complete spec.
    pub recommended: Option<(&'a str, &'a str)>,
    /// Per-key needs (keyed specs); empty draws no second panel.
    pub needs: Vec<NeedPoint<'a>>,
}

/// The sizing plot of a `drip size` report.
pub fn size_report_svg(r: &super::size::SizeReport) -> Result<String> {
    let title = super::size::heading(r);
    size_svg(&SizePlot {
        title: &title,
        axis: r.axis,
        size_param: r.size_param,
        frontier: r
            .frontier
            .iter()
            .map(|f| FrontierPoint {
                point: f.point(),
                size: f.size,
                feasible: f.feasible,
            })
            .collect(),
        recommended: r.recommended.as_ref().map(|f| (f.point(), f.spec.as_str())),
        needs: r
            .per_key
            .iter()
            .map(|n| NeedPoint {
                point: n.point(),
                keys: n.keys,
                quantiles: [n.p50, n.p90, n.p99, n.p99_9, n.max],
            })
            .collect(),
    })
}

/// Height of the frontier panel and of the per-key need panel.
const FRONTIER_PANEL: u32 = 420;
const NEED_PANEL: u32 = 340;

/// The stated size of a sizing plot.
pub fn size_plot_size(with_needs: bool) -> (u32, u32) {
    let needs = if with_needs { NEED_PANEL } else { 0 };
    (WIDTH, HEADER + FRONTIER_PANEL + needs)
}

const FEASIBLE: RGBColor = RGBColor(30, 110, 190);
const RECOMMENDED: RGBColor = BOUND;
const QUANTILES: [(&str, RGBColor); 5] = [
    ("p50", RGBColor(150, 190, 230)),
    ("p90", RGBColor(80, 140, 210)),
    ("p99", RGBColor(30, 90, 170)),
    ("p99.9", RGBColor(110, 60, 170)),
    ("max", RGBColor(210, 40, 40)),
];

/// The sizing plot as an SVG document of [`size_plot_size`]: the frontier
/// (the smallest size per rate or window, points that miss the targets
/// crossed out, the recommendation ringed) and, when given, the per-key
/// need quantiles on the same axis.
pub fn size_svg(plot: &SizePlot) -> Result<String> {
    let with_needs = !plot.needs.is_empty();
    let (w, h) = size_plot_size(with_needs);
    let mut labels: Vec<String> = plot.frontier.iter().map(|f| f.point.to_string()).collect();
    for n in &plot.needs {
        if !labels.iter().any(|l| l == n.point) {
            labels.push(n.point.to_string());
        }
    }
    let axis = CategoryAxis { labels };
    let at = |point: &str| axis.labels.iter().position(|l| l == point).unwrap_or(0) as f64;
    let x_desc = plot.axis.to_string();

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (head, body) = root.split_vertically(HEADER);
        head.draw(&Text::new(
            plot.title.to_string(),
            (16, 12),
            ("sans-serif", 20).into_font().color(&BLACK),
        ))
        .map_err(draw_err)?;
        let (top, bottom) = body.split_vertically(FRONTIER_PANEL);

        let size_max = plot.frontier.iter().map(|f| f.size).max().unwrap_or(0);
        let mut chart = ChartBuilder::on(&top)
            .caption(
                format!(
                    "smallest {} per {} that meets the targets",
                    plot.size_param, plot.axis
                ),
                ("sans-serif", 17).into_font(),
            )
            .margin_left(12)
            .margin_right(24)
            .margin_top(6)
            .margin_bottom(8)
            .x_label_area_size(42)
            .y_label_area_size(70)
            .build_cartesian_2d(axis.clone(), 0.0..headroom(size_max))
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .y_desc(plot.size_param)
            .x_desc(x_desc.as_str())
            .y_labels(6)
            .y_label_formatter(&|v| format!("{v:.0}"))
            .x_labels(16)
            .x_label_formatter(&|x| axis.label(*x))
            .light_line_style(WHITE)
            .bold_line_style(BLACK.mix(0.12))
            .draw()
            .map_err(draw_err)?;
        let feasible: Vec<(f64, f64)> = plot
            .frontier
            .iter()
            .filter(|f| f.feasible)
            .map(|f| (at(f.point), f.size as f64))
            .collect();
        chart
            .draw_series(LineSeries::new(feasible.clone(), FEASIBLE.stroke_width(2)))
            .map_err(draw_err)?
            .label(format!("smallest {} meeting the targets", plot.size_param))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], FEASIBLE.stroke_width(3)));
        chart
            .draw_series(
                feasible
                    .iter()
                    .map(|&p| Circle::new(p, 4, FEASIBLE.filled())),
            )
            .map_err(draw_err)?;
        let missing: Vec<(f64, f64)> = plot
            .frontier
            .iter()
            .filter(|f| !f.feasible)
            .map(|f| (at(f.point), f.size as f64))
            .collect();
        if !missing.is_empty() {
            chart
                .draw_series(
                    missing
                        .iter()
                        .map(|&p| Cross::new(p, 6, DROPPED.stroke_width(3))),
                )
                .map_err(draw_err)?
                .label("misses the targets at any size tried")
                .legend(|(x, y)| Cross::new((x + 9, y), 5, DROPPED.stroke_width(3)));
        }
        if let Some((point, spec)) = plot.recommended
            && let Some(f) = plot.frontier.iter().find(|f| f.point == point)
        {
            let p = (at(point), f.size as f64);
            chart
                .draw_series([Circle::new(p, 11, RECOMMENDED.stroke_width(3))])
                .map_err(draw_err)?
                .label(format!("recommended: {spec}"))
                .legend(|(x, y)| Circle::new((x + 9, y), 6, RECOMMENDED.stroke_width(3)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(draw_err)?;

        if with_needs {
            let need_max = plot
                .needs
                .iter()
                .flat_map(|n| n.quantiles.iter().flatten())
                .copied()
                .max()
                .unwrap_or(0);
            let keys = plot.needs.iter().map(|n| n.keys).max().unwrap_or(0);
            let mut needs = ChartBuilder::on(&bottom)
                .caption(
                    format!(
                        "per-key need: the zero-drop {} of each key, across {keys} keys",
                        plot.size_param
                    ),
                    ("sans-serif", 17).into_font(),
                )
                .margin_left(12)
                .margin_right(24)
                .margin_bottom(8)
                .x_label_area_size(42)
                .y_label_area_size(70)
                .build_cartesian_2d(axis.clone(), 0.0..headroom(need_max))
                .map_err(draw_err)?;
            needs
                .configure_mesh()
                .y_desc(format!("{} needed", plot.size_param))
                .x_desc(x_desc.as_str())
                .y_labels(6)
                .y_label_formatter(&|v| format!("{v:.0}"))
                .x_labels(16)
                .x_label_formatter(&|x| axis.label(*x))
                .light_line_style(WHITE)
                .bold_line_style(BLACK.mix(0.12))
                .draw()
                .map_err(draw_err)?;
            for (q, (name, color)) in QUANTILES.iter().enumerate() {
                // A point where some request never fits breaks the line.
                let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
                for n in &plot.needs {
                    match n.quantiles[q] {
                        Some(v) => runs.last_mut().unwrap().push((at(n.point), v as f64)),
                        None => runs.push(Vec::new()),
                    }
                }
                let color = *color;
                let mut first = true;
                for run in runs.into_iter().filter(|r| !r.is_empty()) {
                    needs
                        .draw_series(run.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(draw_err)?;
                    let line = needs
                        .draw_series(LineSeries::new(run, color.stroke_width(2)))
                        .map_err(draw_err)?;
                    if first {
                        line.label(*name).legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                        });
                        first = false;
                    }
                }
            }
            needs
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.4))
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
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

    #[test]
    fn ticks_fall_on_local_boundaries() {
        // 06:00:00 UTC to 18:52:01 UTC on 1 Aug 1995 (the NASA log's span).
        let origin = 807_256_800 * S;
        let axis = TimeAxis {
            range: 0.0..46_321.0,
            origin_ns: origin,
            zone: TimeZone::UTC,
        };
        let ticks = axis.key_points(8usize);
        let step = axis.tick_step(8);
        assert_eq!(step, 7200.0);
        let labels: Vec<String> = ticks.iter().map(|t| axis.label(*t, step)).collect();
        assert_eq!(labels[0], "06:00");
        assert_eq!(labels[1], "08:00");
        assert_eq!(labels.last().unwrap(), "18:00");
        // In a zone 5h30 ahead, ticks move to its own even hours.
        let axis = TimeAxis {
            zone: TimeZone::get("Asia/Kolkata").unwrap(),
            ..axis
        };
        let labels: Vec<String> = axis
            .key_points(8usize)
            .iter()
            .map(|t| axis.label(*t, step))
            .collect();
        assert_eq!(labels[0], "12:00");
    }

    #[test]
    fn an_empty_timeline_still_draws() {
        let t = Timeline {
            interval_ns: S,
            rows: vec![],
        };
        let panels = [Panel {
            label: "p",
            spec: "gcra:rate=1/s",
            level_kind: "level",
            bound: Some(1),
        }];
        let svg = timeline_svg("t", &panels, &t, &TimeZone::UTC).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
    }
}
