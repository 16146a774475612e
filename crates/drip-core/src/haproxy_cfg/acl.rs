//! HAProxy's ACLs as far as a log shows a request: samples (`src`,
//! `method`, `path`, `url`, `query`, `base`, `req.hdr(NAME)` from a
//! captured header), match methods (`-m str|beg|end|sub|dir|dom|reg|found`
//! and the `path_beg`-style keywords, `-i`), addresses and networks for
//! `src`, the request rate of a tracked counter (`sc_http_req_rate(N)`,
//! `scN_http_req_rate`) against an integer, and conditions (`if`/`unless`,
//! `!`, `||`/`or`, `{ … }` anonymous ACLs, named ACLs declared before use,
//! several `acl` lines of one name OR-ed).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

/// Where a value of the request comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetch {
    Src,
    Method,
    /// The URI up to `?`.
    Path,
    Url,
    /// The URI after `?`.
    Query,
    /// The `Host` header, then the path.
    Base,
    /// A request header (lower case): `hdr`/`req.hdr` split its value at
    /// commas, `req.fhdr` (`full`) does not.
    Hdr {
        name: String,
        full: bool,
    },
}

impl Fetch {
    /// The header the fetch reads, if it reads one.
    pub fn header(&self) -> Option<&str> {
        match self {
            Fetch::Hdr { name, .. } => Some(name),
            Fetch::Base => Some("host"),
            _ => None,
        }
    }
}

/// A fetch and its converters (`,lower`, `,upper`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub fetch: Fetch,
    /// `Some(true)`: `,lower`; `Some(false)`: `,upper`.
    pub case: Option<bool>,
}

/// What a request shows of itself to an ACL.
pub trait Request {
    /// The values of `f` (a header may have several), empty when absent.
    fn values(&self, f: &Fetch) -> Vec<Vec<u8>>;
    /// `sc_http_req_rate(slot)`: `None` when the counter is not tracked or
    /// its table stores no `http_req_rate`.
    fn rate(&self, slot: u8) -> Option<u64>;
}

impl Sample {
    /// The sample's values for `r`, converted.
    pub fn values(&self, r: &dyn Request) -> Vec<Vec<u8>> {
        let mut v = r.values(&self.fetch);
        match self.case {
            Some(true) => v.iter_mut().for_each(|x| x.make_ascii_lowercase()),
            Some(false) => v.iter_mut().for_each(|x| x.make_ascii_uppercase()),
            None => {}
        }
        v
    }

    /// The one value a stick-table key takes: a header's last.
    pub fn key(&self, r: &dyn Request) -> Option<Vec<u8>> {
        self.values(r).pop()
    }
}

/// How a string sample is matched against the patterns.
#[derive(Clone, Debug)]
pub enum How {
    Str,
    Beg,
    End,
    Sub,
    /// A `/`-delimited part.
    Dir,
    /// A `.`- or `/`-delimited part.
    Dom,
    Reg(Vec<regex::bytes::Regex>),
    Found,
}

/// An integer comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
}

impl Cmp {
    fn holds(self, a: u64, b: u64) -> bool {
        match self {
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Eq => a == b,
        }
    }
}

/// One ACL line's test.
#[derive(Clone, Debug)]
pub enum Test {
    /// `sc_http_req_rate(slot) OP value`.
    Rate {
        slot: u8,
        cmp: Cmp,
        value: u64,
    },
    Match {
        sample: Sample,
        how: How,
        nocase: bool,
        patterns: Vec<Vec<u8>>,
    },
    /// `src` against addresses and networks.
    Net(Vec<(IpAddr, u8)>),
    Const(bool),
}

/// A named ACL: its lines, any of which matching makes it match.
#[derive(Clone, Debug)]
pub struct Acl(pub Vec<Test>);

/// An ACL in a condition, maybe negated.
#[derive(Clone, Debug)]
pub struct Term {
    pub negate: bool,
    pub acl: Arc<Acl>,
}

impl Term {
    /// True when the term's ACL matches `r` (before `!`).
    pub fn matches(&self, r: &dyn Request) -> bool {
        self.acl.matches(r)
    }
}

/// `if|unless` alternatives (`||`) of terms that must all match.
#[derive(Clone, Debug)]
pub struct Cond {
    pub unless: bool,
    pub any: Vec<Vec<Term>>,
}

impl Cond {
    pub fn holds(&self, r: &dyn Request) -> bool {
        let m = self
            .any
            .iter()
            .any(|all| all.iter().all(|t| t.acl.matches(r) != t.negate));
        m != self.unless
    }

