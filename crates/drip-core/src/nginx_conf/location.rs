//! Choosing the location for a URI exactly as nginx does:
//!
//! 1. at one level, an exact `location = U` whose U equals the URI wins at
//!    once;
//! 2. otherwise the longest prefix among the prefix locations (plain and
//!    `^~`) is remembered, and the locations nested in it are searched the
//!    same way (an exact or regex match there wins at once; a deeper prefix
//!    replaces the remembered one);
//! 3. unless that level's longest prefix was `^~`, the level's regex
//!    locations (`~` case-sensitive, `~*` case-insensitive) are tried in the
//!    order written; the first that matches anywhere in the URI wins (its own
//!    nested locations are searched in turn);
//! 4. otherwise the remembered prefix is used; with none at all, the
//!    server's own settings apply.
//!
//! The URI is the normalized path nginx matches (`$uri`): no query string,
//! `%XX` decoded, `//` merged, `.` and `..` resolved. [`normalize`] turns a
//! request target (from a `$request` or `$request_uri` field) into it.

use regex::Regex;

/// How a location matches.
#[derive(Clone, Debug)]
pub enum Match {
    Exact(String),
    Prefix(String),
    /// `^~`: a prefix that, when it is the longest, stops the regex search.
    NoRegex(String),
    Regex(Regex),
    /// `@name`: reached only by an internal redirect (`try_files`), never
    /// by a URI.
    Named(String),
}

/// A location in the server's tree; `index` points into the config's
/// flattened list of locations.
#[derive(Clone, Debug)]
pub struct Node {
    pub how: Match,
    pub index: usize,
    pub children: Vec<Node>,
}

enum Found {
    /// Final: an exact or regex match.
    Done(usize),
    /// A prefix match, regexes of outer levels still to try.
    Prefix(usize),
    None,
}

/// The location index for `uri` among `nodes`, or `None` when no location
/// matches.
pub fn find(nodes: &[Node], uri: &str) -> Option<usize> {
    match find_level(nodes, uri) {
        Found::Done(i) | Found::Prefix(i) => Some(i),
        Found::None => None,
    }
}

fn find_level(nodes: &[Node], uri: &str) -> Found {
    for n in nodes {
        if let Match::Exact(u) = &n.how
            && u == uri
        {
            return Found::Done(n.index);
        }
    }
    let mut best: Option<&Node> = None;
    let mut best_len = 0;
    for n in nodes {
        if let Match::Prefix(u) | Match::NoRegex(u) = &n.how
            && uri.starts_with(u.as_str())
            && (best.is_none() || u.len() > best_len)
        {
            best = Some(n);
            best_len = u.len();
        }
    }
    let mut found = Found::None;
    let mut noregex = false;
    if let Some(p) = best {
        noregex = matches!(p.how, Match::NoRegex(_));
        found = match find_level(&p.children, uri) {
            Found::Done(i) => return Found::Done(i),
            Found::Prefix(i) => Found::Prefix(i),
            Found::None => Found::Prefix(p.index),
        };
    }
    if !noregex {
        for n in nodes {
            if let Match::Regex(re) = &n.how
                && re.is_match(uri)
            {
                return match find_level(&n.children, uri) {
                    Found::Done(i) | Found::Prefix(i) => Found::Done(i),
                    Found::None => Found::Done(n.index),
                };
            }
        }
    }
    found
}

