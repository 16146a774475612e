//! The rewrite phase, as far as it decides which location limits a
//! request. nginx runs the `rewrite`, `return` and `break` directives of
//! the server before it chooses a location (the server rewrite phase), and
//! then those of the chosen location (not inherited by nested ones):
//!
//! - `rewrite REGEX REPLACEMENT` matches `$uri`; on a match `$uri` becomes
//!   the replacement (`$1`…`$9` are the captures; what follows a `?` of it
//!   is the new query string) and the next directive runs;
//! - `last` stops the directives; in a location, nginx then chooses the
//!   location again for the new `$uri` (up to 10 times, then 500);
//! - `break` (the flag or the directive) stops them and stays put;
//! - `redirect`, `permanent`, or a replacement starting with `http://`,
//!   `https://` or `$scheme` answers 302/301, as `return` answers: both
//!   before the preaccess phase, so before any `limit_req`;
//! - a location whose own rewrites changed `$uri` without `last` or
//!   `break` is chosen again too.
//!
//! A rewrite drip cannot evaluate (a regex the regex engine cannot run, a
//! replacement reading other variables) keeps a note and is passed over.

use super::tree::Directive;
use super::{Location, NginxConf};
use regex::Regex;

/// What a matching `rewrite` does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    /// No flag: the next directive runs.
    Next,
    Last,
    Break,
    /// `redirect`, `permanent` or an absolute replacement: answered.
    Redirect,
}

/// A piece of a replacement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Lit(String),
    /// `$N`: the regex's capture N (empty when it took no part).
    Capture(usize),
}

/// One directive of the rewrite phase, in the order written.
#[derive(Clone, Debug)]
pub enum Step {
    Rewrite {
        re: Regex,
        to: Vec<Part>,
        flag: Flag,
        /// False when the replacement ends with `?`: the request's query
        /// string is dropped, not appended.
        keep_args: bool,
    },
    Return,
    Break,
}

/// A request's `$uri` and `$args` as rewrites leave them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rewritten {
    pub uri: String,
    pub args: String,
}

/// How a block's rewrite directives ended for one URI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Nothing more to do: the location stays.
    Stay,
    /// `$uri` changed: nginx chooses the location again.
    Search,
    /// A `return` or a redirect answered the request.
    Answered,
}

impl Step {
    /// True when the step can answer the request.
    fn answers(&self) -> bool {
        matches!(
            self,
            Step::Return
                | Step::Rewrite {
                    flag: Flag::Redirect,
                    ..
                }
        )
    }
}

/// Runs `steps` on the request (changed in place as nginx changes `$uri`
/// and `$args`).
pub fn run(steps: &[Step], req: &mut Rewritten) -> End {
    let mut changed = false;
    for s in steps {
        match s {
            Step::Return => return End::Answered,
            Step::Break => return End::Stay,
            Step::Rewrite {
                re,
                to,
                flag,
                keep_args,
            } => {
                let Some(caps) = re.captures(&req.uri) else {
                    continue;
                };
                if *flag == Flag::Redirect {
                    return End::Answered;
                }
                let (uri, args) = expand(to, &caps);
                match args {
                    Some(mut a) => {
                        if *keep_args && !req.args.is_empty() {
                            a.push('&');
                            a.push_str(&req.args);
                        }
                        req.args = a;
                    }
                    None if !keep_args => req.args.clear(),
                    None => {}
                }
                req.uri = uri;
                match flag {
                    Flag::Last => return End::Search,
                    Flag::Break => return End::Stay,
                    _ => changed = true,
                }
            }
        }
    }
    if changed { End::Search } else { End::Stay }
}

/// A replacement with the captures filled in: the new `$uri`, and the new
/// query string when it has a `?`.
fn expand(to: &[Part], caps: &regex::Captures) -> (String, Option<String>) {
    let mut uri = String::new();
    let mut args: Option<String> = None;
    for p in to {
        let text = match p {
            Part::Lit(l) => l.as_str(),
            Part::Capture(n) => caps.get(*n).map_or("", |m| m.as_str()),
        };
        match (&mut args, p) {
            (Some(a), _) => a.push_str(text),
            (None, Part::Lit(l)) if l.contains('?') => {
                let (path, query) = l.split_once('?').unwrap_or_default();
                uri.push_str(path);
                args = Some(query.to_string());
            }
            (None, _) => uri.push_str(text),
        }
    }
    (uri, args)
}

