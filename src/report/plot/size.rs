//! The sizing plot: the frontier (the smallest size per rate or window,
//! the recommendation marked) over the per-key need quantiles, on one axis
//! of the rates or windows tried.

use super::{
    Area, BOUND, DROPPED, Entry, Figures, HEADER, Mark, Stroke, WIDTH, draw_err, draw_legend,
    draw_line, draw_svg, headline, headroom, panel_areas, svg_text,
};
use anyhow::Result;
use plotters::chart::DualCoordChartContext;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::ops::Range;

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
        self.labels
            .get(i as usize)
            .map_or(String::new(), |l| svg_text(l))
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
    /// The wait p99 there (policies that delay).
    pub wait_p99_ns: Option<u64>,
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
    /// The recommendation's figures, said in the panels' titles.
    pub pick: Option<Figures>,
    /// The alternatives to the recommendation: their point and rule.
    pub alternatives: Vec<(&'a str, &'a str)>,
    /// Per-key needs (keyed specs); empty draws no second panel.
    pub needs: Vec<NeedPoint<'a>>,
}

/// The sizing plot of a `drip size` report.
pub fn size_report_svg(r: &super::super::size::SizeReport) -> Result<String> {
    let title = super::super::size::heading(r);
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
                wait_p99_ns: f.wait_p99_ns,
            })
            .collect(),
        recommended: r.recommended.as_ref().map(|f| (f.point(), f.spec.as_str())),
        pick: r.recommended.as_ref().map(|f| Figures {
            dropped: f.dropped,
            drop_pct: f.drop_pct,
            delayed: f.delayed,
            wait_p99_ns: f.wait_p99_ns,
            keys_hurt: f.keys_hurt,
            keys: f.keys,
        }),
        alternatives: r
            .alternatives
            .iter()
            .map(|a| (a.row.point(), a.rule))
            .collect(),
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
const ALTERNATIVE: RGBColor = RGBColor(40, 150, 80);
const WAIT: RGBColor = RGBColor(120, 120, 120);
/// The need quantiles, p50 first, each with its line and its marker's
/// radius. They are drawn from max down, each over the one above it with
/// a sparser pattern and a smaller marker, so where two are equal both
/// show: the higher one's colour in the lower one's gaps, rings around a
/// dot.
const QUANTILES: [(&str, Stroke, i32); 5] = [
    (
        "p50 (dots; over p90 if equal)",
        Stroke::dashed(RGBColor(150, 190, 230), 3, 2, 6),
        2,
    ),
    (
        "p90 (short dashes; over p99 if equal)",
        Stroke::dashed(RGBColor(80, 140, 210), 2, 4, 5),
        3,
    ),
    (
        "p99 (dashes; over p99.9 if equal)",
        Stroke::dashed(RGBColor(30, 90, 170), 2, 7, 5),
        4,
    ),
    (
        "p99.9 (long dashes; over max if equal)",
        Stroke::dashed(RGBColor(110, 60, 170), 2, 12, 5),
        5,
    ),
    ("max (solid)", Stroke::solid(RGBColor(210, 40, 40), 3), 6),
];
const FRONTIER_STROKE: Stroke = Stroke::solid(FEASIBLE, 2);
/// Dashed: it may cross or run along the frontier.
const WAIT_STROKE: Stroke = Stroke::dashed(WAIT, 2, 8, 5);

impl CategoryAxis {
    /// The frontier's points, then the per-key need's that are not among
    /// them.
    fn of(plot: &SizePlot) -> CategoryAxis {
        let mut labels: Vec<String> = plot.frontier.iter().map(|f| f.point.to_string()).collect();
        for n in &plot.needs {
            if !labels.iter().any(|l| l == n.point) {
                labels.push(n.point.to_string());
            }
        }
        CategoryAxis { labels }
    }

    /// Where `point` stands on the axis.
    fn at(&self, point: &str) -> f64 {
        self.labels.iter().position(|l| l == point).unwrap_or(0) as f64
    }
}

