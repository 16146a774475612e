//! haproxy.cfg → what HAProxy's stick-table rate limits do with each
//! request.
//!
//! [`HaproxyCfg::load`] reads one config file and keeps what decides a
//! request's fate: per `frontend`, `backend` and `listen`, its
//! `stick-table` (key type, `size`, `expire`, the `http_req_rate(P)` it
//! stores), its `http-request` rules in order (`track-sc0|1|2 SAMPLE
//! [table NAME]`, `deny`, `tarpit`, `reject`, the answering `return`,
//! `redirect` and `use-service`, `allow`), the `tcp-request` tracking that
//! runs before them, its ACLs and `use_backend`/`default_backend`, and the
//! request headers it captures into the log (`capture request header`),
//! which are how a log shows `req.hdr(NAME)`. Directives that cannot
//! change a decision are passed over; the others leave a note saying what
//! is not modelled, or, when drip cannot follow them, an error naming the
//! line.

pub mod acl;
pub mod lex;
mod proxy;
#[cfg(test)]
mod tests;

pub use crate::nginx_conf::ConfError;
use acl::{Cond, Sample};
use std::path::{Path, PathBuf};

/// Which requests a proxy sees: a frontend's from its clients, a
/// backend's from the frontends that switch to it; a `listen` is both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Frontend,
    Backend,
    Listen,
}

impl Side {
    pub fn word(self) -> &'static str {
        match self {
            Side::Frontend => "frontend",
            Side::Backend => "backend",
            Side::Listen => "listen",
        }
    }

    fn fronts(self) -> bool {
        self != Side::Backend
    }

    fn backs(self) -> bool {
        self != Side::Frontend
    }
}

/// A stick-table's key type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    Ip,
    Ipv6,
    Integer,
    /// `string` and `binary`, keys cut at `len` bytes.
    String(usize),
}

/// `stick-table type T [len N] size S [expire E] [store …]`.
#[derive(Clone, Debug)]
pub struct Table {
    /// The proxy that declares it (its name is the table's).
    pub proxy: String,
    pub key: KeyType,
    pub size: u64,
    /// `expire`, in ms (`None`: entries stay until evicted).
    pub expire_ms: Option<u64>,
    /// The period of the `http_req_rate(P)` it stores, in ms.
    pub rate_ms: Option<u64>,
    pub line: usize,
}

/// What an `http-request` (or tracking `tcp-request`) rule does.
#[derive(Clone, Debug)]
pub enum Action {
    /// `track-scN SAMPLE [table NAME]`: the entry of the sample's value in
    /// the table, counted as one more request.
    Track {
        slot: u8,
        sample: Sample,
        table: usize,
    },
    /// `deny` and `reject` (status 0: the connection is closed).
    Deny {
        status: u16,
    },
    Tarpit {
        status: u16,
    },
    /// `return`, `redirect`, `use-service`: answered by HAProxy itself.
    Answer {
        status: u16,
    },
    /// `allow`: no further `http-request` rule of this proxy.
    Allow,
}

/// One rule, its condition and where it is written.
#[derive(Clone, Debug)]
pub struct Rule {
    pub line: usize,
    /// The rule as written, after `http-request` (or `tcp-request …`).
    pub text: String,
    pub cond: Option<Cond>,
    pub action: Action,
}

impl Rule {
    /// True when the rule applies to `r`.
    pub fn applies(&self, r: &dyn acl::Request) -> bool {
        self.cond.as_ref().is_none_or(|c| c.holds(r))
    }

    /// The rule as a sizable rate limit: a `deny` or `tarpit` `if` one
    /// set of terms (no `||`), one of which is `sc_http_req_rate(N) gt|ge
    /// LIMIT` alone, not negated (the others: what else must hold).
    fn rate_limit(&self) -> Option<(usize, u8, acl::Cmp, u64)> {
        if !matches!(self.action, Action::Deny { .. } | Action::Tarpit { .. }) {
            return None;
        }
        let cond = self
            .cond
            .as_ref()
            .filter(|c| !c.unless && c.any.len() == 1)?;
        let mut found = None;
        for (i, t) in cond.any[0].iter().enumerate() {
            let rate = match t.acl.0.as_slice() {
                [acl::Test::Rate { slot, cmp, value }] => Some((*slot, *cmp, *value)),
                tests if tests.iter().any(|t| matches!(t, acl::Test::Rate { .. })) => return None,
                _ => None,
            };
            match (rate, found) {
                (Some((slot, cmp @ (acl::Cmp::Gt | acl::Cmp::Ge), value)), None) if !t.negate => {
                    found = Some((i, slot, cmp, value));
                }
                (Some(_), _) => return None,
                _ => {}
            }
        }
        found
    }

