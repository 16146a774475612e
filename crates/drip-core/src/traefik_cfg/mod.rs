//! A Traefik v3 dynamic configuration read as Traefik reads it: the file
//! provider's YAML or TOML (`http.routers`, `http.middlewares`), or the
//! Kubernetes CRDs (`Middleware`, `IngressRoute`, one YAML stream of
//! documents). Each router keeps the `rateLimit` middlewares of its chain,
//! in order (a `chain` middleware opened in place); other middlewares pass
//! every request. Field names are matched without regard to case, as
//! Traefik's decoder does.
//!
//! Each router builds its own middleware instances, so a `rateLimit` used
//! by two routers keeps two sets of buckets. Routers are found by the
//! `RouterName` of Traefik's access log: `NAME@file` for the file
//! provider, `NS-NAME-HASH@kubernetescrd` for an `IngressRoute`'s route,
//! `HASH` being the first 10 bytes of the SHA-256 of its `match`, in hex
//! (`pkg/provider/kubernetes/crd/kubernetes.go`).

mod crd;
pub mod limit;
mod sha256;
#[cfg(test)]
mod tests;

use crate::tree::Node;
pub use limit::{Limit, Source};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A router and the limits its requests pass, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Router {
    /// As the access log names it: `api@file`.
    pub name: String,
    pub line: u32,
    /// Indexes into [`TraefikCfg::limits`], in the chain's order.
    pub limits: Vec<usize>,
}

/// One Traefik dynamic configuration.
#[derive(Clone, Debug)]
pub struct TraefikCfg {
    pub path: PathBuf,
    pub routers: Vec<Router>,
    pub limits: Vec<Limit>,
    /// What the replay models differently from Traefik, or cannot see.
    pub notes: Vec<String>,
    by_name: HashMap<String, usize>,
}

/// A middleware as declared: what it does and where.
pub(crate) enum Middleware {
    Limit(Limit),
    /// `chain`: the qualified names of its middlewares.
    Chain(Vec<String>),
    /// Another kind (`stripPrefix`, `ipAllowList`, …).
    Other(String),
}

/// A router as declared.
pub(crate) struct DeclaredRouter {
    pub(crate) name: String,
    pub(crate) line: u32,
    /// Its middlewares' names, with the lines that name them.
    pub(crate) middlewares: Vec<(String, u32)>,
}

/// Routers and middlewares as one provider declares them, names
/// qualified.
pub(crate) struct Declared {
    /// `file` or `kubernetescrd`.
    pub(crate) provider: &'static str,
    pub(crate) routers: Vec<DeclaredRouter>,
    pub(crate) middlewares: HashMap<String, Middleware>,
}

impl Declared {
    pub(crate) fn new(provider: &'static str) -> Declared {
        Declared {
            provider,
            routers: Vec::new(),
            middlewares: HashMap::new(),
        }
    }
}

/// `name` with the provider's suffix unless it has one.
pub(crate) fn qualified(name: &str, provider: &str) -> String {
    match name.contains('@') {
        true => name.to_string(),
        false => format!("{name}@{provider}"),
    }
}

impl TraefikCfg {
    /// Reads `path` (TOML when it ends in `.toml`, else YAML).
    pub fn load(path: &Path) -> anyhow::Result<TraefikCfg> {
        let docs = crate::tree::load(path)?;
        let at = |line: u32, m: String| anyhow::anyhow!("{}:{line}: {m}", path.display());
        let kube = docs
            .iter()
            .any(|d| d.get("kind").is_some() && d.get("apiVersion").is_some());
        let declared = match kube {
            true => crd::read(&docs),
            false => file_provider(&docs),
        }
        .map_err(|(l, m)| at(l, m))?;
        TraefikCfg::resolve(path, declared).map_err(|(l, m)| at(l, m))
    }

