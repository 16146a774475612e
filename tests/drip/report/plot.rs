//! `drip audit --plot` and the sizing plot: an SVG that parses as XML,
//! says what it shows in its text, and renders with a real SVG renderer
//! (resvg) to a non-blank image of the stated size that matches the golden
//! image within a tolerance (regenerate on purpose with `DRIP_BLESS=1
//! cargo test --test drip report::plot`, then look at the image).

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg;
use std::path::Path;

use crate::common::{Drip, NASA, Scratch};

/// Audits the NASA log under two policies with `extra` flags; the SVG.
fn nasa_plot(extra: &[&str]) -> String {
    let tmp = Scratch::new();
    let path = tmp.join("plot.svg");
    let mut args = vec![
        "audit",
        NASA,
        "--key-column",
        "host",
        "-p",
        "gcra:rate=1/s,burst=10",
        "-p",
        "shaper:rate=2/s,burst=20,key=none,label=global-queue",
        "--quiet",
        "--plot",
        path.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = Drip::new().args(&args).run();
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    std::fs::read_to_string(&path).expect("the plot is written")
}

/// The SVG's width, height and every text it shows.
fn parse(svg: &str) -> (u32, u32, Vec<String>) {
    let doc = usvg::roxmltree::Document::parse(svg).expect("the plot is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let dim = |a: &str| -> u32 {
        root.attribute(a)
            .unwrap_or_else(|| panic!("no {a}"))
            .parse()
            .unwrap()
    };
    let texts = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect();
    (dim("width"), dim("height"), texts)
}

/// Renders with resvg at the SVG's own size.
fn render(svg: &str) -> Pixmap {
    let tree = usvg::Tree::from_str(svg, &usvg::Options::default()).expect("resvg reads the SVG");
    let size = tree.size().to_int_size();
    let mut pixmap = Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(&tree, Transform::default(), &mut pixmap.as_mut());
    pixmap
}

/// Pixels within `tol` of `rgb` on every channel.
fn count_near(p: &Pixmap, rgb: (u8, u8, u8), tol: u8) -> usize {
    p.pixels()
        .iter()
        .filter(|c| {
            c.red().abs_diff(rgb.0) <= tol
                && c.green().abs_diff(rgb.1) <= tol
                && c.blue().abs_diff(rgb.2) <= tol
                && c.alpha() == 255
        })
        .count()
}

fn has_text(texts: &[String], want: &str) -> bool {
    texts.iter().any(|t| t == want)
}

#[test]
fn timeline_plot_renders_to_its_stated_size_and_matches_the_golden_image() {
    let svg = nasa_plot(&[]);
    let (w, h, texts) = parse(&svg);
    // Two panels of 380 under a 44-pixel title.
    assert_eq!((w, h), (1200, 44 + 2 * 380));

    let img = render(&svg);
    assert_eq!((img.width(), img.height()), (w, h));
    let total = img.pixels().len();
    let white = count_near(&img, (255, 255, 255), 0);
    assert!(
        white < total * 97 / 100,
        "the image is nearly blank: {white} of {total} white"
    );
    // Each series is drawn in its own colour.
    for (what, rgb) in [
        ("arrived", (160, 180, 210)),
        ("sent", (30, 140, 60)),
        ("dropped", (210, 40, 40)),
        ("level", (110, 60, 170)),
        ("bound", (230, 130, 0)),
    ] {
        let n = count_near(&img, rgb, 40);
        assert!(n > 150, "{what}: only {n} pixels of its colour");
    }

    for want in [
        "drip audit: fixtures/nasa_19950801.tsv, 30969 rows",
        // Each panel's title carries its headline figures.
        "gcra:rate=1/s,burst=10 — 5 dropped, 0.02 %, 2 of 2365 keys hurt",
        "global-queue  (shaper:rate=2/s,burst=20,key=none,label=global-queue) \
         — 82 dropped, 0.26 %, 16703 delayed, wait p99 7s",
        // The legends say how lines that coincide are told apart.
        "arrived (wide, pale)",
        "sent (thin; on arrived where equal)",
        "dropped (dashed)",
        "peak level",
        "peak backlog",
        "bound (10), dashed",
        "bound (20), dashed",
        // 13 hours in 2-minute intervals: 387 of them.
        "requests per 2m",
        "06:00",
        "18:00",
        "time (UTC), from 1995-08-01 06:00:00",
    ] {
        assert!(has_text(&texts, want), "no text '{want}' in {texts:?}");
    }

    matches_golden(&img, "plot-audit.png");
}

/// Compares with `fixtures/golden/NAME` (rewritten under DRIP_BLESS): at
/// most 0.5% of the pixels may differ by more than 40 on a channel.
fn matches_golden(img: &Pixmap, name: &str) {
    let tmp = Scratch::new();
    let (w, h) = (img.width(), img.height());
    let total = img.pixels().len();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/golden")
        .join(name);
    if std::env::var_os("DRIP_BLESS").is_some() {
        img.save_png(&golden).unwrap();
    }
    let want = Pixmap::load_png(&golden)
        .unwrap_or_else(|e| panic!("{}: {e} (run with DRIP_BLESS=1)", golden.display()));
    assert_eq!((want.width(), want.height()), (w, h), "golden image size");
    let differ = img
        .pixels()
        .iter()
        .zip(want.pixels())
        .filter(|(a, b)| {
            a.red().abs_diff(b.red()) > 40
                || a.green().abs_diff(b.green()) > 40
                || a.blue().abs_diff(b.blue()) > 40
        })
        .count();
    if differ * 200 > total {
        let got = tmp.join(name);
        img.save_png(&got).unwrap();
        panic!(
            "{differ} of {total} pixels differ from {} (more than 0.5%); this run's image is {}",
            golden.display(),
            got.display()
        );
    }
}

#[test]
fn time_labels_follow_tz() {
    let (_, _, texts) = parse(&nasa_plot(&["--tz", "Asia/Kolkata"]));
    // 06:00 UTC is 11:30 in India: the first tick is its next even hour.
    assert!(has_text(&texts, "12:00"), "{texts:?}");
    assert!(!has_text(&texts, "06:00"), "{texts:?}");
    assert!(
        has_text(&texts, "time (Asia/Kolkata), from 1995-08-01 11:30:00"),
        "{texts:?}"
    );
}

#[test]
fn timeline_interval_is_used_as_given() {
    let (_, _, texts) = parse(&nasa_plot(&["--timeline", "30m"]));
    assert!(has_text(&texts, "requests per 30m"), "{texts:?}");
}

#[test]
fn a_plot_does_not_add_a_timeline_to_the_report() {
    let tmp = Scratch::new();
    let svg = tmp.join("plot.svg");
    let out = Drip::audit()
        .args([
            "fixtures/small.csv",
            "--key-column",
            "client",
            "-p",
            "gcra:rate=1/s,burst=2",
            "--format",
            "json",
            "--quiet",
            "--plot",
            svg.to_str().unwrap(),
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(v.get("timeline").is_none(), "{}", out.stdout);
    let (w, h, texts) = parse(&std::fs::read_to_string(&svg).unwrap());
    assert_eq!((w, h), (1200, 44 + 380));
    // A log of a few seconds is plotted in milliseconds.
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("requests per ") && t.ends_with("ms")),
        "{texts:?}"
    );
    render(&std::fs::read_to_string(&svg).unwrap());
}

#[test]
fn a_log_with_no_rows_still_gets_a_plot() {
    let tmp = Scratch::new();
    let log = tmp.join("empty.csv");
    std::fs::write(&log, "ts,client\n").unwrap();
    let svg = tmp.join("plot.svg");
    let out = Drip::audit()
        .args([
            log.to_str().unwrap(),
            "-p",
            "gcra:rate=1/s",
            "--quiet",
            "--plot",
            svg.to_str().unwrap(),
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&svg).unwrap();
    let (w, h, _) = parse(&text);
    let img = render(&text);
    assert_eq!((img.width(), img.height()), (w, h));
}

#[test]
fn bad_plot_paths_are_one_line_and_status_2() {
    let tmp = Scratch::new();
    let dir = tmp.join("x");
    std::fs::create_dir_all(&dir).unwrap();
    let missing = tmp.join("no/such/dir/plot.svg");
    for (path, says) in [
        ("plot.png", "give a name ending in .svg"),
        (missing.to_str().unwrap(), "no directory"),
    ] {
        let out = Drip::audit()
            .args([NASA, "-p", "gcra:rate=1/s", "--plot", path])
            .run();
        assert_eq!(out.code, 2, "{path}: {}", out.stderr);
        assert_eq!(out.stderr.trim_end().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(says), "{}", out.stderr);
        assert!(
            out.stdout.is_empty(),
            "fails before the report: {}",
            out.stdout
        );
    }
    let as_dir = dir.with_extension("svg");
    std::fs::create_dir_all(&as_dir).unwrap();
    let out = Drip::audit()
        .args([
            NASA,
            "-p",
            "gcra:rate=1/s",
            "--plot",
            as_dir.to_str().unwrap(),
        ])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is a directory"), "{}", out.stderr);
}

fn size_plot_data(needs: bool) -> String {
    use drip::plot::{Figures, FrontierPoint, NeedPoint, SizePlot, size_svg};
    let rates = ["1/s", "2/s", "5/s", "10/s", "20/s", "50/s"];
    let sizes = [
        (480, false),
        (200, true),
        (64, true),
        (21, true),
        (9, true),
        (4, true),
    ];
    let plot = SizePlot {
        title: "drip size: access.log, 30969 rows, drop ≤ 0.5 %",
        axis: "rate",
        size_param: "burst",
        frontier: rates
            .iter()
            .zip(sizes)
            .map(|(point, (size, feasible))| FrontierPoint {
                point,
                size,
                feasible,
                wait_p99_ns: None,
            })
            .collect(),
        recommended: Some(("10/s", "gcra:rate=10/s,burst=21")),
        pick: Some(Figures {
            dropped: 12,
            drop_pct: 0.0387,
            delayed: 0,
            wait_p99_ns: None,
            keys_hurt: 3,
            keys: 2365,
        }),
        alternatives: Vec::new(),
        needs: if needs {
            rates
                .iter()
                .enumerate()
                .map(|(i, point)| {
                    let d = 1 << i;
                    NeedPoint {
                        point,
                        keys: 2365,
                        quantiles: [
                            Some(8 / d + 1),
                            Some(40 / d + 1),
                            Some(120 / d + 1),
                            Some(300 / d + 1),
                            // Some request never fits at the lowest rate.
                            (i > 0).then_some(600 / d + 1),
                        ],
                    }
                })
                .collect()
        } else {
            Vec::new()
        },
    };
    size_svg(&plot).unwrap()
}

#[test]
fn sizing_plot_renders_to_its_stated_size_and_matches_the_golden_image() {
    let svg = size_plot_data(true);
    let (w, h, texts) = parse(&svg);
    assert_eq!((w, h), drip::plot::size_plot_size(true));
    assert_eq!((w, h), (1200, 44 + 420 + 340));
    for want in [
        "drip size: access.log, 30969 rows, drop ≤ 0.5 %",
        "smallest burst per rate that meets the targets — pick 10/s, burst 21: \
         12 dropped, 0.04 %, 3 of 2365 keys hurt",
        "recommended: gcra:rate=10/s,burst=21",
        "misses the targets at any size tried",
        "per-key need: the zero-drop burst of each key, across 2365 keys \
         — at 10/s: p99 16, p99.9 38, max 76",
        "1/s",
        "50/s",
        "p50 (dots; over p90 if equal)",
        "p99.9 (long dashes; over max if equal)",
        "max (solid)",
    ] {
        assert!(has_text(&texts, want), "no text '{want}' in {texts:?}");
    }
    let img = render(&svg);
    assert_eq!((img.width(), img.height()), (w, h));
    for (what, rgb) in [
        ("frontier", (30, 110, 190)),
        ("recommended", (230, 130, 0)),
        ("missed", (210, 40, 40)),
        ("p50", (150, 190, 230)),
    ] {
        let n = count_near(&img, rgb, 30);
        assert!(n > 40, "{what}: only {n} pixels of its colour");
    }
    matches_golden(&img, "plot-size.png");
}

#[test]
fn sizing_plot_without_keys_has_one_panel() {
    let svg = size_plot_data(false);
    let (w, h, texts) = parse(&svg);
    assert_eq!((w, h), (1200, 44 + 420));
    assert!(
        !texts.iter().any(|t| t.starts_with("per-key need")),
        "{texts:?}"
    );
    let img = render(&svg);
    assert_eq!((img.width(), img.height()), (w, h));
}

#[test]
fn a_timeline_too_fine_to_draw_is_merged_with_a_note() {
    let tmp = Scratch::new();
    let path = tmp.join("plot.svg");
    let out = Drip::audit()
        .args([
            NASA,
            "-p",
            "gcra:rate=1/s,burst=10",
            "--timeline",
            "1s",
            "--format",
            "json",
            "--plot",
            path.to_str().unwrap(),
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "drip: the plot shows the timeline every 2m: --timeline 1s gives 46322 intervals"
        ),
        "{}",
        out.stderr
    );
    // The report keeps every 1 s interval.
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["timeline"]["interval_ns"], 1_000_000_000u64);
    assert_eq!(v["timeline"]["rows"].as_array().unwrap().len(), 46322);
    let (_, _, texts) = parse(&std::fs::read_to_string(&path).unwrap());
    assert!(has_text(&texts, "requests per 2m"), "{texts:?}");
}

#[test]
fn size_plot_is_written_and_renders() {
    let tmp = Scratch::new();
    let path = tmp.join("size.svg");
    let out = Drip::size()
        .args([
            NASA,
            "--key-column",
            "host",
            "-p",
            "gcra",
            "--rate",
            "1/s,2/s,5/s,10/s",
            "--max-drop-rate",
            "0.1",
            "--quiet",
            "--plot",
            path.to_str().unwrap(),
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let svg = std::fs::read_to_string(&path).unwrap();
    let (w, h, texts) = parse(&svg);
    assert_eq!((w, h), (1200, 44 + 420 + 340));
    for want in [
        "recommended: gcra:rate=1/s,burst=8",
        "smallest burst per rate that meets the targets — pick 1/s, burst 8: \
         17 dropped, 0.05 %, 5 of 2365 keys hurt",
        "per-key need: the zero-drop burst of each key, across 2365 keys \
         — at 1/s: p99 6, p99.9 10, max 13",
        "alternative: knee (5/s)",
        "10/s",
    ] {
        assert!(has_text(&texts, want), "no text '{want}' in {texts:?}");
    }
    let img = render(&svg);
    assert_eq!((img.width(), img.height()), (w, h));
    assert!(
        count_near(&img, (230, 130, 0), 30) > 40,
        "the recommendation is not drawn"
    );
    let out = Drip::size()
        .args([NASA, "-p", "gcra", "--max-drops", "0", "--plot", "x.png"])
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("give a name ending in .svg"),
        "{}",
        out.stderr
    );
}

/// A rectangle in the SVG's pixels: (left, top, right, bottom).
type Rect = (f64, f64, f64, f64);

/// The number in attribute `a` of `n`.
fn num(n: &usvg::roxmltree::Node, a: &str) -> f64 {
    n.attribute(a)
        .unwrap_or_else(|| panic!("no {a}"))
        .parse()
        .unwrap()
}

/// The plot area of every chart in the SVG: the extent of its grid (the
/// faint lines the mesh draws across the whole area, each vertical one
/// from its top to its bottom, each horizontal one from its left to its
/// right).
fn plot_areas(doc: &usvg::roxmltree::Document) -> Vec<Rect> {
    let grid: Vec<Rect> = doc
        .descendants()
        .filter(|n| n.has_tag_name("line") && n.attribute("opacity") == Some("0.12"))
        .map(|n| {
            let (x1, y1, x2, y2) = (num(&n, "x1"), num(&n, "y1"), num(&n, "x2"), num(&n, "y2"));
            (x1.min(x2), y1.min(y2), x1.max(x2), y1.max(y2))
        })
        .collect();
    let mut areas: Vec<Rect> = Vec::new();
    for v in grid.iter().filter(|l| l.0 == l.2) {
        if areas.iter().any(|a| a.1 == v.1 && a.3 == v.3) {
            continue;
        }
        // The horizontal lines between this one's ends span the area.
        let across: Vec<&Rect> = grid
            .iter()
            .filter(|h| h.1 == h.3 && h.1 >= v.1 && h.1 <= v.3)
            .collect();
        let left = across.iter().map(|h| h.0).fold(v.0, f64::min);
        let right = across.iter().map(|h| h.2).fold(v.2, f64::max);
        areas.push((left, v.1, right, v.3));
    }
    areas
}

/// The legend boxes: rectangles filled with the legend's background.
fn legend_boxes(doc: &usvg::roxmltree::Document) -> Vec<Rect> {
    doc.descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("#FAFAF6"))
        .map(|n| {
            let (x, y) = (num(&n, "x"), num(&n, "y"));
            (x, y, x + num(&n, "width"), y + num(&n, "height"))
        })
        .collect()
}

fn overlaps(a: &Rect, b: &Rect) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// The legend boxes of `svg` that cover part of a chart's plot area,
/// with the area.
fn legends_over_data(doc: &usvg::roxmltree::Document) -> Vec<(Rect, Rect)> {
    let areas = plot_areas(doc);
    legend_boxes(doc)
        .into_iter()
        .flat_map(|b| {
            areas
                .iter()
                .filter(move |a| overlaps(a, &b))
                .map(move |a| (b, *a))
        })
        .collect()
}

/// No legend box covers any part of a chart's plot area, and each legend
/// text named in `labels` starts inside a legend box.
fn assert_legends_outside_the_data(svg: &str, charts: usize, legends: usize, labels: &[&str]) {
    let doc = usvg::roxmltree::Document::parse(svg).unwrap();
    let areas = plot_areas(&doc);
    let boxes = legend_boxes(&doc);
    assert_eq!(areas.len(), charts, "plot areas: {areas:?}");
    assert_eq!(boxes.len(), legends, "legend boxes: {boxes:?}");
    let over = legends_over_data(&doc);
    assert!(over.is_empty(), "legends over plot areas: {over:?}");
    for label in labels {
        let text = doc
            .descendants()
            .find(|n| n.has_tag_name("text") && n.text().map(str::trim) == Some(*label))
            .unwrap_or_else(|| panic!("no legend text '{label}'"));
        let (x, y) = (num(&text, "x"), num(&text, "y"));
        assert!(
            boxes
                .iter()
                .any(|b| x >= b.0 && x <= b.2 && y >= b.1 && y <= b.3),
            "'{label}' at ({x}, {y}) is in no legend box {boxes:?}"
        );
    }
}

#[test]
fn timeline_legends_sit_beside_the_panels() {
    assert_legends_outside_the_data(
        &nasa_plot(&[]),
        4,
        4,
        &[
            "arrived (wide, pale)",
            "dropped (dashed)",
            "bound (20), dashed",
        ],
    );
}

#[test]
fn sizing_legends_sit_beside_the_panels() {
    let tmp = Scratch::new();
    assert_legends_outside_the_data(
        &size_plot_data(true),
        2,
        2,
        &[
            "recommended: gcra:rate=10/s,burst=21",
            "p99.9 (long dashes; over max if equal)",
        ],
    );
    assert_legends_outside_the_data(
        &size_plot_data(false),
        1,
        1,
        &["misses the targets at any size tried"],
    );
    // A delaying policy: the wait on a right axis, the alternatives marked.
    let path = tmp.join("size-nginx.svg");
    let out = Drip::size()
        .args([
            NASA,
            "-q",
            "--key-column",
            "host",
            "-p",
            "nginx",
            "--max-drop-rate",
            "0.1",
            "--plot",
            path.to_str().unwrap(),
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_legends_outside_the_data(
        &std::fs::read_to_string(&path).unwrap(),
        2,
        2,
        &[
            "wait p99, right axis (dashed)",
            "alternative: lowest wait (20r/s)",
        ],
    );
}

/// The check sees a legend drawn over the data: a box of the legend's
/// background added inside the first plot area is found.
#[test]
fn the_legend_check_sees_a_legend_over_the_data() {
    let svg = nasa_plot(&[]);
    let doc = usvg::roxmltree::Document::parse(&svg).unwrap();
    let (x, y, ..) = plot_areas(&doc)[0];
    let rect = format!(
        "<rect x=\"{}\" y=\"{}\" width=\"90\" height=\"60\" fill=\"#FAFAF6\"/>",
        x + 10.0,
        y + 10.0
    );
    let bad = svg.replace("</svg>", &format!("{rect}</svg>"));
    let doc = usvg::roxmltree::Document::parse(&bad).unwrap();
    assert_eq!(legends_over_data(&doc).len(), 1);
}

/// Every left-aligned text of `svg` that ends past `right` pixels, measured
/// in DejaVu Sans (the widest common sans-serif) at its own font size.
fn texts_past(svg: &str, right: f64) -> Vec<String> {
    let doc = usvg::roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter(|n| n.attribute("text-anchor").is_none_or(|a| a == "start"))
        .filter_map(|n| {
            let text = n.text().unwrap_or("").trim();
            let end = num(&n, "x") + drip::plot::width_at_em(text, num(&n, "font-size"));
            (end > right).then(|| format!("{text} (ends at {end:.0})"))
        })
        .collect()
}

#[test]
fn titles_and_legends_stay_inside_the_plot_with_many_files_and_long_labels() {
    let tmp = Scratch::new();
    let deep = tmp.join("var/log/nginx/archive/by-host/www.example.org/2026/november");
    std::fs::create_dir_all(&deep).unwrap();
    let log = std::fs::read_to_string("fixtures/small.csv").unwrap();
    let files: Vec<String> = (1..=12)
        .map(|i| {
            let f = deep.join(format!("access-2026-11-{i:02}.csv"));
            std::fs::write(&f, &log).unwrap();
            f.to_str().unwrap().to_string()
        })
        .collect();
    let label = "W".repeat(40);
    let spec = format!("gcra:rate=1/s,burst=2,label={label}");
    let path = tmp.join("plot.svg");
    let mut args: Vec<&str> = vec!["audit"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--key-column", "client", "-p", &spec, "-p"]);
    args.extend(["shaper:rate=1/s,burst=3,key=none", "--quiet", "--plot"]);
    args.push(path.to_str().unwrap());
    let out = Drip::new().args(&args).run();
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let svg = std::fs::read_to_string(&path).unwrap();
    assert_eq!(texts_past(&svg, 1200.0 - 8.0), Vec::<String>::new());
    let (_, _, texts) = parse(&svg);
    let title = &texts[0];
    assert!(
        title.starts_with("drip audit: access-2026-11-01.csv, access-2026-11-02.csv"),
        "{title}"
    );
    assert!(title.contains(" more files, "), "{title}");
    // A long label is shortened; the figures after it stay whole.
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("WWWW") && t.contains("… — ") && t.ends_with(" keys hurt")),
        "{texts:?}"
    );
    // The legend wraps long text instead of running past its box.
    let wide = "W".repeat(30);
    let out = Drip::size()
        .args([NASA, "--key-column", "host", "-p"])
        .arg(format!("gcra:label={wide}"))
        .args([
            "--rate",
            "1/s,2/s",
            "--max-drop-rate",
            "0.1",
            "--quiet",
            "--plot",
        ])
        .arg(&path)
        .run();
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let svg = std::fs::read_to_string(&path).unwrap();
    assert_eq!(texts_past(&svg, 1200.0 - 8.0), Vec::<String>::new());
}