    /// Every test of the condition.
    pub fn tests(&self) -> impl Iterator<Item = &Test> {
        self.any.iter().flatten().flat_map(|t| t.acl.0.iter())
    }
}

impl Acl {
    fn matches(&self, r: &dyn Request) -> bool {
        self.0.iter().any(|t| t.matches(r))
    }
}

impl Test {
    fn matches(&self, r: &dyn Request) -> bool {
        match self {
            Test::Rate { slot, cmp, value } => r.rate(*slot).is_some_and(|v| cmp.holds(v, *value)),
            Test::Const(b) => *b,
            Test::Net(nets) => r.values(&Fetch::Src).iter().any(|v| {
                std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse::<IpAddr>().ok())
                    .is_some_and(|ip| nets.iter().any(|&(n, bits)| in_net(ip, n, bits)))
            }),
            Test::Match {
                sample,
                how,
                nocase,
                patterns,
            } => {
                let values = sample.values(r);
                if let How::Found = how {
                    return !values.is_empty();
                }
                values
                    .iter()
                    .any(|v| matches_any(v, how, *nocase, patterns))
            }
        }
    }

    /// The header the test reads, if any.
    pub fn header(&self) -> Option<&str> {
        match self {
            Test::Match { sample, .. } => sample.fetch.header(),
            _ => None,
        }
    }
}

fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let ip = match (ip, net) {
        (IpAddr::V6(v6), IpAddr::V4(_)) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        _ => ip,
    };
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

fn matches_any(v: &[u8], how: &How, nocase: bool, patterns: &[Vec<u8>]) -> bool {
    let eq = |a: &[u8], b: &[u8]| match nocase {
        true => a.eq_ignore_ascii_case(b),
        false => a == b,
    };
    if let How::Reg(res) = how {
        return res.iter().any(|re| re.is_match(v));
    }
    patterns.iter().any(|p| match how {
        How::Str => eq(v, p),
        How::Beg => v.len() >= p.len() && eq(&v[..p.len()], p),
        How::End => v.len() >= p.len() && eq(&v[v.len() - p.len()..], p),
        How::Sub => p.is_empty() || v.windows(p.len()).any(|w| eq(w, p)),
        How::Dir => v.split(|&b| b == b'/').any(|part| eq(part, p)),
        How::Dom => v.split(|&b| b == b'/' || b == b'.').any(|part| eq(part, p)),
        How::Reg(_) | How::Found => false,
    })
}

/// The named ACLs of one proxy, declared so far.
#[derive(Default)]
pub struct Acls(HashMap<String, Acl>);

impl Acls {
    /// `acl NAME CRITERION [FLAGS] [VALUES]`: another line of `NAME`.
    pub fn declare(&mut self, name: &str, words: &[String]) -> Result<(), String> {
        let test = parse_test(words)?;
        self.0
            .entry(name.to_string())
            .or_insert_with(|| Acl(Vec::new()))
            .0
            .push(test);
        Ok(())
    }

    /// The condition after `if`/`unless` (`words[0]`).
    pub fn cond(&self, words: &[String]) -> Result<Cond, String> {
        let unless = match words.first().map(String::as_str) {
            Some("if") => false,
            Some("unless") => true,
            _ => return Err("a condition starts with 'if' or 'unless'".into()),
        };
        let mut any = vec![Vec::new()];
        let mut i = 1;
        while i < words.len() {
            let w = words[i].as_str();
            if w == "||" || w == "or" {
                any.push(Vec::new());
                i += 1;
                continue;
            }
            let (negate, w) = match w.strip_prefix('!') {
                Some("") => {
                    i += 1;
                    match words.get(i) {
                        Some(n) => (true, n.as_str()),
                        None => return Err("a '!' ends the condition".into()),
                    }
                }
                Some(rest) => (true, rest),
                None => (false, w),
            };
            let acl = if w == "{" {
                let end = words[i..]
                    .iter()
                    .position(|x| x == "}")
                    .ok_or("a '{' in the condition is never closed by ' }'")?;
                let test = parse_test(&words[i + 1..i + end])?;
                i += end;
                Acl(vec![test])
            } else {
                self.named(w)?
            };
            any.last_mut().expect("one alternative").push(Term {
                negate,
                acl: Arc::new(acl),
            });
            i += 1;
        }
        if any.iter().any(Vec::is_empty) {
            return Err("an empty condition (or an empty side of '||')".into());
        }
        Ok(Cond { unless, any })
    }

