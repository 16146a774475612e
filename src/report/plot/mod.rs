//! Plots as SVG, drawn with plotters from plain report data.
//!
//! [`timeline_svg`] draws one panel per policy over one shared time axis
//! ([`timeline`]); [`interval`] picks and builds a timeline of a few
//! hundred intervals for it; [`size_svg`]
//! draws a sizing sweep ([`size`]). This file holds what they share: the
//! frame with its title, a panel's title band with its headline figures,
//! the legend column beside the panels (legends never cover data), line
//! strokes with dash patterns (lines that may coincide stay apart),
//! colours, and the text rule.
//!
//! Text drawn (titles, labels, specs, file names) comes from logs, configs
//! and the command line: plotters escapes what XML reserves, and
//! [`svg_text`] shows control characters as `\u{1b}`, which XML 1.0 cannot
//! hold at all, so the document always parses.

pub mod interval;
pub mod size;
pub mod text;
pub mod timeline;

pub use interval::{MAX_PLOTTED, fit, intervals};
pub use size::{FrontierPoint, NeedPoint, SizePlot, size_plot_size, size_report_svg, size_svg};
pub use timeline::{Panel, timeline_svg};

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use text::{shorten, svg_text, wrap};

/// Width of a plot, in pixels.
pub const WIDTH: u32 = 1200;
/// Height of the title band above the panels.
const HEADER: u32 = 44;
/// Size of the plot's title, in pixels a em.
pub const TITLE_PX: u32 = 20;
/// Size of a panel's title.
const PANEL_TITLE_PX: u32 = 16;
/// Where titles start, and the margin they keep on the right.
const TITLE_X: i32 = 16;
/// Room for a title's text across the plot, in pixels.
pub const TITLE_ROOM: f64 = (WIDTH - 2 * TITLE_X as u32) as f64;

const DROPPED: RGBColor = RGBColor(210, 40, 40);
const BOUND: RGBColor = RGBColor(230, 130, 0);

/// An area of the plot being drawn.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn draw_err<E: std::error::Error + Send + Sync>(
    e: plotters::drawing::DrawingAreaErrorKind<E>,
) -> anyhow::Error {
    anyhow!("cannot draw the plot: {e}")
}

/// The top of a count axis: a little above the highest value.
fn headroom(max: u64) -> f64 {
    (max.max(1) as f64 * 1.12).max(1.0)
}

/// An SVG document of `size`: white, `title` in a band at the top
/// (shortened when it does not fit), and the rest drawn by `body`.
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
            shorten(&svg_text(title), TITLE_PX, TITLE_ROOM),
            (TITLE_X, 12),
            ("sans-serif", TITLE_PX).into_font().color(&BLACK),
        ))
        .map_err(draw_err)?;
        body(&rest)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// How a series' line is drawn: its colour, width and dash pattern (dash
/// and gap in pixels; `None` is solid). Lines that may coincide get
/// different patterns, so the one drawn first shows through the gaps of
/// the one drawn over it.
#[derive(Clone, Copy)]
struct Stroke {
    color: RGBColor,
    width: u32,
    dash: Option<(u32, u32)>,
}

impl Stroke {
    const fn solid(color: RGBColor, width: u32) -> Stroke {
        Stroke {
            color,
            width,
            dash: None,
        }
    }

    const fn dashed(color: RGBColor, width: u32, dash: u32, gap: u32) -> Stroke {
        Stroke {
            color,
            width,
            dash: Some((dash, gap)),
        }
    }
}

/// Draws `points` joined by a line in `stroke` on `chart`.
fn draw_line<'a, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, RangedCoordf64>>,
    points: Vec<(f64, f64)>,
    stroke: Stroke,
) -> Result<()> {
    let style = stroke.color.stroke_width(stroke.width);
    match stroke.dash {
        None => chart.draw_series(LineSeries::new(points, style)),
        Some((dash, gap)) => chart.draw_series(DashedLineSeries::new(points, dash, gap, style)),
    }
    .map_err(draw_err)?;
    Ok(())
}

/// A legend entry's mark.
#[derive(Clone, Copy)]
enum Mark {
    Line(Stroke),
    Circle(RGBColor),
    Cross(RGBColor),
    Triangle(RGBColor),
}

/// One entry of a legend: its mark and its text (untrusted parts already
/// passed through [`svg_text`]).
struct Entry {
    mark: Mark,
    label: String,
}

impl Entry {
    fn new(mark: Mark, label: impl Into<String>) -> Entry {
        Entry {
            mark,
            label: label.into(),
        }
    }
}

/// Width of the legend column beside every panel: legends sit there, never
/// over the data.
const LEGEND_W: u32 = 330;
/// The legend's background (`#FAFAF6`), which tells its box apart in the
/// SVG (`tests/drip/report/plot.rs` finds legend boxes by it).
const LEGEND_FILL: RGBColor = RGBColor(250, 250, 246);
/// Size of legend text.
const LEGEND_PX: u32 = 12;
/// Where legend text starts in the legend column, and where its box ends.
const LEGEND_TEXT_X: i32 = 50;
const LEGEND_BOX_END: i32 = LEGEND_W as i32 - 8;
/// Room for a line of legend text; longer entries wrap.
const LEGEND_ROOM: f64 = (LEGEND_BOX_END - LEGEND_TEXT_X - 4) as f64;
/// Height of one line of legend text.
const LEGEND_LINE: i32 = 18;

