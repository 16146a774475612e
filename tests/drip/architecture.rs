//! The code's shape, held by a test (ARCHITECTURE.md says why): folders
//! follow the data flow, and a lower folder never imports a higher one; no
//! two files import each other, directly or around a circle; no production
//! function is over 100 lines, no file over 900, no struct over 15 fields
//! (clap argument structs and serialised report rows excepted).
//!
//! Imports are read from the source as text: `use` items (braces
//! expanded) and `crate::`/`super::` paths in code, each resolved to the
//! file of the longest module path it names. Comments, strings and test
//! modules are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each crate's source folder and its layers, lowest first: a module may
/// import modules of its own layer and of the layers below, never one
/// above, and every top-level module must be in a layer (a new one is
/// placed on purpose). The core is a crate of its own, so it cannot import
/// the command line at all; its paths in `drip` (`crate::policy`, named
/// through `use drip_core::...`) name no file of `drip` and are not edges.
const CRATES: &[(&str, &[&[&str]])] = &[
    (
        "crates/drip-core/src",
        &[
            &[
                "time",
                "rate",
                "quote",
                "notes",
                "wait_stats",
                "testing",
                "tree",
            ],
            &["policy"],
            &["ingest"],
            &["nginx_conf", "haproxy_cfg", "traefik_cfg"],
            &["engine"],
        ],
    ),
    (
        "src",
        &[
            &["clash", "clock", "percent", "progress", "nginx_setup"],
            &["report"],
            &["cli"],
            &["help"],
            &["audit", "size", "pace", "gate", "completions"],
        ],
    ),
];

/// The layer of the top-level module `top` in `layers`.
fn layer(layers: &[&[&str]], top: &str) -> Option<usize> {
    layers.iter().position(|l| l.contains(&top))
}

const MAX_FILE_LINES: usize = 900;
const MAX_FN_LINES: usize = 100;
const MAX_FIELDS: usize = 15;

struct Source {
    /// The file as written.
    text: String,
    /// Comments and string and character literals blanked (lines kept).
    code: String,
    /// Where the code's test module starts (byte offset), if it has one.
    tests_at: Option<usize>,
    /// A file of tests only (`tests.rs`, `testing.rs`).
    test_file: bool,
}

/// The files of the crate whose sources are in `dir` (from the project's
/// root), by module path.
fn sources(dir: &str) -> BTreeMap<Vec<String>, (PathBuf, Source)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut out = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&root).unwrap().with_extension("");
            let mut module: Vec<String> = rel
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            if module == ["lib"] || module == ["main"] {
                module.clear();
                if path.ends_with("main.rs") {
                    // The binary: a crate of its own, importing the library.
                    continue;
                }
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = blank(&text);
            let tests_at = test_module(&code);
            let name = path.file_name().unwrap().to_string_lossy();
            let test_file = name == "tests.rs" || name == "testing.rs";
            out.insert(
                module,
                (
                    path.clone(),
                    Source {
                        text,
                        code,
                        tests_at,
                        test_file,
                    },
                ),
            );
        }
    }
    out
}

/// `text` with comments, strings and character literals replaced by spaces
/// (newlines kept, so offsets and line numbers stay).
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let wipe = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            wipe(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let end = find(b, i + 2, b"*/").map_or(b.len(), |p| p + 2);
            wipe(&mut out, i, end);
            i = end;
        } else if !ident_before && (rest.starts_with(b"r\"") || rest.starts_with(b"r#")) {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let end = find(b, i + 2 + hashes, &close).map_or(b.len(), |p| p + close.len());
            wipe(&mut out, i, end);
            i = end;
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            wipe(&mut out, i, end);
            i = end;
        } else if rest[0] == b'\'' {
            // A character literal ('a', '\n', '\u{1b}'), not a lifetime.
            let len = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = std::str::from_utf8(&rest[1..rest.len().min(5)])
                    .ok()
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(4)]).ok())
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(3)]).ok())
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(2)]).ok())
                    .and_then(|s| s.chars().next());
                ch.map(char::len_utf8)
                    .filter(|&n| rest.get(1 + n) == Some(&b'\''))
                    .map(|n| n + 2)
            };
            match len {
                Some(n) => {
                    wipe(&mut out, i, i + n);
                    i += n;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Where `#[cfg(test)] mod NAME {` starts, if anywhere.
fn test_module(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let at = from + p;
        let after = code[at + 12..].trim_start();
        if after.starts_with("mod ") && after.split('\n').next().is_some_and(|l| l.contains('{')) {
            return Some(at);
        }
        from = at + 12;
    }
    None
}

/// The code before the test module.
fn production(src: &Source) -> &str {
    &src.code[..src.tests_at.unwrap_or(src.code.len())]
}

/// The paths a file names: `use` trees expanded, and `crate::`/`super::`
/// paths written in code.
fn named_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(p) = code[from..].find("use ") {
        let at = from + p;
        from = at + 4;
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        let tree: String = code[at + 4..at + end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        expand("", &tree, &mut out);
    }
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(p) = code[from..].find(start) {
            let at = from + p;
            let end = code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| at + e);
            // A `use` tree's head ends in `::`; its paths are expanded above.
            if !code[at..end].ends_with("::") {
                out.push(code[at..end].to_string());
            }
            from = end.max(at + start.len());
        }
    }
    out
}

fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let Some(open) = tree.find('{') else {
        out.push(format!("{prefix}{tree}"));
        return;
    };
    let head = format!("{prefix}{}", &tree[..open]);
    let body = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut depth = 0;
    let mut part = String::new();
    for c in body.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand(&head, &part, out);
                part.clear();
                continue;
            }
            _ => {}
        }
        part.push(c);
    }
    if !part.is_empty() {
        expand(&head, &part, out);
    }
}

type Graph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

fn imports(files: &BTreeMap<Vec<String>, (PathBuf, Source)>) -> Graph {
    let mut graph = Graph::new();
    for (module, (_, src)) in files {
        let edges = graph.entry(module.clone()).or_default();
        for path in named_paths(production(src)) {
            let mut parts = path.split("::").filter(|p| !p.is_empty() && *p != "self");
            let mut base: Vec<String> = match parts.next() {
                Some("crate") => Vec::new(),
                Some("super") => module[..module.len().saturating_sub(1)].to_vec(),
                _ => continue,
            };
            for p in parts {
                if p == "super" {
                    base.pop();
                } else if p != "*" {
                    base.push(p.to_string());
                }
            }
            // The file of the longest module path named.
            let target = (0..=base.len())
                .rev()
                .map(|n| &base[..n])
                .find(|m| files.contains_key(*m));
            if let Some(t) = target
                && t != module.as_slice()
                && !module.starts_with(t)
            {
                edges.insert(t.to_vec());
            }
        }
    }
    graph
}

fn name(files: &BTreeMap<Vec<String>, (PathBuf, Source)>, module: &[String]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    files[module]
        .0
        .strip_prefix(root)
        .unwrap()
        .display()
        .to_string()
}

