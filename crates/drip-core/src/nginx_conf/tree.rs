//! nginx.conf text → a tree of directives, as nginx's own reader splits it:
//! words separated by blanks, `;` ending a directive, `{ … }` a block, `#`
//! at the start of a word a comment to the end of the line, `"…"` and
//! `'…'` quoted words, and a backslash escaping the next character (`\"`,
//! `\'`, `\\` lose it; `\t`, `\r`, `\n` become the control character;
//! anything else keeps it, as regexes need). An unquoted word ends at a
//! blank, `;` or `{` — except a `{` right after `$` (`${name}`); a `}` inside
//! a word belongs to it. `include PATTERN;` is replaced, where it stands, by
//! the directives of the files it names: a relative pattern is taken from
//! the main config's folder, wildcards (`*`, `?`, `[…]`) expand to the
//! matching files in name order. An include that names no file here (a
//! config copied off a server without its `mime.types` or `conf.d/`) is
//! kept in [`Parsed::missing`] and read as empty, unless the reading is
//! strict: then it is an error.

use super::ConfError;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a directive was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pos {
    pub file: Arc<Path>,
    pub line: usize,
}

impl Pos {
    pub fn err(&self, msg: impl Into<String>) -> ConfError {
        ConfError {
            file: self.file.to_path_buf(),
            line: self.line,
            msg: msg.into(),
        }
    }
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// One directive: its name, its arguments (unquoted, unescaped) and, for a
/// block directive, the directives inside.
#[derive(Clone, Debug)]
pub struct Directive {
    pub name: String,
    pub args: Vec<String>,
    pub pos: Pos,
    pub block: Option<Vec<Directive>>,
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Semi,
    Open,
    Close,
}

/// Splits one file's text into tokens with their line numbers.
fn tokens(text: &str, file: &Arc<Path>) -> Result<Vec<(Token, usize)>, ConfError> {
    let b: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < b.len() {
        let c = b[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '#' => {
                while i < b.len() && b[i] != '\n' {
                    i += 1;
                }
            }
            ';' => {
                out.push((Token::Semi, line));
                i += 1;
            }
            '{' => {
                out.push((Token::Open, line));
                i += 1;
            }
            '}' => {
                out.push((Token::Close, line));
                i += 1;
            }
            '"' | '\'' => {
                let start = line;
                let w = quoted(&b, &mut i, &mut line, file)?;
                out.push((Token::Word(w), start));
            }
            _ => out.push((Token::Word(bare(&b, &mut i)), line)),
        }
    }
    Ok(out)
}

/// The quoted word whose opening quote is `b[*i]`, unescaped: moves `i`
/// past its closing quote, counting in `line` the lines it spans. The
/// quote must be closed, and followed by a blank, `;`, `{` or `}`.
fn quoted(
    b: &[char],
    i: &mut usize,
    line: &mut usize,
    file: &Arc<Path>,
) -> Result<String, ConfError> {
    let err = |line: usize, msg: String| ConfError {
        file: file.to_path_buf(),
        line,
        msg,
    };
    let c = b[*i];
    let start = *line;
    let mut w = String::new();
    *i += 1;
    loop {
        let Some(&ch) = b.get(*i) else {
            return Err(err(
                start,
                format!("unexpected end of file: a {c}…{c} string opened here is never closed"),
            ));
        };
        if ch == '\\' && *i + 1 < b.len() {
            unescape(b[*i + 1], &mut w);
            if b[*i + 1] == '\n' {
                *line += 1;
            }
            *i += 2;
            continue;
        }
        *i += 1;
        if ch == c {
            break;
        }
        if ch == '\n' {
            *line += 1;
        }
        w.push(ch);
    }
    if let Some(&next) = b.get(*i)
        && !(next.is_whitespace() || matches!(next, ';' | '{' | '}'))
    {
        return Err(err(
            *line,
            format!(
                "unexpected '{next}' right after the quoted string \"{w}\"; put a space or ';' after it"
            ),
        ));
    }
    Ok(w)
}

/// The unquoted word starting at `b[*i]`, unescaped: moves `i` to the
/// blank, `;` or `{` that ends it (a `{` right after `$` belongs to it).
fn bare(b: &[char], i: &mut usize) -> String {
    let mut w = String::new();
    let mut after_dollar = false;
    while let Some(&ch) = b.get(*i) {
        if ch == '{' && after_dollar {
            // `${name}`: the braces belong to the word.
            w.push(ch);
            *i += 1;
            after_dollar = false;
            continue;
        }
        if ch.is_whitespace() || ch == ';' || ch == '{' {
            break;
        }
        if ch == '\\' && *i + 1 < b.len() {
            unescape(b[*i + 1], &mut w);
            *i += 2;
            after_dollar = false;
            continue;
        }
        after_dollar = ch == '$';
        w.push(ch);
        *i += 1;
    }
    w
}

fn unescape(ch: char, w: &mut String) {
    match ch {
        '"' | '\'' | '\\' => w.push(ch),
        't' => w.push('\t'),
        'r' => w.push('\r'),
        'n' => w.push('\n'),
        other => {
            w.push('\\');
            w.push(other);
        }
    }
}

/// Most nested includes (a file including itself would never end).
const MAX_INCLUDE_DEPTH: usize = 32;

/// A config's directives, and the includes that named no file.
#[derive(Debug, Default)]
pub struct Parsed {
    pub top: Vec<Directive>,
    /// (where, the pattern as written, the path looked for).
    pub missing: Vec<(Pos, String, PathBuf)>,
    /// Every file read, the main one first.
    pub files: Vec<PathBuf>,
}

/// Reads the config at `path` and every file it includes; with `strict`,
/// an include that names no file is an error.
pub fn parse_file(path: &Path, strict: bool) -> Result<Parsed, ConfError> {
    let root = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let root = if root.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        root
    };
    let mut p = Parser {
        root,
        depth: 0,
        strict,
        missing: Vec::new(),
        files: Vec::new(),
        names: Default::default(),
    };
    let top = p.file(path, None)?;
    Ok(Parsed {
        top,
        missing: p.missing,
        files: p.files,
    })
}

