//! The sizing plot of a policy that delays: the wait along the frontier on
//! a second axis, and the alternatives marked beside the recommendation.

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg;

use crate::common::{Drip, Scratch};

#[test]
fn a_delaying_policy_plots_its_wait_and_marks_the_alternatives() {
    let tmp = Scratch::new();
    let path = tmp.join("size.svg");
    let out = Drip::size()
        .args([
            "fixtures/nasa_19950801.tsv",
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
    let svg = std::fs::read_to_string(&path).unwrap();
    let doc = usvg::roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect();
    for want in [
        "wait p99 (dashed)",
        "wait p99, right axis (dashed)",
        "alternative: lowest wait (20r/s)",
        "recommended: nginx:rate=5r/s,burst=4",
    ] {
        assert!(texts.iter().any(|t| t == want), "{want} not in {texts:?}");
    }
    // Each axis has its own title and ticks: the size on the left only,
    // the wait on the right, as durations in one unit (NASA's longest
    // wait p99 is over an hour).
    for title in ["burst", "burst needed"] {
        assert_eq!(texts.iter().filter(|t| *t == title).count(), 1, "{texts:?}");
    }
    let waits: Vec<&String> = texts.iter().filter(|t| t.ends_with("min")).collect();
    assert!(waits.len() >= 3, "{texts:?}");
    assert!(
        waits
            .iter()
            .all(|t| t[..t.len() - 3].parse::<f64>().is_ok()),
        "{waits:?}"
    );
    let tree = usvg::Tree::from_str(&svg, &usvg::Options::default()).unwrap();
    let size = tree.size().to_int_size();
    let mut pixmap = Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(&tree, Transform::default(), &mut pixmap.as_mut());
    if let Some(p) = std::env::var_os("DRIP_PLOT_PNG") {
        pixmap.save_png(p).unwrap();
    }
    // The wait line is drawn (its grey), and the alternative (its green).
    let near = |rgb: (u8, u8, u8)| {
        pixmap
            .pixels()
            .iter()
            .filter(|c| {
                c.red().abs_diff(rgb.0) <= 12
                    && c.green().abs_diff(rgb.1) <= 12
                    && c.blue().abs_diff(rgb.2) <= 12
            })
            .count()
    };
    assert!(near((120, 120, 120)) > 200, "no wait line");
    assert!(near((40, 150, 80)) > 30, "no alternative marked");
}
