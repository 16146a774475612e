//! `drip audit --nginx-conf` against a real nginx: each test starts its own
//! nginx (never the packaged service) on a free loopback port with a
//! generated config under a temporary prefix, sends requests to it over
//! 127.0.0.1, and checks that drip, replaying nginx's own access log with
//! the same config, gives every row the `$limit_req_status` nginx logged.
//! Client addresses come from `X-Forwarded-For` through the realip module.
//!
//! Limits are slow (`r/m`) and `nodelay`: nothing drains or waits during a
//! test, so the outcome does not depend on the machine's timing. nginx
//! must be installed (Debian: `apt-get install nginx-light`); without it
//! these tests fail and say so.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{Drip, Scratch, nginx_binary, s};

/// What nginx logs, and drip reads.
const LOG_FORMAT: &str = "$remote_addr $msec $request_time $host \"$request\" $limit_req_status";

/// An nginx of our own, stopped by its PID on drop.
struct Nginx {
    port: u16,
    dir: Scratch,
    child: Child,
}

impl Nginx {
    /// Starts nginx with `site` (the content of `http { }`, written to
    /// `site.conf` and included) and files to serve under `root`.
    fn start(site: &str, files: &[&str]) -> Nginx {
        Nginx::start_logging(site, files, LOG_FORMAT)
    }