    /// True when every term of the rule's condition but `skip` matches.
    pub fn others_hold(&self, skip: usize, r: &dyn acl::Request) -> bool {
        let Some(c) = &self.cond else { return true };
        (c.any[0].iter().enumerate())
            .filter(|(i, _)| *i != skip)
            .all(|(_, t)| t.matches(r) != t.negate)
    }
}

/// A rule that refuses above a request rate: what `size --haproxy-cfg`
/// sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateLimit {
    pub proxy: usize,
    /// The rule's index in the proxy's rules.
    pub rule: usize,
    pub line: usize,
    /// The term of the condition that compares the rate.
    pub term: usize,
    pub slot: u8,
    /// `gt` (refused above `value`) or `ge` (at `value` and above).
    pub cmp: acl::Cmp,
    pub value: u64,
}

impl HaproxyCfg {
    /// The config with rate limit `l` refusing above `value` instead.
    pub fn with_limit(&self, l: &RateLimit, value: u64) -> HaproxyCfg {
        let mut cfg = self.clone();
        let rule = &mut cfg.proxies[l.proxy].rules[l.rule];
        if let Some(c) = &mut rule.cond {
            let term = &mut c.any[0][l.term];
            term.acl = std::sync::Arc::new(acl::Acl(vec![acl::Test::Rate {
                slot: l.slot,
                cmp: l.cmp,
                value,
            }]));
        }
        cfg
    }

    /// Every rule that refuses above a request rate, in the order a
    /// request meets them: frontends' (and listens') rules before
    /// backends', each proxy's in order.
    pub fn in_flow_order(&self) -> Vec<RateLimit> {
        let mut all = self.rate_limits();
        all.sort_by_key(|l| (self.proxies[l.proxy].side == Side::Backend, l.proxy, l.rule));
        all
    }

    /// Every rule that refuses above a request rate, in config order.
    pub fn rate_limits(&self) -> Vec<RateLimit> {
        let mut out = Vec::new();
        for (p, proxy) in self.proxies.iter().enumerate() {
            for (i, r) in proxy.rules.iter().enumerate() {
                if let Some((term, slot, cmp, value)) = r.rate_limit() {
                    out.push(RateLimit {
                        proxy: p,
                        rule: i,
                        line: r.line,
                        term,
                        slot,
                        cmp,
                        value,
                    });
                }
            }
        }
        out
    }
}

/// A `frontend`, `backend` or `listen` section.
#[derive(Clone, Debug)]
pub struct Proxy {
    pub name: String,
    pub side: Side,
    pub line: usize,
    /// Its rules, in the order HAProxy runs them (the `tcp-request`
    /// tracking first).
    pub rules: Vec<Rule>,
    /// `use_backend NAME [if|unless COND]`: (proxy index, condition, line).
    pub switching: Vec<(usize, Option<Cond>, usize)>,
    pub default_backend: Option<usize>,
    /// Its `stick-table` (index into [`HaproxyCfg::tables`]).
    pub table: Option<usize>,
    /// `capture request header NAME len N`, in order: (lower-case name, len).
    pub captures: Vec<(String, usize)>,
}

impl Proxy {
    /// The backend a request that passed this frontend goes to.
    pub fn backend(&self, me: usize, r: &dyn acl::Request) -> Option<usize> {
        for (b, cond, _) in &self.switching {
            if cond.as_ref().is_none_or(|c| c.holds(r)) {
                return Some(*b);
            }
        }
        self.default_backend
            .or((self.side == Side::Listen).then_some(me))
    }

    /// `frontend fe`.
    pub fn title(&self) -> String {
        format!("{} {}", self.side.word(), self.name)
    }
}

