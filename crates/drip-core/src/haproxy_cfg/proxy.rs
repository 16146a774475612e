//! The sections of a haproxy.cfg, read into proxies: names first (rules
//! may name a backend or table declared further down), then each proxy's
//! stick-table, then its ACLs, rules and switching in order.

use super::acl::{Acls, Cond, parse_sample};
use super::lex::{Line, duration_ms, size};
use super::{Action, HaproxyCfg, KeyType, Proxy, Rule, Side, Table};
use std::path::PathBuf;

type Res<T> = Result<T, (usize, String)>;

/// Sections whose content drip passes over.
const OTHER_SECTIONS: &[&str] = &[
    "global",
    "peers",
    "resolvers",
    "userlist",
    "mailers",
    "cache",
    "program",
    "http-errors",
    "ring",
    "fcgi-app",
    "log-forward",
    "crt-store",
    "traces",
];

/// One section: its keyword, name, header line and body.
struct Section<'a> {
    kind: &'a str,
    name: String,
    line: usize,
    body: &'a [Line],
}

fn sections(lines: &[Line]) -> Res<Vec<Section<'_>>> {
    let mut out: Vec<Section<'_>> = Vec::new();
    let mut start = None;
    for (i, l) in lines.iter().enumerate() {
        let w = l.words[0].as_str();
        let kind = match w {
            "frontend" | "backend" | "listen" | "defaults" => w,
            _ if OTHER_SECTIONS.contains(&w) => w,
            _ => continue,
        };
        if let Some(s) = start.take() {
            close(&mut out, lines, s, i);
        } else if i > 0 {
            return Err((
                lines[0].no,
                format!("'{}' before any section", lines[0].words[0]),
            ));
        }
        start = Some((i, kind));
    }
    match start {
        Some(s) => close(&mut out, lines, s, lines.len()),
        None if !lines.is_empty() => {
            return Err((
                lines[0].no,
                format!("'{}' before any section", lines[0].words[0]),
            ));
        }
        None => {}
    }
    Ok(out)
}

fn close<'a>(
    out: &mut Vec<Section<'a>>,
    lines: &'a [Line],
    (i, kind): (usize, &'a str),
    end: usize,
) {
    let l = &lines[i];
    out.push(Section {
        kind,
        name: l.words.get(1).cloned().unwrap_or_default(),
        line: l.no,
        body: &lines[i + 1..end],
    });
}

/// The proxies of `lines`, checked.
pub(super) fn build(lines: &[Line]) -> Res<HaproxyCfg> {
    let sections = sections(lines)?;
    let mut cfg = HaproxyCfg {
        path: PathBuf::new(),
        proxies: Vec::new(),
        tables: Vec::new(),
        notes: Vec::new(),
    };
    // Names and tables first: rules name backends and tables anywhere.
    let mut bodies = Vec::new();
    let mut default_backend: Option<(String, usize)> = None;
    let mut defaults_for = Vec::new();
    for s in &sections {
        let side = match s.kind {
            "frontend" => Side::Frontend,
            "backend" => Side::Backend,
            "listen" => Side::Listen,
            "defaults" => {
                default_backend = defaults(s)?;
                continue;
            }
            _ => continue,
        };
        if s.name.is_empty() {
            return Err((s.line, format!("a {} needs a name", s.kind)));
        }
        if let Some(p) = cfg
            .proxies
            .iter()
            .find(|p| p.name == s.name && clash(p.side, side))
        {
            return Err((
                s.line,
                format!(
                    "{} {} has the name of {} (line {})",
                    s.kind,
                    s.name,
                    p.title(),
                    p.line
                ),
            ));
        }
        let table = table(s)?.map(|t| {
            cfg.tables.push(t);
            cfg.tables.len() - 1
        });
        cfg.proxies.push(Proxy {
            name: s.name.clone(),
            side,
            line: s.line,
            rules: Vec::new(),
            switching: Vec::new(),
            default_backend: None,
            table,
            captures: Vec::new(),
        });
        bodies.push(s.body);
        defaults_for.push(default_backend.clone());
    }
    for (i, body) in bodies.iter().enumerate() {
        let mut p = cfg.proxies[i].clone();
        Reader {
            cfg: &mut cfg,
            me: i,
            acls: Acls::default(),
            pre: Vec::new(),
        }
        .read(&mut p, body)?;
        if p.default_backend.is_none()
            && p.side.fronts()
            && let Some((name, line)) = &defaults_for[i]
        {
            p.default_backend = Some(backend(&cfg, name, *line)?);
        }
        cfg.proxies[i] = p;
    }
    Ok(cfg)
}