    fn named(&self, w: &str) -> Result<Acl, String> {
        if let Some(a) = self.0.get(w) {
            return Ok(a.clone());
        }
        let method = |m: &str| {
            Acl(vec![Test::Match {
                sample: Sample {
                    fetch: Fetch::Method,
                    case: None,
                },
                how: How::Str,
                nocase: false,
                patterns: vec![m.as_bytes().to_vec()],
            }])
        };
        Ok(match w {
            "TRUE" | "HTTP" => Acl(vec![Test::Const(true)]),
            "FALSE" => Acl(vec![Test::Const(false)]),
            "METH_GET" => Acl(vec![
                method("GET").0[0].clone(),
                method("HEAD").0[0].clone(),
            ]),
            "METH_POST" | "METH_PUT" | "METH_DELETE" | "METH_HEAD" | "METH_OPTIONS"
            | "METH_CONNECT" | "METH_TRACE" => method(&w[5..]),
            _ => {
                return Err(format!(
                    "unknown ACL '{w}': declare it with 'acl {w} …' before this line"
                ));
            }
        })
    }
}

/// A criterion, its flags and values: one ACL line's test.
fn parse_test(words: &[String]) -> Result<Test, String> {
    let Some((criterion, rest)) = words.split_first() else {
        return Err("an ACL needs a criterion".into());
    };
    if let Some(slot) = rate_slot(criterion)? {
        return rate_test(criterion, slot, rest);
    }
    let (fetch_word, suffix) = split_suffix(criterion);
    let mut how = match suffix {
        Some("beg") => Some(How::Beg),
        Some("end") => Some(How::End),
        Some("sub") => Some(How::Sub),
        Some("dir") => Some(How::Dir),
        Some("dom") => Some(How::Dom),
        Some("reg") => Some(How::Reg(Vec::new())),
        _ => None,
    };
    let sample = parse_sample(&fetch_word)?;
    let mut nocase = false;
    let mut i = 0;
    while let Some(flag) = rest.get(i).filter(|w| w.starts_with('-')) {
        match flag.as_str() {
            "-i" => nocase = true,
            "-n" => {}
            "--" => {
                i += 1;
                break;
            }
            "-m" => {
                i += 1;
                how = Some(match rest.get(i).map(String::as_str) {
                    Some("str") => How::Str,
                    Some("beg") => How::Beg,
                    Some("end") => How::End,
                    Some("sub") => How::Sub,
                    Some("dir") => How::Dir,
                    Some("dom") => How::Dom,
                    Some("reg") => How::Reg(Vec::new()),
                    Some("found") => How::Found,
                    Some(m) => return Err(format!("-m {m}: drip models -m str, beg, end, sub, dir, dom, reg and found")),
                    None => return Err("-m needs a match method".into()),
                });
            }
            "-f" => return Err("patterns from a file (-f): drip does not read them; write the patterns on the line".into()),
            f => return Err(format!("ACL flag {f}: drip models -i, -m, -n and --")),
        }
        i += 1;
    }
    let values = &rest[i..];
    if sample.fetch == Fetch::Src && how.is_none() {
        return net_test(values);
    }
    let mut how = how.unwrap_or(How::Str);
    if let How::Reg(res) = &mut how {
        for v in values {
            let re = regex::bytes::RegexBuilder::new(v)
                .case_insensitive(nocase)
                .build()
                .map_err(|_| format!("'{v}' is not a regex drip can evaluate"))?;
            res.push(re);
        }
    }
    if values.is_empty() && !matches!(how, How::Found) {
        return Err(format!("{criterion} needs at least one value to match"));
    }
    Ok(Test::Match {
        sample,
        how,
        nocase,
        patterns: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
    })
}

/// `path_beg` → (`path`, `beg`); `hdr_sub(host)` → (`hdr(host)`, `sub`).
fn split_suffix(criterion: &str) -> (String, Option<&str>) {
    let (name, args) = match criterion.find('(') {
        Some(p) => criterion.split_at(p),
        None => (criterion, ""),
    };
    for s in ["beg", "end", "sub", "dir", "dom", "reg"] {
        if let Some(base) = name.strip_suffix(s).and_then(|b| b.strip_suffix('_')) {
            return (
                format!("{base}{args}"),
                Some(&criterion[base.len() + 1..name.len()]),
            );
        }
    }
    (criterion.to_string(), None)
}

/// A fetch with its converters, as `req.hdr(x-api-key),lower`.
pub fn parse_sample(word: &str) -> Result<Sample, String> {
    let mut parts = split_converters(word);
    let fetch = parse_fetch(&parts.remove(0))?;
    let mut case = None;
    for c in parts {
        case = Some(match c.as_str() {
            "lower" => true,
            "upper" => false,
            _ => return Err(format!("converter ',{c}': drip models ,lower and ,upper")),
        });
    }
    Ok(Sample { fetch, case })
}