/// One haproxy.cfg.
#[derive(Clone, Debug)]
pub struct HaproxyCfg {
    pub path: PathBuf,
    pub proxies: Vec<Proxy>,
    pub tables: Vec<Table>,
    /// What drip does not model, said once.
    pub notes: Vec<String>,
}

impl HaproxyCfg {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<HaproxyCfg, ConfError> {
        let err = |line, msg: String| ConfError {
            file: path.to_path_buf(),
            line,
            msg,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| err(0, format!("cannot read the config: {e}")))?;
        let mut cfg = Self::parse(&text).map_err(|(line, msg)| err(line, msg))?;
        cfg.path = path.to_path_buf();
        Ok(cfg)
    }

    /// A config from its text (errors: line, message).
    pub fn parse(text: &str) -> Result<HaproxyCfg, (usize, String)> {
        let lines = lex::lines(text)?;
        let mut cfg = proxy::build(&lines)?;
        cfg.check_captures()?;
        cfg.note_short_captures();
        Ok(cfg)
    }

    /// The proxy named `name` on `side` (a `listen` is either).
    pub fn find(&self, name: &str, frontend: bool) -> Option<usize> {
        self.proxies.iter().position(|p| {
            p.name == name
                && match frontend {
                    true => p.side.fronts(),
                    false => p.side.backs(),
                }
        })
    }

    /// The frontends (and listens), in order.
    pub fn frontends(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.proxies.len()).filter(|&i| self.proxies[i].side.fronts())
    }

    /// The proxies a request entering frontend `f` may pass through.
    pub fn reachable(&self, f: usize) -> Vec<usize> {
        let p = &self.proxies[f];
        let mut out = vec![f];
        for b in p.switching.iter().map(|s| s.0).chain(p.default_backend) {
            if !out.contains(&b) {
                out.push(b);
            }
        }
        out
    }

    /// Every header a rule reads through a frontend must be one it
    /// captures: the log holds no other.
    fn check_captures(&self) -> Result<(), (usize, String)> {
        for f in self.frontends() {
            let fe = &self.proxies[f];
            for p in self.reachable(f) {
                for (line, name) in self.proxies[p].headers() {
                    if fe.captures.iter().any(|(c, _)| *c == name) {
                        continue;
                    }
                    return Err((
                        line,
                        format!(
                            "this rule reads the request header '{name}', which {} does not capture into its log: add 'capture request header {name} len 128' to {} (line {}) so drip can see it",
                            fe.title(),
                            fe.title(),
                            fe.line
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl HaproxyCfg {
    /// A header tracked into a string table with a longer key than the
    /// frontend logs of it: keys differing past the logged bytes are one
    /// key to drip.
    fn note_short_captures(&mut self) {
        let mut notes = Vec::new();
        for f in self.frontends() {
            let fe = &self.proxies[f];
            for p in self.reachable(f) {
                for r in &self.proxies[p].rules {
                    let Action::Track { sample, table, .. } = &r.action else {
                        continue;
                    };
                    let (Some(h), KeyType::String(len)) =
                        (sample.fetch.header(), self.tables[*table].key)
                    else {
                        continue;
                    };
                    if let Some((_, cap)) = fe.captures.iter().find(|(c, _)| c == h)
                        && *cap < len
                    {
                        notes.push(format!(
                            "{} captures '{h}' up to {cap} bytes and line {} keys a table by its first {len}: values that differ only after byte {cap} are one key to drip (capture len {len} to see them all)",
                            fe.title(),
                            r.line
                        ));
                    }
                }
            }
        }
        self.notes.extend(notes);
    }
}

impl Proxy {
    /// (line, header) of each header its rules and switching read.
    fn headers(&self) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        let conds = (self.rules.iter().map(|r| (r.line, r.cond.as_ref())))
            .chain(self.switching.iter().map(|s| (s.2, s.1.as_ref())));
        for (line, cond) in conds {
            for t in cond.into_iter().flat_map(Cond::tests) {
                out.extend(t.header().map(|h| (line, h.to_string())));
            }
        }
        for r in &self.rules {
            if let Action::Track { sample, .. } = &r.action {
                out.extend(sample.fetch.header().map(|h| (r.line, h.to_string())));
            }
        }
        out.sort();
        out
    }
}