/// A replacement as parts; `None` when it reads a variable other than a
/// capture.
fn replacement(text: &str) -> Option<Vec<Part>> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        lit.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (digit, len) = match after.as_bytes() {
            [d, ..] if d.is_ascii_digit() => (*d, 1),
            [b'{', d, b'}', ..] if d.is_ascii_digit() => (*d, 3),
            _ => return None,
        };
        if !lit.is_empty() {
            parts.push(Part::Lit(std::mem::take(&mut lit)));
        }
        parts.push(Part::Capture(usize::from(digit - b'0')));
        rest = &after[len..];
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        parts.push(Part::Lit(lit));
    }
    Some(parts)
}

impl NginxConf {
    /// The steps of one block's `rewrite`, `return` and `break`
    /// directives, in order; a rewrite drip cannot evaluate leaves a note
    /// and is passed over.
    pub(super) fn rewrite_steps(&mut self, dirs: &[&Directive]) -> Vec<Step> {
        let mut steps = Vec::new();
        for d in dirs {
            match d.name.as_str() {
                "return" => steps.push(Step::Return),
                "break" => steps.push(Step::Break),
                _ => match rewrite(d) {
                    Ok(s) => steps.push(s),
                    Err(why) => self.note(&d.pos, "rewrite", why),
                },
            }
        }
        steps
    }

    /// The entry rows answered by a block's rewrite phase go to, when one
    /// of `steps` can answer: a copy of location `of` that never limits.
    pub(super) fn answered_twin(&mut self, of: usize, steps: &[Step]) -> Option<usize> {
        if !steps.iter().any(Step::answers) {
            return None;
        }
        let l = &self.locations[of];
        let twin = Location {
            name: format!("{}, answered by its rewrite phase", l.name),
            limits: Vec::new(),
            returns: true,
            try_named: None,
            steps: Vec::new(),
            twin: None,
            answered: Some("return or redirect (never limited)"),
            index: None,
            missing_to: None,
            try_uri: None,
            ..l.clone()
        };
        self.locations.push(twin);
        Some(self.locations.len() - 1)
    }

    /// The location entry a request for the normalized `uri` in `server`
    /// goes to after the rewrite phases: the server's rewrites, the
    /// location for the URI they leave, and that location's rewrites, as
    /// many times as they change the URI (the 11th time nginx answers 500).
    pub fn route_rewritten(&self, server: usize, uri: &str) -> usize {
        self.route_request(server, uri, "").0
    }

    /// [`NginxConf::route_rewritten`] for a request with query string
    /// `args`, and its `$uri` and `$args` when rewrites changed them.
    pub fn route_request(
        &self,
        server: usize,
        uri: &str,
        args: &str,
    ) -> (usize, Option<Rewritten>) {
        if !self.answers.rewriting {
            return (self.route(server, uri), None);
        }
        let mut req = Rewritten {
            uri: uri.to_string(),
            args: args.to_string(),
        };
        let l = self.rewrite_phases(server, &mut req);
        let changed = req.uri != uri || req.args != args;
        (l, changed.then_some(req))
    }

    fn rewrite_phases(&self, server: usize, req: &mut Rewritten) -> usize {
        let s = &self.servers[server];
        if run(&s.steps, req) == End::Answered {
            return s.twin.unwrap_or(s.fallback);
        }
        let mut l = self.route(server, &req.uri);
        // nginx allows 10 changes of the URI in the location rewrite
        // phase; the 11th is a 500.
        for changes in 1..=11 {
            let loc = &self.locations[l];
            match run(&loc.steps, req) {
                End::Stay => return l,
                End::Answered => return loc.twin.unwrap_or(l),
                End::Search if changes == 11 => break,
                End::Search => l = self.route(server, &req.uri),
            }
        }
        self.answers.cycle
    }
}

