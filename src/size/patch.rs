//! The patch of `size --nginx-conf`: the sized `rate=`, `burst=` and zone
//! sizes written into the config files, every other byte kept, as a
//! unified diff whose paths are relative to the main config's folder
//! (`a/` and `b/` in front, so `patch -p1` applies it there).
//!
//! Each change is made inside the directive the parser found (its file and
//! first line, the directive named and its `zone=` matched, up to its
//! `;`): a token is replaced in place, `burst=` is added after `zone=` or
//! taken out with the blanks before it on its line (nginx refuses
//! `burst=0`), so no line is added or removed.

use super::conf_rows::Setting;
use super::conf_rows::Unit;
use crate::nginx_conf::NginxConf;
use crate::report::size_conf::ZoneRow;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One directive to change.
pub struct Edit {
    pub file: Arc<Path>,
    pub line: usize,
    /// `limit_req_zone` or `limit_req`.
    pub directive: &'static str,
    pub zone: String,
    /// (parameter, new value: `None` takes it out).
    pub set: Vec<(&'static str, Option<String>)>,
}

/// Bytes a zone needs for `peak` keys active at once whose longest key is
/// `longest` bytes: nginx keeps a state of its tree node (32 bytes up to
/// the colour), its own fields (48) and the key in a slab slot of the next
/// power of two (128 bytes for keys up to 48 bytes), a page of 4 KiB
/// holding 4096 / slot slots less one for the page's bitmap; a quarter
/// more states for headroom, and 8 pages for the zone's own use.
pub fn zone_bytes(peak: u64, longest: usize) -> u64 {
    let slot = (80 + longest as u64).next_power_of_two();
    let per_page = (4096 / slot).saturating_sub(1).max(1);
    let states = peak + peak.div_ceil(4);
    (states.div_ceil(per_page) + 8) * 4096
}

/// A zone size as nginx reads it: `Nm` when whole megabytes, else `Nk`.
pub fn size_text(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{}m", bytes >> 20)
    } else {
        format!("{}k", bytes.div_ceil(1 << 10))
    }
}

/// The changes from `today` to `s`.
pub fn edits(
    conf: &NginxConf,
    units: &[Unit],
    today: &Setting,
    s: &Setting,
    zones: &[ZoneRow],
) -> Vec<Edit> {
    let mut out = Vec::new();
    for (z, zone) in conf.zones.iter().enumerate() {
        let mut set = Vec::new();
        if s.rates[z] != today.rates[z] {
            set.push(("rate", Some(s.rate_text(z))));
        }
        if zones[z].size > zones[z].size_today {
            set.push((
                "zone",
                Some(format!("{}:{}", zone.name, size_text(zones[z].size))),
            ));
        }
        if !set.is_empty() {
            out.push(Edit {
                file: zone.pos.file.clone(),
                line: zone.pos.line,
                directive: "limit_req_zone",
                zone: zone.name.clone(),
                set,
            });
        }
    }
    for (u, unit) in units.iter().enumerate() {
        if s.bursts[u] != today.bursts[u] {
            let b = s.bursts[u];
            out.push(Edit {
                file: unit.pos.file.clone(),
                line: unit.pos.line,
                directive: "limit_req",
                zone: conf.zones[unit.zone].name.clone(),
                set: vec![("burst", (b > 0).then(|| b.to_string()))],
            });
        }
    }
    out
}

/// The unified diff of every file `edits` change (bytes: a config is kept
/// byte for byte, what is not UTF-8 too), and the folder where `patch
/// -p1` applies it. Each file is named by its real path (symlinks
/// resolved: patch refuses to patch a symlink) relative to that folder:
/// the main config's real folder, or the deepest folder above it that
/// holds every changed file (an `include` of an absolute path elsewhere).
pub fn diff(main: &Path, edits: &[Edit]) -> Result<(Vec<u8>, PathBuf)> {
    let real = |p: &Path| {
        std::fs::canonicalize(p)
            .with_context(|| format!("cannot find the real path of '{}' to patch it", p.display()))
    };
    let mut root = real(main)?
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut by_file: BTreeMap<PathBuf, Vec<&Edit>> = BTreeMap::new();
    for e in edits {
        by_file.entry(e.file.to_path_buf()).or_default().push(e);
    }
    let mut files = Vec::new();
    for (file, edits) in by_file {
        let abs = real(&file)?;
        while !abs.starts_with(&root) {
            root = root.parent().map(Path::to_path_buf).unwrap_or_default();
        }
        files.push((file, abs, edits));
    }
    let mut out = Vec::new();
    for (file, abs, edits) in files {
        let old = std::fs::read(&file)
            .with_context(|| format!("cannot read '{}' to patch it", file.display()))?;
        let stmts = statements(&old);
        let mut changes: Vec<Change> = Vec::new();
        for e in edits {
            changes.extend(
                changes_of(&old, &stmts, e)
                    .map_err(|m| anyhow::anyhow!("{}:{}: {m}", file.display(), e.line))?,
            );
        }
        changes.sort_by_key(|c| std::cmp::Reverse(c.0));
        let mut new = old.clone();
        for (start, end, text) in changes {
            new.splice(start..end, text);
        }
        let rel = abs.strip_prefix(&root).expect("the root holds every file");
        out.extend_from_slice(&unified(rel, &old, &new));
    }
    Ok((out, root))
}

