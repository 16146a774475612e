//! Traefik's Kubernetes CRDs: `Middleware` and `IngressRoute` resources
//! (`traefik.io/v1alpha1`, or the older `traefik.containo.us`), named as
//! the CRD provider names them.

use super::{Declared, DeclaredRouter, middleware, qualified, sha256};
use crate::tree::Node;

const PROVIDER: &str = "kubernetescrd";

/// Traefik's `provider.Normalize`: runs of characters other than letters
/// and digits become one `-`, none at either end.
pub(crate) fn normalize(name: &str) -> String {
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The router name of route `rule` of IngressRoute `ns/name`.
pub(crate) fn router_name(ns: &str, name: &str, rule: &str) -> String {
    let key = format!("{name}-{}", sha256::hex_prefix(rule.as_bytes(), 20));
    qualified(&normalize(&format!("{ns}-{key}")), PROVIDER)
}

fn meta(doc: &Node) -> (String, String) {
    let m = doc.get("metadata");
    let get = |k: &str| m.and_then(|m| m.get(k)).and_then(Node::str).unwrap_or("");
    let ns = match get("namespace") {
        "" => "default",
        n => n,
    };
    (ns.to_string(), get("name").to_string())
}

/// A reference `{name, namespace}` from namespace `ns`, qualified.
fn reference(r: &Node, ns: &str) -> Option<String> {
    let name = r.get("name").and_then(Node::str)?;
    if name.contains('@') {
        return Some(name.to_string());
    }
    let rns = r.get("namespace").and_then(Node::str).unwrap_or(ns);
    Some(qualified(&normalize(&format!("{rns}-{name}")), PROVIDER))
}

pub(super) fn read(docs: &[Node]) -> Result<Declared, (u32, String)> {
    let mut d = Declared::new(PROVIDER);
    for doc in docs {
        let kind = doc.get("kind").and_then(Node::str).unwrap_or("");
        let api = doc.get("apiVersion").and_then(Node::str).unwrap_or("");
        if !api.starts_with("traefik.io/") && !api.starts_with("traefik.containo.us/") {
            continue;
        }
        let (ns, name) = meta(doc);
        let Some(spec) = doc.get("spec") else {
            continue;
        };
        match kind {
            "Middleware" => {
                let q = qualified(&normalize(&format!("{ns}-{name}")), PROVIDER);
                let chain = |b: &Node| {
                    (b.items_ci("middlewares").iter())
                        .filter_map(|r| reference(r, &ns))
                        .collect()
                };
                let mw = middleware(&q, spec, PROVIDER, chain)?;
                // References to it are already qualified.
                d.middlewares.insert(q, mw);
            }
            "IngressRoute" => {
                for route in spec.items_ci("routes") {
                    let rule = route.get("match").and_then(Node::str).unwrap_or("");
                    if rule.is_empty() {
                        continue;
                    }
                    d.routers.push(DeclaredRouter {
                        name: router_name(&ns, &name, rule),
                        line: route.line,
                        middlewares: (route.items_ci("middlewares").iter())
                            .filter_map(|r| Some((reference(r, &ns)?, r.line)))
                            .collect(),
                    });
                }
            }
            _ => {}
        }
    }
    if d.routers.is_empty() && d.middlewares.is_empty() {
        return Err((
            1,
            "no Traefik Middleware or IngressRoute resources (apiVersion traefik.io/v1alpha1)"
                .into(),
        ));
    }
    Ok(d)
}