/// `a(b,c),lower` → [`a(b,c)`, `lower`].
fn split_converters(word: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut depth = 0;
    for c in word.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        parts.last_mut().expect("one part").push(c);
    }
    parts
}

fn parse_fetch(w: &str) -> Result<Fetch, String> {
    let (name, arg) = match w.split_once('(') {
        Some((n, a)) => match a.strip_suffix(')') {
            Some(a) => (n, Some(a)),
            None => return Err(format!("'{w}': a '(' is never closed")),
        },
        None => (w, None),
    };
    let header = |full| match arg {
        Some(a) if !a.is_empty() && !a.contains(',') => Ok(Fetch::Hdr {
            name: a.to_ascii_lowercase(),
            full,
        }),
        Some(a) if a.contains(',') => Err(format!(
            "'{w}': an occurrence argument; drip reads the header's last value (give the name alone)"
        )),
        _ => Err(format!("'{w}' needs a header name, as {name}(x-api-key)")),
    };
    Ok(match (name, arg) {
        ("src", None | Some("")) => Fetch::Src,
        ("method", None | Some("")) => Fetch::Method,
        ("path", None | Some("")) => Fetch::Path,
        ("url", None | Some("")) => Fetch::Url,
        ("query", None | Some("")) => Fetch::Query,
        ("base", None | Some("")) => Fetch::Base,
        ("hdr" | "req.hdr", _) => header(false)?,
        ("req.fhdr", _) => header(true)?,
        _ => {
            return Err(format!(
                "the sample '{w}' is not in an access log: drip models src, method, path, url, query, base, req.hdr(NAME) and req.fhdr(NAME) (a header the frontend captures)"
            ));
        }
    })
}

/// The counter a rate criterion reads (`sc_http_req_rate(N)`,
/// `scN_http_req_rate[()]`), or `None` for another criterion.
fn rate_slot(c: &str) -> Result<Option<u8>, String> {
    let slot = |s: &str| match s.parse::<u8>() {
        Ok(n) if n < 3 => Ok(n),
        _ => Err(format!("'{c}': HAProxy has stick counters 0, 1 and 2")),
    };
    if let Some(arg) = c
        .strip_prefix("sc_http_req_rate(")
        .and_then(|a| a.strip_suffix(')'))
    {
        if arg.contains(',') {
            return Err(format!(
                "'{c}': a table argument; drip reads the counter's own table (track it with 'table NAME')"
            ));
        }
        return slot(arg).map(Some);
    }
    if let Some(rest) = c.strip_prefix("sc") {
        let rest = rest.strip_suffix("()").unwrap_or(rest);
        if let Some(n) = rest.strip_suffix("_http_req_rate") {
            return slot(n).map(Some);
        }
    }
    if c.starts_with("sc") && (c.contains("_rate") || c.contains("_cnt") || c.contains("gpc")) {
        return Err(format!(
            "'{c}': drip models the request rate sc_http_req_rate(N) of stick counters, not other counters"
        ));
    }
    Ok(None)
}

fn rate_test(c: &str, slot: u8, rest: &[String]) -> Result<Test, String> {
    let words: Vec<&str> = rest.iter().map(String::as_str).collect();
    let (cmp, v) = match words.as_slice() {
        [op, v] => (
            match *op {
                "gt" => Cmp::Gt,
                "ge" => Cmp::Ge,
                "lt" => Cmp::Lt,
                "le" => Cmp::Le,
                "eq" => Cmp::Eq,
                _ => {
                    return Err(format!(
                        "{c} {op}: the operator is one of gt, ge, lt, le, eq"
                    ));
                }
            },
            *v,
        ),
        [v] => (Cmp::Eq, *v),
        _ => {
            return Err(format!(
                "{c} needs an operator and an integer, as {c} gt 10"
            ));
        }
    };
    let value = v
        .parse()
        .map_err(|_| format!("{c}: '{v}' is not an integer"))?;
    Ok(Test::Rate { slot, cmp, value })
}

fn net_test(values: &[String]) -> Result<Test, String> {
    if values.is_empty() {
        return Err("src needs at least one address or network".into());
    }
    let nets = values
        .iter()
        .map(|v| {
            let (a, bits) = match v.split_once('/') {
                Some((a, b)) => (a, Some(b)),
                None => (v.as_str(), None),
            };
            let ip: IpAddr = a
                .parse()
                .map_err(|_| format!("src '{v}': not an address or network"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                None => max,
                Some(b) => b
                    .parse::<u8>()
                    .ok()
                    .filter(|&b| b <= max)
                    .ok_or_else(|| format!("src '{v}': not an address or network"))?,
            };
            Ok((ip, bits))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Test::Net(nets))
}