/// `a/` or `b/` and `name` as GNU patch and git read a file name in a
/// diff header: as it is when plain, else in double quotes with `"`, `\`,
/// control characters, blanks and bytes past ASCII escaped C-style.
fn header_name(side: char, name: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = name.as_os_str().as_bytes();
    if bytes
        .iter()
        .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\\'))
    {
        return format!("{side}/{}", name.display());
    }
    let mut out = format!("\"{side}/");
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b' ' => out.push(' '),
            _ if b.is_ascii_graphic() => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push('"');
    out
}

/// Refuses a config where one line holds two `limit_req` of the same
/// zone (`location /a { limit_req zone=ip; } location /b { … }`): the
/// parser places a directive by file and line, so the two would be sized
/// as one and the patch would change only the first.
pub fn one_per_line(units: &[Unit], zone_name: impl Fn(usize) -> String) -> Result<()> {
    let mut parsed: BTreeMap<&Path, Vec<Statement>> = BTreeMap::new();
    for unit in units {
        let file: &Path = &unit.pos.file;
        if !parsed.contains_key(file) {
            let text = std::fs::read(file)
                .with_context(|| format!("cannot read '{}' to size it", file.display()))?;
            parsed.insert(file, statements(&text));
        }
        let zone = zone_name(unit.zone);
        if starts_on_line(&parsed[file], unit.pos.line, &zone) > 1 {
            bail!(
                "{}: two limit_req zone={zone} on one line, which drip cannot tell apart: put each limit_req on its own line to size it",
                unit.pos
            );
        }
    }
    Ok(())
}

/// How many `limit_req` directives naming `zone=zone` start on line `line`.
fn starts_on_line(stmts: &[Statement], line: usize, zone: &str) -> usize {
    stmts
        .iter()
        .filter(|s| s.line() == line && s.is("limit_req") && s.names_zone("limit_req", zone))
        .count()
}

/// A token of a directive: its byte span in the file, its text (quotes
/// and escapes taken off) and the line it starts on.
struct Token {
    start: usize,
    end: usize,
    text: Vec<u8>,
    line: usize,
}

/// A directive as nginx tokenizes it: its name and arguments, up to its
/// `;` or `{`. Quoted strings, escapes and comments are read as nginx
/// reads them, so text that only looks like a directive (in a comment, in
/// a quoted argument of another one) is none.
struct Statement(Vec<Token>);

impl Statement {
    fn line(&self) -> usize {
        self.0[0].line
    }

    fn is(&self, name: &str) -> bool {
        self.0[0].text == name.as_bytes()
    }

    /// The parameters: the arguments past `limit_req_zone`'s key.
    fn params(&self, directive: &str) -> &[Token] {
        let skip = if directive == "limit_req_zone" { 2 } else { 1 };
        self.0.get(skip..).unwrap_or_default()
    }

    /// The `zone=` parameter naming `zone` (`zone=NAME:SIZE` of a zone).
    fn zone_param(&self, directive: &str, zone: &str) -> Option<&Token> {
        self.params(directive).iter().find(|t| {
            let Some(v) = t.text.strip_prefix(b"zone=") else {
                return false;
            };
            let name = match directive {
                "limit_req_zone" => v.split(|&b| b == b':').next().unwrap_or_default(),
                _ => v,
            };
            name == zone.as_bytes()
        })
    }

    fn names_zone(&self, directive: &str, zone: &str) -> bool {
        self.zone_param(directive, zone).is_some()
    }
}