/// Two proxies of these sides cannot share a name.
fn clash(a: Side, b: Side) -> bool {
    a == Side::Listen || b == Side::Listen || a == b
}

/// A `defaults` section: its `default_backend`; rules there are refused.
fn defaults(s: &Section<'_>) -> Res<Option<(String, usize)>> {
    let mut out = None;
    for l in s.body {
        match l.words[0].as_str() {
            "default_backend" => out = Some((arg(l, 1, "a backend name")?.to_string(), l.no)),
            "http-request" | "tcp-request" | "acl" | "use_backend" | "stick-table" => {
                return Err((
                    l.no,
                    format!(
                        "'{}' in a defaults section: drip reads rules in frontends, backends and listens; move it there",
                        l.words[0]
                    ),
                ));
            }
            _ => {}
        }
    }
    Ok(out)
}

fn arg<'a>(l: &'a Line, i: usize, what: &str) -> Res<&'a str> {
    l.words
        .get(i)
        .map(String::as_str)
        .ok_or_else(|| (l.no, format!("'{}' needs {what}", l.words[0])))
}

fn backend(cfg: &HaproxyCfg, name: &str, line: usize) -> Res<usize> {
    if name.contains("%[") {
        return Err((
            line,
            format!(
                "backend '{name}' is chosen per request by a log-format expression: drip routes to named backends only"
            ),
        ));
    }
    cfg.find(name, false)
        .ok_or_else(|| (line, format!("no backend (or listen) named '{name}'")))
}

/// The section's `stick-table`, if it declares one.
fn table(s: &Section<'_>) -> Res<Option<Table>> {
    let mut found = None;
    for l in s.body.iter().filter(|l| l.words[0] == "stick-table") {
        if found.is_some() {
            return Err((l.no, "a second stick-table in one proxy".into()));
        }
        found = Some(stick_table(&s.name, l)?);
    }
    Ok(found)
}

fn stick_table(proxy: &str, l: &Line) -> Res<Table> {
    let w = &l.words;
    let bad = |m: String| (l.no, m);
    let mut t = Table {
        proxy: proxy.to_string(),
        key: KeyType::Ip,
        size: 0,
        expire_ms: None,
        rate_ms: None,
        line: l.no,
    };
    let mut typed = false;
    let mut i = 1;
    while i < w.len() {
        let v = w.get(i + 1).map(String::as_str);
        match (w[i].as_str(), v) {
            ("type", Some(k)) => {
                typed = true;
                t.key = match k {
                    "ip" => KeyType::Ip,
                    "ipv6" => KeyType::Ipv6,
                    "integer" => KeyType::Integer,
                    "string" | "binary" => match (w.get(i + 2).map(String::as_str), w.get(i + 3)) {
                        (Some("len"), Some(n)) => {
                            i += 2;
                            KeyType::String(
                                n.parse()
                                    .map_err(|_| bad(format!("len '{n}' is not a number")))?,
                            )
                        }
                        _ => KeyType::String(32),
                    },
                    _ => {
                        return Err(bad(format!(
                            "stick-table type '{k}': HAProxy's types are ip, ipv6, integer, string and binary"
                        )));
                    }
                };
            }
            ("size", Some(n)) => {
                t.size = size(n).ok_or_else(|| bad(format!("size '{n}' is not a size")))?
            }
            ("expire", Some(e)) => {
                t.expire_ms = Some(
                    duration_ms(e).ok_or_else(|| bad(format!("expire '{e}' is not a duration")))?,
                )
            }
            ("store", Some(list)) => {
                for item in list.split(',') {
                    if let Some(p) = item
                        .strip_prefix("http_req_rate(")
                        .and_then(|p| p.strip_suffix(')'))
                    {
                        t.rate_ms = Some(duration_ms(p).filter(|&d| d > 0).ok_or_else(|| {
                            bad(format!("http_req_rate({p}): the period is not a duration"))
                        })?);
                    }
                }
            }
            ("peers" | "srvkey" | "write-to" | "recv-only", Some(_)) => {}
            ("nopurge", _) => {
                i += 1;
                continue;
            }
            (k, _) => {
                return Err(bad(format!(
                    "stick-table: '{k}' without a value, or not a stick-table keyword"
                )));
            }
        }
        i += 2;
    }
    if !typed || t.size == 0 {
        return Err(bad("a stick-table needs 'type' and 'size'".into()));
    }
    Ok(t)
}