/// Parses text held in memory as if read from `name`; includes are taken
/// from `root`.
pub fn parse_text(text: &str, name: &Path, root: &Path) -> Result<Parsed, ConfError> {
    let mut p = Parser {
        root: root.to_path_buf(),
        depth: 0,
        strict: false,
        missing: Vec::new(),
        files: Vec::new(),
        names: Default::default(),
    };
    let top = p.text(text, Arc::from(name))?;
    Ok(Parsed {
        top,
        missing: p.missing,
        files: p.files,
    })
}

struct Parser {
    root: PathBuf,
    depth: usize,
    strict: bool,
    missing: Vec<(Pos, String, PathBuf)>,
    files: Vec<PathBuf>,
    /// Each file read, by its real path: the name it was first read by. A
    /// file included under two names (a symlink, a relative and an
    /// absolute `include`) is one file, its directives at one place.
    names: std::collections::HashMap<PathBuf, Arc<Path>>,
}

impl Parser {
    fn file(&mut self, path: &Path, from: Option<&Pos>) -> Result<Vec<Directive>, ConfError> {
        // nginx reads bytes: what is not UTF-8 (a Latin-1 comment) is read
        // as U+FFFD here, every line where it was.
        let bytes = std::fs::read(path).map_err(|e| {
            let msg = format!("cannot read '{}': {e}", path.display());
            match from {
                Some(p) => p.err(msg),
                None => ConfError {
                    file: path.to_path_buf(),
                    line: 0,
                    msg: format!("cannot read the nginx config: {e}; check the path"),
                },
            }
        })?;
        self.files.push(path.to_path_buf());
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let name = self
            .names
            .entry(real)
            .or_insert_with(|| Arc::from(path))
            .clone();
        self.text(&String::from_utf8_lossy(&bytes), name)
    }

    fn text(&mut self, text: &str, file: Arc<Path>) -> Result<Vec<Directive>, ConfError> {
        let toks = tokens(text, &file)?;
        let mut at = 0;
        let list = self.block(&toks, &mut at, &file, None)?;
        Ok(list)
    }