/// Every directive of a config file, as nginx's tokenizer reads it.
fn statements(b: &[u8]) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut toks: Vec<Token> = Vec::new();
    let (mut i, mut line) = (0, 1);
    let end_statement = |toks: &mut Vec<Token>, out: &mut Vec<Statement>| {
        if !toks.is_empty() {
            out.push(Statement(std::mem::take(toks)));
        }
    };
    while i < b.len() {
        match b[i] {
            b'\n' => (line, i) = (line + 1, i + 1),
            c if c.is_ascii_whitespace() => i += 1,
            b';' | b'{' => {
                end_statement(&mut toks, &mut out);
                i += 1;
            }
            b'}' => {
                toks.clear();
                i += 1;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'"' | b'\'') => {
                let (start, at) = (i, line);
                let mut text = Vec::new();
                i += 1;
                while i < b.len() && b[i] != q {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    }
                    line += usize::from(b[i] == b'\n');
                    text.push(b[i]);
                    i += 1;
                }
                i = (i + 1).min(b.len());
                toks.push(Token {
                    start,
                    end: i,
                    text,
                    line: at,
                });
            }
            _ => {
                let start = i;
                let mut text = Vec::new();
                while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b';' | b'{') {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i += 1;
                    } else if b[i] == b'$' && b.get(i + 1) == Some(&b'{') {
                        // `${name}`: its braces are the variable's.
                        while i < b.len() && b[i] != b'}' {
                            text.push(b[i]);
                            i += 1;
                        }
                    }
                    if i < b.len() {
                        text.push(b[i]);
                        i += 1;
                    }
                }
                toks.push(Token {
                    start,
                    end: i,
                    text,
                    line,
                });
            }
        }
    }
    out
}

/// A replacement: the span and the bytes that take its place.
type Change = (usize, usize, Vec<u8>);

/// The replacements that make edit `e` in `text`, tokenized as `stmts`:
/// in the directive `e.directive` that starts on `e.line` and names the
/// zone, its parameters (never `limit_req_zone`'s key) only.
fn changes_of(text: &[u8], stmts: &[Statement], e: &Edit) -> Result<Vec<Change>, String> {
    let Some(stmt) = stmts
        .iter()
        .find(|s| s.line() == e.line && s.is(e.directive) && s.names_zone(e.directive, &e.zone))
    else {
        return Err(format!(
            "{} zone={} not found where the config was read",
            e.directive, e.zone
        ));
    };
    let params = stmt.params(e.directive);
    let mut out = Vec::new();
    for (param, value) in &e.set {
        let prefix = format!("{param}=");
        let found = params
            .iter()
            .find(|t| t.text.starts_with(prefix.as_bytes()));
        match (found, value) {
            (Some(t), Some(v)) => out.push((t.start, t.end, format!("{param}={v}").into_bytes())),
            (Some(t), None) => {
                let blank = text[..t.start]
                    .iter()
                    .rposition(|&b| b != b' ' && b != b'\t')
                    .map_or(0, |p| p + 1);
                out.push((blank, t.end, Vec::new()));
            }
            (None, Some(v)) => {
                let zone = stmt.zone_param(e.directive, &e.zone).expect("found above");
                out.push((zone.end, zone.end, format!(" {param}={v}").into_bytes()));
            }
            (None, None) => {}
        }
    }
    Ok(out)
}

