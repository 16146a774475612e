//! Text that comes from logs, configs and the command line (keys, labels,
//! file and config names) shows as text in every format, never as markup
//! or as terminal control: markdown holds no tag, link or code span and no
//! `|` that splits a cell; the table no control character; HTML no element
//! the text spelled; the SVG plot parses as XML; CSV and JSON keep every
//! value as found.

use html5gum::{Token, Tokenizer};
use resvg::usvg;
use std::path::{Path, PathBuf};

use crate::common::{Drip, Scratch, s};

/// Keys a log may hold: a tag, a link, a cell break with a code span, a
/// terminal escape.
const KEYS: [&str; 4] = [
    "<img src=x onerror=alert(1)>",
    "[click](http://evil)",
    "a|b`c`",
    "x\x1b[2Jy",
];

/// A label with a terminal escape, a tag, a cell break, a link, a
/// backtick and a bell.
const LABEL: &str = "evil\x1b[31m<b>|[x](http://e)`\x07";

/// A log named with a terminal escape and markup, each key twice at one
/// instant (under burst=1, one drop each).
fn hostile_log(tmp: &Scratch) -> PathBuf {
    let path = tmp.join("log\x1b[7m<i>|[x](e).csv");
    let mut text = String::from("ts,client\n");
    for (i, k) in KEYS.iter().enumerate() {
        for _ in 0..2 {
            text.push_str(&format!("2024-05-01T12:00:00.{i}00Z,{k}\n"));
        }
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// `drip audit` of the hostile log under the hostile label.
fn audit(log: &Path, extra: &[&str]) -> String {
    let spec = format!("gcra:rate=1/s,burst=1,label={LABEL}");
    Drip::audit()
        .arg(log)
        .args(["--key-column", "client", "-p", &spec, "-q"])
        .args(extra)
        .run()
        .ok()
}

/// No control character but the line ends.
fn assert_no_controls(format: &str, text: &str) {
    if let Some(c) = text.chars().find(|&c| c.is_control() && c != '\n') {
        panic!("{format}: raw control {c:?} in\n{text}");
    }
}

/// No raw control, and rendered as GitHub renders it, no element of the
/// text's own, each of `shown` as written, the verdict first.
fn assert_markdown_is_text(text: &str, shown: &[&str]) {
    assert_no_controls("markdown", text);
    super::gfm::assert_renders_as_text(text, shown);
}

fn assert_table_is_text(text: &str) {
    assert_no_controls("table", text);
}

/// No parse error, no element that the text spelled, no raw control.
fn assert_html_is_text(html: &str) {
    assert_no_controls("html", html);
    for token in Tokenizer::new(html) {
        let Ok(token) = token;
        match token {
            Token::Error(e) => panic!("HTML parse error: {e:?}"),
            Token::StartTag(tag) => {
                let name = String::from_utf8_lossy(&tag.name).into_owned();
                assert!(
                    !["img", "b", "i", "a", "script"].contains(&name.as_str()),
                    "<{name}> in the page"
                );
            }
            _ => {}
        }
    }
}

/// The SVG parses as XML (and as SVG) and holds no raw control.
fn assert_svg_parses(svg: &str) {
    assert_no_controls("svg", svg);
    usvg::roxmltree::Document::parse(svg).expect("the plot is well-formed XML");
    usvg::Tree::from_str(svg, &usvg::Options::default()).expect("resvg reads the plot");
}

#[test]
fn an_audit_shows_hostile_keys_and_labels_as_text() {
    let tmp = Scratch::new();
    let log = hostile_log(&tmp);
    let table = audit(&log, &[]);
    assert_table_is_text(&table);
    assert!(
        table.contains("evil\\u{1b}[31m<b>|[x](http://e)`\\u{7}"),
        "{table}"
    );
    assert!(
        table.contains(KEYS[0]) && table.contains("x\\u{1b}[2Jy"),
        "{table}"
    );

    let markdown = audit(&log, &["-f", "markdown"]);
    let label = "evil\\u{1b}[31m<b>|[x](http://e)`\\u{7}";
    assert_markdown_is_text(&markdown, &[KEYS[0], KEYS[1], KEYS[2], label]);
    assert!(
        markdown.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{markdown}"
    );

    let plot = tmp.join("plot.svg");
    let html = audit(&log, &["-f", "html", "--plot", s(&plot)]);
    assert_html_is_text(&html);
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{html}"
    );
    assert_svg_parses(&std::fs::read_to_string(&plot).unwrap());
}

/// CSV is safe to open in a spreadsheet: no raw control character in any
/// cell, and no cell a spreadsheet would run as a formula; JSON keeps
/// every value as found.
#[test]
fn csv_is_safe_for_spreadsheets_and_json_keeps_every_value() {
    let tmp = Scratch::new();
    let log = hostile_log(&tmp);
    // A key that is a formula, and a location name with a terminal escape.
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("2024-05-01T12:00:01.000Z,=HYPERLINK(\"http://e\")\n");
    text.push_str("2024-05-01T12:00:01.000Z,=HYPERLINK(\"http://e\")\n");
    std::fs::write(&log, text).unwrap();
    let csv = audit(&log, &["-f", "csv"]);
    assert_no_controls("csv", &csv);
    let fields: Vec<String> = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv.as_bytes())
        .records()
        .flat_map(|r| r.unwrap().iter().map(String::from).collect::<Vec<_>>())
        .collect();
    // Keys as drip names them (control characters already shown as text).
    for key in [KEYS[0], KEYS[1], KEYS[2], "x\\u{1b}[2Jy"] {
        assert!(fields.iter().any(|f| f == key), "{key:?} in {csv}");
    }
    assert!(
        fields.iter().any(|f| f == "'=HYPERLINK(\"http://e\")"),
        "{csv}"
    );
    assert!(
        !fields.iter().any(|f| f.starts_with(['=', '+', '@'])),
        "{csv}"
    );
    let label = "evil\\u{1b}[31m<b>|[x](http://e)`\\u{7}";
    assert!(fields.iter().any(|f| f == label), "{csv}");

    let json: serde_json::Value = serde_json::from_str(&audit(&log, &["-f", "json"])).unwrap();
    assert_eq!(json["policies"][0]["label"], LABEL);
    assert_eq!(json["policies"][0]["top_keys"][0]["key"], KEYS[0]);
}