/// The path nginx matches locations against, from a request target as a
/// client sent it (`/a/../b%20c?x=1`, or an absolute `http://h/p`): the
/// query dropped, `%XX` decoded, runs of `/` merged, `.` and `..` segments
/// resolved (never above the root).
pub fn normalize(target: &str) -> String {
    let mut out = Vec::with_capacity(target.len() + 1);
    normalize_into(target.as_bytes(), &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// [`normalize`], appending the bytes to `out` (no allocation of its own).
pub fn normalize_into(target: &[u8], out: &mut Vec<u8>) {
    normalize_checked::<false>(target, out);
}

/// True when nginx answers a request for `target` with 400 before any
/// phase runs, as its request-line and URI parsers do: a control byte
/// (below 0x20, or 0x7f; a log writes it `\xHH`) anywhere, and in the
/// path a `%` not followed by two hex digits, a `%00`, or a `..` segment
/// that climbs above the root (`/%2e%2e/x`: escaped dots and slashes count
/// as written).
pub fn bad_request(target: &[u8]) -> bool {
    // Most targets have no escape, no control byte and no `/.`: one pass.
    let mut prev = 0;
    let mut plain = true;
    for &c in target {
        plain &= !(c < 0x20 || c == 0x7f || c == b'%' || c == b'\\' || (c == b'.' && prev == b'/'));
        prev = c;
    }
    !plain && normalize_checked::<true>(target, &mut Vec::new())
}

/// [`normalize_into`]; with `CHECK`, also whether nginx refuses the
/// target with 400 (else false).
fn normalize_checked<const CHECK: bool>(target: &[u8], out: &mut Vec<u8>) -> bool {
    let t = path_of(target);
    let end = t
        .iter()
        .position(|&c| c == b'?' || c == b'#')
        .unwrap_or(t.len());
    let (t, rest) = t.split_at(end);
    let mut bad = CHECK && (0..rest.len()).any(|i| control_at(rest, i));
    let base = out.len();
    out.push(b'/');
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut i = 0;
    while i < t.len() {
        let mut c = t[i];
        if CHECK && control_at(t, i) {
            bad = true;
        }
        i += 1;
        if c == b'%'
            && i + 1 < t.len()
            && let (Some(h), Some(l)) = (hex(t[i]), hex(t[i + 1]))
        {
            c = h * 16 + l;
            i += 2;
            if CHECK && c == 0 {
                bad = true;
            }
        } else if CHECK && c == b'%' {
            bad = true;
        }
        if c == b'/' {
            let climbed = close_segment(out, base);
            if CHECK && climbed {
                bad = true;
            }
            if out.last() != Some(&b'/') {
                out.push(b'/');
            }
        } else {
            out.push(c);
        }
    }
    let climbed = close_segment(out, base);
    bad || (CHECK && climbed)
}

/// True when the byte at `i` is a control byte, or a log's `\xHH`
/// writing one (nginx and Apache write a backslash itself otherwise).
#[inline(always)]
fn control_at(t: &[u8], i: usize) -> bool {
    let c = t[i];
    c < 0x20 || c == 0x7f || (c == b'\\' && escaped_control(t, i))
}

#[cold]
fn escaped_control(t: &[u8], i: usize) -> bool {
    t.get(i + 1) == Some(&b'x')
        && t.get(i + 2..i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .is_some_and(|c| c < 0x20 || c == 0x7f)
}

/// The target without an absolute form's scheme and host.
fn path_of(target: &[u8]) -> &[u8] {
    match target
        .strip_prefix(b"http://")
        .or_else(|| target.strip_prefix(b"https://"))
    {
        Some(rest) => rest
            .iter()
            .position(|&c| c == b'/')
            .map_or(b"/", |i| &rest[i..]),
        None => target,
    }
}

/// Resolves the last segment of the path written from `base` on when it
/// is `.` (dropped) or `..` (dropped with the one before it); true when a
/// `..` would climb above the root.
fn close_segment(out: &mut Vec<u8>, base: usize) -> bool {
    let slash = |out: &[u8]| base + out[base..].iter().rposition(|&c| c == b'/').unwrap_or(0);
    let start = slash(out) + 1;
    match &out[start..] {
        b"." => out.truncate(start),
        b".." => {
            out.truncate(start - 1);
            if out.len() > base {
                let prev = slash(out);
                out.truncate(prev + 1);
            } else {
                out.push(b'/');
                return true;
            }
        }
        _ => {}
    }
    false
}

/// A variable nginx derives from the request target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `$request_uri`: the target as sent (`/r/%61?x=1`).
    RequestUri,
    /// `$uri`, `$document_uri`: the normalized path ([`normalize`]).
    Uri,
    /// `$args`, `$query_string`: what follows the first `?`.
    Args,
    /// `$is_args`: `?` when the query is not empty, else empty.
    IsArgs,
    /// `$arg_NAME`: the value of the first `NAME=` of the query (the name
    /// compared caseless, as nginx does); empty when there is none.
    Arg(Vec<u8>),
}

impl Target {
    /// The target variable `name` is, if it is one.
    pub fn of(name: &str) -> Option<Target> {
        Some(match name {
            "request_uri" => Target::RequestUri,
            "uri" | "document_uri" => Target::Uri,
            "args" | "query_string" => Target::Args,
            "is_args" => Target::IsArgs,
            n => Target::Arg(n.strip_prefix("arg_")?.to_ascii_lowercase().into_bytes()),
        })
    }

    /// Appends the variable's value for a request with `target` to `out`.
    pub fn eval(&self, target: &[u8], out: &mut Vec<u8>) {
        let query = target
            .iter()
            .position(|&c| c == b'?')
            .map(|q| &target[q + 1..]);
        match self {
            Target::RequestUri => out.extend_from_slice(path_of(target)),
            Target::Uri => normalize_into(target, out),
            Target::Args => out.extend_from_slice(query.unwrap_or_default()),
            // nginx tests the arguments' length: `/p?` has none.
            Target::IsArgs => {
                if query.is_some_and(|q| !q.is_empty()) {
                    out.push(b'?');
                }
            }
            Target::Arg(name) => arg(query.unwrap_or_default(), name, out),
        }
    }

    /// Appends the variable's value for a request whose rewrites left
    /// `uri` and `args` (`$request_uri` stays the target as sent: use
    /// [`Target::eval`]).
    pub fn eval_rewritten(&self, uri: &[u8], args: &[u8], out: &mut Vec<u8>) {
        match self {
            Target::RequestUri => {}
            Target::Uri => out.extend_from_slice(uri),
            Target::Args => out.extend_from_slice(args),
            Target::IsArgs => {
                if !args.is_empty() {
                    out.push(b'?');
                }
            }
            Target::Arg(name) => arg(args, name, out),
        }
    }
}

/// Appends the value of the first `name=` of `query` (caseless) to `out`.
fn arg(query: &[u8], name: &[u8], out: &mut Vec<u8>) {
    let value = query.split(|&c| c == b'&').find_map(|kv| {
        let (k, v) = kv.split_at(kv.iter().position(|&c| c == b'=')?);
        k.eq_ignore_ascii_case(name).then(|| &v[1..])
    });
    out.extend_from_slice(value.unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(how: Match, index: usize, children: Vec<Node>) -> Node {
        Node {
            how,
            index,
            children,
        }
    }
    fn re(s: &str) -> Match {
        Match::Regex(Regex::new(s).unwrap())
    }

    /// The example from nginx's documentation of `location`, plus nesting.
    #[test]
    fn nginx_documented_order() {
        let tree = vec![
            node(Match::Exact("/".into()), 0, vec![]),            // A
            node(Match::Prefix("/".into()), 1, vec![]),           // B
            node(Match::Prefix("/documents/".into()), 2, vec![]), // C
            node(Match::NoRegex("/images/".into()), 3, vec![]),   // D
            node(re(r"(?i)\.(gif|jpg|jpeg)$"), 4, vec![]),        // E
        ];
        assert_eq!(find(&tree, "/"), Some(0));
        assert_eq!(find(&tree, "/index.html"), Some(1));
        assert_eq!(find(&tree, "/documents/document.html"), Some(2));
        assert_eq!(find(&tree, "/images/1.gif"), Some(3));
        assert_eq!(find(&tree, "/documents/1.JPG"), Some(4));
    }

    #[test]
    fn regex_order_nesting_and_no_match() {
        let tree = vec![
            node(
                Match::Prefix("/api/".into()),
                0,
                vec![
                    node(Match::Prefix("/api/v2/".into()), 1, vec![]),
                    node(Match::Exact("/api/login".into()), 2, vec![]),
                    node(re(r"^/api/.*\.json$"), 3, vec![]),
                ],
            ),
            node(re(r"^/api/"), 4, vec![]),
            node(re(r"^/api/v2"), 5, vec![]),
            node(Match::NoRegex("/static/".into()), 6, vec![]),
            node(re(r"\.css$"), 7, vec![]),
        ];
        // The first regex in order wins over a longer prefix.
        assert_eq!(find(&tree, "/api/v2/x"), Some(4));
        // A nested exact wins at once.
        assert_eq!(find(&tree, "/api/login"), Some(2));
        // A nested regex wins before the outer regexes.
        assert_eq!(find(&tree, "/api/v2/a.json"), Some(3));
        // ^~ stops the regex search.
        assert_eq!(find(&tree, "/static/a.css"), Some(6));
        assert_eq!(find(&tree, "/b.css"), Some(7));
        // Nothing matches: the server's own settings.
        assert_eq!(find(&tree, "/other"), None);
        // Prefix only (no regex matches): the deepest prefix.
        let tree = vec![node(
            Match::Prefix("/a/".into()),
            0,
            vec![node(Match::Prefix("/a/b/".into()), 1, vec![])],
        )];
        assert_eq!(find(&tree, "/a/b/c"), Some(1));
        assert_eq!(find(&tree, "/a/c"), Some(0));
    }

    #[test]
    fn targets_are_normalized_as_nginx_does() {
        for (raw, want) in [
            ("/a/b?x=1", "/a/b"),
            ("/a//b/./c/../d", "/a/b/d"),
            ("/%61pi/x%20y", "/api/x y"),
            ("/../../etc", "/etc"),
            ("/a/", "/a/"),
            ("/a/..", "/"),
            ("", "/"),
            ("http://h.example:8080/p?q", "/p"),
            ("/bad%zz", "/bad%zz"),
            ("/a/.", "/a/"),
            ("/a/b/..", "/a/"),
            ("/%70", "/p"),
            ("//p", "/p"),
            ("/q/x/../p", "/q/p"),
            ("/a%2F..%2Fb", "/b"),
            ("/r/%2e%2e/p", "/p"),
            ("/x%2", "/x%2"),
        ] {
            assert_eq!(normalize(raw), want, "{raw}");
        }
    }

    #[test]
    fn targets_nginx_answers_with_400() {
        for bad in [
            "/%2e%2e/x",
            "/..",
            "/a/../../x",
            "//../x",
            "/a/%2E%2e%2F..",
            "/%00",
            "/a%0",
            "/bad%zz",
            "/x%2",
            "/a\x01b",
            "/p?a=\u{7f}",
            r"/a\x01b",
            r"/a?\x7F",
            "http://h/../x",
        ] {
            assert!(bad_request(bad.as_bytes()), "{bad:?}");
        }
        for good in [
            "/",
            "/a/..",
            "/a/../b",
            "/...",
            "/a/..b",
            "/%25zz",
            "/%2e",
            "/p?x=%zz",
            "/a/./..",
            "/p#/../..",
            "/%3F..",
            "",
            r"/a\x41",
            r"/a\x5C",
        ] {
            assert!(!bad_request(good.as_bytes()), "{good:?}");
        }
    }

    #[test]
    fn request_variables_follow_from_the_target() {
        let eval = |var: &str, target: &str| {
            let mut out = b"k".to_vec();
            Target::of(var).unwrap().eval(target.as_bytes(), &mut out);
            String::from_utf8(out).unwrap()
        };
        for (var, target, want) in [
            ("request_uri", "/r/%61?x=1", "k/r/%61?x=1"),
            ("request_uri", "http://h/r//a", "k/r//a"),
            ("uri", "/%70?a=2", "k/p"),
            ("document_uri", "/q/../p", "k/p"),
            ("args", "/p?a=1&b=2", "ka=1&b=2"),
            ("query_string", "/p", "k"),
            ("is_args", "/p?a", "k?"),
            ("is_args", "/p?", "k"),
            ("is_args", "/p", "k"),
            ("arg_x", "/p?x=1&x=3", "k1"),
            ("arg_x", "/p?a=1&X=2", "k2"),
            ("arg_x", "/p?xx=1", "k"),
            ("arg_x", "/p?x=&y=1", "k"),
            ("arg_x", "/p?x&x=4", "k4"),
        ] {
            assert_eq!(eval(var, target), want, "{var} {target}");
        }
        assert_eq!(Target::of("remote_addr"), None);
    }
}
