//! The timeline plot: one panel per policy over one shared time axis:
//! requests arrived, sent (admitted, counted when released) and dropped per
//! interval above, and the interval's peak backlog or level against the
//! policy's bound below. Time runs left to right in real time, labelled in
//! the zone given (UTC by default) on boundaries that read naturally there
//! (whole minutes, hours, days).

use super::super::{Timeline, TimelineRow};
use super::{
    Area, BOUND, DROPPED, Entry, Figures, HEADER, Mark, PANEL_TITLE_PX, Stroke, TITLE_ROOM, WIDTH,
    draw_err, draw_legend, draw_line, draw_svg, headline, headroom, panel_areas, svg_text, text,
};
use crate::time::span;
use anyhow::Result;
use jiff::tz::TimeZone;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use std::ops::Range;

/// Height of one policy's panel (counts and level).
pub const PANEL: u32 = 380;
/// Height of the counts' part of a panel, below its title.
const COUNTS_H: u32 = 200;

/// The stated size of a timeline plot of `policies` panels.
pub fn timeline_size(policies: usize) -> (u32, u32) {
    (WIDTH, HEADER + PANEL * policies.max(1) as u32)
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
    /// The run's headline figures, said in the panel's title.
    pub figures: Figures,
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

const ARRIVED: RGBColor = RGBColor(160, 180, 210);
const SENT: RGBColor = RGBColor(30, 140, 60);
const LEVEL: RGBColor = RGBColor(110, 60, 170);

/// Arrivals wide and pale underneath, sent thin over them (equal where
/// nothing was dropped or delayed), dropped dashed (often on the axis).
const COUNTS: [(&str, Stroke); 3] = [
    ("arrived (wide, pale)", Stroke::solid(ARRIVED, 4)),
    (
        "sent (thin; on arrived where equal)",
        Stroke::solid(SENT, 1),
    ),
    ("dropped (dashed)", Stroke::dashed(DROPPED, 2, 7, 4)),
];
/// The bound is dashed: the level reaches it at the peaks.
const BOUND_STROKE: Stroke = Stroke::dashed(BOUND, 2, 9, 5);
const LEVEL_STROKE: Stroke = Stroke::solid(LEVEL, 1);

/// Points of a step line: each interval's value held across it.
fn steps(values: &[(f64, u64)], interval: f64) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(values.len() * 2);
    for &(x, v) in values {
        pts.push((x, v as f64));
        pts.push((x + interval, v as f64));
    }
    pts
}

/// The time axis every panel shares.
struct Frame {
    axis: TimeAxis,
    /// The first interval's start, ns since the epoch.
    origin: u64,
    /// The interval, ns.
    interval: u64,
    /// The interval, seconds.
    step_secs: f64,
    /// The time axis's description: the zone and the first instant.
    x_desc: String,
}

impl Frame {
    /// From the first interval of `timeline` to the end of its last.
    fn new(timeline: &Timeline, zone: &TimeZone) -> Frame {
        let interval = timeline.interval_ns.max(1);
        let origin = timeline.rows.iter().map(|r| r.start_ns).min().unwrap_or(0);
        let end = timeline
            .rows
            .iter()
            .map(|r| r.start_ns + interval)
            .max()
            .unwrap_or(origin + interval);
        let from = jiff::Timestamp::from_nanosecond(i128::from(origin))
            .map(|t| {
                t.to_zoned_datetime(zone.clone())
                    .strftime("%Y-%m-%d %H:%M:%S")
                    .to_string()
            })
            .unwrap_or_default();
        Frame {
            axis: TimeAxis {
                range: 0.0..((end - origin) as f64 / 1e9).max(1e-9),
                origin_ns: origin,
                zone: zone.clone(),
            },
            origin,
            interval,
            step_secs: interval as f64 / 1e9,
            x_desc: svg_text(&format!("time ({}), from {from}", zone_name(zone, origin))),
        }
    }

    /// Seconds from the origin to `ns`.
    fn secs(&self, ns: u64) -> f64 {
        (ns - self.origin) as f64 / 1e9
    }
}

/// One panel's series: per interval, (seconds, value).
struct Series {
    arrived: Vec<(f64, u64)>,
    sent: Vec<(f64, u64)>,
    dropped: Vec<(f64, u64)>,
    level: Vec<(f64, u64)>,
    /// The highest count, and the highest level or bound.
    count_max: u64,
    level_max: u64,
}