#[test]
fn a_size_report_shows_hostile_keys_as_text() {
    let tmp = Scratch::new();
    let log = hostile_log(&tmp);
    let size = |format: &str, extra: &[&str]| {
        let mut args = vec![
            s(&log),
            "--key-column",
            "client",
            "-p",
            "gcra",
            "--max-drop-rate",
            "0.5",
            // The log spans 300 ms: a point it tests.
            "--rate",
            "20/s",
            "--horizon",
            "100ms",
            "--top",
            "4",
            "-q",
            "-f",
            format,
        ];
        args.extend(extra);
        Drip::size().args(&args).run().ok()
    };
    let table = size("table", &[]);
    assert_table_is_text(&table);
    assert!(table.contains("x\\u{1b}[2Jy"), "{table}");
    let markdown = size("markdown", &[]);
    assert_markdown_is_text(&markdown, &KEYS[..3]);
    assert!(markdown.contains("[click&#93;(http://evil)"), "{markdown}");
    let plot = tmp.join("size.svg");
    assert_html_is_text(&size("html", &["--plot", s(&plot)]));
    assert_svg_parses(&std::fs::read_to_string(&plot).unwrap());
}

#[test]
fn an_nginx_config_name_shows_as_text() {
    let dir = Scratch::new();
    let conf = dir.join("ng\x1b[7m<i>|[x](e)`.conf");
    std::fs::write(
        &conf,
        "http {\n  limit_req_zone $http_x_api_key zone=k:1m rate=1r/s;\n  server {\n    location / { limit_req zone=k; }\n    location ~* \\.(?:gif|png)$ { limit_req zone=k; }\n    location /_x_*y*~~z~~/ { limit_req zone=k; }\n  }\n}\n",
    )
    .unwrap();
    let log = dir.join("log.csv");
    std::fs::write(
        &log,
        "t,uri,http_x_api_key\n1700000000,/,k1\n1700000000,/,k1\n1700000001,/,k2\n1700000001,/a.gif,k2\n1700000001,/_x_*y*~~z~~/,k2\n",
    )
    .unwrap();
    let audit = |extra: &[&str]| {
        Drip::audit()
            .args([s(&log), "--nginx-conf", s(&conf), "-q"])
            .args(extra)
            .run()
            .ok()
    };
    assert_table_is_text(&audit(&[]));
    let markdown = audit(&["-f", "markdown"]);
    let name = "ng\\u{1b}[7m<i>|[x](e)`.conf";
    let locations = ["~* \\.(?:gif|png)$", "/_x_*y*~~z~~/"];
    assert_markdown_is_text(&markdown, &[name, locations[0], locations[1]]);
    assert!(markdown.contains("locations of"), "{markdown}");
    // The same config against a policy (--compare), and sized.
    let compare = audit(&[
        "-p",
        "gcra:rate=1/s,label=_a_*b*",
        "--compare",
        "-f",
        "markdown",
    ]);
    assert_markdown_is_text(&compare, &[name, locations[0], "_a_*b*"]);
    let sized = Drip::size()
        .args([
            s(&log),
            "--nginx-conf",
            s(&conf),
            "-q",
            "--max-drop-rate",
            "1",
        ])
        .args(["-f", "markdown"])
        .run();
    assert_eq!(sized.code, 0, "{}", sized.stderr);
    assert_markdown_is_text(&sized.stdout, &[name, locations[0], locations[1]]);
    let plot = dir.join("nginx.svg");
    assert_html_is_text(&audit(&["-f", "html", "--plot", s(&plot)]));
    assert_svg_parses(&std::fs::read_to_string(&plot).unwrap());
}

