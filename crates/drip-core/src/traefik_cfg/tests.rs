use super::crd::router_name;
use super::limit::go_duration;
use super::*;

fn load(name: &str, text: &str) -> anyhow::Result<TraefikCfg> {
    let dir = std::env::temp_dir().join(format!("drip-traefik-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let p = dir.join(name);
    std::fs::write(&p, text)?;
    TraefikCfg::load(&p)
}

#[test]
fn a_crd_route_is_named_as_traefik_names_it() {
    // pkg/provider/kubernetes/crd/kubernetes_test.go, fixture simple.yml.
    assert_eq!(
        router_name(
            "default",
            "test.route",
            "Host(`foo.com`) && PathPrefix(`/bar`)"
        ),
        "default-test-route-6b204d94623b3df4370c@kubernetescrd"
    );
}

#[test]
fn go_durations() {
    assert_eq!(go_duration("1m"), Some(60_000_000_000));
    assert_eq!(go_duration("1h30m"), Some(5_400_000_000_000));
    assert_eq!(go_duration("1.5s"), Some(1_500_000_000));
    assert_eq!(go_duration("300ms"), Some(300_000_000));
    assert_eq!(go_duration("0"), Some(0));
    assert_eq!(go_duration("-2s"), Some(-2_000_000_000));
    assert_eq!(go_duration("5"), None);
    assert_eq!(go_duration("1d"), None);
    assert_eq!(go_duration("1.5.5s"), None);
}

#[test]
fn file_provider_yaml_chains_and_defaults() {
    let cfg = load(
        "dyn.yml",
        r#"
http:
  routers:
    api:
      rule: "PathPrefix(`/api`)"
      middlewares: [both, strip]
      service: app
    web:
      rule: "PathPrefix(`/`)"
      middlewares: ["per-ip@file"]
      service: app
  middlewares:
    strip:
      stripPrefix: {prefixes: [/api]}
    per-ip:
      rateLimit: {average: 100, period: 1m, burst: 20}
    per-key:
      RateLimit:
        average: 5
        sourceCriterion: {requestHeaderName: X-Api-Key}
    both:
      chain: {middlewares: [per-ip, per-key]}
"#,
    )
    .unwrap();
    let api = &cfg.routers[cfg.router("api@file").unwrap()];
    let names: Vec<_> = api
        .limits
        .iter()
        .map(|&i| cfg.limits[i].name.as_str())
        .collect();
    assert_eq!(names, ["per-ip@file", "per-key@file"]);
    let web = &cfg.routers[cfg.router("web@file").unwrap()];
    assert_eq!(web.limits, vec![api.limits[0]]);
    let key = &cfg.limits[api.limits[1]];
    assert_eq!((key.average, key.period, key.burst), (5, 1_000_000_000, 1));
    assert_eq!(key.source, Source::Header("X-Api-Key".into()));
    assert!(cfg.notes[0].contains("stripPrefix"), "{:?}", cfg.notes);
}

#[test]
fn file_provider_toml() {
    let cfg = load(
        "dyn.toml",
        "[http.routers.api]\n  rule = \"Host(`a`)\"\n  middlewares = [\"lim\"]\n  service = \"s\"\n\n[http.middlewares.lim.rateLimit]\n  average = 10\n  period = 2\n  burst = 0\n  [http.middlewares.lim.rateLimit.sourceCriterion.ipStrategy]\n    depth = 2\n",
    )
    .unwrap();
    let l = &cfg.limits[0];
    assert_eq!((l.average, l.period, l.burst), (10, 2_000_000_000, 1));
    assert_eq!(l.source, Source::Depth { depth: 2, v6: None });
    assert_eq!(l.line, 7);
}

#[test]
fn what_traefik_refuses_names_the_line() {
    let e = load(
        "bad.yml",
        "http:\n  routers:\n    a:\n      rule: Path(`/`)\n      middlewares: [nope]\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.ends_with("bad.yml:5: middleware 'nope@file' does not exist: Traefik drops a router that uses it; define it or remove it"), "{e}");
    let e = load(
        "excl.yml",
        "http:\n  middlewares:\n    l:\n      rateLimit:\n        average: 1\n        sourceCriterion:\n          requestHost: true\n          requestHeaderName: X\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("excl.yml:7: sourceCriterion"), "{e}");
    let e = load(
        "p.yml",
        "http:\n  middlewares:\n    l:\n      rateLimit: {average: 1, period: -1s}\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("p.yml:4: negative value not valid for period"),
        "{e}"
    );
    let e = load("y.yml", "http:\n  routers: [\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("y.yml:") && e.contains("not YAML"), "{e}");
}

#[test]
fn kubernetes_crds() {
    let cfg = load(
        "crd.yml",
        r#"
apiVersion: traefik.io/v1alpha1
kind: Middleware
metadata: {name: api-limit, namespace: shop}
spec:
  rateLimit:
    average: 50
    burst: 10
    sourceCriterion:
      ipStrategy: {excludedIPs: [10.0.0.0/8]}
---
apiVersion: traefik.io/v1alpha1
kind: IngressRoute
metadata: {name: shop, namespace: shop}
spec:
  routes:
  - match: PathPrefix(`/api`)
    kind: Rule
    middlewares: [{name: api-limit}]
  - match: PathPrefix(`/`)
    kind: Rule
"#,
    )
    .unwrap();
    assert_eq!(cfg.routers.len(), 2);
    let r = &cfg.routers[0];
    assert_eq!(r.name, router_name("shop", "shop", "PathPrefix(`/api`)"));
    assert_eq!(cfg.limits[r.limits[0]].name, "shop-api-limit@kubernetescrd");
    assert!(cfg.routers[1].limits.is_empty());
    let Source::Excluded(nets) = &cfg.limits[0].source else {
        panic!()
    };
    assert!(nets[0].contains("10.1.2.3".parse().unwrap()));
    assert!(!nets[0].contains("11.1.2.3".parse().unwrap()));
}

#[test]
fn a_middleware_of_another_provider_is_a_note_not_an_error() {
    let cfg = load(
        "other.yml",
        "http:\n  routers:\n    a:\n      rule: Path(`/`)\n      middlewares: [auth@docker, lim@kubernetescrd]\n",
    )
    .unwrap();
    assert!(cfg.routers[0].limits.is_empty());
    let note = cfg
        .notes
        .iter()
        .find(|n| n.contains("other providers"))
        .unwrap();
    assert!(note.contains("auth@docker, lim@kubernetescrd"), "{note}");
}
