//! `drip audit --format html`: one self-contained file. Read with a
//! WHATWG-conformant HTML tokenizer (html5gum): no parse errors, elements
//! properly nested and closed, nothing that loads from outside the file
//! (no scripts, links, images, frames, `src`/`href`, `@import` or
//! `url(...)`), the report's figures in its tables, and the inline plot
//! rendering with a real SVG renderer (resvg).

use html5gum::{Token, Tokenizer};
use std::collections::BTreeMap;

use crate::common::{Drip, NASA, Out, Scratch};

/// One element as read: name, attributes, and the text directly in it.
#[derive(Debug, Default)]
struct Element {
    name: String,
    attrs: BTreeMap<String, String>,
    /// Names of the elements it sits in, outermost first.
    path: Vec<String>,
    text: String,
}

struct Doc {
    elements: Vec<Element>,
    doctype: Option<String>,
}

const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Tokenizes `html`, failing on any parse error or mis-nested element.
fn parse(html: &str) -> Doc {
    let mut elements: Vec<Element> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut doctype = None;
    for token in Tokenizer::new(html) {
        let Ok(token) = token;
        match token {
            Token::Error(e) => panic!("HTML parse error: {e:?}"),
            Token::Doctype(d) => doctype = Some(s(&d.name)),
            Token::StartTag(tag) => {
                let name = s(&tag.name);
                let path = open.iter().map(|&i| elements[i].name.clone()).collect();
                let attrs = tag.attributes.iter().map(|(k, v)| (s(k), s(v))).collect();
                elements.push(Element {
                    name: name.clone(),
                    attrs,
                    path,
                    text: String::new(),
                });
                if !tag.self_closing && !VOID.contains(&name.as_str()) {
                    open.push(elements.len() - 1);
                }
            }
            Token::EndTag(tag) => {
                let name = s(&tag.name);
                let top = open
                    .pop()
                    .unwrap_or_else(|| panic!("</{name}> closes nothing"));
                assert_eq!(
                    elements[top].name, name,
                    "</{name}> closes <{}>",
                    elements[top].name
                );
            }
            Token::String(text) => {
                if let Some(&i) = open.last() {
                    elements[i].text.push_str(&s(&text));
                }
            }
            Token::Comment(_) => {}
        }
    }
    assert!(
        open.is_empty(),
        "left open: {:?}",
        open.iter().map(|&i| &elements[i].name).collect::<Vec<_>>()
    );
    Doc { elements, doctype }
}

impl Doc {
    fn all(&self, name: &str) -> impl Iterator<Item = &Element> {
        self.elements.iter().filter(move |e| e.name == name)
    }
    fn texts(&self, name: &str) -> Vec<String> {
        self.all(name).map(|e| e.text.trim().to_string()).collect()
    }
    /// Table rows (cells' texts) of the table after the heading `h2`.
    fn table_after(&self, h2: &str) -> Vec<Vec<String>> {
        let at = self
            .elements
            .iter()
            .position(|e| e.name == "h2" && e.text == h2)
            .unwrap_or_else(|| panic!("no heading '{h2}'"));
        let mut rows = Vec::new();
        for e in &self.elements[at + 1..] {
            match e.name.as_str() {
                "h2" => break,
                "tr" => rows.push(Vec::new()),
                "th" | "td" => rows.last_mut().unwrap().push(e.text.clone()),
                _ => {}
            }
        }
        rows
    }
}

/// Fails when anything in the page would be fetched from elsewhere.
fn assert_self_contained(html: &str, doc: &Doc) {
    for e in &doc.elements {
        assert!(
            ![
                "script", "link", "img", "iframe", "object", "embed", "base", "image", "use"
            ]
            .contains(&e.name.as_str()),
            "<{}> in the page",
            e.name
        );
        for (k, v) in &e.attrs {
            assert!(
                ![
                    "src",
                    "href",
                    "xlink:href",
                    "srcset",
                    "action",
                    "formaction",
                    "poster",
                    "data"
                ]
                .contains(&k.as_str()),
                "<{} {k}=\"{v}\">",
                e.name
            );
            assert!(!k.starts_with("on"), "an event handler: <{} {k}>", e.name);
            if k != "xmlns" {
                assert!(!v.contains("://"), "<{} {k}=\"{v}\">", e.name);
            }
        }
    }
    for style in doc.texts("style") {
        assert!(!style.contains("@import"), "{style}");
        assert!(!style.contains("url("), "{style}");
    }
    // Only a namespace name may look like an address.
    let addresses = html.matches("://").count();
    let namespaces = html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(
        addresses, namespaces,
        "an address other than the SVG namespace"
    );
}