    /// The router the access log names `name`.
    pub fn router(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    fn resolve(path: &Path, d: Declared) -> Result<TraefikCfg, (u32, String)> {
        let mut cfg = TraefikCfg {
            path: path.to_path_buf(),
            routers: Vec::new(),
            limits: Vec::new(),
            notes: Vec::new(),
            by_name: HashMap::new(),
        };
        let mut limit_ids: HashMap<String, usize> = HashMap::new();
        let mut others: Vec<String> = Vec::new();
        let mut foreign: Vec<String> = Vec::new();
        for router in &d.routers {
            let mut limits = Vec::new();
            for (m, l) in &router.middlewares {
                open(&d, m, *l, &mut Vec::new(), &mut |found| match found {
                    Found::Limit(lim) => {
                        let next = cfg.limits.len();
                        let id = *limit_ids.entry(lim.name.clone()).or_insert(next);
                        if id == next {
                            cfg.limits.push(lim.clone());
                        }
                        limits.push(id);
                    }
                    Found::Other(kind) => others.push(kind.to_string()),
                    Found::Foreign(n) => foreign.push(n.to_string()),
                })?;
            }
            cfg.by_name.insert(router.name.clone(), cfg.routers.len());
            cfg.routers.push(Router {
                name: router.name.clone(),
                line: router.line,
                limits,
            });
        }
        cfg.note(&mut others, &mut foreign);
        Ok(cfg)
    }

    fn note(&mut self, others: &mut Vec<String>, foreign: &mut Vec<String>) {
        others.sort();
        others.dedup();
        if !others.is_empty() {
            self.notes.push(format!(
                "middlewares of other kinds ({}) pass every request here: what they answer themselves is not modelled",
                others.join(", ")
            ));
        }
        foreign.sort();
        foreign.dedup();
        if !foreign.is_empty() {
            self.notes.push(format!(
                "middlewares of other providers ({}) are not in this file: they pass every request here",
                foreign.join(", ")
            ));
        }
        for l in &self.limits {
            if l.policy.is_none() {
                self.notes.push(format!(
                    "{} has average 0: Traefik limits nothing with it (line {})",
                    l.name, l.line
                ));
            }
            if l.redis {
                self.notes.push(format!(
                    "{} keeps its buckets in Redis, shared by every Traefik instance: drip replays the in-memory bucket, which a single instance would apply (line {})",
                    l.name, l.line
                ));
            }
        }
    }
}

enum Found<'a> {
    Limit(&'a Limit),
    Other(&'a str),
    Foreign(&'a str),
}

/// Calls `see` for each middleware `name` stands for, chains opened. A
/// name of `d`'s own provider that it lacks is an error; one of another
/// provider is foreign.
fn open<'a>(
    d: &'a Declared,
    name: &'a str,
    line: u32,
    path: &mut Vec<&'a str>,
    see: &mut dyn FnMut(Found<'a>),
) -> Result<(), (u32, String)> {
    let Some(m) = d.middlewares.get(name) else {
        if name.rsplit('@').next() == Some(d.provider) {
            return Err((
                line,
                format!(
                    "middleware '{name}' does not exist: Traefik drops a router that uses it; define it or remove it"
                ),
            ));
        }
        see(Found::Foreign(name));
        return Ok(());
    };
    if path.contains(&name) {
        return Err((
            line,
            format!("middleware '{name}' is a chain that contains itself"),
        ));
    }
    match m {
        Middleware::Limit(l) => see(Found::Limit(l)),
        Middleware::Other(kind) => see(Found::Other(kind)),
        Middleware::Chain(names) => {
            path.push(name);
            for n in names {
                open(d, n, line, path, see)?;
            }
            path.pop();
        }
    }
    Ok(())
}

/// The kinds of middleware a declaration's node holds: `Err` for none or
/// several, as Traefik refuses them.
pub(crate) fn middleware(
    name: &str,
    node: &Node,
    provider: &str,
    chain: impl Fn(&Node) -> Vec<String>,
) -> Result<Middleware, (u32, String)> {
    let kinds: Vec<&(String, Node)> = node.entries().iter().collect();
    if kinds.len() != 1 {
        return Err((
            node.line,
            format!(
                "middleware '{name}' must have exactly one kind (rateLimit, chain, …), it has {}",
                kinds.len()
            ),
        ));
    }
    let (kind, body) = kinds[0];
    Ok(if kind.eq_ignore_ascii_case("rateLimit") {
        Middleware::Limit(limit::read(name, body)?)
    } else if kind.eq_ignore_ascii_case("chain") {
        let list = chain(body);
        Middleware::Chain(list.iter().map(|n| qualified(n, provider)).collect())
    } else {
        Middleware::Other(kind.clone())
    })
}

/// The file provider: `http.routers` and `http.middlewares` of every
/// document.
fn file_provider(docs: &[Node]) -> Result<Declared, (u32, String)> {
    let mut d = Declared::new("file");
    for doc in docs {
        let Some(http) = doc.get_ci("http") else {
            continue;
        };
        for (name, m) in http.get_ci("middlewares").map_or(&[][..], Node::entries) {
            let q = qualified(name, "file");
            let chain = |b: &Node| {
                (b.items_ci("middlewares").iter())
                    .filter_map(|n| n.str().map(str::to_string))
                    .collect()
            };
            let mw = middleware(&q, m, "file", chain)?;
            d.middlewares.insert(q, mw);
        }
        for (name, r) in http.get_ci("routers").map_or(&[][..], Node::entries) {
            let names = r.items_ci("middlewares");
            d.routers.push(DeclaredRouter {
                name: qualified(name, "file"),
                line: r.line,
                middlewares: (names.iter())
                    .filter_map(|n| Some((qualified(n.str()?, "file"), n.line)))
                    .collect(),
            });
        }
    }
    if d.routers.is_empty() && d.middlewares.is_empty() {
        return Err((1, "no http.routers or http.middlewares: not a Traefik dynamic configuration (give the file provider's YAML or TOML, or the Middleware and IngressRoute resources)".into()));
    }
    Ok(d)
}