/// The strongly connected components of two or more files (Tarjan).
fn circles(graph: &Graph) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in &s.graph[v] {
            if !s.graph.contains_key(w) {
                continue;
            }
            let w = s.graph.get_key_value(w).unwrap().0;
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_lower_folder_imports_a_higher_one_and_every_module_has_a_layer() {
    let mut wrong = Vec::new();
    for (dir, layers) in CRATES {
        let files = sources(dir);
        for module in files.keys() {
            if let Some(top) = module.first()
                && layer(layers, top).is_none()
            {
                wrong.push(format!("{}: in no layer of {dir}", name(&files, module)));
            }
        }
        for (from, to) in &imports(&files) {
            let Some(here) = from.first().and_then(|t| layer(layers, t)) else {
                continue;
            };
            for t in to {
                if t.first()
                    .and_then(|h| layer(layers, h))
                    .is_some_and(|l| l > here)
                {
                    wrong.push(format!("{} -> {}", name(&files, from), name(&files, t)));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}

#[test]
fn the_core_depends_on_no_command_line_or_terminal_crate() {
    let manifest = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/drip-core/Cargo.toml"
    ))
    .unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .unwrap()
        .split("\n[")
        .next()
        .unwrap();
    for banned in [
        "clap",
        "indicatif",
        "plotters",
        "redis",
        "signal-hook",
        "clap_complete",
    ] {
        assert!(
            !deps
                .lines()
                .any(|l| l.split(['=', ' ']).next() == Some(banned)),
            "drip-core depends on {banned}"
        );
    }
}

#[test]
fn no_files_import_each_other() {
    let mut found = Vec::new();
    for (dir, _) in CRATES {
        let files = sources(dir);
        let graph = imports(&files);
        found.extend(circles(&graph).iter().map(|c| {
            let mut names: Vec<String> = c.iter().map(|m| name(&files, m)).collect();
            names.sort();
            names.join(", ")
        }));
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_circle_finder_finds_a_circle() {
    // The test above can fail: two modules naming each other are found.
    let mut graph = Graph::new();
    let a = vec!["a".to_string()];
    let b = vec!["b".to_string()];
    let c = vec!["c".to_string()];
    graph.insert(a.clone(), BTreeSet::from([b.clone()]));
    graph.insert(b.clone(), BTreeSet::from([a.clone(), c.clone()]));
    graph.insert(c.clone(), BTreeSet::new());
    assert_eq!(circles(&graph).len(), 1);
    let code =
        blank("use crate::x::{y::{Z, W}, v};\nlet s = \"crate::q\"; // crate::r\n super::t::u();");
    let mut paths = named_paths(&code);
    paths.sort();
    assert_eq!(
        paths,
        [
            "crate::x::v",
            "crate::x::y::W",
            "crate::x::y::Z",
            "super::t::u"
        ]
    );
}

#[test]
fn files_stay_short() {
    let mut long = Vec::new();
    for (dir, _) in CRATES {
        let files = sources(dir);
        long.extend(
            files
                .iter()
                .map(|(m, (_, src))| (name(&files, m), src.text.lines().count()))
                .filter(|(_, n)| *n > MAX_FILE_LINES)
                .map(|(f, n)| format!("{f}: {n} lines")),
        );
    }
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// An item: its name, its line, and its body's length in lines and text
/// (`None` for an item without a body).
type Item<'a> = (&'a str, usize, Option<(usize, &'a str)>);

/// Each item `keyword NAME` in production code.
fn items<'a>(code: &'a str, keyword: &str) -> Vec<Item<'a>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    let pat = format!("{keyword} ");
    while let Some(p) = code[from..].find(&pat) {
        let at = from + p;
        from = at + pat.len();
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let name_end = code[from..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(code.len(), |e| from + e);
        let name = &code[from..name_end];
        if name.is_empty() {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        // The body: the first `{` before any `;`, matched to its brace.
        let open = code[name_end..].find(['{', ';']).map(|e| name_end + e);
        let body = open.filter(|&o| bytes[o] == b'{').and_then(|o| {
            let mut depth = 0;
            for (i, c) in code[o..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            let lines = code[at..o + i].matches('\n').count() + 1;
                            return Some((lines, &code[o + 1..o + i]));
                        }
                    }
                    _ => {}
                }
            }
            None
        });
        out.push((name, line, body));
    }
    out
}

#[test]
fn functions_stay_short() {
    let mut long = Vec::new();
    for (dir, _) in CRATES {
        let files = sources(dir);
        for (m, (_, src)) in &files {
            if src.test_file {
                continue;
            }
            for (f, line, body) in items(production(src), "fn") {
                if let Some((n, _)) = body.filter(|(n, _)| *n > MAX_FN_LINES) {
                    long.push(format!("{}:{line} fn {f}: {n} lines", name(&files, m)));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// Fields of a struct body: its top-level, comma-separated parts.
fn fields(body: &str) -> usize {
    let mut depth = 0i32;
    let mut count = 0;
    let mut part = String::new();
    for c in body.chars() {
        match c {
            '{' | '(' | '[' | '<' => depth += 1,
            '}' | ')' | ']' | '>' => depth -= 1,
            ',' if depth == 0 => {
                count += usize::from(part.contains(':'));
                part.clear();
                continue;
            }
            _ => {}
        }
        part.push(c);
    }
    count + usize::from(part.contains(':'))
}

#[test]
fn structs_stay_small() {
    let mut big = Vec::new();
    for (dir, _) in CRATES {
        let files = sources(dir);
        for (m, (_, src)) in &files {
            let code = production(src);
            for (s, line, body) in items(code, "struct") {
                let Some((_, body)) = body else { continue };
                // clap's argument structs and report rows are read as a whole.
                let before: String = code.lines().take(line).collect::<Vec<_>>()
                    [line.saturating_sub(4)..]
                    .join("\n");
                let exempt = ["Args", "Parser", "Serialize"]
                    .iter()
                    .any(|d| before.contains("derive(") && before.contains(d));
                let n = fields(body);
                if n > MAX_FIELDS && !exempt {
                    big.push(format!("{}:{line} struct {s}: {n} fields", name(&files, m)));
                }
            }
        }
    }
    assert!(
        big.is_empty(),
        "structs over {MAX_FIELDS} fields:\n{}",
        big.join("\n")
    );
}

#[test]
fn the_shape_counters_count() {
    let code = blank("fn a() {\n let s = \"}\";\n}\nstruct S { a: u8, b: Vec<(u8, u8)>, c: u8 }\n");
    let fns = items(&code, "fn");
    assert_eq!(fns[0].0, "a");
    assert_eq!(fns[0].2.map(|b| b.0), Some(3));
    let structs = items(&code, "struct");
    assert_eq!(structs[0].2.map(|b| fields(b.1)), Some(3));
}
