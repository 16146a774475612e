use super::acl::{Fetch, Request};
use super::*;

/// A request as a log shows it.
struct Req {
    src: &'static str,
    uri: &'static str,
    headers: Vec<(&'static str, &'static str)>,
    rates: [Option<u64>; 3],
}

impl Request for Req {
    fn values(&self, f: &Fetch) -> Vec<Vec<u8>> {
        let v = match f {
            Fetch::Src => Some(self.src),
            Fetch::Method => Some("GET"),
            Fetch::Path => self.uri.split('?').next(),
            Fetch::Url => Some(self.uri),
            Fetch::Query => self.uri.split_once('?').map(|q| q.1),
            Fetch::Base => None,
            Fetch::Hdr { name, .. } => self.headers.iter().find(|h| h.0 == name).map(|h| h.1),
        };
        v.map(|v| v.as_bytes().to_vec()).into_iter().collect()
    }
    fn rate(&self, slot: u8) -> Option<u64> {
        self.rates[slot as usize]
    }
}

const CFG: &str = "\
global
  log stdout format raw local0
defaults
  mode http
  default_backend web
frontend fe
  bind :8080
  capture request header X-Api-Key len 64
  stick-table type ip size 100k expire 30s store http_req_rate(10s)
  acl is_api path_beg /api /v2
  acl local src 10.0.0.0/8 192.168.1.7
  http-request track-sc0 src
  http-request deny deny_status 429 if { sc_http_req_rate(0) gt 20 } !local
  http-request set-header X-Seen 1
  use_backend api if is_api
backend api
  stick-table type string len 16 size 10k expire 1m store http_req_rate(1m),gpc0
  http-request track-sc1 req.hdr(x-api-key) if { req.hdr(x-api-key) -m found }
  http-request tarpit if { sc1_http_req_rate gt 100 } || { path_end .php }
  server s1 127.0.0.1:9000
backend web
  server s1 127.0.0.1:9001
";

#[test]
fn proxies_tables_rules_and_switching_are_read() {
    let cfg = HaproxyCfg::parse(CFG).unwrap();
    assert_eq!(cfg.proxies.len(), 3);
    let fe = &cfg.proxies[0];
    assert_eq!((fe.name.as_str(), fe.side), ("fe", Side::Frontend));
    assert_eq!(fe.captures, [("x-api-key".to_string(), 64)]);
    assert_eq!(fe.rules.len(), 2, "set-header passes over");
    assert_eq!(fe.default_backend, Some(2), "from defaults");
    assert_eq!(fe.switching[0].0, 1);
    let t = &cfg.tables[fe.table.unwrap()];
    assert_eq!(
        (t.key, t.size, t.expire_ms, t.rate_ms),
        (KeyType::Ip, 102_400, Some(30_000), Some(10_000))
    );
    let t = &cfg.tables[cfg.proxies[1].table.unwrap()];
    assert_eq!((t.key, t.rate_ms), (KeyType::String(16), Some(60_000)));
    assert!(matches!(fe.rules[1].action, Action::Deny { status: 429 }));
    let req = |src, uri, rate| Req {
        src,
        uri,
        headers: vec![("x-api-key", "k1")],
        rates: [Some(rate), None, None],
    };
    let deny = &fe.rules[1];
    assert!(deny.applies(&req("1.2.3.4", "/", 21)));
    assert!(!deny.applies(&req("1.2.3.4", "/", 20)));
    assert!(!deny.applies(&req("10.9.9.9", "/", 99)), "!local");
    assert!(!deny.applies(&req("192.168.1.7", "/", 99)));
    assert_eq!(fe.backend(0, &req("1.2.3.4", "/v2/x?q", 0)), Some(1));
    assert_eq!(fe.backend(0, &req("1.2.3.4", "/v3", 0)), Some(2));
    let api = &cfg.proxies[1];
    let mut r = req("1.2.3.4", "/x.php", 0);
    assert!(api.rules[0].applies(&r));
    assert!(api.rules[1].applies(&r), "the path side of ||");
    r.uri = "/x";
    assert!(!api.rules[1].applies(&r), "sc1 untracked: no rate");
    r.rates[1] = Some(101);
    assert!(api.rules[1].applies(&r));
    r.headers.clear();
    assert!(!api.rules[0].applies(&r));
}

#[test]
fn configs_drip_cannot_follow_name_their_line() {
    let err = |text: &str| HaproxyCfg::parse(text).unwrap_err();
    let (line, msg) = err(
        "frontend fe\n  stick-table type ip size 1k store http_req_rate(10s)\n  http-request track-sc0 req.hdr(x-key)\n",
    );
    assert_eq!(line, 3);
    assert!(msg.contains("capture request header x-key len"), "{msg}");
    let (line, msg) = err("frontend fe\n  use_backend nope\n");
    assert_eq!((line, msg.contains("no backend")), (2, true));
    let (line, msg) = err("frontend fe\n  http-request track-sc0 src\n");
    assert_eq!(line, 2);
    assert!(msg.contains("needs a stick-table"), "{msg}");
    let (_, msg) = err("frontend fe\n  http-request deny if is_bot\n");
    assert!(msg.contains("unknown ACL 'is_bot'"), "{msg}");
    let (_, msg) = err("frontend fe\n  acl a sc0_conn_rate gt 3\n");
    assert!(msg.contains("not other counters"), "{msg}");
    let (_, msg) = err("frontend fe\n  acl a req.cook(sid) -m found\n");
    assert!(msg.contains("not in an access log"), "{msg}");
    let (line, msg) = err("frontend fe\nfrontend fe\n");
    assert_eq!(line, 2);
    assert!(msg.contains("has the name of frontend fe"), "{msg}");
    let (_, msg) = err("frontend fe\n  stick-table type ip expire 1s\n");
    assert!(msg.contains("'type' and 'size'"), "{msg}");
    let (_, msg) = err("  bind :80\nfrontend fe\n");
    assert!(msg.contains("before any section"), "{msg}");
    // A frontend and a backend may share a name; the table of another
    // proxy is named after it.
    let cfg = HaproxyCfg::parse(
        "frontend www\n  http-request track-sc0 src table st\n  default_backend www\nbackend www\nbackend st\n  stick-table type ip size 1k store http_req_rate(1s)\n",
    )
    .unwrap();
    assert!(matches!(
        cfg.proxies[0].rules[0].action,
        Action::Track {
            table: 0,
            slot: 0,
            ..
        }
    ));
    assert_eq!(cfg.proxies[0].default_backend, Some(1));
}