/// The sizing plot as an SVG document of [`size_plot_size`]: the frontier
/// (the smallest size per rate or window, points that miss the targets
/// crossed out, the recommendation ringed) and, when given, the per-key
/// need quantiles on the same axis, each panel with its legend beside it.
pub fn size_svg(plot: &SizePlot) -> Result<String> {
    let with_needs = !plot.needs.is_empty();
    let axis = CategoryAxis::of(plot);
    draw_svg(size_plot_size(with_needs), plot.title, |body| {
        let (top, bottom) = body.split_vertically(FRONTIER_PANEL);
        let (chart, legend) = panel_areas(&top, &frontier_title(plot))?;
        draw_frontier(&chart, plot, &axis)?;
        draw_legend(&legend, 6, &frontier_entries(plot))?;
        if with_needs {
            let (chart, legend) = panel_areas(&bottom, &needs_title(plot))?;
            draw_needs(&chart, plot, &axis)?;
            let entries: Vec<Entry> = QUANTILES
                .iter()
                .map(|(name, stroke, _)| Entry::new(Mark::Line(*stroke), *name))
                .collect();
            draw_legend(&legend, 6, &entries)?;
        }
        Ok(())
    })
}

/// The frontier panel's title, with the pick's figures.
fn frontier_title(plot: &SizePlot) -> String {
    let what = format!(
        "smallest {} per {} that meets the targets",
        plot.size_param, plot.axis
    );
    let pick = plot.recommended.and_then(|(point, _)| {
        let f = plot.frontier.iter().find(|f| f.point == point)?;
        Some((point, f.size))
    });
    match (pick, &plot.pick) {
        (Some((point, size)), Some(figures)) => svg_text(&format!(
            "{what} — pick {point}, {} {size}: {}",
            plot.size_param,
            headline(figures)
        )),
        (Some((point, size)), None) => svg_text(&format!(
            "{what} — pick {point}, {} {size}",
            plot.size_param
        )),
        _ => format!("{what} — none in the range"),
    }
}

/// The per-key need panel's title, with the need at the pick's point.
fn needs_title(plot: &SizePlot) -> String {
    let keys = plot.needs.iter().map(|n| n.keys).max().unwrap_or(0);
    let what = format!(
        "per-key need: the zero-drop {} of each key, across {keys} keys",
        plot.size_param
    );
    let at_pick = plot
        .recommended
        .and_then(|(point, _)| plot.needs.iter().find(|n| n.point == point));
    let Some(n) = at_pick else {
        return svg_text(&what);
    };
    let say = |q: Option<u64>| q.map_or("never fits".to_string(), |v| v.to_string());
    svg_text(&format!(
        "{what} — at {}: p99 {}, p99.9 {}, max {}",
        n.point,
        say(n.quantiles[2]),
        say(n.quantiles[3]),
        say(n.quantiles[4])
    ))
}

/// Draws a sweep chart's grid: `y_desc` up its side, `x_desc` and the
/// points of the sweep along its foot.
fn draw_grid<'a>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<CategoryAxis, RangedCoordf64>>,
    axis: &CategoryAxis,
    y_desc: &str,
    x_desc: &str,
) -> Result<()> {
    chart
        .configure_mesh()
        .y_desc(y_desc)
        .x_desc(x_desc)
        .y_labels(6)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_labels(16)
        .x_label_formatter(&|x| axis.label(*x))
        .light_line_style(WHITE)
        .bold_line_style(BLACK.mix(0.12))
        .draw()
        .map_err(draw_err)
}