/// Reads one proxy's body.
struct Reader<'c> {
    cfg: &'c mut HaproxyCfg,
    me: usize,
    acls: Acls,
    /// `tcp-request` tracking, run before the `http-request` rules.
    pre: Vec<Rule>,
}

impl Reader<'_> {
    fn read(mut self, p: &mut Proxy, body: &[Line]) -> Res<()> {
        let mut rules = Vec::new();
        for l in body {
            let e = |m: String| (l.no, m);
            match l.words[0].as_str() {
                "acl" => {
                    let name = arg(l, 1, "a name and a criterion")?;
                    self.acls.declare(name, &l.words[2..]).map_err(e)?;
                }
                "http-request" => rules.extend(self.http_rule(l)?),
                "tcp-request" => self.tcp_rule(l)?,
                "use_backend" => {
                    if p.side == Side::Backend {
                        return Err(e("use_backend in a backend: HAProxy switches backends in frontends and listens".into()));
                    }
                    let name = arg(l, 1, "a backend name")?;
                    let b = backend(self.cfg, name, l.no)?;
                    let cond = self.cond(l, 2)?;
                    p.switching.push((b, cond, l.no));
                }
                "default_backend" => {
                    if p.side == Side::Backend {
                        return Err(e("default_backend in a backend".into()));
                    }
                    p.default_backend =
                        Some(backend(self.cfg, arg(l, 1, "a backend name")?, l.no)?);
                }
                "capture" => self.capture(p, l)?,
                "http-response" if l.words.iter().any(|w| w == "deny" || w == "tarpit") => {
                    self.note(
                        l,
                        "http-response deny refuses after the server answered; not replayed".into(),
                    );
                }
                _ => {}
            }
        }
        p.rules = std::mem::take(&mut self.pre);
        p.rules.extend(rules);
        Ok(())
    }

    fn note(&mut self, l: &Line, what: String) {
        let p = &self.cfg.proxies[self.me];
        let n = format!("{} (line {}): {what}", p.title(), l.no);
        self.cfg.notes.push(n);
    }

    /// The condition from word `from` on (`if`/`unless` …), if any.
    fn cond(&self, l: &Line, from: usize) -> Res<Option<Cond>> {
        match l.words.get(from) {
            None => Ok(None),
            Some(w) if w == "if" || w == "unless" => self
                .acls
                .cond(&l.words[from..])
                .map(Some)
                .map_err(|m| (l.no, m)),
            Some(w) => Err((l.no, format!("'{w}': expected 'if' or 'unless'"))),
        }
    }

    fn capture(&mut self, p: &mut Proxy, l: &Line) -> Res<()> {
        let w: Vec<&str> = l.words.iter().map(String::as_str).collect();
        match w.as_slice() {
            ["capture", "request", "header", name, "len", n] => {
                if p.side == Side::Backend {
                    return Err((l.no, "capture request header in a backend: HAProxy captures in frontends and listens".into()));
                }
                let len = n
                    .parse()
                    .map_err(|_| (l.no, format!("len '{n}' is not a number")))?;
                p.captures.push((name.to_ascii_lowercase(), len));
                Ok(())
            }
            ["capture", "response", "header", ..] | ["capture", "cookie", ..] => Ok(()),
            _ => Err((l.no, "capture request header NAME len N".into())),
        }
    }

    /// Where the condition starts on `l` (or its end).
    fn cond_at(l: &Line) -> usize {
        l.words
            .iter()
            .position(|w| w == "if" || w == "unless")
            .unwrap_or(l.words.len())
    }

    fn http_rule(&mut self, l: &Line) -> Res<Option<Rule>> {
        let action = arg(l, 1, "an action")?;
        let at = Self::cond_at(l);
        let opts = &l.words[2..at.max(2)];
        let status = |default: u16| -> Res<u16> {
            match opts
                .iter()
                .position(|w| w == "deny_status" || w == "status")
            {
                Some(i) => opts
                    .get(i + 1)
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| (l.no, format!("{} needs a status code", opts[i]))),
                None => Ok(default),
            }
        };
        let action = match action {
            a if a.starts_with("track-sc") => self.track(l, a)?,
            "deny" => Action::Deny {
                status: status(403)?,
            },
            "reject" => Action::Deny { status: 0 },
            "tarpit" => Action::Tarpit {
                status: status(500)?,
            },
            "return" => Action::Answer {
                status: status(200)?,
            },
            "redirect" => Action::Answer {
                status: match opts.iter().position(|w| w == "code") {
                    Some(i) => opts.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(302),
                    None => 302,
                },
            },
            "use-service" => Action::Answer { status: 200 },
            "allow" => Action::Allow,
            "set-path" | "set-pathq" | "set-uri" | "replace-path" | "replace-pathq"
            | "replace-uri" | "set-query" | "set-method" | "set-src" | "normalize-uri" => {
                self.note(l, format!("http-request {action} changes the request; later rules are replayed on the logged request"));
                return Ok(None);
            }
            "auth" => {
                self.note(
                    l,
                    "http-request auth answers 401 to requests without credentials; not replayed"
                        .into(),
                );
                return Ok(None);
            }
            _ => return Ok(None),
        };
        let cond = self.cond(l, at)?;
        Ok(Some(Rule {
            line: l.no,
            text: l.words[1..].join(" "),
            cond,
            action,
        }))
    }

    /// `tcp-request connection|session|content track-scN …`: tracked
    /// before the `http-request` rules. A `reject` refuses connections
    /// HAProxy logs no request for.
    fn tcp_rule(&mut self, l: &Line) -> Res<()> {
        let (Some(_), Some(action)) = (l.words.get(1), l.words.get(2)) else {
            return Ok(());
        };
        if action.starts_with("track-sc") {
            let mut shifted = l.clone();
            shifted.words.remove(1);
            let track = self.track(&shifted, action)?;
            let cond = self.cond(&shifted, Self::cond_at(&shifted))?;
            self.pre.push(Rule {
                line: l.no,
                text: l.words[1..].join(" "),
                cond,
                action: track,
            });
        } else if action == "reject" || action == "silent-drop" {
            self.note(l, format!("tcp-request {} {action} refuses connections before HAProxy logs a request; not replayed", l.words[1]));
        }
        Ok(())
    }

    /// `track-scN SAMPLE [table NAME]` on `l` (`l.words[1]` the action).
    fn track(&self, l: &Line, action: &str) -> Res<Action> {
        let slot = match action.strip_prefix("track-sc").map(|n| n.parse::<u8>()) {
            Some(Ok(n)) if n < 3 => n,
            _ => {
                return Err((
                    l.no,
                    format!("'{action}': HAProxy has track-sc0, track-sc1 and track-sc2"),
                ));
            }
        };
        let key = arg(l, 2, "a sample to track, as src")?;
        let sample = parse_sample(key).map_err(|m| (l.no, m))?;
        let table = match (l.words.get(3).map(String::as_str), l.words.get(4)) {
            (Some("table"), Some(name)) => {
                let p = (self.cfg.proxies.iter())
                    .find(|p| p.name == *name && p.table.is_some())
                    .ok_or_else(|| (l.no, format!("no stick-table named '{name}' (a table is named after the proxy that declares it)")))?;
                p.table.expect("found with a table")
            }
            _ => self.cfg.proxies[self.me].table.ok_or_else(|| {
                (
                    l.no,
                    format!("{action} without 'table NAME' needs a stick-table in this proxy"),
                )
            })?,
        };
        Ok(Action::Track {
            slot,
            sample,
            table,
        })
    }
}