    /// Directives up to the matching `}` (`open`: the line of the `{`), or
    /// to the end of the file at the top.
    fn block(
        &mut self,
        toks: &[(Token, usize)],
        at: &mut usize,
        file: &Arc<Path>,
        open: Option<usize>,
    ) -> Result<Vec<Directive>, ConfError> {
        let pos = |line| Pos {
            file: file.clone(),
            line,
        };
        let mut list = Vec::new();
        let mut words: Vec<String> = Vec::new();
        let mut first_line = 0;
        while let Some((tok, line)) = toks.get(*at) {
            *at += 1;
            match tok {
                Token::Word(w) => {
                    if words.is_empty() {
                        first_line = *line;
                    }
                    words.push(w.clone());
                }
                Token::Semi => {
                    if words.is_empty() {
                        return Err(pos(*line).err("unexpected ';' with no directive before it"));
                    }
                    let name = words.remove(0);
                    let args = std::mem::take(&mut words);
                    let here = pos(first_line);
                    if name == "include" {
                        list.extend(self.include(&args, &here)?);
                    } else {
                        list.push(Directive {
                            name,
                            args,
                            pos: here,
                            block: None,
                        });
                    }
                }
                Token::Open => {
                    if words.is_empty() {
                        return Err(pos(*line).err("unexpected '{' with no directive before it"));
                    }
                    let name = words.remove(0);
                    let args = std::mem::take(&mut words);
                    let inner = self.block(toks, at, file, Some(*line))?;
                    list.push(Directive {
                        name,
                        args,
                        pos: pos(first_line),
                        block: Some(inner),
                    });
                }
                Token::Close => {
                    if !words.is_empty() {
                        return Err(pos(first_line).err(format!(
                            "directive '{}' has no ending ';' before '}}'",
                            words[0]
                        )));
                    }
                    if open.is_none() {
                        return Err(pos(*line).err("unexpected '}' with no block open"));
                    }
                    return Ok(list);
                }
            }
        }
        if !words.is_empty() {
            return Err(pos(first_line).err(format!(
                "unexpected end of file: directive '{}' has no ending ';'",
                words[0]
            )));
        }
        if let Some(l) = open {
            return Err(pos(l).err("unexpected end of file: the '{' opened here is never closed"));
        }
        Ok(list)
    }

    fn include(&mut self, args: &[String], pos: &Pos) -> Result<Vec<Directive>, ConfError> {
        let [pattern] = args else {
            return Err(pos.err("include takes one file name or pattern"));
        };
        if self.depth >= MAX_INCLUDE_DEPTH {
            return Err(pos.err(format!(
                "includes nested more than {MAX_INCLUDE_DEPTH} deep; does a file include itself?"
            )));
        }
        let full = if Path::new(pattern).is_absolute() {
            PathBuf::from(pattern)
        } else {
            self.root.join(pattern)
        };
        let files = if pattern.contains(['*', '?', '[']) {
            let files = glob(&full).map_err(|e| pos.err(format!("include '{pattern}': {e}")))?;
            let dir = fixed_dir(&full);
            // nginx takes a pattern matching nothing as empty, its folder
            // missing too; unless strict, drip says the folder is not here
            // (a config copied without it).
            if files.is_empty() && !dir.is_dir() && !self.strict {
                let what = format!("no such folder '{}'", dir.display());
                return self.missing(pattern, &dir, pos, &what);
            }
            files
        } else {
            if !full.is_file() {
                let what = format!("no such file '{}'", full.display());
                return self.missing(pattern, &full, pos, &what);
            }
            vec![full]
        };
        self.depth += 1;
        let mut out = Vec::new();
        for f in files {
            out.extend(self.file(&f, Some(pos))?);
        }
        self.depth -= 1;
        Ok(out)
    }
}

impl Parser {
    /// An include naming no file: an error when strict, else kept and
    /// read as empty.
    fn missing(
        &mut self,
        pattern: &str,
        path: &Path,
        pos: &Pos,
        what: &str,
    ) -> Result<Vec<Directive>, ConfError> {
        if self.strict {
            return Err(pos.err(format!("include '{pattern}': {what}")));
        }
        self.missing
            .push((pos.clone(), pattern.to_string(), path.to_path_buf()));
        Ok(Vec::new())
    }
}

