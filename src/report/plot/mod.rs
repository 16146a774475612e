//! Plots as SVG, drawn with plotters from plain report data.
//!
//! [`timeline_svg`] draws one panel per policy over one shared time axis
//! ([`timeline`]); [`interval`] picks and builds a timeline of a few
//! hundred intervals for it; [`size_svg`]
//! draws a sizing sweep ([`size`]). This file holds what they share: the
//! frame with its title, the legend, colours, and the text rule.
//!
//! Text drawn (titles, labels, specs, file names) comes from logs, configs
//! and the command line: plotters escapes what XML reserves, and
//! [`svg_text`] shows control characters as `\u{1b}`, which XML 1.0 cannot
//! hold at all, so the document always parses.

pub mod interval;
pub mod size;
pub mod timeline;

pub use interval::{MAX_PLOTTED, fit, intervals};
pub use size::{FrontierPoint, NeedPoint, SizePlot, size_plot_size, size_report_svg, size_svg};
pub use timeline::{Panel, timeline_svg};

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Width of a plot, in pixels.
pub const WIDTH: u32 = 1200;
/// Height of the title band above the panels.
const HEADER: u32 = 44;

const DROPPED: RGBColor = RGBColor(210, 40, 40);
const BOUND: RGBColor = RGBColor(230, 130, 0);

/// An area of the plot being drawn.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn draw_err<E: std::error::Error + Send + Sync>(
    e: plotters::drawing::DrawingAreaErrorKind<E>,
) -> anyhow::Error {
    anyhow!("cannot draw the plot: {e}")
}

/// `s` as text to draw: control and invisible characters shown as
/// `\u{1b}` or `\n` (plotters escapes `<`, `&` and quotes itself).
fn svg_text(s: &str) -> String {
    super::page::one_line(s)
}

/// The top of a count axis: a little above the highest value.
fn headroom(max: u64) -> f64 {
    (max.max(1) as f64 * 1.12).max(1.0)
}

/// An SVG document of `size`: white, `title` in a band at the top, and
/// the rest drawn by `body`.
fn draw_svg(
    size: (u32, u32),
    title: &str,
    body: impl FnOnce(&Area) -> Result<()>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (head, rest) = root.split_vertically(HEADER);
        head.draw(&Text::new(
            svg_text(title),
            (16, 12),
            ("sans-serif", 20).into_font().color(&BLACK),
        ))
        .map_err(draw_err)?;
        body(&rest)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// A legend entry's mark: a short thick line in `color`.
fn swatch(color: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
}

/// Draws a chart's legend, in its upper right corner.
fn legend<'a, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, RangedCoordf64>>,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(draw_err)
}