fn nasa_html(extra: &[&str]) -> Out {
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
        "--format",
        "html",
    ];
    args.extend(extra);
    Drip::new().args(&args).run()
}

#[test]
fn the_page_is_one_self_contained_well_formed_file() {
    let out = nasa_html(&["--max-drops", "10"]);
    // The shaper drops 82: the threshold is crossed, and the page says so.
    assert_eq!(out.code, 1, "{}", out.stderr);
    let doc = parse(&out.stdout);
    assert_eq!(doc.doctype.as_deref(), Some("html"));
    assert_self_contained(&out.stdout, &doc);
    assert_eq!(
        doc.texts("title"),
        ["drip audit: fixtures/nasa_19950801.tsv"]
    );
    let charset = doc.all("meta").find_map(|m| m.attrs.get("charset"));
    assert_eq!(charset.map(String::as_str), Some("utf-8"));

    let alert: Vec<String> = doc
        .all("li")
        .filter(|li| li.path.iter().any(|p| p == "ul"))
        .map(|li| li.text.clone())
        .collect();
    assert_eq!(
        alert,
        ["'global-queue' crossed --max-drops: measured 82, limit 10"]
    );

    // The summary matches the JSON report of the same audit, figure for figure.
    let json = Drip::audit()
        .args([
            NASA,
            "--key-column",
            "host",
            "-p",
            "gcra:rate=1/s,burst=10",
            "-p",
            "shaper:rate=2/s,burst=20,key=none,label=global-queue",
            "--quiet",
            "--format",
            "json",
        ])
        .run();
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let table = doc.table_after("Policies");
    let header = &table[0];
    assert_eq!(
        header[..5],
        ["policy", "requests", "admitted", "delayed", "dropped"]
    );
    assert_eq!(table.len(), 3);
    for (row, p) in table[1..].iter().zip(v["policies"].as_array().unwrap()) {
        assert_eq!(row[0], p["label"].as_str().unwrap());
        for (i, field) in [
            (1, "requests"),
            (2, "admitted"),
            (3, "delayed"),
            (4, "dropped"),
        ] {
            assert_eq!(row[i], p[field].to_string(), "{field} of {}", row[0]);
        }
    }

    let top = doc.table_after("Keys with the most drops");
    assert_eq!(
        top[0],
        [
            "policy", "key", "requests", "limited", "dropped", "drop_pct"
        ]
    );
    assert!(top.len() > 2, "{top:?}");

    // The plot is inline, once, in a figure, and renders.
    let svgs: Vec<&Element> = doc.all("svg").collect();
    assert_eq!(svgs.len(), 1);
    assert!(
        svgs[0].path.ends_with(&["figure".to_string()]),
        "{:?}",
        svgs[0].path
    );
    let texts = doc.texts("text");
    for want in ["gcra:rate=1/s,burst=10 — ", "requests per 2m", "bound (20)"] {
        assert!(
            texts.iter().any(|t| t.starts_with(want)),
            "no '{want}' in {texts:?}"
        );
    }
    let start = out.stdout.find("<svg").unwrap();
    let end = out.stdout.find("</svg>").unwrap() + "</svg>".len();
    let tree = resvg::usvg::Tree::from_str(&out.stdout[start..end], &Default::default())
        .expect("the inline SVG reads on its own");
    let size = tree.size().to_int_size();
    assert_eq!((size.width(), size.height()), (1200, 44 + 2 * 380));
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(&tree, Default::default(), &mut pixmap.as_mut());
    let inked = pixmap.pixels().iter().filter(|p| p.red() < 200).count();
    assert!(inked > pixmap.pixels().len() / 50, "nearly blank: {inked}");

    // No timeline table unless asked for.
    assert_eq!(doc.all("details").count(), 0);
}