    /// As [`start`](Self::start), logging `format`.
    fn start_logging(site: &str, files: &[&str], format: &str) -> Nginx {
        let dir = Scratch::new();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::create_dir_all(dir.join("root")).unwrap();
        for f in files {
            std::fs::write(dir.join("root").join(f), "static\n").unwrap();
        }
        let site = site
            .replace("PORT", &port.to_string())
            .replace("ROOT", s(&dir.join("root")));
        std::fs::write(dir.join("site.conf"), site).unwrap();
        let d = s(&dir);
        let main = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log;\nevents {{ worker_connections 64; }}\nhttp {{\n\
             client_body_temp_path {d}/body;\nproxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\nuwsgi_temp_path {d}/uwsgi;\nscgi_temp_path {d}/scgi;\n\
             log_format live '{format}';\naccess_log {d}/access.log live;\n\
             set_real_ip_from 127.0.0.1;\nreal_ip_header X-Forwarded-For;\n\
             include {d}/site.conf;\n}}\n"
        );
        std::fs::write(dir.join("nginx.conf"), main).unwrap();
        let child = Command::new(nginx_binary())
            .args(["-p", d, "-c", s(&dir.join("nginx.conf"))])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start nginx ({e}): install it (Debian: apt-get install nginx-light); the live nginx tests need a real nginx"
                )
            });
        let n = Nginx { port, dir, child };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            let err = std::fs::read_to_string(n.dir.join("error.log")).unwrap_or_default();
            assert!(
                Instant::now() < deadline && !err.contains("[emerg]"),
                "nginx did not start: {err}"
            );
            thread::sleep(Duration::from_millis(20));
        }
        n
    }

    /// One request: `target` on `host` from client address `from`.
    fn get(&self, host: &str, target: &str, from: &str) {
        self.request("GET", "HTTP/1.1", host, target, from);
    }

    /// One request with `method` and `protocol`, without a body.
    fn request(&self, method: &str, protocol: &str, host: &str, target: &str, from: &str) {
        self.request_to(self.port, method, protocol, host, target, from);
    }

    /// One request to `port`.
    fn request_to(
        &self,
        port: u16,
        method: &str,
        protocol: &str,
        host: &str,
        target: &str,
        from: &str,
    ) {
        let line = format!("{method} {target} {protocol}");
        self.send_raw(port, &line, host, from, "");
    }

    /// One GET with more header lines (`headers`: each ending in CRLF).
    fn get_with(&self, host: &str, target: &str, from: &str, headers: &str) {
        let line = format!("GET {target} HTTP/1.1");
        self.send_raw(self.port, &line, host, from, headers);
    }

    fn send_raw(&self, port: u16, line: &str, host: &str, from: &str, headers: &str) {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let req = format!(
            "{line}\r\nHost: {host}\r\nX-Forwarded-For: {from}\r\n{headers}Content-Length: 0\r\nConnection: close\r\n\r\n"
        );
        c.write_all(req.as_bytes()).unwrap();
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        assert!(out.starts_with(b"HTTP/1.1 "), "no answer to {line}");
    }

    /// Sends every request in order, then waits for nginx to log them all.
    fn send(&self, reqs: &[(&str, &str, &str)]) -> PathBuf {
        for &(host, target, from) in reqs {
            self.get(host, target, from);
        }
        self.logged(reqs.len())
    }

    /// The access log, once nginx has logged `n` requests.
    fn logged(&self, n: usize) -> PathBuf {
        let reqs = vec![(); n];
        let log = self.dir.join("access.log");
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let n = std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .count();
            if n >= reqs.len() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "nginx logged {n} of {} requests",
                reqs.len()
            );
            thread::sleep(Duration::from_millis(20));
        }
        log
    }

    fn site(&self) -> PathBuf {
        self.dir.join("site.conf")
    }

    fn main_conf(&self) -> PathBuf {
        self.dir.join("nginx.conf")
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// drip's audit of nginx's log with `conf`: the JSON report, after
/// checking that every row agrees with the logged status and that nginx
/// logged each status of `want` at least once.
fn agrees(log: &Path, conf: &Path, extra: &[&str], want: &[&str]) -> serde_json::Value {
    agrees_logged(log, LOG_FORMAT, conf, extra, want)
}

/// As [`agrees`], for a log of `format`.
fn agrees_logged(
    log: &Path,
    format: &str,
    conf: &Path,
    extra: &[&str],
    want: &[&str],
) -> serde_json::Value {
    let mut args = vec![
        s(log),
        "--log-format",
        format,
        "--duration-column",
        "request_time",
        "--nginx-conf",
        s(conf),
        "--verify-column",
        "limit_req_status",
        "-f",
        "json",
        "-q",
    ];
    args.extend_from_slice(extra);
    let out = Drip::audit().args(&args).run();
    let text = std::fs::read_to_string(log).unwrap();
    assert_eq!(out.code, 0, "{}\n{}\nlog:\n{text}", out.stdout, out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let n = &v["policies"][0]["nginx"];
    let rows = text.lines().count() as u64;
    assert_eq!(n["verify"]["rows"], rows, "{n}");
    assert_eq!(n["verify"]["agreed"], rows, "{n}\nlog:\n{text}");
    for w in want {
        assert!(
            text.lines().any(|l| l.ends_with(&format!(" {w}"))),
            "nginx logged no {w}:\n{text}"
        );
    }
    v
}

/// `n` requests of `target` on `host` from `from`.
fn burst<'a>(
    n: usize,
    host: &'a str,
    target: &'a str,
    from: &'a str,
) -> Vec<(&'a str, &'a str, &'a str)> {
    vec![(host, target, from); n]
}

#[test]
fn server_names_wildcards_and_regexes() {
    // Each server limits with its own burst, so a row sent to the wrong
    // server is decided differently.
    let ng = Nginx::start(
        "limit_req_zone $binary_remote_addr zone=wide:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr zone=api:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr zone=rx:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr zone=tail:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT default_server; server_name _; location / { empty_gif; } }\n\
         server { listen 127.0.0.1:PORT; server_name *.example.com;\n\
           location / { limit_req zone=wide burst=1 nodelay; empty_gif; } }\n\
         server { listen 127.0.0.1:PORT; server_name ~^r\\d+\\.example\\.com$ *.api.example.com;\n\
           location / { limit_req zone=api burst=3 nodelay; empty_gif; } }\n\
         server { listen 127.0.0.1:PORT; server_name ~^r\\d+\\.test$ ~^R;\n\
           location / { limit_req zone=rx burst=2 nodelay; empty_gif; } }\n\
         server { listen 127.0.0.1:PORT; server_name www.example.* www.example.org.*;\n\
           location / { limit_req zone=tail burst=4 nodelay; empty_gif; } }\n",
        &[],
    );
    let mut reqs = Vec::new();
    for (i, host) in [
        "a.example.com",
        "r1.example.com",
        "x.api.example.com",
        "r7.test",
        "rr.other",
        "www.example.net",
        "www.example.org.uk",
        "none.test",
    ]
    .iter()
    .enumerate()
    {
        let from = [
            "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.7",
            "10.0.0.8",
        ][i];
        reqs.extend(burst(6, host, "/", from));
    }
    let log = ng.send(&reqs);
    let v = agrees(&log, &ng.main_conf(), &[], &["PASSED", "REJECTED", "-"]);
    let locs = &v["policies"][0]["nginx"]["locations"];
    let rejected = |name: &str| {
        locs.as_array()
            .unwrap()
            .iter()
            .find(|l| l["location"].as_str().unwrap().starts_with(name))
            .map(|l| l["rejected"].as_u64().unwrap())
    };
    // *.example.com: a (4 of 6) and r1 (leading wildcards before regexes).
    assert_eq!(rejected("*.example.com"), Some(8), "{locs}");
    // *.api.example.com, the longest wildcard: x (2 of 6).
    assert_eq!(rejected("~^r\\d+\\.example\\.com$"), Some(2), "{locs}");
    // Regexes in order, caseless: r7.test, rr.other.
    assert_eq!(rejected("~^r\\d+\\.test$"), Some(6), "{locs}");
    // The longest trailing wildcard: both www hosts.
    assert_eq!(rejected("www.example.*"), Some(2), "{locs}");
}

#[test]
fn nested_locations_return_and_named_locations() {
    // A fragment, as in conf.d: zones and a server at the top. The named
    // location limits, as Discourse's rate-limit template does
    // (`try_files $uri @discourse;` and limit_req in `location @discourse`).
    let ng = Nginx::start(
        "limit_req_zone $binary_remote_addr zone=flood:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr zone=nested:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr zone=unused:1m rate=1r/m;\n\
         server {\n listen 127.0.0.1:PORT;\n root ROOT;\n\
           location / { try_files $uri @app; }\n\
           location @app { limit_req zone=flood burst=2 nodelay; empty_gif; }\n\
           location /api/ { return 403;\n\
             location /api/x { limit_req zone=nested burst=1 nodelay; empty_gif; } }\n\
           location /never/ { limit_req zone=nested; empty_gif; }\n\
         }\n",
        &["style.css"],
    );
    let mut reqs = burst(5, "h", "/page", "10.1.0.1");
    reqs.extend(burst(5, "h", "/style.css", "10.1.0.1"));
    reqs.extend(burst(4, "h", "/api/y", "10.1.0.2"));
    reqs.extend(burst(4, "h", "/api/x", "10.1.0.2"));
    let log = ng.send(&reqs);
    // drip reads the fragment itself, as a user copying conf.d would give it.
    let v = agrees(
        &log,
        &ng.site(),
        &["--static", r"\.css$"],
        &["PASSED", "REJECTED", "-"],
    );
    let n = &v["policies"][0]["nginx"];
    assert_eq!(n["untested"][0], "location /never/", "{n}");
    assert!(
        n["unused_zones"][0]
            .as_str()
            .unwrap()
            .starts_with("zone \"unused\"")
    );
    // Without --static every row of / goes to @app: the css rows disagree.
    let out = Drip::audit()
        .args([
            s(&log),
            "--log-format",
            LOG_FORMAT,
            "--duration-column",
            "request_time",
            "--nginx-conf",
            s(&ng.site()),
            "--verify-column",
            "limit_req_status",
            "-q",
        ])
        .run();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("5 disagree"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("location / : try_files passes a request to location @app")
            || out
                .stdout
                .contains("location /: try_files passes a request to location @app"),
        "{}",
        out.stdout
    );
}

#[test]
fn keys_from_the_request_line() {
    let ng = Nginx::start(
        "limit_req_zone $binary_remote_addr$uri zone=byuri:1m rate=1r/m;\n\
         limit_req_zone $request_uri zone=byraw:1m rate=1r/m;\n\
         limit_req_zone $arg_x zone=byarg:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT;\n\
           location /u/ { limit_req zone=byuri burst=1 nodelay; empty_gif; }\n\
           location /r/ { limit_req zone=byraw burst=1 nodelay; empty_gif; }\n\
           location /a/ { limit_req zone=byarg nodelay; empty_gif; } }\n",
        &[],
    );
    let mut reqs = Vec::new();
    // One $uri, /u/p, written five ways: 2 admitted, 3 rejected.
    for t in [
        "/u/p?a=1",
        "/u/p?a=2",
        "/u/%70",
        "/u//p",
        "/u/q/../p",
        "/u/other",
    ] {
        reqs.push(("h", t, "10.2.0.1"));
    }
    // $request_uri is the target as sent: /r/%61 and /r/a are two keys.
    for t in ["/r/%61", "/r/%61", "/r/%61", "/r/a", "/r//a"] {
        reqs.push(("h", t, "10.2.0.2"));
    }
    // $arg_x: the first x=, the name caseless; none or empty: no limit.
    for t in [
        "/a/?x=1&x=3",
        "/a/?x=1",
        "/a/?X=1",
        "/a/?xx=1",
        "/a/?x=",
        "/a/?y=1&x=2",
    ] {
        reqs.push(("h", t, "10.2.0.3"));
    }
    let log = ng.send(&reqs);
    let v = agrees(&log, &ng.main_conf(), &[], &["PASSED", "REJECTED", "-"]);
    let locs = &v["policies"][0]["nginx"]["locations"];
    let row = |i: usize| {
        let l = &locs[i];
        (
            l["passed"].as_u64().unwrap(),
            l["rejected"].as_u64().unwrap(),
        )
    };
    assert_eq!((row(0), row(1), row(2)), ((3, 3), (4, 1), (2, 2)), "{locs}");
}

#[test]
fn method_and_protocol_keys_read_the_logged_request_line() {
    // The log has $request only: $request_method and $server_protocol are
    // its parts.
    let ng = Nginx::start(
        "limit_req_zone $request_method zone=bymethod:1m rate=1r/m;\n\
         limit_req_zone $server_protocol zone=byproto:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT;\n\
           location /m/ { limit_req zone=bymethod burst=1 nodelay; empty_gif; }\n\
           location /p/ { limit_req zone=byproto nodelay; empty_gif; } }\n",
        &[],
    );
    let sent = [
        ("GET", "HTTP/1.1", "/m/"),
        ("POST", "HTTP/1.1", "/m/"),
        ("GET", "HTTP/1.1", "/m/a"),
        ("HEAD", "HTTP/1.1", "/m/"),
        ("GET", "HTTP/1.1", "/m/b"),
        ("POST", "HTTP/1.1", "/m/"),
        ("POST", "HTTP/1.1", "/m/"),
        ("GET", "HTTP/1.0", "/p/"),
        ("GET", "HTTP/1.1", "/p/"),
        ("GET", "HTTP/1.0", "/p/"),
        ("GET", "HTTP/1.1", "/p/"),
    ];
    for (method, protocol, target) in sent {
        ng.request(method, protocol, "h", target, "10.9.0.1");
    }
    let log = ng.logged(sent.len());
    let v = agrees(&log, &ng.main_conf(), &[], &["PASSED", "REJECTED"]);
    let locs = &v["policies"][0]["nginx"]["locations"];
    let counts = |i: usize| (locs[i]["passed"].clone(), locs[i]["rejected"].clone());
    // GET 2 + 1, POST 2 + 1, HEAD 1; HTTP/1.0 1 + 1, HTTP/1.1 1 + 1.
    assert_eq!(counts(0), (5.into(), 2.into()), "{locs}");
    assert_eq!(counts(1), (2.into(), 2.into()), "{locs}");
}

#[test]
fn a_snippet_included_under_two_names() {
    // One file, by its path and through a symlinked folder, in two
    // locations: one limit_req line, applied in both.
    let snippets = Scratch::new();
    std::fs::write(
        snippets.join("limit.conf"),
        "limit_req zone=one burst=1 nodelay;\n",
    )
    .unwrap();
    let link = Scratch::new();
    let linked = link.join("linked");
    std::os::unix::fs::symlink(&*snippets, &linked).unwrap();
    let ng = Nginx::start(
        &format!(
            "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;\n\
             server {{ listen 127.0.0.1:PORT;\n\
               location /a/ {{ include {}/limit.conf; empty_gif; }}\n\
               location /b/ {{ include {}/limit.conf; empty_gif; }} }}\n",
            s(&snippets),
            s(&linked)
        ),
        &[],
    );
    let mut reqs = burst(3, "h", "/a/", "10.3.0.1");
    reqs.extend(burst(3, "h", "/b/", "10.3.0.2"));
    reqs.extend([
        ("h", "/a/", "10.3.0.3"),
        ("h", "/b/", "10.3.0.3"),
        ("h", "/a/", "10.3.0.3"),
    ]);
    let log = ng.send(&reqs);
    agrees(&log, &ng.main_conf(), &[], &["PASSED", "REJECTED"]);
}

#[test]
fn a_directory_goes_to_its_index_and_that_locations_limits() {
    // The common PHP shape: `index index.php` and the limit on `\.php$`.
    // A location with a limit of its own keeps it (nginx applies limits
    // once a request), and one that proxies has no index.
    let ng = Nginx::start(
        "limit_req_zone $binary_remote_addr zone=php:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr zone=own:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT; root ROOT; index index.php;\n\
           location / { }\n\
           location /own/ { limit_req zone=own burst=5 nodelay; }\n\
           location ~ \\.php$ { limit_req zone=php burst=1 nodelay; empty_gif; } }\n",
        &["index.php"],
    );
    std::fs::create_dir_all(ng.dir.join("root/own")).unwrap();
    std::fs::write(ng.dir.join("root/own/index.php"), "x").unwrap();
    let mut reqs = burst(4, "h", "/", "10.5.0.1");
    reqs.extend(burst(2, "h", "/index.php", "10.5.0.1"));
    reqs.extend(burst(3, "h", "/own/", "10.5.0.2"));
    reqs.extend(burst(3, "h", "/?page=2", "10.5.0.3"));
    let log = ng.send(&reqs);
    let v = agrees(&log, &ng.main_conf(), &[], &["PASSED", "REJECTED"]);
    let notes = v["policies"][0]["nginx"]["notes"].to_string();
    assert!(
        notes.contains(
            "location /: a request for a directory (a URI ending in /) goes to its index index.php"
        ),
        "{notes}"
    );
}

#[test]
fn a_missing_file_goes_to_error_page_and_its_locations_limits() {
    let ng = Nginx::start(
        "limit_req_zone $binary_remote_addr zone=fb:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT; root ROOT;\n\
           location / { error_page 404 = /fallback; }\n\
           location = /fallback { limit_req zone=fb burst=1 nodelay; empty_gif; } }\n",
        &["exists.txt"],
    );
    let mut reqs = burst(3, "h", "/exists.txt", "10.6.0.1");
    reqs.extend(burst(3, "h", "/missing", "10.6.0.1"));
    reqs.extend(burst(2, "h", "/gone?x=1", "10.6.0.2"));
    let log = ng.send(&reqs);
    let v = agrees(
        &log,
        &ng.main_conf(),
        &["--static", "^/exists"],
        &["PASSED", "REJECTED", "-"],
    );
    let notes = v["policies"][0]["nginx"]["notes"].to_string();
    assert!(
        notes.contains("location /: a request for a file --static does not name goes to its error_page 404, and is limited by location = /fallback"),
        "{notes}"
    );
    // Without --static, every file is taken to exist, and the report says so.
    let out = Drip::audit()
        .args([
            s(&log),
            "--log-format",
            LOG_FORMAT,
            "--nginx-conf",
            s(&ng.main_conf()),
        ])
        .args(["-q", "-f", "json"])
        .run();
    assert!(
        out.stdout.contains("every row is taken as a file that exists (--static REGEX names the URIs of files that exist)"),
        "{}",
        out.stdout
    );
}

#[test]
fn try_files_to_a_uri_is_limited_by_that_uris_location() {
    // The front controller: a file that exists is served, the rest goes to
    // /index.php, whose location limits.
    let ng = Nginx::start(
        "limit_req_zone $binary_remote_addr zone=app:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT; root ROOT;\n\
           location / { try_files $uri /index.php?$args; }\n\
           location ~ \\.php$ { limit_req zone=app burst=1 nodelay; empty_gif; } }\n",
        &["style.css"],
    );
    let mut reqs = burst(3, "h", "/style.css", "10.7.0.1");
    reqs.extend(burst(3, "h", "/users/7?tab=a", "10.7.0.1"));
    reqs.extend(burst(2, "h", "/about", "10.7.0.2"));
    let log = ng.send(&reqs);
    let v = agrees(
        &log,
        &ng.main_conf(),
        &["--static", "\\.css$"],
        &["PASSED", "REJECTED", "-"],
    );
    let notes = v["policies"][0]["nginx"]["notes"].to_string();
    assert!(
        notes.contains("location /: try_files passes a request to /index.php?$args"),
        "{notes}"
    );
}

#[test]
fn a_logged_uri_is_the_final_uri_and_rows_go_by_the_request() {
    // The log holds $uri (nginx's URI after rewrites and internal
    // redirects) beside $request: routing, the query and `$arg_*` keys
    // come from the request's target.
    let format = "$remote_addr $msec $request_time $host $uri \"$request\" $limit_req_status";
    let ng = Nginx::start_logging(
        "limit_req_zone $arg_x zone=byarg:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr zone=ip:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT; root ROOT;\n\
           location /q/ { rewrite ^/q/(\\w+)$ /a/?x=$1 last; }\n\
           location /d/ { rewrite ^/d/ /a/? last; }\n\
           location /b/ { limit_req zone=ip burst=1 nodelay; rewrite ^/b/ /a/ break; empty_gif; }\n\
           location /a/ { limit_req zone=byarg burst=1 nodelay; empty_gif; }\n\
           location / { try_files $uri /index.php?$args; }\n\
           location ~ \\.php$ { limit_req zone=ip burst=1 nodelay; empty_gif; } }\n",
        &[],
        format,
    );
    let mut reqs = burst(3, "h", "/q/a", "10.8.0.1");
    reqs.extend(burst(2, "h", "/d/?x=a", "10.8.0.1"));
    reqs.extend(burst(3, "h", "/a/?x=k", "10.8.0.1"));
    reqs.extend(burst(3, "h", "/b/", "10.8.0.2"));
    reqs.extend(burst(3, "h", "/page?x=1", "10.8.0.3"));
    let log = ng.send(&reqs);
    agrees_logged(
        &log,
        format,
        &ng.main_conf(),
        &[],
        &["PASSED", "REJECTED", "-"],
    );
}

/// A free loopback port.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn servers_are_chosen_by_the_port_a_request_came_in_on() {
    // The Debian layout: a server on one port that only redirects, beside
    // the limited server of the same name on another; one access log with
    // $server_port.
    let format =
        "$remote_addr $msec $request_time $host $server_port \"$request\" $limit_req_status";
    let other = free_port();
    let ng = Nginx::start_logging(
        &format!(
            "limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;\n\
             server {{ listen 127.0.0.1:{other}; server_name www.example.org;\n\
               return 301 https://$host$request_uri; }}\n\
             server {{ listen 127.0.0.1:PORT default_server; server_name www.example.org;\n\
               location / {{ limit_req zone=one burst=1 nodelay; empty_gif; }} }}\n"
        ),
        &[],
        format,
    );
    let mut n = 0;
    for (port, from) in [
        (other, "10.4.0.1"),
        (ng.port, "10.4.0.1"),
        (other, "10.4.0.1"),
        (ng.port, "10.4.0.1"),
        (other, "10.4.0.1"),
        (ng.port, "10.4.0.1"),
        (ng.port, "10.4.0.2"),
    ] {
        ng.request_to(port, "GET", "HTTP/1.1", "www.example.org", "/", from);
        n += 1;
    }
    let log = ng.logged(n);
    let v = agrees_logged(
        &log,
        format,
        &ng.main_conf(),
        &[],
        &["PASSED", "REJECTED", "-"],
    );
    // The two servers are told apart by their ports.
    let locs = v["policies"][0]["nginx"]["locations"].to_string();
    assert!(
        locs.contains(&format!("www.example.org:{other} server")),
        "{locs}"
    );
    assert!(
        locs.contains(&format!("www.example.org:{} location /", ng.port)),
        "{locs}"
    );
    // Without $server_port the report says rows were routed by name alone.
    let unnamed = format.replace("$server_port", "$port_not_named");
    let out = Drip::audit()
        .args([s(&log), "--log-format", &unnamed])
        .args(["--nginx-conf", s(&ng.main_conf())])
        .run();
    assert!(
        out.stderr
            .contains("the log has no $server_port: rows are routed by name alone"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_geo_whitelist() {
    // The whitelist of nginx's rate-limiting guide: geo, then a map to an
    // empty key for the listed networks.
    let ng = Nginx::start(
        "geo $limit {\n default 1;\n 10.0.0.0/8 0;\n 192.168.0.0/24 0;\n 10.9.0.0/16 1;\n}\n\
         map $limit $limit_key {\n 0 \"\";\n 1 $binary_remote_addr;\n}\n\
         limit_req_zone $limit_key zone=req_zone:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT;\n\
           location / { limit_req zone=req_zone burst=1 nodelay; empty_gif; } }\n",
        &[],
    );
    let mut reqs = Vec::new();
    for from in [
        "10.3.0.1",
        "192.168.0.7",
        "192.168.1.7",
        "10.9.1.1",
        "172.16.0.1",
    ] {
        reqs.extend(burst(4, "h", "/", from));
    }
    let log = ng.send(&reqs);
    let v = agrees(&log, &ng.main_conf(), &[], &["PASSED", "REJECTED", "-"]);
    let l = &v["policies"][0]["nginx"]["locations"][0];
    assert_eq!(l["location"], "location /", "{v}");
    assert_eq!(
        (
            l["passed"].clone(),
            l["rejected"].clone(),
            l["unlimited"].clone()
        ),
        (6.into(), 6.into(), 8.into()),
        "{l}"
    );
}

#[test]
fn rewrites_and_returns_in_the_rewrite_phase() {
    // Server-level rewrites run before a location is chosen; a location's
    // `last` (or a change without flag) chooses again; `break` stays;
    // a redirect or `return` answers before limit_req.
    let ng = Nginx::start(
        "limit_req_zone $binary_remote_addr zone=new:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr zone=root:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr zone=brk:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr zone=keep:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT default_server; server_name h;\n\
           rewrite ^/old/(\\w+)/(\\w+)$ /new/$2/$1 last;\n\
           rewrite ^/gone/ /x permanent;\n\
           location / { limit_req zone=root burst=5 nodelay; empty_gif; }\n\
           location /new/ { limit_req zone=new burst=1 nodelay; empty_gif; }\n\
           location /l/ { rewrite ^/l/(.*)$ /new/$1?x=1 last; empty_gif; }\n\
           location /b/ { rewrite ^/b/(.*)$ /new/$1 break;\n\
             limit_req zone=brk burst=2 nodelay; empty_gif; }\n\
           location /r/ { rewrite ^/r/a$ /new/a redirect; limit_req zone=brk nodelay; empty_gif; }\n\
           location /n/ { rewrite ^/n/(.*)$ /m/$1; rewrite ^/m/(.*)$ /new/$1; empty_gif; }\n\
           location /loop/ { rewrite ^ /loop/x last; }\n\
           location /c/ { rewrite ^/c/(\\w*)y$ /c/$1 last;\n\
             limit_req zone=keep burst=5 nodelay; empty_gif; }\n\
         }\n\
         server { listen 127.0.0.1:PORT; server_name s2;\n\
           rewrite ^/keep/ /k last;\n\
           return 404;\n\
           location / { limit_req zone=keep burst=1 nodelay; empty_gif; }\n\
         }\n",
        &[],
    );
    let mut reqs = Vec::new();
    // Server-level rewrite with captures into /new/: 2 admitted, 2 rejected.
    reqs.extend(burst(4, "h", "/old/a/b?q=1", "10.4.0.1"));
    // A server-level redirect: never limited.
    reqs.extend(burst(3, "h", "/gone/x", "10.4.0.1"));
    // `last` into /new/, the query string replaced: 2 admitted, 2 rejected.
    reqs.extend(burst(4, "h", "/l/p?y=2", "10.4.0.2"));
    // `break` stays in /b/ (burst 2), not /new/ (burst 1).
    reqs.extend(burst(4, "h", "/b/p", "10.4.0.3"));
    // A redirect answers /r/a; /r/b is limited.
    reqs.extend(burst(3, "h", "/r/a", "10.4.0.4"));
    reqs.extend(burst(3, "h", "/r/b", "10.4.0.4"));
    // Two rewrites without a flag, then /new/ is chosen again.
    reqs.extend(burst(3, "h", "/n/p", "10.4.0.5"));
    // A rewrite cycle: nginx answers 500 after 10 changes.
    reqs.extend(burst(2, "h", "/loop/", "10.4.0.6"));
    // 10 changes are allowed; the 11th is the 500.
    reqs.push(("h", "/c/yyyyyyyyyy", "10.4.0.6"));
    reqs.push(("h", "/c/yyyyyyyyyyy", "10.4.0.6"));
    // The server-level `return` after a `rewrite … last` it stops.
    reqs.extend(burst(3, "s2", "/keep/a", "10.4.0.7"));
    reqs.extend(burst(3, "s2", "/other", "10.4.0.7"));
    let log = ng.send(&reqs);
    let v = agrees(&log, &ng.main_conf(), &[], &["PASSED", "REJECTED", "-"]);
    let locs = v["policies"][0]["nginx"]["locations"].as_array().unwrap();
    let row = |name: &str| {
        let l = locs
            .iter()
            .find(|l| l["location"] == name)
            .unwrap_or_else(|| panic!("no {name} in {locs:?}"));
        let n = |k: &str| l[k].as_u64().unwrap();
        (n("passed"), n("rejected"), n("unlimited"))
    };
    assert_eq!(row("h location /new/"), (6, 5, 0));
    assert_eq!(row("h location /b/"), (3, 1, 0));
    assert_eq!(row("h location /r/"), (1, 2, 0));
    assert_eq!(
        row("h location /r/, answered by its rewrite phase"),
        (0, 0, 3)
    );
    assert_eq!(row("h server, answered by its rewrite phase"), (0, 0, 3));
    assert_eq!(
        row("answered 500 by nginx (rewrite cycle) before any limit"),
        (0, 0, 3)
    );
    assert_eq!(row("h location /c/"), (1, 0, 0));
    assert_eq!(row("s2 location /"), (2, 1, 0));
    assert_eq!(row("s2 server, answered by its rewrite phase"), (0, 0, 3));
}

#[test]
fn targets_nginx_refuses_with_400() {
    // nginx's URI parser answers these 400 before any phase: they are
    // never limited, whatever location their normalized path would take.
    let ng = Nginx::start(
        "limit_req_zone $binary_remote_addr zone=all:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT;\n\
           location / { limit_req zone=all burst=1 nodelay; empty_gif; }\n\
           location /api/ { empty_gif; } }\n",
        &[],
    );
    let mut reqs = Vec::new();
    for t in [
        "/x",
        "/%2e%2e/x",
        "/a/../../x",
        "/%00",
        "/bad%zz",
        "/x%2",
        "/..",
        "/a\x01b",
        "/a/..",
        "/p?%zz",
        "/x",
        "/x",
    ] {
        reqs.push(("h", t, "10.5.0.1"));
    }
    let log = ng.send(&reqs);
    let v = agrees(&log, &ng.main_conf(), &[], &["PASSED", "REJECTED", "-"]);
    let n = &v["policies"][0]["nginx"];
    let locs = n["locations"].as_array().unwrap();
    let bad = locs
        .iter()
        .find(|l| l["location"] == "answered 400 by nginx before any limit")
        .unwrap_or_else(|| panic!("{n}"));
    assert_eq!(bad["unlimited"], 7, "{n}");
    assert_eq!(bad["limits"], "400 (never limited)", "{n}");
    assert_eq!(
        (locs[0]["passed"].clone(), locs[0]["rejected"].clone()),
        (2.into(), 3.into()),
        "{n}"
    );
}

#[test]
fn keys_read_the_uri_and_query_string_rewrites_leave() {
    // `$arg_x` and `$uri` in a key are the rewritten ones: a replacement's
    // query string comes first, the request's is appended unless the
    // replacement ends with `?`.
    let ng = Nginx::start(
        "limit_req_zone $arg_x zone=byarg:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr$uri zone=byuri:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT;\n\
           location /q/ { rewrite ^/q/(\\w+)$ /a/?x=$1 last; }\n\
           location /d/ { rewrite ^/d/ /a/? last; }\n\
           location /k/ { rewrite ^/k/ /a/ last; }\n\
           location /a/ { limit_req zone=byarg burst=1 nodelay; empty_gif; }\n\
           location /u/ { rewrite ^/u/(\\w+)/(\\w+)$ /v/$2 last; }\n\
           location /v/ { limit_req zone=byuri burst=1 nodelay; empty_gif; } }\n",
        &[],
    );
    let mut reqs = burst(3, "h", "/q/a", "10.6.0.1");
    reqs.extend(burst(2, "h", "/q/b?x=z", "10.6.0.1"));
    reqs.extend(burst(2, "h", "/d/?x=a", "10.6.0.1"));
    reqs.extend(burst(1, "h", "/k/?x=a", "10.6.0.1"));
    for t in ["/u/1/p", "/u/2/p", "/u/3/p"] {
        reqs.push(("h", t, "10.6.0.2"));
    }
    let log = ng.send(&reqs);
    let v = agrees(&log, &ng.main_conf(), &[], &["PASSED", "REJECTED", "-"]);
    let locs = v["policies"][0]["nginx"]["locations"].as_array().unwrap();
    let row = |name: &str| {
        let l = locs.iter().find(|l| l["location"] == name).unwrap();
        let n = |k: &str| l[k].as_u64().unwrap();
        (n("passed"), n("rejected"), n("unlimited"))
    };
    assert_eq!(row("location /a/"), (4, 2, 2), "{locs:?}");
    assert_eq!(row("location /v/"), (2, 1, 0), "{locs:?}");
}

#[test]
fn many_servers_locations_and_key_variables_need_no_column_cap() {
    // Routing reads the host, address, port and request; three zones key
    // by four headers, the client and an argument; the status is verified:
    // eleven log fields or so, more than an event holds ids for.
    let format = "$remote_addr $msec $request_time $host $server_addr $server_port \"$request\" \
                  $http_x_a $http_x_b $http_x_c $http_x_d $http_x_e $http_x_f $limit_req_status";
    let ng = Nginx::start_logging(
        "limit_req_zone $http_x_a$http_x_b$http_x_e zone=ab:1m rate=1r/m;\n\
         limit_req_zone $binary_remote_addr$http_x_c$http_x_f zone=ipc:1m rate=1r/m;\n\
         limit_req_zone $http_x_d:$arg_t zone=dt:1m rate=1r/m;\n\
         server { listen 127.0.0.1:PORT; server_name a.test;\n\
           location = /login { limit_req zone=ab burst=1 nodelay; empty_gif; }\n\
           location /api/ { limit_req zone=ipc burst=1 nodelay; empty_gif;\n\
             location /api/v2/ { limit_req zone=dt nodelay; empty_gif; } } }\n\
         server { listen 127.0.0.1:PORT; server_name *.b.test;\n\
           location / { limit_req zone=dt burst=1 nodelay; empty_gif; } }\n\
         server { listen 127.0.0.1:PORT; server_name ~^c\\d+\\.test$;\n\
           location / { limit_req zone=ab nodelay; limit_req zone=ipc burst=2 nodelay; empty_gif; } }\n",
        &[],
        format,
    );
    let hdr = |a: &str, b: &str, c: &str, d: &str| {
        let (e, f) = (a.to_uppercase(), c.to_uppercase());
        [
            ("X-A", a),
            ("X-B", b),
            ("X-C", c),
            ("X-D", d),
            ("X-E", &e),
            ("X-F", &f),
        ]
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(n, v)| format!("{n}: {v}\r\n"))
        .collect::<String>()
    };
    let reqs = [
        ("a.test", "/login", "10.9.0.1", hdr("k", "1", "", "")),
        ("a.test", "/login", "10.9.0.2", hdr("k", "1", "", "")),
        ("a.test", "/login", "10.9.0.1", hdr("k", "1", "", "")),
        ("a.test", "/login", "10.9.0.1", hdr("k", "2", "", "")),
        ("a.test", "/login", "10.9.0.1", hdr("", "", "", "")),
        ("a.test", "/api/x", "10.9.0.1", hdr("", "", "c", "")),
        ("a.test", "/api/x", "10.9.0.1", hdr("", "", "c", "")),
        ("a.test", "/api/x", "10.9.0.1", hdr("", "", "c", "")),
        ("a.test", "/api/x", "10.9.0.1", hdr("", "", "e", "")),
        ("a.test", "/api/x", "10.9.0.1", hdr("", "", "e", "")),
        ("a.test", "/api/v2/q?t=1", "10.9.0.1", hdr("", "", "", "d")),
        ("a.test", "/api/v2/q?t=1", "10.9.0.1", hdr("", "", "", "d")),
        ("a.test", "/api/v2/q?t=2", "10.9.0.1", hdr("", "", "", "d")),
        ("x.b.test", "/p?t=1", "10.9.0.3", hdr("", "", "", "d")),
        ("y.b.test", "/p?t=1", "10.9.0.4", hdr("", "", "", "d")),
        ("y.b.test", "/p?t=1", "10.9.0.4", hdr("", "", "", "d")),
        ("c7.test", "/", "10.9.0.5", hdr("k", "1", "z", "")),
        ("c7.test", "/", "10.9.0.5", hdr("k", "9", "z", "")),
        ("c8.test", "/", "10.9.0.5", hdr("k", "8", "z", "")),
        ("c8.test", "/", "10.9.0.5", hdr("k", "8", "z", "")),
        ("c9.test", "/", "10.9.0.6", hdr("", "", "z", "")),
    ];
    for (host, target, from, headers) in &reqs {
        ng.get_with(host, target, from, headers);
    }
    let log = ng.logged(reqs.len());
    let v = agrees_logged(
        &log,
        format,
        &ng.main_conf(),
        &[],
        &["PASSED", "REJECTED", "-"],
    );
    let locs = v["policies"][0]["nginx"]["locations"].to_string();
    for l in ["a.test location /api/v2/", "*.b.test location /", "c\\\\d+"] {
        assert!(locs.contains(l), "{l} in {locs}");
    }
    // A policy keyed by the client beside it, and the config sized.
    let beside = Drip::audit()
        .args([s(&log), "--log-format", format, "--nginx-conf"])
        .args([s(&ng.main_conf()), "--key-column", "remote_addr"])
        .args(["-p", "sliding-log:limit=2,window=1h", "-f", "json", "-q"])
        .json();
    let fixed = &beside["policies"][0];
    assert_eq!(fixed["admitted"], 9, "{fixed}");
    assert_eq!(fixed["top_keys"][0]["key"], "10.9.0.1", "{fixed}");
    assert_eq!(fixed["top_keys"][0]["dropped"], 10, "{fixed}");
    let sized = Drip::size()
        .args([s(&log), "--log-format", format, "--nginx-conf"])
        .args([
            s(&ng.main_conf()),
            "--max-drop-rate",
            "0",
            "--max-change",
            "none",
            "-q",
        ])
        .run();
    assert_eq!(sized.code, 0, "{}", sized.stderr);
    assert!(sized.stdout.contains("zone=ipc"), "{}", sized.stdout);
}

#[test]
fn a_same_millisecond_group_agrees_in_the_order_nginx_took_it() {
    // One client's x, a2, b, c come in within one millisecond: x passes
    // zone z0, a2 is delayed by it (and logged 100 ms later, last), b is
    // refused by z0 before reaching z1, so c passes z1. In the log's order
    // b would be delayed and c refused: only another order of the group
    // gives the logged statuses.
    let ng = Nginx::start(
        "limit_req_zone $binary_remote_addr zone=z0:1m rate=10r/s;\n\
         limit_req_zone $binary_remote_addr zone=z1:1m rate=10r/s;\n\
         server { listen 127.0.0.1:PORT;\n\
           location /a { limit_req zone=z0 burst=1; empty_gif; }\n\
           location /b { limit_req zone=z0 burst=1; limit_req zone=z1 nodelay; empty_gif; }\n\
           location /c { limit_req zone=z1 nodelay; empty_gif; } }\n",
        &[],
    );
    let mut sent = 0;
    let mut got = None;
    for attempt in 1..=8 {
        let from = format!("10.6.0.{attempt}");
        let mut conns: Vec<TcpStream> = (0..4)
            .map(|_| TcpStream::connect(("127.0.0.1", ng.port)).unwrap())
            .collect();
        thread::sleep(Duration::from_millis(50));
        for (c, target) in conns.iter_mut().zip(["/a?x", "/a?a2", "/b", "/c"]) {
            let req = format!(
                "GET {target} HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: {from}\r\nConnection: close\r\n\r\n"
            );
            c.write_all(req.as_bytes()).unwrap();
        }
        for mut c in conns {
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut out = Vec::new();
            let _ = c.read_to_end(&mut out);
        }
        sent += 4;
        let log = ng.logged(sent);
        let text = std::fs::read_to_string(&log).unwrap();
        // (arrival ms, target, status) of this attempt's rows, as logged.
        let rows: Vec<(i64, String, String)> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{from} ")))
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                let ms = |t: &str| (t.parse::<f64>().unwrap() * 1000.0).round() as i64;
                (ms(f[1]) - ms(f[2]), f[5].to_string(), f[7].to_string())
            })
            .collect();
        let wanted = [
            ("/a?x", "PASSED"),
            ("/b", "REJECTED"),
            ("/c", "PASSED"),
            ("/a?a2", "DELAYED"),
        ];
        let one_ms = rows.iter().all(|r| r.0 == rows[0].0);
        let as_wanted = rows.iter().map(|r| (r.1.as_str(), r.2.as_str())).eq(wanted);
        if one_ms && as_wanted {
            got = Some(log);
            break;
        }
    }
    let log =
        got.expect("nginx took no 4 requests within one millisecond in the order sent in 8 tries");
    let v = agrees(
        &log,
        &ng.main_conf(),
        &[],
        &["PASSED", "REJECTED", "DELAYED"],
    );
    let verify = &v["policies"][0]["nginx"]["verify"];
    assert!(verify["reordered"].as_u64().unwrap() >= 4, "{verify}");
}
