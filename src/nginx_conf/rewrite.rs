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

use super::tree::{Directive, Pos};
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
    },
    Return,
    Break,
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

/// Runs `steps` on `uri` (changed in place as nginx changes `$uri`).
pub fn run(steps: &[Step], uri: &mut String) -> End {
    let mut changed = false;
    for s in steps {
        match s {
            Step::Return => return End::Answered,
            Step::Break => return End::Stay,
            Step::Rewrite { re, to, flag } => {
                let Some(caps) = re.captures(uri) else {
                    continue;
                };
                if *flag == Flag::Redirect {
                    return End::Answered;
                }
                let mut out = String::new();
                for p in to {
                    match p {
                        Part::Lit(l) => match l.split_once('?') {
                            Some((path, _)) => {
                                out.push_str(path);
                                break;
                            }
                            None => out.push_str(l),
                        },
                        Part::Capture(n) => out.push_str(caps.get(*n).map_or("", |m| m.as_str())),
                    }
                }
                *uri = out;
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
        let s = &self.servers[server];
        if !self.answers.rewriting {
            return self.route(server, uri);
        }
        let mut uri = uri.to_string();
        if run(&s.steps, &mut uri) == End::Answered {
            return s.twin.unwrap_or(s.fallback);
        }
        let mut l = self.route(server, &uri);
        // nginx allows 10 changes of the URI in the location rewrite phase.
        for _ in 0..10 {
            let loc = &self.locations[l];
            match run(&loc.steps, &mut uri) {
                End::Stay => return l,
                End::Answered => return loc.twin.unwrap_or(l),
                End::Search => l = self.route(server, &uri),
            }
        }
        let loc = &self.locations[l];
        match run(&loc.steps, &mut uri) {
            End::Stay => l,
            End::Answered => loc.twin.unwrap_or(l),
            End::Search => self.answers.cycle,
        }
    }

    /// Notes each zone key that reads the URI or query string when a
    /// rewrite can change them: drip evaluates keys on the request as
    /// logged.
    pub(super) fn note_rewritten_keys(&mut self, at: &Pos) {
        const CHANGED: [&str; 5] = ["uri", "document_uri", "args", "query_string", "is_args"];
        let notes: Vec<(Pos, String)> = self
            .zones
            .iter()
            .flat_map(|z| z.key.vars().map(move |v| (z, v)))
            .filter(|(_, v)| CHANGED.contains(v) || v.starts_with("arg_"))
            .map(|(z, v)| (z.pos.clone(), format!("zone \"{}\" key ${v}", z.name)))
            .collect();
        for (pos, what) in notes {
            self.note(
                &pos,
                &what,
                &format!(
                    "the rewrite at {at} changes it in nginx; drip evaluates the key on the request as logged"
                ),
            );
        }
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
    let to = match (flag, replacement(to)) {
        (_, Some(parts)) => parts,
        (Flag::Redirect | Flag::Break, None) => Vec::new(),
        (_, None) => {
            return Err(
                "its replacement reads a variable drip does not evaluate; rows are routed by the URI as logged",
            );
        }
    };
    Ok(Step::Rewrite { re, to, flag })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(p: &str, to: &str, flag: Flag) -> Step {
        Step::Rewrite {
            re: Regex::new(p).unwrap(),
            to: replacement(to).unwrap(),
            flag,
        }
    }

    #[test]
    fn replacements_read_captures_and_stop_at_the_query() {
        let steps = [step(r"^/old/(\w+)/(\d+)$", "/new/$2/${1}x?a=1", Flag::Last)];
        let mut uri = "/old/p/42".to_string();
        assert_eq!(run(&steps, &mut uri), End::Search);
        assert_eq!(uri, "/new/42/px");
        let mut uri = "/old/p/q".to_string();
        assert_eq!(run(&steps, &mut uri), End::Stay);
        assert_eq!(uri, "/old/p/q");
        assert_eq!(replacement("/a/$host"), None);
        assert_eq!(
            replacement("/$1$9"),
            Some(vec![
                Part::Lit("/".into()),
                Part::Capture(1),
                Part::Capture(9)
            ])
        );
        let steps = [step(r"^/(a)?b", "/$1-$3", Flag::Last)];
        let mut uri = "/b".to_string();
        run(&steps, &mut uri);
        assert_eq!(uri, "/-");
    }

    #[test]
    fn flags_decide_what_follows() {
        // Without a flag the next rewrite sees the new URI; the location
        // is chosen again at the end.
        let steps = [
            step("^/a$", "/b", Flag::Next),
            step("^/b$", "/c", Flag::Next),
        ];
        let mut uri = "/a".to_string();
        assert_eq!(run(&steps, &mut uri), End::Search);
        assert_eq!(uri, "/c");
        // break stays, even after a change; a later return is not reached.
        let steps = [step("^/a$", "/b", Flag::Next), Step::Break, Step::Return];
        let mut uri = "/a".to_string();
        assert_eq!(run(&steps, &mut uri), End::Stay);
        let steps = [step("^/a$", "/b", Flag::Break), Step::Return];
        let mut uri = "/a".to_string();
        assert_eq!(run(&steps, &mut uri), End::Stay);
        assert_eq!(uri, "/b");
        let mut uri = "/z".to_string();
        assert_eq!(run(&steps, &mut uri), End::Answered);
        // A redirect answers; an absolute replacement is one whatever the flag.
        let d = Directive {
            name: "rewrite".into(),
            args: vec!["^".into(), "https://h$request_uri".into(), "last".into()],
            pos: Pos {
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
        assert_eq!(run(&[s], &mut "/x".to_string()), End::Answered);
    }
}
