use super::*;
use std::collections::HashMap;

fn conf(text: &str) -> Result<NginxConf, ConfError> {
    NginxConf::from_text(text, Path::new("nginx.conf"), Path::new("."))
}

const SITE: &str = r#"
events { worker_connections 1024; }
http {
    # two zones and a map that exempts internal clients
    limit_req_zone $binary_remote_addr zone=perip:10m rate=10r/s;
    limit_req_zone "$http_x_api_key" zone=perkey:1m rate=30r/m;
    limit_req_zone $limit_key zone=global:32k rate=100;
    map $remote_addr $limit_key {
        default     "all";
        10.0.0.1    "";
        "10.0.0.2"  '';
    }
    log_format timed '$remote_addr [$msec] "$request" $status '
                     '$request_time $limit_req_status';
    access_log /var/log/nginx/access.log timed;
    limit_req zone=global burst=50 nodelay;
    limit_req_status 429;

    server {
        listen 80;
        server_name api.example.com;
        limit_req_dry_run on;

        location / {
        }
        location /api/ {
            limit_req zone=perip burst=20 delay=5;
            limit_req zone=perkey burst=2;
            location /api/admin/ {
                limit_req_dry_run off;
            }
        }
        location = /login {
            limit_req zone=perip;
            limit_req_status 503;
        }
        location ^~ /static/ {
            limit_req zone=perip burst=100 nodelay;
        }
        location ~* \.(php|cgi)$ {
            limit_req zone=perip burst=1;
        }
        location /health {
            return 200 "ok";
        }
        location @backend {
            limit_req zone=perip;
        }
    }
}
"#;

fn names(c: &NginxConf, loc: usize) -> Vec<String> {
    c.locations[loc]
        .limits
        .iter()
        .map(|l| format!("{} {}", c.zones[l.zone].name, c.policy(l)))
        .collect()
}

#[test]
fn inheritance_replaces_the_whole_list() {
    let c = conf(SITE).unwrap();
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    assert_eq!(c.zones.len(), 3);
    assert_eq!(c.zones[1].key.single_var(), Some("http_x_api_key"));
    assert_eq!(c.zones[1].size, 1 << 20);
    assert_eq!(c.zones[0].capacity(), 10 * 8192);
    let route = |uri: &str| c.route(0, uri);
    let root = route("/x");
    assert_eq!(c.locations[root].name, "location /");
    assert_eq!(names(&c, root), ["global rate=100r/s burst=50 nodelay"]);
    assert!(c.locations[root].dry_run);
    let api = route("/api/v1/users");
    assert_eq!(
        names(&c, api),
        [
            "perip rate=10r/s burst=20 delay=5",
            "perkey rate=30r/m burst=2"
        ]
    );
    let admin = route("/api/admin/x");
    assert_eq!(c.locations[admin].name, "location /api/admin/");
    assert_eq!(names(&c, admin), names(&c, api));
    assert!(!c.locations[admin].dry_run);
    assert!(c.locations[api].dry_run);
    let login = route("/login");
    assert_eq!(names(&c, login), ["perip rate=10r/s burst=0"]);
    // "/login/x" is not the exact location: the prefix "/" takes it.
    assert_eq!(route("/login/x"), root);
    assert_eq!(
        c.locations[route("/static/a.php")].name,
        "location ^~ /static/"
    );
    assert_eq!(
        c.locations[route("/api/a.PHP")].name,
        "location ~* \\.(php|cgi)$"
    );
    let health = route("/health");
    assert!(c.locations[health].returns);
    // A named location is reached only through try_files.
    let backend = c.location_named("@backend").unwrap();
    assert_eq!(names(&c, backend), ["perip rate=10r/s burst=0"]);
    assert!(c.locations.iter().all(|l| l.try_named.is_none()));
    assert_ne!(c.route(0, "/@backend"), backend);
    assert_eq!(c.location_named("/api/"), Some(api));
    assert_eq!(c.location_named("location = /login"), Some(login));
    assert_eq!(c.location_named("= /login"), Some(login));
    assert_eq!(c.location_named("/nope"), None);
    assert_eq!(c.access_logs[0].format, "timed");
    let f = c.log_formats.iter().find(|f| f.name == "timed").unwrap();
    assert_eq!(
        f.format,
        "$remote_addr [$msec] \"$request\" $status $request_time $limit_req_status"
    );
}