impl Series {
    /// The rows of `timeline` of `panel`'s policy.
    fn new(frame: &Frame, timeline: &Timeline, panel: &Panel) -> Series {
        let rows: Vec<&TimelineRow> = timeline
            .rows
            .iter()
            .filter(|r| r.policy == panel.label)
            .collect();
        let series = |f: fn(&TimelineRow) -> u64| -> Vec<(f64, u64)> {
            rows.iter()
                .map(|r| (frame.secs(r.start_ns), f(r)))
                .collect()
        };
        Series {
            arrived: series(|r| r.arrived),
            sent: series(|r| r.sent),
            dropped: series(|r| r.dropped),
            level: series(|r| r.level),
            count_max: rows
                .iter()
                .map(|r| r.arrived.max(r.sent).max(r.dropped))
                .max()
                .unwrap_or(0),
            level_max: rows
                .iter()
                .map(|r| r.level)
                .max()
                .unwrap_or(0)
                .max(panel.bound.unwrap_or(0)),
        }
    }
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
    let frame = Frame::new(timeline, zone);
    draw_svg(timeline_size(panels.len()), title, |body| {
        let areas = body.split_evenly((panels.len().max(1), 1));
        for (panel, area) in panels.iter().zip(&areas) {
            let series = Series::new(&frame, timeline, panel);
            let (charts, legends) = panel_areas(area, &caption(panel))?;
            let (counts_area, level_area) = charts.split_vertically(COUNTS_H);
            let (counts_legend, level_legend) = legends.split_vertically(COUNTS_H);
            draw_counts(&counts_area, &frame, &series)?;
            draw_legend(&counts_legend, 6, &counts_entries())?;
            draw_levels(&level_area, &frame, panel, &series)?;
            draw_legend(&level_legend, 10, &level_entries(panel))?;
        }
        Ok(())
    })
}

/// A panel's title: its label, its spec when that says more, and its
/// headline figures. A name too long for the band is shortened so the
/// figures stay whole.
fn caption(panel: &Panel) -> String {
    let name = if panel.label == panel.spec {
        svg_text(panel.label)
    } else {
        svg_text(&format!("{}  ({})", panel.label, panel.spec))
    };
    let figures = format!(" — {}", headline(&panel.figures));
    let room = TITLE_ROOM - text::width(&figures, PANEL_TITLE_PX);
    format!("{}{figures}", text::shorten(&name, PANEL_TITLE_PX, room))
}

/// The upper part of a panel: requests arrived, sent and dropped.
fn draw_counts(area: &Area, frame: &Frame, series: &Series) -> Result<()> {
    let mut counts = ChartBuilder::on(area)
        .margin_left(12)
        .margin_right(12)
        .margin_top(6)
        .x_label_area_size(0)
        .y_label_area_size(70)
        .build_cartesian_2d(frame.axis.clone(), 0.0..headroom(series.count_max))
        .map_err(draw_err)?;
    counts
        .configure_mesh()
        .y_desc(format!("requests per {}", span(frame.interval)))
        .y_labels(5)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_labels(10)
        .light_line_style(WHITE)
        .bold_line_style(BLACK.mix(0.12))
        .draw()
        .map_err(draw_err)?;
    for ((_, stroke), data) in COUNTS
        .iter()
        .zip([&series.arrived, &series.sent, &series.dropped])
    {
        draw_line(&mut counts, steps(data, frame.step_secs), *stroke)?;
    }
    Ok(())
}

/// The legend of the counts.
fn counts_entries() -> Vec<Entry> {
    COUNTS
        .iter()
        .map(|(name, stroke)| Entry::new(Mark::Line(*stroke), *name))
        .collect()
}

/// The legend of the levels.
fn level_entries(panel: &Panel) -> Vec<Entry> {
    let mut entries = vec![Entry::new(
        Mark::Line(LEVEL_STROKE),
        format!("peak {}", svg_text(panel.level_kind)),
    )];
    if let Some(b) = panel.bound {
        entries.push(Entry::new(
            Mark::Line(BOUND_STROKE),
            format!("bound ({b}), dashed"),
        ));
    }
    entries
}

/// The lower part of a panel: the peak backlog or level, and the bound.
fn draw_levels(area: &Area, frame: &Frame, panel: &Panel, series: &Series) -> Result<()> {
    let axis = &frame.axis;
    let mut levels = ChartBuilder::on(area)
        .margin_top(10)
        .margin_left(12)
        .margin_right(12)
        .margin_bottom(8)
        .x_label_area_size(42)
        .y_label_area_size(70)
        .build_cartesian_2d(axis.clone(), 0.0..headroom(series.level_max))
        .map_err(draw_err)?;
    let kind = svg_text(panel.level_kind);
    levels
        .configure_mesh()
        .y_desc(format!("peak {kind}"))
        .y_labels(4)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_labels(10)
        .x_label_formatter(&|x| axis.label(*x, axis.tick_step(10)))
        .x_desc(frame.x_desc.as_str())
        .light_line_style(WHITE)
        .bold_line_style(BLACK.mix(0.12))
        .draw()
        .map_err(draw_err)?;
    let level = steps(&series.level, frame.step_secs);
    levels
        .draw_series(AreaSeries::new(level.clone(), 0.0, LEVEL.mix(0.25)))
        .map_err(draw_err)?;
    draw_line(&mut levels, level, LEVEL_STROKE)?;
    if let Some(b) = panel.bound {
        let line = vec![(axis.range.start, b as f64), (axis.range.end, b as f64)];
        draw_line(&mut levels, line, BOUND_STROKE)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

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
            figures: Figures::default(),
        }];
        let svg = timeline_svg("t", &panels, &t, &TimeZone::UTC).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
    }
}
