//! `drip audit --plot` and the sizing plot: an SVG that parses as XML,
//! says what it shows in its text, and renders with a real SVG renderer
//! (resvg) to a non-blank image of the stated size that matches the golden
//! image within a tolerance (regenerate on purpose with
//! `DRIP_BLESS=1 cargo test --test plot`, then look at the image).

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg;
use std::path::Path;

mod common;
use common::{run, tmp};

const NASA: &str = "fixtures/nasa_19950801.tsv";

/// Audits the NASA log under two policies with `extra` flags; the SVG.
fn nasa_plot(extra: &[&str]) -> String {
    let path = tmp("plot.svg");
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
    let out = run(&args, None);
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
        "gcra:rate=1/s,burst=10",
        "global-queue  (shaper:rate=2/s,burst=20,key=none,label=global-queue)",
        "arrived",
        "sent",
        "dropped",
        "peak level",
        "peak backlog",
        "bound (10)",
        "bound (20)",
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
        let got = tmp(name);
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
    let svg = tmp("plot.svg");
    let out = run(
        &[
            "audit",
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
        ],
        None,
    );
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
    let log = tmp("empty.csv");
    std::fs::write(&log, "ts,client\n").unwrap();
    let svg = tmp("plot.svg");
    let out = run(
        &[
            "audit",
            log.to_str().unwrap(),
            "-p",
            "gcra:rate=1/s",
            "--quiet",
            "--plot",
            svg.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(&svg).unwrap();
    let (w, h, _) = parse(&text);
    let img = render(&text);
    assert_eq!((img.width(), img.height()), (w, h));
}

#[test]
fn bad_plot_paths_are_one_line_and_status_2() {
    let dir = tmp("x");
    std::fs::create_dir_all(&dir).unwrap();
    let missing = tmp("no/such/dir/plot.svg");
    for (path, says) in [
        ("plot.png", "give a name ending in .svg"),
        (missing.to_str().unwrap(), "no directory"),
    ] {
        let out = run(
            &["audit", NASA, "-p", "gcra:rate=1/s", "--plot", path],
            None,
        );
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
    let out = run(
        &[
            "audit",
            NASA,
            "-p",
            "gcra:rate=1/s",
            "--plot",
            as_dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("is a directory"), "{}", out.stderr);
}

fn size_plot_data(needs: bool) -> String {
    use drip::plot::{FrontierPoint, NeedPoint, SizePlot, size_svg};
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
        "smallest burst per rate that meets the targets",
        "recommended: gcra:rate=10/s,burst=21",
        "misses the targets at any size tried",
        "per-key need: the zero-drop burst of each key, across 2365 keys",
        "1/s",
        "50/s",
        "p50",
        "p99.9",
        "max",
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
    let path = tmp("plot.svg");
    let out = run(
        &[
            "audit",
            NASA,
            "-p",
            "gcra:rate=1/s,burst=10",
            "--timeline",
            "1s",
            "--format",
            "json",
            "--plot",
            path.to_str().unwrap(),
        ],
        None,
    );
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
    let path = tmp("size.svg");
    let out = run(
        &[
            "size",
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
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let svg = std::fs::read_to_string(&path).unwrap();
    let (w, h, texts) = parse(&svg);
    assert_eq!((w, h), (1200, 44 + 420 + 340));
    for want in [
        "recommended: gcra:rate=1/s,burst=8",
        "smallest burst per rate that meets the targets",
        "per-key need: the zero-drop burst of each key, across 2365 keys",
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
    let out = run(
        &[
            "size",
            NASA,
            "-p",
            "gcra",
            "--max-drops",
            "0",
            "--plot",
            "x.png",
        ],
        None,
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("give a name ending in .svg"),
        "{}",
        out.stderr
    );
}
