//! `audit --traefik-config` on the shipped fixture (a file-provider config
//! and a JSON access log whose statuses an independent model of Traefik's
//! limiter wrote, `fixtures/traefik/gen.py`) and on configs written here:
//! TOML, the Kubernetes CRDs, the text log, messages and exit statuses.

use crate::common::{Drip, Scratch, s};

const CFG: &str = "fixtures/traefik/dynamic.yml";
const LOG: &str = "fixtures/traefik/access.log";

fn section(out: &crate::common::Out) -> serde_json::Value {
    out.stdout_json()["policies"][0]["traefik"].clone()
}

fn router(t: &serde_json::Value, name: &str) -> [u64; 5] {
    let l = (t["locations"].as_array().unwrap().iter())
        .find(|l| l["location"] == name)
        .unwrap_or_else(|| panic!("{name}: {t}"));
    ["requests", "passed", "delayed", "rejected", "unlimited"].map(|k| l[k].as_u64().unwrap())
}

#[test]
fn the_fixture_is_decided_as_its_log_says() {
    let out = Drip::audit()
        .args([
            LOG,
            "--traefik-config",
            CFG,
            "--verify-column",
            "DownstreamStatus",
        ])
        .args(["-q", "-f", "json", "--fail-untested"])
        .run();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let t = section(&out);
    let v = &t["verify"];
    assert_eq!(
        (v["rows"].as_u64(), v["agreed"].as_u64()),
        (Some(409), Some(409))
    );
    // The API's chain: per client address, then per key (the bursty client
    // shares the steady one's key); the site per client; health unlimited.
    assert_eq!(router(&t, "api@file"), [244, 68, 59, 117, 0]);
    assert_eq!(router(&t, "web@file"), [135, 80, 17, 38, 0]);
    assert_eq!(router(&t, "health@file"), [30, 0, 0, 0, 30]);
    let p = &out.stdout_json()["policies"][0];
    assert_eq!(p["dropped"], 155);
    assert_eq!(p["delayed"], 76);
    assert_eq!(p["top_keys"][0]["key"], "198.51.100.7");
}