/// The folder of a wildcard pattern before its first wildcard component.
fn fixed_dir(pattern: &Path) -> PathBuf {
    let mut dir = PathBuf::new();
    for c in pattern.components() {
        if c.as_os_str().to_string_lossy().contains(['*', '?', '[']) {
            break;
        }
        dir.push(c.as_os_str());
    }
    dir
}

/// The files matching a pattern whose components may hold `*`, `?` and
/// `[…]`, in name order; a wildcard does not match a leading `.`.
fn glob(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    use std::path::Component;
    let mut bases = vec![PathBuf::new()];
    let comps: Vec<Component> = pattern.components().collect();
    for (n, c) in comps.iter().enumerate() {
        let last = n + 1 == comps.len();
        let text = c.as_os_str().to_string_lossy();
        let wild = matches!(c, Component::Normal(_)) && text.contains(['*', '?', '[']);
        let mut next = Vec::new();
        for b in &bases {
            if !wild {
                let p = b.join(c.as_os_str());
                if !last || p.is_file() {
                    next.push(p);
                }
                continue;
            }
            let dir = if b.as_os_str().is_empty() {
                Path::new(".")
            } else {
                b.as_path()
            };
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| wildmatch(text.as_bytes(), name.as_bytes()))
                .collect();
            names.sort();
            for name in names {
                let p = b.join(&name);
                if (last && p.is_file()) || (!last && p.is_dir()) {
                    next.push(p);
                }
            }
        }
        bases = next;
    }
    Ok(bases)
}