/// The frontier panel's legend: what is drawn, in the order drawn.
fn frontier_entries(plot: &SizePlot) -> Vec<Entry> {
    let mut entries = vec![Entry::new(
        Mark::Line(FRONTIER_STROKE),
        format!("smallest {} meeting the targets", plot.size_param),
    )];
    if plot.frontier.iter().any(|f| !f.feasible) {
        entries.push(Entry::new(
            Mark::Cross(DROPPED),
            "misses the targets at any size tried",
        ));
    }
    if let Some((point, spec)) = plot.recommended
        && plot.frontier.iter().any(|f| f.point == point)
    {
        entries.push(Entry::new(
            Mark::Circle(RECOMMENDED),
            format!("recommended: {}", svg_text(spec)),
        ));
    }
    for &(point, rule) in &plot.alternatives {
        if plot.frontier.iter().any(|f| f.point == point) {
            entries.push(Entry::new(
                Mark::Triangle(ALTERNATIVE),
                svg_text(&format!("alternative: {rule} ({point})")),
            ));
        }
    }
    if plot.frontier.iter().any(|f| f.wait_p99_ns.unwrap_or(0) > 0) {
        entries.push(Entry::new(
            Mark::Line(WAIT_STROKE),
            "wait p99, right axis (dashed)",
        ));
    }
    entries
}

/// The frontier panel: the feasible points joined, the others crossed out,
/// the recommendation ringed.
fn draw_frontier(area: &Area, plot: &SizePlot, axis: &CategoryAxis) -> Result<()> {
    let size_max = plot.frontier.iter().map(|f| f.size).max().unwrap_or(0);
    let chart = ChartBuilder::on(area)
        .margin_left(12)
        .margin_right(12)
        .margin_top(6)
        .margin_bottom(8)
        .x_label_area_size(42)
        .y_label_area_size(70)
        .right_y_label_area_size(wait_axis(plot))
        .build_cartesian_2d(axis.clone(), 0.0..headroom(size_max))
        .map_err(draw_err)?;
    let scale = WaitScale::of(plot);
    let mut chart = chart.set_secondary_coord(axis.clone(), 0.0..scale.top);
    draw_grid(&mut chart, axis, plot.size_param, plot.axis)?;
    let points = |feasible: bool| -> Vec<(f64, f64)> {
        plot.frontier
            .iter()
            .filter(|f| f.feasible == feasible)
            .map(|f| (axis.at(f.point), f.size as f64))
            .collect()
    };
    let feasible = points(true);
    draw_line(&mut chart, feasible.clone(), FRONTIER_STROKE)?;
    chart
        .draw_series(
            feasible
                .iter()
                .map(|&p| Circle::new(p, 4, FEASIBLE.filled())),
        )
        .map_err(draw_err)?;
    chart
        .draw_series(
            points(false)
                .iter()
                .map(|&p| Cross::new(p, 6, DROPPED.stroke_width(3))),
        )
        .map_err(draw_err)?;
    if let Some((point, _)) = plot.recommended
        && let Some(f) = plot.frontier.iter().find(|f| f.point == point)
    {
        let p = (axis.at(point), f.size as f64);
        chart
            .draw_series([Circle::new(p, 11, RECOMMENDED.stroke_width(3))])
            .map_err(draw_err)?;
    }
    draw_alternatives(&mut chart, plot, axis)?;
    draw_waits(&mut chart, plot, axis, &scale)
}

/// The chart of a panel with a right label area: the wait axis's own
/// (the primary axis draws its ticks and title on the left only).
type Panel<'a> = DualCoordChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<CategoryAxis, RangedCoordf64>,
    Cartesian2d<CategoryAxis, RangedCoordf64>,
>;

/// The wait axis in the unit that suits its longest wait: ms, s, min, h.
struct WaitScale {
    /// Seconds a unit.
    unit_s: f64,
    suffix: &'static str,
    /// The axis's top, in units.
    top: f64,
}

impl WaitScale {
    fn of(plot: &SizePlot) -> WaitScale {
        let longest = (plot.frontier.iter())
            .filter_map(|f| f.wait_p99_ns)
            .max()
            .unwrap_or(0) as f64
            / 1e9;
        let (unit_s, suffix) = match longest {
            w if w < 1.0 => (0.001, "ms"),
            w if w < 120.0 => (1.0, "s"),
            w if w < 7200.0 => (60.0, "min"),
            _ => (3600.0, "h"),
        };
        WaitScale {
            unit_s,
            suffix,
            top: (longest / unit_s * 1.12).max(1.0),
        }
    }