#[test]
fn the_section_is_shown_for_people() {
    let out = Drip::audit()
        .args([LOG, "--traefik-config", CFG, "-q"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("dynamic.yml: routers of fixtures/traefik/dynamic.yml"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("per-key@file: average 120 per 1m, burst 10, by header X-Api-Key"),
        "{}",
        out.stdout
    );
}

#[test]
fn toml_and_crds_say_the_same_as_yaml() {
    let tmp = Scratch::new();
    let toml = tmp.write(
        "dynamic.toml",
        r#"
[http.routers.api]
  rule = "PathPrefix(`/api`)"
  middlewares = ["api-limits"]
  service = "app"
[http.routers.web]
  rule = "PathPrefix(`/`)"
  middlewares = ["web-limit"]
  service = "app"
[http.routers.health]
  rule = "Path(`/health`)"
  service = "app"
[http.middlewares.api-limits.chain]
  middlewares = ["per-client", "per-key"]
[http.middlewares.per-client.rateLimit]
  average = 10
  burst = 5
[http.middlewares.per-key.rateLimit]
  average = 120
  period = "1m"
  burst = 10
  [http.middlewares.per-key.rateLimit.sourceCriterion]
    requestHeaderName = "X-Api-Key"
[http.middlewares.web-limit.rateLimit]
  average = 2
  burst = 4
"#,
    );
    let run = |cfg: &str| {
        let out = Drip::audit()
            .args([
                LOG,
                "--traefik-config",
                cfg,
                "--verify-column",
                "DownstreamStatus",
                "-q",
                "-f",
                "json",
            ])
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        let mut t = section(&out);
        t["config"] = "".into();
        t
    };
    assert_eq!(run(s(&toml)), run(CFG));
}

#[test]
fn kubernetes_resources_route_by_the_names_traefik_gives() {
    let tmp = Scratch::new();
    let cfg = tmp.write(
        "crd.yaml",
        r#"
apiVersion: traefik.io/v1alpha1
kind: Middleware
metadata: {name: per-client, namespace: shop}
spec:
  rateLimit: {average: 1, burst: 2}
---
apiVersion: traefik.io/v1alpha1
kind: IngressRoute
metadata: {name: test.route, namespace: default}
spec:
  routes:
  - match: Host(`foo.com`) && PathPrefix(`/bar`)
    kind: Rule
    middlewares: [{name: per-client, namespace: shop}]
"#,
    );
    // The router name Traefik's own test expects for this route.
    let name = "default-test-route-6b204d94623b3df4370c@kubernetescrd";
    let mut log = String::new();
    for ms in [0, 10, 20, 30, 1500] {
        log.push_str(&format!(
            "{{\"StartUTC\":\"2026-12-08T00:00:0{}.{:03}Z\",\"ClientHost\":\"192.0.2.1\",\"RouterName\":\"{name}\",\"DownstreamStatus\":200}}\n",
            ms / 1000,
            ms % 1000
        ));
    }
    let log = tmp.write("access.log", &log);
    let out = Drip::audit()
        .args([s(&log), "--traefik-config", s(&cfg), "-q", "-f", "json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Two at once from the burst, the third waits up to 500 ms (rate < 2/s)
    // and is refused past it, the 1.5 s one finds a token again.
    assert_eq!(router(&section(&out), name), [5, 3, 0, 2, 0]);
}

#[test]
fn traefiks_text_log_works_for_address_limits() {
    let tmp = Scratch::new();
    let mut log = String::new();
    for sec in 0..4 {
        for _ in 0..3 {
            log.push_str(&format!(
                "192.0.2.1 - - [08/Dec/2026:00:00:0{sec} +0000] \"GET /api/x HTTP/1.1\" 200 5 \"-\" \"curl\" 1 \"api@file\" \"http://127.0.0.1:8080\" 2ms\n"
            ));
        }
    }
    let log = tmp.write("access.log", &log);
    let cfg = tmp.write(
        "d.yml",
        "http:\n  routers:\n    api: {rule: 'PathPrefix(`/api`)', middlewares: [l]}\n  middlewares:\n    l: {rateLimit: {average: 1, burst: 2}}\n",
    );
    let out = Drip::audit()
        .args([s(&log), "--traefik-config", s(&cfg), "-q", "-f", "json"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Whole seconds: 2 then 1 a second.
    assert_eq!(router(&section(&out), "api@file"), [12, 5, 0, 7, 0]);
}

#[test]
fn what_traefik_would_refuse_is_one_line_with_its_place() {
    let tmp = Scratch::new();
    let cfg = tmp.write(
        "bad.yml",
        "http:\n  routers:\n    a:\n      rule: Path(`/`)\n      middlewares: [nope]\n",
    );
    let out = Drip::audit().args([LOG, "--traefik-config", s(&cfg)]).run();
    assert_eq!(out.code, 2);
    let line = format!(
        "drip: {}:5: middleware 'nope@file' does not exist: Traefik drops a router that uses it; define it or remove it\n",
        s(&cfg)
    );
    assert_eq!(out.stderr, line);
    let cfg = tmp.write("broken.yml", "http:\n  routers: [\n");
    let out = Drip::audit().args([LOG, "--traefik-config", s(&cfg)]).run();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("broken.yml:") && out.stderr.contains("not YAML"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

#[test]
fn a_field_the_log_lacks_says_what_to_log() {
    let tmp = Scratch::new();
    let cfg = tmp.write(
        "d.yml",
        "http:\n  routers:\n    api: {rule: 'PathPrefix(`/`)', middlewares: [l]}\n  middlewares:\n    l: {rateLimit: {average: 1, sourceCriterion: {requestHeaderName: x-user}}}\n",
    );
    let log = tmp.write(
        "a.log",
        "{\"StartUTC\":\"2026-12-08T00:00:00Z\",\"ClientHost\":\"192.0.2.1\",\"RouterName\":\"api@file\",\"DownstreamStatus\":200}\n",
    );
    // JSON lines name their fields row by row: a field no row has is
    // said after the replay.
    let out = Drip::audit()
        .args([s(&log), "--traefik-config", s(&cfg), "-q"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let said = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains("no row has a value in 'request_X-User', which l@file groups requests by")
            && said.contains("(accessLog.fields.headers.names.X-User: keep)"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_router_name_from_the_log_is_shown_escaped() {
    let tmp = Scratch::new();
    let log = tmp.write(
        "a.log",
        "{\"StartUTC\":\"2026-12-08T00:00:00Z\",\"ClientHost\":\"192.0.2.1\",\"RouterName\":\"evil\\u001b[31m@file\",\"DownstreamStatus\":200}\n",
    );
    let out = Drip::audit()
        .args([s(&log), "--traefik-config", CFG, "-q"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains('\u{1b}'), "{:?}", out.stdout);
    assert!(out.stdout.contains("router 'evil"), "{}", out.stdout);
}