/// Shell-style match of one file name.
fn wildmatch(pat: &[u8], name: &[u8]) -> bool {
    if name.first() == Some(&b'.') && pat.first() != Some(&b'.') {
        return false;
    }
    fn go(p: &[u8], n: &[u8]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some(b'*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some(b'?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some(b'[') => {
                let Some(close) = p.iter().skip(2).position(|&c| c == b']').map(|i| i + 2) else {
                    return n.first() == Some(&b'[') && go(&p[1..], &n[1..]);
                };
                let Some(&ch) = n.first() else {
                    return false;
                };
                let mut set = &p[1..close];
                let negate = matches!(set.first(), Some(b'!' | b'^'));
                if negate {
                    set = &set[1..];
                }
                let mut hit = false;
                let mut k = 0;
                while k < set.len() {
                    if k + 2 < set.len() && set[k + 1] == b'-' {
                        hit |= set[k] <= ch && ch <= set[k + 2];
                        k += 3;
                    } else {
                        hit |= set[k] == ch;
                        k += 1;
                    }
                }
                hit != negate && go(&p[close + 1..], &n[1..])
            }
            Some(&c) => n.first() == Some(&c) && go(&p[1..], &n[1..]),
        }
    }
    go(pat, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Directive>, ConfError> {
        parse_text(text, Path::new("t.conf"), Path::new(".")).map(|p| p.top)
    }

    #[test]
    fn words_quotes_escapes_and_comments() {
        let d = parse(
            "# a comment\nhttp { # trailing\n  log_format main '$remote_addr \"$request\"' \"a\\\"b\" x\\;y;\n  set $k ${a}b;  key#not-comment 1;\n}\n",
        )
        .unwrap();
        assert_eq!(d.len(), 1);
        let http = &d[0];
        assert_eq!(http.name, "http");
        assert_eq!(http.pos.line, 2);
        let inner = http.block.as_ref().unwrap();
        assert_eq!(inner[0].name, "log_format");
        assert_eq!(
            inner[0].args,
            ["main", "$remote_addr \"$request\"", "a\"b", "x\\;y"]
        );
        assert_eq!(inner[0].pos.line, 3);
        assert_eq!(inner[1].args, ["$k", "${a}b"]);
        assert_eq!(inner[2].name, "key#not-comment");
        assert_eq!(inner[2].pos.line, 4);
    }

    #[test]
    fn regex_escapes_are_kept_and_multiline_strings_count_lines() {
        let d = parse("location ~* \\.(gif|jpg)$ {\n}\nlog_format x 'a\nb';\nz 1;").unwrap();
        assert_eq!(d[0].args, ["~*", "\\.(gif|jpg)$"]);
        assert_eq!(d[1].args, ["x", "a\nb"]);
        assert_eq!(d[2].pos.line, 5);
    }

    #[test]
    fn syntax_errors_name_the_line() {
        for (text, line, what) in [
            ("http {\n a 1;\n", 1, "never closed"),
            ("a 1;\n}\n", 2, "unexpected '}'"),
            ("a 1\n", 1, "no ending ';'"),
            ("a {\n b 1\n}\n", 2, "no ending ';'"),
            ("a \"x\n\n", 1, "never closed"),
            ("a \"x\"y;\n", 1, "right after the quoted"),
            ("\n;\n", 2, "unexpected ';'"),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(what), "{text:?}: {e}");
            assert!(
                e.to_string().starts_with(&format!("t.conf:{line}: ")),
                "{e}"
            );
        }
    }

    #[test]
    fn includes_expand_globs_in_name_order_relative_to_the_config() {
        let dir = std::env::temp_dir().join(format!("drip-conf-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("conf.d")).unwrap();
        std::fs::create_dir_all(dir.join("empty")).unwrap();
        std::fs::write(dir.join("conf.d/b.conf"), "b 2;\n").unwrap();
        std::fs::write(dir.join("conf.d/a.conf"), "a 1;\ninclude one.inc;\n").unwrap();
        std::fs::write(dir.join("conf.d/.hidden.conf"), "hidden 1;\n").unwrap();
        std::fs::write(dir.join("conf.d/c.txt"), "c 3;\n").unwrap();
        std::fs::write(dir.join("one.inc"), "inc 1;\n").unwrap();
        std::fs::write(
            dir.join("nginx.conf"),
            "http {\n include conf.d/*.conf;\n include empty/*.conf;\n}\n",
        )
        .unwrap();
        let d = parse_file(&dir.join("nginx.conf"), true).unwrap().top;
        let names: Vec<&str> = d[0]
            .block
            .as_ref()
            .unwrap()
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(names, ["a", "inc", "b"]);
        let inc = &d[0].block.as_ref().unwrap()[1];
        assert!(inc.pos.file.ends_with("one.inc"));
        std::fs::write(
            dir.join("bad.conf"),
            "http {\n include missing.conf;\n include gone/*.conf;\n a 1;\n}\n",
        )
        .unwrap();
        let e = parse_file(&dir.join("bad.conf"), true).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("no such file"), "{e}");
        // Strict, a pattern whose folder is missing is empty, as for nginx;
        // the missing file after it is the error.
        std::fs::write(
            dir.join("bad2.conf"),
            "http {\n include gone/*.conf;\n include missing.conf;\n}\n",
        )
        .unwrap();
        let e = parse_file(&dir.join("bad2.conf"), true).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.to_string().contains("include 'missing.conf'"), "{e}");
        // Not strict: both are kept as missing, the rest is read.
        let p = parse_file(&dir.join("bad.conf"), false).unwrap();
        let missing: Vec<(usize, &str)> =
            p.missing.iter().map(|m| (m.0.line, m.1.as_str())).collect();
        assert_eq!(missing, [(2, "missing.conf"), (3, "gone/*.conf")]);
        assert_eq!(p.top[0].block.as_ref().unwrap()[0].name, "a");
        std::fs::write(dir.join("self.conf"), "include self.conf;\n").unwrap();
        let e = parse_file(&dir.join("self.conf"), true).unwrap_err();
        assert!(e.to_string().contains("include itself"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn wildcards() {
        assert!(wildmatch(b"*.conf", b"a.conf"));
        assert!(!wildmatch(b"*.conf", b".a.conf"));
        assert!(wildmatch(b"site-[a-c]?.conf", b"site-b1.conf"));
        assert!(!wildmatch(b"site-[!a-c]?.conf", b"site-b1.conf"));
        assert!(!wildmatch(b"*.conf", b"a.conf.bak"));
    }
}