#[test]
fn timeline_table_is_folded_in_when_asked_for() {
    let out = nasa_html(&["--timeline", "1h"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = parse(&out.stdout);
    assert_self_contained(&out.stdout, &doc);
    assert_eq!(doc.texts("summary"), ["Timeline table, every 1h (26 rows)"]);
    // 06:00 to 18:52: 13 hours for each of 2 policies, plus the header.
    let rows = doc
        .all("tr")
        .filter(|tr| tr.path.iter().any(|p| p == "details"))
        .count();
    assert_eq!(rows, 1 + 26);
    assert!(doc.texts("text").iter().any(|t| t == "requests per 1h"));
}

#[test]
fn report_text_is_escaped_not_markup() {
    let out = Drip::audit()
        .args([
            "fixtures/small.csv",
            "-p",
            "gcra:rate=1/s,label=<b>&x\"y",
            "--quiet",
            "--format",
            "html",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = parse(&out.stdout);
    assert_self_contained(&out.stdout, &doc);
    assert_eq!(doc.all("b").count(), 0, "a label became an element");
    let table = doc.table_after("Policies");
    assert_eq!(table[1][0], "<b>&x\"y");
}

#[test]
fn an_empty_log_gives_a_page_too() {
    let dir = Scratch::new();
    let log = dir.join("empty.csv");
    std::fs::write(&log, "ts,client\n").unwrap();
    let out = Drip::audit()
        .args([
            log.to_str().unwrap(),
            "-p",
            "gcra:rate=1/s",
            "--quiet",
            "--format",
            "html",
        ])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = parse(&out.stdout);
    assert_self_contained(&out.stdout, &doc);
    assert_eq!(doc.all("svg").count(), 1);
}

// The checks themselves catch what they are for.

#[test]
#[should_panic(expected = "closes <b>")]
fn the_checker_catches_mis_nesting() {
    parse("<!DOCTYPE html><html><body><p><b>x</p></b></body></html>");
}

#[test]
#[should_panic(expected = "parse error")]
fn the_checker_catches_parse_errors() {
    parse("<!DOCTYPE html><html><body><p a=\"1\"b=2>x</p></body></html>");
}

#[test]
#[should_panic(expected = "<img>")]
fn the_checker_catches_an_outside_image() {
    let html = "<!DOCTYPE html><html><body><img src=\"https://example.com/x.png\"></body></html>";
    assert_self_contained(html, &parse(html));
}

#[test]
#[should_panic(expected = "url(")]
fn the_checker_catches_a_style_fetch() {
    let html =
        "<!DOCTYPE html><html><head><style>body{background:url(x.png)}</style></head></html>";
    assert_self_contained(html, &parse(html));
}

#[test]
fn nginx_conf_sections_are_on_the_page() {
    let dir = Scratch::new();
    let conf = dir.join("nginx.conf");
    std::fs::write(
        &conf,
        "http { limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n server { location /api/ { limit_req zone=z; } } }\n",
    )
    .unwrap();
    let log = dir.join("access.csv");
    std::fs::write(
        &log,
        "remote_addr,uri,t,st\n1.1.1.1,/api/a,1700000000,PASSED\n1.1.1.1,/api/b,1700000000,PASSED\n1.1.1.1,/x,1700000000,-\n",
    )
    .unwrap();
    let out = Drip::audit()
        .args([
            log.to_str().unwrap(),
            "--nginx-conf",
            conf.to_str().unwrap(),
            "--verify-column",
            "st",
            "--quiet",
            "--format",
            "html",
        ])
        .run();
    // The second request is REJECTED by drip but logged PASSED.
    let doc = parse(&out.stdout);
    assert_self_contained(&out.stdout, &doc);
    let headings = doc.texts("h2");
    let locations = headings
        .iter()
        .find(|h| h.contains(": locations of "))
        .unwrap_or_else(|| panic!("{headings:?} ({})", out.stderr));
    let rows = doc.table_after(locations);
    assert_eq!(rows[0][..3], ["location", "limit_req", "requests"]);
    assert!(rows.iter().any(|r| r[0].contains("/api/")), "{rows:?}");
    let verify = headings
        .iter()
        .find(|h| h.contains("$limit_req_status against column 'st': 2 of 3 rows agree"))
        .unwrap_or_else(|| panic!("{headings:?}"));
    let confusion = doc.table_after(verify);
    assert_eq!(confusion[0], ["drip", "logged", "rows"]);
    assert!(
        confusion.iter().any(|r| r == &["REJECTED", "PASSED", "1"]),
        "{confusion:?}"
    );
}

#[test]
fn size_page_is_self_contained_with_its_tables_and_plot() {
    let args = [
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
        "--format",
    ];
    let out = Drip::new().args([&args[..], &["html"]].concat()).run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc = parse(&out.stdout);
    assert_self_contained(&out.stdout, &doc);
    let headings = doc.texts("h2");
    assert_eq!(
        headings,
        ["Recommendation", "Frontier", "Per-key need", "Plot"]
    );
    assert!(
        doc.texts("pre")[0].contains("gcra:rate=1/s,burst=8"),
        "{:?}",
        doc.texts("pre")
    );
    let json = Drip::new().args([&args[..], &["json"]].concat()).run();
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let frontier = doc.table_after("Frontier");
    assert_eq!(frontier.len(), 1 + v["frontier"].as_array().unwrap().len());
    for (row, f) in frontier[1..].iter().zip(v["frontier"].as_array().unwrap()) {
        assert_eq!(row[1], f["size"].to_string());
    }
    assert_eq!(doc.all("svg").count(), 1);
}
