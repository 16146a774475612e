//! The sizing plot: the frontier (the smallest size per rate or window,
//! the recommendation marked) over the per-key need quantiles, on one axis
//! of the rates or windows tried.

use super::{
    Area, BOUND, DROPPED, HEADER, WIDTH, draw_err, draw_svg, headroom, legend, svg_text, swatch,
};
use anyhow::Result;
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
const QUANTILES: [(&str, RGBColor); 5] = [
    ("p50", RGBColor(150, 190, 230)),
    ("p90", RGBColor(80, 140, 210)),
    ("p99", RGBColor(30, 90, 170)),
    ("p99.9", RGBColor(110, 60, 170)),
    ("max", RGBColor(210, 40, 40)),
];

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
/// need quantiles on the same axis.
pub fn size_svg(plot: &SizePlot) -> Result<String> {
    let with_needs = !plot.needs.is_empty();
    let axis = CategoryAxis::of(plot);
    draw_svg(size_plot_size(with_needs), plot.title, |body| {
        let (top, bottom) = body.split_vertically(FRONTIER_PANEL);
        draw_frontier(&top, plot, &axis)?;
        if with_needs {
            draw_needs(&bottom, plot, &axis)?;
        }
        Ok(())
    })
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

/// The frontier panel: the feasible points joined, the others crossed out,
/// the recommendation ringed.
fn draw_frontier(area: &Area, plot: &SizePlot, axis: &CategoryAxis) -> Result<()> {
    let size_max = plot.frontier.iter().map(|f| f.size).max().unwrap_or(0);
    let mut chart = ChartBuilder::on(area)
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
        .right_y_label_area_size(wait_axis(plot))
        .build_cartesian_2d(axis.clone(), 0.0..headroom(size_max))
        .map_err(draw_err)?;
    draw_grid(&mut chart, axis, plot.size_param, plot.axis)?;
    let points = |feasible: bool| -> Vec<(f64, f64)> {
        plot.frontier
            .iter()
            .filter(|f| f.feasible == feasible)
            .map(|f| (axis.at(f.point), f.size as f64))
            .collect()
    };
    let feasible = points(true);
    chart
        .draw_series(LineSeries::new(feasible.clone(), FEASIBLE.stroke_width(2)))
        .map_err(draw_err)?
        .label(format!("smallest {} meeting the targets", plot.size_param))
        .legend(swatch(FEASIBLE));
    chart
        .draw_series(
            feasible
                .iter()
                .map(|&p| Circle::new(p, 4, FEASIBLE.filled())),
        )
        .map_err(draw_err)?;
    let missing = points(false);
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
        let p = (axis.at(point), f.size as f64);
        chart
            .draw_series([Circle::new(p, 11, RECOMMENDED.stroke_width(3))])
            .map_err(draw_err)?
            .label(format!("recommended: {}", svg_text(spec)))
            .legend(|(x, y)| Circle::new((x + 9, y), 6, RECOMMENDED.stroke_width(3)));
    }
    draw_alternatives(&mut chart, plot, axis)?;
    draw_waits(chart, plot, axis)
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
    for &(point, rule) in &plot.alternatives {
        let Some(f) = plot.frontier.iter().find(|f| f.point == point) else {
            continue;
        };
        let p = (axis.at(point), f.size as f64);
        chart
            .draw_series([TriangleMarker::new(p, 9, ALTERNATIVE.stroke_width(2))])
            .map_err(draw_err)?
            .label(format!("alternative: {rule} ({point})"))
            .legend(|(x, y)| TriangleMarker::new((x + 9, y), 6, ALTERNATIVE.stroke_width(2)));
    }
    Ok(())
}

/// The wait p99 along the frontier, on a second axis in seconds, when the
/// policy delays; then the legend.
fn draw_waits<'a>(
    chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<CategoryAxis, RangedCoordf64>>,
    plot: &SizePlot,
    axis: &CategoryAxis,
) -> Result<()> {
    let waits: Vec<(f64, f64)> = plot
        .frontier
        .iter()
        .filter_map(|f| Some((axis.at(f.point), f.wait_p99_ns? as f64 / 1e9)))
        .collect();
    let mut chart = chart;
    if waits.iter().all(|w| w.1 == 0.0) {
        return legend(&mut chart);
    }
    let top = waits.iter().map(|w| w.1).fold(0.0, f64::max) * 1.12;
    let mut chart = chart.set_secondary_coord(axis.clone(), 0.0..top);
    chart
        .configure_secondary_axes()
        .y_desc("wait p99 (s)")
        .y_label_formatter(&|v| format!("{v:.1}"))
        .draw()
        .map_err(draw_err)?;
    chart
        .draw_secondary_series(LineSeries::new(waits, WAIT.stroke_width(2)))
        .map_err(draw_err)?
        .label("wait p99 at that size (right axis)")
        .legend(swatch(WAIT));
    // The secondary series' labels are kept with the primary's.
    legend(&mut chart)
}

/// The per-key need panel: a line per quantile, broken where some
/// request never fits.
fn draw_needs(area: &Area, plot: &SizePlot, axis: &CategoryAxis) -> Result<()> {
    let need_max = plot
        .needs
        .iter()
        .flat_map(|n| n.quantiles.iter().flatten())
        .copied()
        .max()
        .unwrap_or(0);
    let keys = plot.needs.iter().map(|n| n.keys).max().unwrap_or(0);
    let mut needs = ChartBuilder::on(area)
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
        .right_y_label_area_size(wait_axis(plot))
        .build_cartesian_2d(axis.clone(), 0.0..headroom(need_max))
        .map_err(draw_err)?;
    let needed = format!("{} needed", plot.size_param);
    draw_grid(&mut needs, axis, &needed, plot.axis)?;
    for (q, (name, color)) in QUANTILES.iter().enumerate() {
        // A point where some request never fits breaks the line.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for n in &plot.needs {
            match n.quantiles[q] {
                Some(v) => runs.last_mut().unwrap().push((axis.at(n.point), v as f64)),
                None => runs.push(Vec::new()),
            }
        }
        let mut first = true;
        for run in runs.into_iter().filter(|r| !r.is_empty()) {
            needs
                .draw_series(run.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(draw_err)?;
            let line = needs
                .draw_series(LineSeries::new(run, color.stroke_width(2)))
                .map_err(draw_err)?;
            if first {
                line.label(*name).legend(swatch(*color));
                first = false;
            }
        }
    }
    legend(&mut needs)
}