#[test]
fn keys_are_evaluated_as_nginx_builds_them() {
    let c = conf(SITE).unwrap();
    let none = HashMap::new();
    let row: HashMap<&str, &str> = [("remote_addr", "10.0.0.1"), ("http_x_api_key", "k1")]
        .into_iter()
        .collect();
    let field = |f: &str| row.get(f).map_or(Vec::new(), |v| v.as_bytes().to_vec());
    let eval = |e: &str, over: &HashMap<String, String>| {
        let mut out = Vec::new();
        c.eval(&Expr::parse(e).unwrap(), 0, over, &field, &mut out);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(eval("$binary_remote_addr", &none), "10.0.0.1");
    assert_eq!(eval("$remote_addr:$http_x_api_key", &none), "10.0.0.1:k1");
    assert_eq!(eval("$server_name", &none), "api.example.com");
    assert_eq!(eval("$limit_key", &none), "");
    assert_eq!(eval("$http_x_missing", &none), "");
    let over: HashMap<String, String> = [("remote_addr".to_string(), "http_x_api_key".to_string())]
        .into_iter()
        .collect();
    assert_eq!(eval("$limit_key", &over), "all");
    assert_eq!(eval("$binary_remote_addr", &over), "k1");
    let mut fields = Vec::new();
    c.fields_of(&c.zones[2].key, 0, &none, &mut fields).unwrap();
    assert_eq!(fields, ["remote_addr"]);
}

#[test]
fn maps_match_case_insensitively_and_chain() {
    let c = conf(
        "http { map $http_user_agent $bot { default 0; GoogleBot 1; } \
         map $bot $k { 0 $remote_addr; 1 ''; } \
         limit_req_zone $k zone=z:1m rate=1r/s; server { location / { limit_req zone=z; } } }",
    )
    .unwrap();
    let eval = |ua: &str| {
        let field = |f: &str| match f {
            "http_user_agent" => ua.as_bytes().to_vec(),
            "remote_addr" => b"1.2.3.4".to_vec(),
            _ => Vec::new(),
        };
        let mut out = Vec::new();
        c.eval(&c.zones[0].key, 0, &HashMap::new(), &field, &mut out);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(eval("googlebot"), "");
    assert_eq!(eval("curl"), "1.2.3.4");
    let mut fields = Vec::new();
    c.fields_of(&c.zones[0].key, 0, &HashMap::new(), &mut fields)
        .unwrap();
    assert_eq!(fields, ["http_user_agent", "remote_addr"]);
}

#[test]
fn unmodelled_directives_leave_notes_or_errors() {
    let c = conf(
        "http { split_clients \"${remote_addr}\" $limit { 50% 1; * 0; } \
         limit_req_zone $limit zone=z:1m rate=1r/s; \
         server { location / { limit_conn addr 10; limit_req zone=z; \
         if ($bad) { return 403; } } \
         location /app { try_files $uri @app; } } }",
    )
    .unwrap();
    assert_eq!(c.notes.len(), 3, "{:?}", c.notes);
    assert!(
        c.notes[0].contains("'limit_conn' is not modelled"),
        "{}",
        c.notes[0]
    );
    assert!(c.notes[1].contains("'if … { return }'"), "{}", c.notes[1]);
    assert!(
        c.notes[2].contains("'try_files … @app'") && c.notes[2].contains("no such named location"),
        "{}",
        c.notes[2]
    );
    let e = c
        .var_source("limit", 0, &HashMap::new())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("set by 'split_clients'") && e.contains("--nginx-var limit=FIELD"),
        "{e}"
    );
    let over: HashMap<String, String> = [("limit".to_string(), "tier".to_string())]
        .into_iter()
        .collect();
    assert_eq!(
        c.var_source("limit", 0, &over).unwrap(),
        VarSource::Field("tier".into())
    );
}

#[test]
fn config_errors_name_file_and_line() {
    for (text, line, what) in [
        (
            "http {\n limit_req zone=nope;\n}",
            2,
            "unknown limit_req_zone \"nope\"",
        ),
        (
            "http {\n limit_req_zone $a zone=z:1m rate=0.5r/s;\n}",
            2,
            "invalid nginx rate",
        ),
        (
            "http {\n limit_req_zone $a zone=z:1k rate=1r/s;\n}",
            2,
            "too small",
        ),
        (
            "http {\n limit_req_zone $a rate=1r/s;\n}",
            2,
            "must have a zone",
        ),
        (
            "http {\n limit_req_zone $a zone=z:1m rate=1r/s;\n limit_req_zone $b zone=z:1m rate=1r/s;\n}",
            3,
            "duplicate zone",
        ),
        (
            "http { limit_req_zone $a zone=z:1m rate=1r/s;\n server { location / {\n limit_req zone=z burst=0;\n} } }",
            3,
            "invalid burst value \"0\"",
        ),
        (
            "http { limit_req_zone $a zone=z:1m rate=1r/s;\n server {\n limit_req zone=z;\n limit_req zone=z burst=2;\n } }",
            4,
            "is duplicate",
        ),
        (
            "http { limit_req_zone $a zone=z:1m rate=1r/s;\n limit_req zone=z burst=1 delay=1 nodelay;\n}",
            2,
            "invalid number of arguments",
        ),
        ("http {\n limit_req_status 302;\n}", 2, "from 400 to 599"),
        (
            "http {\n map $host $m {\n hostnames;\n *.example.com 1;\n }\n}",
            3,
            "'hostnames' maps are not modelled",
        ),
        ("http {\n map $host $m {\n ~^www 1;\n }\n}", 3, "regex keys"),
        (
            "http {\n server {\n location ~ (?<=a)b {\n }\n }\n}",
            3,
            "location regex",
        ),
        (
            "http {\n limit_req_zone $ zone=z:1m;\n}",
            2,
            "not followed by a variable name",
        ),
        // What nginx -t refuses, with its reason.
        (
            "http {\n limit_req_zone $a zone=z:1m;\n}",
            2,
            "invalid number of arguments in \"limit_req_zone\" directive (zone \"z\" has no rate=)",
        ),
        (
            "http { limit_req_zone $a zone=z:1m rate=1r/s;\n server { location / {\n if ($x) {\n limit_req zone=z; } } } }",
            4,
            "\"limit_req\" directive is not allowed here (inside 'if')",
        ),
        (
            "http { server {\n if ($x) {\n limit_req_dry_run on; } } }",
            3,
            "\"limit_req_dry_run\" directive is not allowed here",
        ),
        (
            "http { server {\n location /a/ {\n location /b/ { } } } }",
            3,
            "location \"/b/\" is outside location \"/a/\"",
        ),
        (
            "http { server {\n location ~ ^/a {\n location /b { } } } }",
            3,
            "location \"/b\" is outside location \"^/a\"",
        ),
        (
            "http { server {\n location = /a {\n location /a/x { } } } }",
            3,
            "location \"/a/x\" cannot be inside the exact location \"/a\"",
        ),
        (
            "http { server {\n location / {\n location @a { } } } }",
            3,
            "named location \"@a\" can be on the server level only",
        ),
        (
            "http {\n}\nhttp {\n}\n",
            3,
            "\"http\" directive is duplicate",
        ),
        (
            "http { server {\n location @a {\n location /x { } } } }",
            3,
            "location \"/x\" cannot be inside the named location \"@a\"",
        ),
    ] {
        let e = conf(text).unwrap_err();
        assert_eq!(
            (e.line, e.file.as_path()),
            (line, Path::new("nginx.conf")),
            "{text}: {e}"
        );
        assert!(e.to_string().contains(what), "{text}: {e}");
        assert!(!e.to_string().contains('\n'), "{e}");
    }
    let e = conf("events {}").unwrap_err();
    assert!(e.to_string().contains("no 'http"), "{e}");
    // Nested locations nginx accepts: a regex anywhere, a prefix or exact
    // one starting with its parent's text.
    conf("http { server { location /a/ { location ~ x { } location = /a/b { } location ^~ /a/c { } } } }")
        .unwrap();
    let e = conf("http { map $a $b { default $b; } }").unwrap_err();
    assert!(e.to_string().contains("depends on itself"), "{e}");
}

#[test]
fn servers_are_chosen_by_host() {
    let c = conf(
        "http { limit_req_zone $remote_addr zone=z:1m rate=1r/s;\n\
         server { server_name a.example; location / { limit_req zone=z; } }\n\
         server { listen 80 default_server; server_name *.b.example; location / { } }\n\
         server { server_name www.*; } }",
    )
    .unwrap();
    assert_eq!(c.server_for(Some("a.example:8080")), 0);
    assert_eq!(c.server_for(Some("X.B.example")), 1);
    assert_eq!(c.server_for(Some("www.c.example")), 2);
    assert_eq!(c.server_for(Some("other")), 1);
    assert_eq!(c.server_for(None), 1);
    let l = c.route(0, "/x");
    assert_eq!(c.locations[l].name, "a.example location /");
    assert_eq!(c.locations[c.route(2, "/x")].name, "www.* server");
    assert!(c.locations[c.route(2, "/x")].limits.is_empty());
}

#[test]
fn servers_are_chosen_by_port_and_address_then_host() {
    let c = conf(
        "http { server { listen 80; server_name a.example; return 301 https://$host; }\n\
         server { listen [::]:443 ssl default_server; listen 443 ssl; server_name a.example; }\n\
         server { listen 10.0.0.1:443; server_name b.example; }\n\
         server { listen 443; server_name c.example; } }",
    )
    .unwrap();
    assert!(c.listens_apart());
    assert_eq!(c.server_at(Some("a.example"), Some(80), None), 0);
    assert_eq!(c.server_at(Some("a.example"), Some(443), None), 1);
    assert_eq!(
        c.server_at(Some("c.example"), Some(443), Some("10.0.0.2")),
        3
    );
    // On an address a server listens on exactly, only such servers.
    assert_eq!(
        c.server_at(Some("c.example"), Some(443), Some("10.0.0.1")),
        2
    );
    // The default_server of the port; a port no server has: by name.
    assert_eq!(c.server_at(Some("zz"), Some(443), None), 1);
    assert_eq!(c.server_at(Some("zz"), Some(80), None), 0);
    assert_eq!(c.server_at(Some("c.example"), Some(8080), None), 3);
    assert_eq!(c.server_at(Some("c.example"), None, None), 3);
    // Two servers of one name: the port tells their labels apart.
    assert_eq!(
        c.locations[c.servers[0].fallback].name,
        "a.example:80 server"
    );
    assert_eq!(
        c.locations[c.servers[1].fallback].name,
        "a.example:443 server"
    );
    assert_eq!(c.locations[c.servers[2].fallback].name, "b.example server");
    let parse = |a: &str| {
        let args: Vec<String> = a.split(' ').map(String::from).collect();
        Listen::parse(&args).map(|l| (l.addr, l.port, l.default))
    };
    assert_eq!(parse("8080"), Ok((None, 8080, false)));
    assert_eq!(parse("*:80 default"), Ok((None, 80, true)));
    assert_eq!(parse("[::1]"), Ok((Some("::1".into()), 80, false)));
    assert_eq!(
        parse("Localhost:81"),
        Ok((Some("localhost".into()), 81, false))
    );
    assert_eq!(
        parse("unix:/run/a.sock"),
        Ok((Some("unix:/run/a.sock".into()), 0, false))
    );
    assert!(parse("1.2.3.4:http").is_err());
    let plain = conf("http { server { server_name a; } server { server_name b; } }").unwrap();
    assert!(!plain.listens_apart());
}

#[test]
fn server_names_are_chosen_in_nginx_order() {
    let c = conf(
        "http {\n\
         server { listen 80; server_name ~^api\\d+\\.example\\.com$ ~^AB; }\n\
         server { server_name *.example.com; }\n\
         server { server_name *.api.example.com www.example.*; }\n\
         server { listen 80 default_server; server_name .shop.test api7.example.com; }\n\
         server { server_name www.example.com.*; }\n\
         server { server_name ~^(?<sub>.+)\\.regex\\.test$ ~^A; } }",
    )
    .unwrap();
    let host = |h: &str| c.server_for(Some(h));
    // The longest leading wildcard, whatever the order.
    assert_eq!(host("x.api.example.com"), 2);
    assert_eq!(host("x.example.com"), 1);
    // An exact name before any wildcard or regex.
    assert_eq!(host("api7.example.com"), 3);
    // A leading wildcard before a trailing one and a regex.
    assert_eq!(host("api8.example.com"), 1);
    assert_eq!(host("www.example.com"), 1);
    // The longest trailing wildcard.
    assert_eq!(host("www.example.org"), 2);
    assert_eq!(host("www.example.com.org"), 4);
    assert_eq!(host("www.example.net.org"), 2);
    // `.name` is the name and its subdomains.
    assert_eq!(host("shop.test"), 3);
    assert_eq!(host("a.shop.test"), 3);
    // Regexes in the config's order, caseless.
    assert_eq!(host("API9.example.org"), 5);
    assert_eq!(host("a.regex.test"), 5);
    assert_eq!(host("abc"), 0);
    assert_eq!(host("acb"), 5);
    assert_eq!(host("other"), 3);
    let e = conf("http {\n server {\n server_name ~(a)\\1;\n } }").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn includes_bring_zones_and_locations() {
    let dir = std::env::temp_dir().join(format!("drip-nginx-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sites")).unwrap();
    std::fs::write(
        dir.join("zones.conf"),
        "limit_req_zone $remote_addr zone=z:1m rate=2r/s;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sites/a.conf"),
        "server {\n  location /a { limit_req zone=z burst=3; }\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("sites/b.conf"),
        "server {\n  location /b {\n    limit_req zone=zz;\n  }\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("nginx.conf"),
        "http {\n include zones.conf;\n include sites/a*.conf;\n}\n",
    )
    .unwrap();
    let c = NginxConf::load(&dir.join("nginx.conf"), true).unwrap();
    assert_eq!(c.zones[0].pos.line, 1);
    assert!(c.zones[0].pos.file.ends_with("zones.conf"));
    let l = c.route(0, "/a/x");
    assert_eq!(names(&c, l), ["z rate=2r/s burst=3"]);
    std::fs::write(
        dir.join("nginx.conf"),
        "http {\n include zones.conf;\n include sites/*.conf;\n}\n",
    )
    .unwrap();
    let e = NginxConf::load(&dir.join("nginx.conf"), true).unwrap_err();
    assert!(e.file.ends_with("sites/b.conf") && e.line == 3, "{e}");
    let e = NginxConf::load(&dir.join("missing.conf"), true).unwrap_err();
    assert!(
        e.to_string().contains("cannot read the nginx config"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_fragment_is_read_as_the_content_of_http() {
    let c = conf(
        "limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n\
         server {\n server_name a.example;\n location /api/ { limit_req zone=z; }\n}\n",
    )
    .unwrap();
    assert_eq!(c.zones.len(), 1);
    let l = c.route(0, "/api/x");
    assert_eq!(names(&c, l), ["z rate=1r/s burst=0"]);
    assert_eq!(c.assumptions.len(), 1, "{:?}", c.assumptions);
    assert!(
        c.assumptions[0].contains("read as the content of http"),
        "{}",
        c.assumptions[0]
    );
}

#[test]
fn a_return_applies_to_its_own_location_only() {
    let c = conf(
        "http { limit_req_zone $a zone=z:1m rate=1r/s;\n\
         server { limit_req zone=z;\n\
         location /api/ { return 403;\n location /api/x { } }\n\
         location /b/ { } } \n\
         server { server_name r; return 301 https://x; location /c/ { location /c/d { } } } }",
    )
    .unwrap();
    let api = c.route(0, "/api/y");
    assert!(c.locations[api].returns);
    let x = c.route(0, "/api/x");
    assert!(!c.locations[x].returns, "{}", c.locations[x].name);
    assert_eq!(names(&c, x), ["z rate=1r/s burst=0"]);
    assert!(!c.locations[c.route(0, "/b/")].returns);
    // A server's return answers every request of the server.
    assert!(c.locations[c.route(1, "/c/d")].returns);
    assert!(c.locations[c.route(1, "/e")].returns);
}

#[test]
fn missing_includes_are_assumed_empty_unless_strict() {
    let dir = std::env::temp_dir().join(format!("drip-nginx-miss-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("nginx.conf"),
        "http {\n include mime.types;\n include /nonexistent-drip/conf.d/*.conf;\n\
         limit_req_zone $remote_addr zone=z:1m rate=2r/s;\n\
         server { location / { limit_req zone=z; } }\n}\n",
    )
    .unwrap();
    let c = NginxConf::load(&dir.join("nginx.conf"), false).unwrap();
    assert_eq!(c.assumptions.len(), 2, "{:?}", c.assumptions);
    assert!(
        c.assumptions[0].contains("nginx.conf:2: include 'mime.types' was not found")
            && c.assumptions[0].contains("assume it holds no limit_req, location, server or map"),
        "{}",
        c.assumptions[0]
    );
    assert!(c.assumptions[1].contains(":3: include '/nonexistent-drip/conf.d/*.conf'"));
    assert_eq!(names(&c, c.route(0, "/")), ["z rate=2r/s burst=0"]);
    let e = NginxConf::load(&dir.join("nginx.conf"), true).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(e.to_string().contains("no such file"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn try_files_passes_to_its_named_location() {
    let c = conf(
        "http { limit_req_zone $a zone=z:1m rate=1r/s;\n\
         server {\n location / { try_files $uri $uri/ @app; }\n\
         location /php/ { try_files $uri /index.php?$args; }\n\
         location /nf/ { try_files $uri =404; }\n\
         location @app { limit_req zone=z burst=2; } } }",
    )
    .unwrap();
    let root = c.route(0, "/x");
    let app = c.location_named("@app").unwrap();
    assert_eq!(c.locations[root].try_named, Some(app));
    assert_eq!(c.locations[app].name, "location @app");
    assert_eq!(names(&c, app), ["z rate=1r/s burst=2"]);
    // No URI reaches a named location by itself.
    assert_eq!(c.route(0, "/@app"), root);
    // A URI fallback is followed; one built from variables is a note;
    // `=404` needs none.
    let php = c.route(0, "/php/x");
    assert_eq!(
        c.locations[php].try_uri.as_deref(),
        Some("/index.php?$args")
    );
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    let c = conf(
        "http { limit_req_zone $a zone=z:1m rate=1r/s;\n\
         server {\n location / { try_files $uri /$host/index.php; } } }",
    )
    .unwrap();
    assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
    assert!(
        c.notes[0].contains("nginx.conf:3: 'try_files'"),
        "{}",
        c.notes[0]
    );
}

#[test]
fn rewrites_choose_the_location_as_nginx_does() {
    let c = conf(
        "http { limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s;\n\
         server { server_name a;\n\
           rewrite ^/old/(.*)$ /new/$1 last;\n\
           rewrite ^/gone/ /x permanent;\n\
           location / { }\n\
           location /new/ { limit_req zone=z; }\n\
           location /l/ { rewrite ^/l/(.*)$ /new/$1?x=1 last; }\n\
           location /b/ { rewrite ^ /new/ break; limit_req zone=z burst=2; }\n\
           location /loop/ { rewrite ^ /loop/x; }\n\
           location /v/ { rewrite ^ /new/$host last; }\n\
           location /ret/ { rewrite ^/ret/k$ /new/ last; return 404; }\n\
           location @app { rewrite ^ /new/; }\n\
         }\n\
         server { server_name s; rewrite ^/k/ /k last; return 404; location / { } } }",
    )
    .unwrap();
    let at = |s: usize, u: &str| c.locations[c.route_rewritten(s, u)].name.clone();
    assert_eq!(at(0, "/old/p"), "a location /new/");
    assert_eq!(at(0, "/gone/p"), "a server, answered by its rewrite phase");
    assert_eq!(at(0, "/l/p"), "a location /new/");
    assert_eq!(at(0, "/b/p"), "a location /b/");
    assert_eq!(
        at(0, "/loop/"),
        "answered 500 by nginx (rewrite cycle) before any limit"
    );
    assert_eq!(at(0, "/ret/k"), "a location /new/");
    assert_eq!(
        at(0, "/ret/j"),
        "a location /ret/, answered by its rewrite phase"
    );
    // What drip cannot evaluate is passed over, with a note naming it.
    assert_eq!(at(0, "/v/p"), "a location /v/");
    let notes = c.notes.join("\n");
    assert!(
        notes
            .contains("nginx.conf:10: 'rewrite' is not modelled: its replacement reads a variable"),
        "{notes}"
    );
    assert!(
        notes.contains("nginx.conf:12: 'rewrite' is not modelled: it is in a named location"),
        "{notes}"
    );
    // A server's rewrite `last` stops its later `return`.
    assert_eq!(at(1, "/k/a"), "s location /");
    assert_eq!(at(1, "/x"), "s server, answered by its rewrite phase");
    // The answered entries are not locations --nginx-location can name.
    assert_eq!(
        c.location_named("answered 400 by nginx before any limit"),
        None
    );
    // $uri and $args as the rewrites leave them, for keys.
    let (l, req) = c.route_request(0, "/l/p", "y=2");
    assert_eq!(c.locations[l].name, "a location /new/");
    let req = req.unwrap();
    assert_eq!((req.uri.as_str(), req.args.as_str()), ("/new/p", "x=1&y=2"));
    assert_eq!(c.route_request(0, "/new/p", "y=2").1, None);
}