    /// A tick: `250ms`, `1.5s`, `40min`.
    fn label(&self, v: f64) -> String {
        if v == 0.0 {
            return "0".into();
        }
        let n = if (v - v.round()).abs() < 1e-9 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        };
        format!("{n}{}", self.suffix)
    }
}

/// The width of the wait axis on the right: none when nothing waits (both
/// panels alike, so their points line up).
fn wait_axis(plot: &SizePlot) -> u32 {
    if plot.frontier.iter().any(|f| f.wait_p99_ns.unwrap_or(0) > 0) {
        70
    } else {
        0
    }
}

/// The alternatives to the recommendation, each a triangle.
fn draw_alternatives<'a>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<CategoryAxis, RangedCoordf64>>,
    plot: &SizePlot,
    axis: &CategoryAxis,
) -> Result<()> {
    for &(point, _) in &plot.alternatives {
        let Some(f) = plot.frontier.iter().find(|f| f.point == point) else {
            continue;
        };
        let p = (axis.at(point), f.size as f64);
        chart
            .draw_series([TriangleMarker::new(p, 9, ALTERNATIVE.stroke_width(2))])
            .map_err(draw_err)?;
    }
    Ok(())
}

/// The wait p99 along the frontier, on a second axis in seconds, when the
/// policy delays.
fn draw_waits(
    chart: &mut Panel,
    plot: &SizePlot,
    axis: &CategoryAxis,
    scale: &WaitScale,
) -> Result<()> {
    let waits: Vec<(f64, f64)> = plot
        .frontier
        .iter()
        .filter_map(|f| Some((axis.at(f.point), f.wait_p99_ns? as f64 / 1e9 / scale.unit_s)))
        .collect();
    if waits.iter().all(|w| w.1 == 0.0) {
        return Ok(());
    }
    chart
        .configure_secondary_axes()
        .y_desc("wait p99 (dashed)")
        .y_labels(6)
        .y_label_formatter(&|v| scale.label(*v))
        .draw()
        .map_err(draw_err)?;
    let (dash, gap) = WAIT_STROKE.dash.unwrap_or((8, 5));
    chart
        .draw_secondary_series(DashedLineSeries::new(
            waits,
            dash,
            gap,
            WAIT.stroke_width(WAIT_STROKE.width),
        ))
        .map_err(draw_err)?;
    Ok(())
}

/// The per-key need panel: a line per quantile, broken where some
/// request never fits, drawn from max down (see [`QUANTILES`]).
fn draw_needs(area: &Area, plot: &SizePlot, axis: &CategoryAxis) -> Result<()> {
    let need_max = plot
        .needs
        .iter()
        .flat_map(|n| n.quantiles.iter().flatten())
        .copied()
        .max()
        .unwrap_or(0);
    let needs = ChartBuilder::on(area)
        .margin_left(12)
        .margin_right(12)
        .margin_top(6)
        .margin_bottom(8)
        .x_label_area_size(42)
        .y_label_area_size(70)
        .right_y_label_area_size(wait_axis(plot))
        .build_cartesian_2d(axis.clone(), 0.0..headroom(need_max))
        .map_err(draw_err)?;
    // The right label area stays blank, so both panels' points line up.
    let mut needs = needs.set_secondary_coord(axis.clone(), 0.0..1.0);
    let needed = format!("{} needed", plot.size_param);
    draw_grid(&mut needs, axis, &needed, plot.axis)?;
    for (q, (_, stroke, radius)) in QUANTILES.iter().enumerate().rev() {
        // A point where some request never fits breaks the line.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for n in &plot.needs {
            match n.quantiles[q] {
                Some(v) => runs.last_mut().unwrap().push((axis.at(n.point), v as f64)),
                None => runs.push(Vec::new()),
            }
        }
        for run in runs.into_iter().filter(|r| !r.is_empty()) {
            needs
                .draw_series(
                    run.iter()
                        .map(|&p| Circle::new(p, *radius, stroke.color.filled())),
                )
                .map_err(draw_err)?;
            draw_line(&mut needs, run, *stroke)?;
        }
    }
    Ok(())
}