#[test]
fn a_crossed_threshold_names_a_hostile_label_without_its_controls() {
    let tmp = Scratch::new();
    let log = hostile_log(&tmp);
    let spec = format!("gcra:rate=1/s,burst=1,label={LABEL}");
    let out = Drip::audit()
        .args([
            s(&log),
            "--key-column",
            "client",
            "-p",
            &spec,
            "-q",
            "--max-drops",
            "0",
        ])
        .run();
    assert_eq!(out.code, 1, "stderr: {}", out.stderr);
    assert!(out.stderr.contains("crossed"), "{}", out.stderr);
    assert_no_controls("stderr", &out.stderr);
}

#[test]
fn the_keys_with_the_longest_waits_show_hostile_keys_as_text() {
    let tmp = Scratch::new();
    // Under a policy that delays, each key's second row waits: every key
    // is in the list.
    let log = hostile_log(&tmp);
    let audit = |format: &str| {
        let spec = "nginx:rate=1r/s,burst=1";
        Drip::audit()
            .args([s(&log), "--key-column", "client", "-p", spec])
            .args(["-q", "-f", format])
            .run()
            .ok()
    };
    let table = audit("table");
    assert_table_is_text(&table);
    let waits = &table[table.find("keys with the longest waits").expect(&table)..];
    assert!(
        waits.contains("x\\u{1b}[2Jy") && waits.contains(KEYS[0]),
        "{table}"
    );

    let markdown = audit("markdown");
    assert_markdown_is_text(&markdown, &KEYS[..3]);
    let at = markdown
        .find("Keys with the longest waits")
        .expect(&markdown);
    let waits = &markdown[at..];
    assert!(
        waits.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{markdown}"
    );
    assert!(waits.contains("[click&#93;(http://evil)"), "{markdown}");
    assert!(waits.contains("a&#124;b&#96;c&#96;"), "{markdown}");

    let html = audit("html");
    assert_html_is_text(&html);
    let waits = &html[html.find("Keys with the longest waits").expect(&html)..];
    assert!(
        waits.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{html}"
    );

    let json: serde_json::Value = serde_json::from_str(&audit("json")).unwrap();
    let keys: Vec<&str> = json["policies"][0]["top_waits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 4, "{json}");
    assert!(keys.contains(&KEYS[0]) && keys.contains(&KEYS[2]), "{json}");
}