/// One `rewrite REGEX REPLACEMENT [FLAG]` line, or why drip cannot
/// evaluate it.
fn rewrite(d: &Directive) -> Result<Step, &'static str> {
    let (pattern, to, flag) = match d.args.as_slice() {
        [p, t] => (p, t, None),
        [p, t, f] => (p, t, Some(f.as_str())),
        _ => return Err("it does not have two or three arguments"),
    };
    let mut flag = match flag {
        None => Flag::Next,
        Some("last") => Flag::Last,
        Some("break") => Flag::Break,
        Some("redirect" | "permanent") => Flag::Redirect,
        Some(_) => return Err("its flag is none of last, break, redirect, permanent"),
    };
    if ["http://", "https://", "$scheme"]
        .iter()
        .any(|p| to.starts_with(p))
    {
        flag = Flag::Redirect;
    }
    let re = Regex::new(pattern).map_err(|_| {
        "its regex is not one drip can evaluate (PCRE look-around or backreferences); rows are routed by the URI as logged"
    })?;
    let keep_args = !to.ends_with('?');
    let to = to.strip_suffix('?').unwrap_or(to);
    let to = match (flag, replacement(to)) {
        (_, Some(parts)) => parts,
        (Flag::Redirect | Flag::Break, None) => Vec::new(),
        (_, None) => {
            return Err(
                "its replacement reads a variable drip does not evaluate; rows are routed by the URI as logged",
            );
        }
    };
    Ok(Step::Rewrite {
        re,
        to,
        flag,
        keep_args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(p: &str, to: &str, flag: Flag) -> Step {
        Step::Rewrite {
            re: Regex::new(p).unwrap(),
            to: replacement(to.strip_suffix('?').unwrap_or(to)).unwrap(),
            flag,
            keep_args: !to.ends_with('?'),
        }
    }

    fn req(target: &str) -> Rewritten {
        let (uri, args) = target.split_once('?').unwrap_or((target, ""));
        Rewritten {
            uri: uri.into(),
            args: args.into(),
        }
    }

    #[test]
    fn replacements_read_captures_and_set_the_query_string() {
        let steps = [step(
            r"^/old/(\w+)/(\d+)$",
            "/new/$2/${1}x?a=$1",
            Flag::Last,
        )];
        let mut r = req("/old/p/42?b=2");
        assert_eq!(run(&steps, &mut r), End::Search);
        assert_eq!(r, req("/new/42/px?a=p&b=2"));
        let mut r = req("/old/p/q?b=2");
        assert_eq!(run(&steps, &mut r), End::Stay);
        assert_eq!(r, req("/old/p/q?b=2"));
        // A replacement ending with `?` drops the query string; one
        // without `?` keeps it.
        for (to, want) in [
            ("/n?", "/n"),
            ("/n?c=1?", "/n?c=1"),
            ("/n", "/n?b=2"),
            ("/n?c=$1", "/n?c=&b=2"),
        ] {
            let mut r = req("/x?b=2");
            run(&[step("^/x$", to, Flag::Break)], &mut r);
            assert_eq!(r, req(want), "{to}");
        }
        assert_eq!(replacement("/a/$host"), None);
        assert_eq!(
            replacement("/$1$9"),
            Some(vec![
                Part::Lit("/".into()),
                Part::Capture(1),
                Part::Capture(9)
            ])
        );
        let mut r = req("/b");
        run(&[step(r"^/(a)?b", "/$1-$3", Flag::Last)], &mut r);
        assert_eq!(r.uri, "/-");
    }

    #[test]
    fn flags_decide_what_follows() {
        // Without a flag the next rewrite sees the new URI; the location
        // is chosen again at the end.
        let steps = [
            step("^/a$", "/b", Flag::Next),
            step("^/b$", "/c", Flag::Next),
        ];
        let mut r = req("/a");
        assert_eq!(run(&steps, &mut r), End::Search);
        assert_eq!(r.uri, "/c");
        // break stays, even after a change; a later return is not reached.
        let steps = [step("^/a$", "/b", Flag::Next), Step::Break, Step::Return];
        assert_eq!(run(&steps, &mut req("/a")), End::Stay);
        let steps = [step("^/a$", "/b", Flag::Break), Step::Return];
        let mut r = req("/a");
        assert_eq!(run(&steps, &mut r), End::Stay);
        assert_eq!(r.uri, "/b");
        assert_eq!(run(&steps, &mut req("/z")), End::Answered);
        // A redirect answers; an absolute replacement is one whatever the flag.
        let d = Directive {
            name: "rewrite".into(),
            args: vec!["^".into(), "https://h$request_uri".into(), "last".into()],
            pos: super::super::tree::Pos {
                file: std::sync::Arc::from(std::path::Path::new("t.conf")),
                line: 1,
            },
            block: None,
        };
        let s = rewrite(&d).unwrap();
        assert!(matches!(
            s,
            Step::Rewrite {
                flag: Flag::Redirect,
                ..
            }
        ));
        assert_eq!(run(&[s], &mut req("/x")), End::Answered);
    }
}
