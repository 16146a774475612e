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

/// The unified diff of every file `edits` change, and the folder where
/// `patch -p1` applies it. Each file is named by its real path (symlinks
/// resolved: patch refuses to patch a symlink) relative to that folder:
/// the main config's real folder, or the deepest folder above it that
/// holds every changed file (an `include` of an absolute path elsewhere).
pub fn diff(main: &Path, edits: &[Edit]) -> Result<(String, PathBuf)> {
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
    let mut out = String::new();
    for (file, abs, edits) in files {
        let old = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read '{}' to patch it", file.display()))?;
        let mut changes: Vec<(usize, usize, String)> = Vec::new();
        for e in edits {
            changes.extend(
                changes_of(&old, e)
                    .map_err(|m| anyhow::anyhow!("{}:{}: {m}", file.display(), e.line))?,
            );
        }
        changes.sort_by_key(|c| std::cmp::Reverse(c.0));
        let mut new = old.clone();
        for (start, end, text) in changes {
            new.replace_range(start..end, &text);
        }
        let rel = abs.strip_prefix(&root).expect("the root holds every file");
        out.push_str(&unified(rel, &old, &new));
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
    let mut texts: BTreeMap<&Path, String> = BTreeMap::new();
    for unit in units {
        let file: &Path = &unit.pos.file;
        if !texts.contains_key(file) {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read '{}' to size it", file.display()))?;
            texts.insert(file, text);
        }
        let zone = zone_name(unit.zone);
        if starts_on_line(&texts[file], unit.pos.line, &zone) > 1 {
            bail!(
                "{}: two limit_req zone={zone} on one line, which drip cannot tell apart: put each limit_req on its own line to size it",
                unit.pos
            );
        }
    }
    Ok(())
}

/// How many `limit_req` directives naming `zone=zone` start on line
/// `line` of `text` (quoted strings and the comment after `#` skipped).
fn starts_on_line(text: &str, line: usize, zone: &str) -> usize {
    let Some(this) = text.split_inclusive('\n').nth(line.saturating_sub(1)) else {
        return 0;
    };
    let start = this.as_ptr() as usize - text.as_ptr() as usize;
    let b = this.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'#' => break,
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1 + usize::from(b[i] == b'\\');
                }
                i += 1;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' => {
                let w = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let named =
                    |(_, _, t): &(usize, usize, String)| t.strip_prefix("zone=") == Some(zone);
                if &this[w..i] == "limit_req"
                    && b.get(i).is_some_and(u8::is_ascii_whitespace)
                    && tokens(text, start + i).iter().any(named)
                {
                    n += 1;
                }
            }
            _ => i += 1,
        }
    }
    n
}

/// A token of a directive: its byte span and text (quotes taken off).
fn tokens(text: &str, from: usize) -> Vec<(usize, usize, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b';' | b'{' => break,
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            c if c.is_ascii_whitespace() => i += 1,
            q @ (b'"' | b'\'') => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1 + usize::from(b[i] == b'\\');
                }
                i = (i + 1).min(b.len());
                out.push((start, i, text[start + 1..i - 1].to_string()));
            }
            _ => {
                let start = i;
                while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b';' | b'{') {
                    i += 1;
                }
                out.push((start, i, text[start..i].to_string()));
            }
        }
    }
    out
}

/// The replacements (span, text) that make edit `e` in `text`.
fn changes_of(text: &str, e: &Edit) -> Result<Vec<(usize, usize, String)>, String> {
    let line_start = text
        .split_inclusive('\n')
        .take(e.line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>();
    let zone_arg = |t: &str| match e.directive {
        "limit_req_zone" => {
            t.strip_prefix("zone=").and_then(|z| z.split(':').next()) == Some(e.zone.as_str())
        }
        _ => t.strip_prefix("zone=") == Some(e.zone.as_str()),
    };
    let mut at = line_start;
    let args = loop {
        let rest = &text[at..];
        let Some(found) = rest.find(e.directive) else {
            return Err(format!(
                "{} zone={} not found where the config was read",
                e.directive, e.zone
            ));
        };
        let start = at + found;
        let end = start + e.directive.len();
        at = end;
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            || !after.is_some_and(|c| c.is_ascii_whitespace())
        {
            continue;
        }
        let args = tokens(text, end);
        if args.iter().any(|(_, _, t)| zone_arg(t)) {
            break args;
        }
    };
    let mut out = Vec::new();
    for (param, value) in &e.set {
        let prefix = format!("{param}=");
        let found = args.iter().find(|(_, _, t)| t.starts_with(&prefix));
        match (found, value) {
            (Some(&(s, end, _)), Some(v)) => out.push((s, end, format!("{param}={v}"))),
            (Some(&(s, end, _)), None) => {
                let blank = text[..s].trim_end_matches([' ', '\t']).len();
                out.push((blank, end, String::new()));
            }
            (None, Some(v)) => {
                let &(_, zend, _) = args
                    .iter()
                    .find(|(_, _, t)| zone_arg(t))
                    .expect("found above");
                out.push((zend, zend, format!(" {param}={v}")));
            }
            (None, None) => {}
        }
    }
    Ok(out)
}

/// `old` -> `new` (the same number of lines) as a unified diff of `name`
/// with three lines of context.
fn unified(name: &Path, old: &str, new: &str) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let changed: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    let mut out = format!(
        "--- {}\n+++ {}\n",
        header_name('a', name),
        header_name('b', name)
    );
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
        out.push_str(&format!("@@ -{},{n} +{},{n} @@\n", from + 1, from + 1));
        for k in from..to {
            if a[k] == b[k] {
                push_line(&mut out, ' ', a[k]);
            } else {
                push_line(&mut out, '-', a[k]);
                push_line(&mut out, '+', b[k]);
            }
        }
    }
    out
}

/// One line of a hunk, with patch's mark for a last line without newline.
fn push_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

#[cfg(test)]
mod tests {
    use super::{Edit, changes_of, header_name, size_text, starts_on_line, unified, zone_bytes};
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
        let mut out = text.to_string();
        let mut changes = changes_of(text, e).unwrap();
        changes.sort_by_key(|c| std::cmp::Reverse(c.0));
        for (s, end, t) in changes {
            out.replace_range(s..end, &t);
        }
        out
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
            1,
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
        assert!(changes_of(text, &edit("limit_req_zone", 1, "other", vec![])).is_err());
    }

    #[test]
    fn the_diff_has_context_and_marks_a_last_line_without_newline() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\nJ";
        assert_eq!(
            unified(Path::new("n.conf"), old, new),
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
        let text = "x;\nlocation /a { limit_req zone=ip; } location /b { limit_req zone=ip; }\n";
        assert_eq!(starts_on_line(text, 2, "ip"), 2);
        assert_eq!(starts_on_line(text, 1, "ip"), 0);
        let text = "limit_req zone=ip; # limit_req zone=ip;\nlimit_req_zone k zone=ip:1m rate=1r/s; limit_req \"zone=ip\";\n";
        assert_eq!(starts_on_line(text, 1, "ip"), 1);
        assert_eq!(starts_on_line(text, 2, "ip"), 1);
        assert_eq!(starts_on_line(text, 1, "other"), 0);
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
