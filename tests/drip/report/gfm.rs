//! Markdown as GitHub renders it (comrak, in GFM mode: tables,
//! strikethrough, autolinks, and raw HTML let through as
//! GitHub lets `<details>` through): what a reader of the pull-request
//! comment sees. Untrusted text must come out as the text it is: no tag,
//! link, image or emphasis of its own, no code span or table cell broken.

use html5gum::{Token, Tokenizer};

/// The elements drip's own markdown makes; any other came from the text.
const OURS: [&str; 15] = [
    "h3", "h4", "p", "strong", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "details",
    "summary", "pre",
];

/// The rendered page: its text, line by line as a reader sees the blocks,
/// and the elements it has.
pub struct Rendered {
    pub text: String,
    pub tags: Vec<String>,
}

pub fn render(markdown: &str) -> Rendered {
    let mut options = comrak::Options::default();
    options.extension.table = true;
    options.extension.strikethrough = true;
    options.extension.autolink = true;
    options.render.r#unsafe = true;
    let html = comrak::markdown_to_html(markdown, &options);
    let mut text = String::new();
    let mut tags = Vec::new();
    for token in Tokenizer::new(&html) {
        let Ok(token) = token;
        match token {
            Token::StartTag(t) => {
                let name = String::from_utf8_lossy(&t.name).into_owned();
                if ["p", "li", "tr", "h3", "h4", "summary", "pre", "td", "th"]
                    .contains(&name.as_str())
                {
                    text.push('\n');
                }
                tags.push(name);
            }
            Token::String(s) => text.push_str(&String::from_utf8_lossy(&s)),
            _ => {}
        }
    }
    Rendered { text, tags }
}

/// `markdown` renders with none but drip's elements (`code` inside `pre`
/// only), and shows each of `shown` as written; its first line is the
/// verdict.
pub fn assert_renders_as_text(markdown: &str, shown: &[&str]) {
    let r = render(markdown);
    let foreign: Vec<&String> = (r.tags.iter())
        .filter(|t| !OURS.contains(&t.as_str()) && t.as_str() != "code")
        .collect();
    assert!(
        foreign.is_empty(),
        "elements from the text {foreign:?}:\n{markdown}"
    );
    let codes = r.tags.iter().filter(|t| *t == "code").count();
    let pres = r.tags.iter().filter(|t| *t == "pre").count();
    assert!(codes <= pres, "a code span from the text:\n{markdown}");
    for s in shown {
        assert!(
            r.text.contains(s),
            "{s:?} not shown as written in:\n{}\n---\n{markdown}",
            r.text
        );
    }
    let first = r.text.trim_start().lines().next().unwrap_or("");
    assert!(
        first.starts_with('✅') || first.starts_with('❌'),
        "the first line is not the verdict: {first:?}"
    );
}

#[test]
fn the_renderer_sees_markup_where_there_is_some() {
    let r = render("[x](http://e) <img src=x> *a* `c`\n\n| a | b |\n|---|---|\n| 1 | 2 | 3 |\n");
    for t in ["a", "img", "em", "code", "table"] {
        assert!(r.tags.contains(&t.to_string()), "{t}: {:?}", r.tags);
    }
    assert!(
        !r.text.contains('3'),
        "an extra cell is dropped: {}",
        r.text
    );
}
