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
    let mut t = target;
    if let Some(rest) = t
        .strip_prefix("http://")
        .or_else(|| t.strip_prefix("https://"))
    {
        t = rest.find('/').map_or("/", |i| &rest[i..]);
    }
    let t = t.split(['?', '#']).next().unwrap_or("");
    let b = t.as_bytes();
    let mut decoded = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            decoded.push(h * 16 + l);
            i += 3;
            continue;
        }
        decoded.push(b[i]);
        i += 1;
    }
    let text = String::from_utf8_lossy(&decoded);
    let mut segs: Vec<&str> = Vec::new();
    let trailing = text.ends_with('/') || text.ends_with("/.") || text.ends_with("/..");
    for s in text.split('/') {
        match s {
            "" | "." => {}
            ".." => {
                segs.pop();
            }
            s => segs.push(s),
        }
    }
    let mut out = String::with_capacity(text.len() + 1);
    for s in &segs {
        out.push('/');
        out.push_str(s);
    }
    if out.is_empty() || (trailing && !segs.is_empty()) {
        out.push('/');
    }
    out
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
        ] {
            assert_eq!(normalize(raw), want, "{raw}");
        }
    }
}