/// Height of a panel's title band.
const TITLE_BAND: u32 = 28;

/// Draws `title` (already passed through [`svg_text`]) left-aligned in a
/// band across the top of the panel `area`, shortened when it does not
/// fit; the area of its chart and the legend column on its right, below
/// the band.
fn panel_areas<'a>(area: &Area<'a>, title: &str) -> Result<(Area<'a>, Area<'a>)> {
    let (band, rest) = area.split_vertically(TITLE_BAND);
    band.draw(&Text::new(
        shorten(title, PANEL_TITLE_PX, TITLE_ROOM),
        (TITLE_X, 8),
        ("sans-serif", PANEL_TITLE_PX).into_font().color(&BLACK),
    ))
    .map_err(draw_err)?;
    Ok(rest.split_horizontally(WIDTH - LEGEND_W))
}

/// Draws `entries` in a box at `top` pixels down the legend column `area`.
fn draw_legend(area: &Area, top: i32, entries: &[Entry]) -> Result<()> {
    let lines: Vec<(Option<Mark>, String)> = entries
        .iter()
        .flat_map(|e| {
            wrap(&e.label, LEGEND_PX, LEGEND_ROOM)
                .into_iter()
                .enumerate()
                .map(|(i, l)| ((i == 0).then_some(e.mark), l))
        })
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    let (x0, x1) = (6, LEGEND_BOX_END);
    let bottom = top + 8 + LEGEND_LINE * lines.len() as i32;
    area.draw(&Rectangle::new(
        [(x0, top), (x1, bottom)],
        LEGEND_FILL.filled(),
    ))
    .map_err(draw_err)?;
    area.draw(&Rectangle::new([(x0, top), (x1, bottom)], BLACK.mix(0.4)))
        .map_err(draw_err)?;
    for (i, (mark, text)) in lines.iter().enumerate() {
        let y = top + 4 + LEGEND_LINE * i as i32 + LEGEND_LINE / 2;
        if let Some(mark) = mark {
            draw_mark(area, (x0 + 8, y), *mark)?;
        }
        area.draw(&Text::new(
            text.clone(),
            (LEGEND_TEXT_X, y - 7),
            ("sans-serif", LEGEND_PX).into_font().color(&BLACK),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}

/// A legend mark, 28 pixels wide, starting at `(x, y)`.
fn draw_mark(area: &Area, (x, y): (i32, i32), mark: Mark) -> Result<()> {
    let c = (x + 14, y);
    match mark {
        Mark::Line(s) => {
            let style = s.color.stroke_width(s.width);
            let pts = vec![(x, y), (x + 28, y)];
            match s.dash {
                None => area.draw(&PathElement::new(pts, style)),
                Some((d, g)) => area.draw(&DashedPathElement::new(pts, d, g, style)),
            }
        }
        Mark::Circle(color) => area.draw(&Circle::new(c, 6, color.stroke_width(3))),
        Mark::Cross(color) => area.draw(&Cross::new(c, 5, color.stroke_width(3))),
        Mark::Triangle(color) => area.draw(&TriangleMarker::new(c, 6, color.stroke_width(2))),
    }
    .map_err(draw_err)
}

/// A run's headline figures, for the title of its panel.
#[derive(Clone, Copy, Debug, Default)]
pub struct Figures {
    pub dropped: u64,
    /// Dropped, percent of all requests.
    pub drop_pct: f64,
    pub delayed: u64,
    /// The wait p99 (policies that delay).
    pub wait_p99_ns: Option<u64>,
    /// Keys with a request dropped, of `keys`.
    pub keys_hurt: u64,
    pub keys: u64,
}

/// The figures as a title says them: `129 dropped, 3.96 %, 35 of 2365
/// keys hurt`, with the delayed and their wait p99 when the policy delays.
fn headline(f: &Figures) -> String {
    let mut s = format!("{} dropped, {:.2} %", f.dropped, f.drop_pct);
    if f.delayed > 0 {
        s.push_str(&format!(", {} delayed", f.delayed));
        if let Some(w) = f.wait_p99_ns {
            s.push_str(&format!(", wait p99 {}", crate::time::span(w)));
        }
    }
    if f.keys > 1 {
        s.push_str(&format!(", {} of {} keys hurt", f.keys_hurt, f.keys));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headline_says_drops_delays_and_keys() {
        let f = Figures {
            dropped: 129,
            drop_pct: 3.9643,
            keys_hurt: 35,
            keys: 2365,
            ..Figures::default()
        };
        assert_eq!(headline(&f), "129 dropped, 3.96 %, 35 of 2365 keys hurt");
        let f = Figures {
            delayed: 12,
            wait_p99_ns: Some(1_500_000_000),
            keys: 1,
            ..f
        };
        assert_eq!(
            headline(&f),
            "129 dropped, 3.96 %, 12 delayed, wait p99 1s 500ms"
        );
    }
}