/// `old` -> `new` (the same number of lines) as a unified diff of `name`
/// with three lines of context, byte for byte.
pub fn unified(name: &Path, old: &[u8], new: &[u8]) -> Vec<u8> {
    let lines = |t: &[u8]| -> Vec<Vec<u8>> {
        t.split_inclusive(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    };
    let (a, b) = (lines(old), lines(new));
    let changed: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    let mut out = format!(
        "--- {}\n+++ {}\n",
        header_name('a', name),
        header_name('b', name)
    )
    .into_bytes();
    let mut i = 0;
    while i < changed.len() {
        let first = changed[i];
        let mut last = first;
        while i + 1 < changed.len() && changed[i + 1] <= last + 7 {
            i += 1;
            last = changed[i];
        }
        i += 1;
        let (from, to) = (first.saturating_sub(3), (last + 4).min(a.len()));
        let n = to - from;
        out.extend_from_slice(format!("@@ -{},{n} +{},{n} @@\n", from + 1, from + 1).as_bytes());
        for k in from..to {
            if a[k] == b[k] {
                push_line(&mut out, b' ', &a[k]);
            } else {
                push_line(&mut out, b'-', &a[k]);
                push_line(&mut out, b'+', &b[k]);
            }
        }
    }
    out
}

/// One line of a hunk, with patch's mark for a last line without newline.
fn push_line(out: &mut Vec<u8>, mark: u8, line: &[u8]) {
    out.push(mark);
    out.extend_from_slice(line);
    if !line.ends_with(b"\n") {
        out.extend_from_slice(b"\n\\ No newline at end of file\n");
    }
}

#[cfg(test)]
mod tests {
    use super::{
        Edit, changes_of, header_name, size_text, starts_on_line, statements, unified, zone_bytes,
    };
    use std::path::Path;
    use std::sync::Arc;

    fn edit(
        directive: &'static str,
        line: usize,
        zone: &str,
        set: Vec<(&'static str, Option<String>)>,
    ) -> Edit {
        Edit {
            file: Arc::from(Path::new("x.conf")),
            line,
            directive,
            zone: zone.into(),
            set,
        }
    }

    /// `text` with `e` made.
    fn apply(text: &str, e: &Edit) -> String {
        let mut out = text.as_bytes().to_vec();
        let mut changes = changes_of(text.as_bytes(), &statements(text.as_bytes()), e).unwrap();
        changes.sort_by_key(|c| std::cmp::Reverse(c.0));
        for (s, end, t) in changes {
            out.splice(s..end, t);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn burst_is_replaced_added_and_taken_out_in_place() {
        let set = |b: Option<&str>| vec![("burst", b.map(str::to_string))];
        let text = "location / { limit_req zone=a burst=5 nodelay; # keep\n}\n";
        assert_eq!(
            apply(text, &edit("limit_req", 1, "a", set(Some("9")))),
            "location / { limit_req zone=a burst=9 nodelay; # keep\n}\n"
        );
        assert_eq!(
            apply(text, &edit("limit_req", 1, "a", set(None))),
            "location / { limit_req zone=a nodelay; # keep\n}\n"
        );
        let text = "limit_req   zone=a;\n";
        assert_eq!(
            apply(text, &edit("limit_req", 1, "a", set(Some("3")))),
            "limit_req   zone=a burst=3;\n"
        );
        // Two blocks on one line: the directive of the zone named; a
        // directive spread over lines; quoted parameters.
        let text =
            "location /a { limit_req zone=a burst=1; } location /b { limit_req zone=b burst=2; }\n";
        assert_eq!(
            apply(text, &edit("limit_req", 1, "b", set(Some("7")))),
            "location /a { limit_req zone=a burst=1; } location /b { limit_req zone=b burst=7; }\n"
        );
        let text = "# limit_req zone=a burst=1;\nlimit_req\n    zone=a\n    \"burst=4\";\n";
        assert_eq!(
            apply(text, &edit("limit_req", 2, "a", set(Some("6")))),
            "# limit_req zone=a burst=1;\nlimit_req\n    zone=a\n    burst=6;\n"
        );
    }

    #[test]
    fn the_zone_line_gets_its_rate_and_size_and_limit_req_status_is_no_limit_req() {
        let text =
            "limit_req_status 429;\nlimit_req_zone $binary_remote_addr zone=ip:1m rate=1r/s;\n";
        let e = edit(
            "limit_req_zone",
            2,
            "ip",
            vec![
                ("rate", Some("5r/s".into())),
                ("zone", Some("ip:2m".into())),
            ],
        );
        assert_eq!(
            apply(text, &e),
            "limit_req_status 429;\nlimit_req_zone $binary_remote_addr zone=ip:2m rate=5r/s;\n"
        );
        let stmts = statements(text.as_bytes());
        let other = edit("limit_req_zone", 2, "other", vec![]);
        assert!(changes_of(text.as_bytes(), &stmts, &other).is_err());
    }

    #[test]
    fn text_that_only_looks_like_the_directive_is_left_alone() {
        let burst = |b: &str| vec![("burst", Some(b.to_string()))];
        // In a quoted argument of another directive earlier on the line.
        let text = "add_header X \"limit_req zone=a burst=1;\"; limit_req zone=a burst=1;\n";
        assert_eq!(
            apply(text, &edit("limit_req", 1, "a", burst("5"))),
            "add_header X \"limit_req zone=a burst=1;\"; limit_req zone=a burst=5;\n"
        );
        // A zone key that starts with rate= or zone=: a key, not a parameter.
        let text = "limit_req_zone \"rate=$x zone=a:9m\" zone=a:1m rate=1r/s;\n";
        let e = edit(
            "limit_req_zone",
            1,
            "a",
            vec![("rate", Some("7r/s".into())), ("zone", Some("a:2m".into()))],
        );
        assert_eq!(
            apply(text, &e),
            "limit_req_zone \"rate=$x zone=a:9m\" zone=a:2m rate=7r/s;\n"
        );
        let text = "limit_req_zone rate=$arg_r zone=a:1m rate=1r/s;\n";
        let e = edit(
            "limit_req_zone",
            1,
            "a",
            vec![("rate", Some("7r/s".into()))],
        );
        assert_eq!(
            apply(text, &e),
            "limit_req_zone rate=$arg_r zone=a:1m rate=7r/s;\n"
        );
        // An escaped quote, a ${var} and a comment after the directive.
        let text =
            "set $v \"a\\\"limit_req zone=a\"; limit_req zone=a; # limit_req zone=a burst=2\n";
        assert_eq!(
            apply(text, &edit("limit_req", 1, "a", burst("3"))),
            "set $v \"a\\\"limit_req zone=a\"; limit_req zone=a burst=3; # limit_req zone=a burst=2\n"
        );
        let stmts = statements(b"return 200 \"${x}{y}\"; limit_req zone=a;");
        assert_eq!(stmts.len(), 2);
        assert!(stmts[1].is("limit_req"));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_kept() {
        let text = b"# caf\xe9\nlimit_req zone=a burst=1; # \xff\n";
        let stmts = statements(text);
        let changes = changes_of(
            text,
            &stmts,
            &edit("limit_req", 2, "a", vec![("burst", Some("4".into()))]),
        )
        .unwrap();
        let mut new = text.to_vec();
        for (s, e, t) in changes {
            new.splice(s..e, t);
        }
        assert_eq!(new, b"# caf\xe9\nlimit_req zone=a burst=4; # \xff\n");
        let d = unified(Path::new("x.conf"), text, &new);
        assert!(
            d.windows(2).any(|w| w == b"\xe9\n"),
            "{}",
            String::from_utf8_lossy(&d)
        );
        assert!(d.ends_with(b"+limit_req zone=a burst=4; # \xff\n"));
    }

    #[test]
    fn the_diff_has_context_and_marks_a_last_line_without_newline() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\nJ";
        assert_eq!(
            String::from_utf8(unified(Path::new("n.conf"), old.as_bytes(), new.as_bytes()))
                .unwrap(),
            "--- a/n.conf\n+++ b/n.conf\n@@ -2,9 +2,9 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n i\n-j\n\\ No newline at end of file\n+J\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn names_patch_cannot_read_plainly_are_quoted_as_git_does() {
        assert_eq!(
            header_name('a', Path::new("limits/x.conf")),
            "a/limits/x.conf"
        );
        assert_eq!(
            header_name('b', Path::new("my dir/\"q\"\\\n\tcafé")),
            "\"b/my dir/\\\"q\\\"\\\\\\n\\tcaf\\303\\251\""
        );
    }

    #[test]
    fn limit_req_of_a_zone_are_counted_per_line_outside_comments() {
        let count =
            |text: &str, line, zone| starts_on_line(&statements(text.as_bytes()), line, zone);
        let text = "x;\nlocation /a { limit_req zone=ip; } location /b { limit_req zone=ip; }\n";
        assert_eq!(count(text, 2, "ip"), 2);
        assert_eq!(count(text, 1, "ip"), 0);
        let text = "limit_req zone=ip; # limit_req zone=ip;\nlimit_req_zone k zone=ip:1m rate=1r/s; limit_req \"zone=ip\";\n";
        assert_eq!(count(text, 1, "ip"), 1);
        assert_eq!(count(text, 2, "ip"), 1);
        assert_eq!(count(text, 1, "other"), 0);
    }

    #[test]
    fn zone_sizes_hold_the_peak_keys_with_room() {
        // 31 client addresses and a quarter more: 8 pages for the zone, two
        // of 31 slots of 128 bytes (one slot of each is its bitmap).
        assert_eq!(zone_bytes(31, 16), 10 * 4096);
        assert_eq!(zone_bytes(0, 16), 8 * 4096);
        // 16,000 addresses: about 16,000 * 1.25 / 31 pages.
        assert_eq!(zone_bytes(16_000, 16), (20_000u64.div_ceil(31) + 8) * 4096);
        assert_eq!(size_text(1 << 20), "1m");
        assert_eq!(size_text(44 * 1024), "44k");
    }
}
