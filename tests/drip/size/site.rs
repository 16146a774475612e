//! A week of an ordinary site with two incidents in it — a credential-
//! stuffing bot (3 POST /login a second for 10 minutes) and a scraper (15
//! GET /api/search a second for 60 s) — and its config (a per-client limit
//! at server level, one on /api/, one on /login that delays): the sizing
//! is for the clients, the bots are named and refused, and no line moves
//! further than the guard allows.

use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::common::{Drip, Scratch, heavy, s};

const CONF: &str = "events {}
http {
    limit_req_zone $binary_remote_addr zone=perip:1m rate=10r/s;
    limit_req_zone $binary_remote_addr zone=api:1m rate=5r/s;
    limit_req_zone $binary_remote_addr zone=login:1m rate=5r/m;
    server {
        listen 127.0.0.1:8080;
        limit_req zone=perip burst=50 nodelay;
        location / { }
        location /api/ { limit_req zone=api burst=10 nodelay; }
        location = /login { limit_req zone=login burst=3; }
    }
}
";

const BOT: &str = "203.0.113.7";
const SCRAPER: &str = "198.51.100.9";

/// A small deterministic generator (xorshift64*).
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) % n
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

/// 60 clients over 7 days: each visit loads 1–4 pages of 2–8 images
/// (some in the page's second, some a second later), sometimes a search,
/// sometimes a login; the bot on day 3, the scraper on day 5. Rotated as
/// logrotate leaves it: `access.log.1` the days before, `access.log` the
/// rest.
pub(super) fn site(dir: &Scratch) -> (Vec<PathBuf>, PathBuf) {
    const DAY: u64 = 86_400;
    let mut dice = Dice(0x5eed_1234_abcd_0001);
    let mut rows: Vec<(u64, String, &str)> = Vec::new();
    let pages = ["/", "/about", "/blog", "/shop"];
    let images = ["/i/0.png", "/i/1.png", "/i/2.png", "/i/3.png"];
    for c in 0..60u64 {
        let ip = format!("10.0.{}.{}", c / 250, c % 250);
        for d in 0..7 {
            for _ in 0..dice.range(1, 6) {
                let mut t = d * DAY + dice.range(0, DAY - 400);
                for _ in 0..dice.range(1, 4) {
                    rows.push((t, ip.clone(), pages[dice.below(4) as usize]));
                    for _ in 0..dice.range(2, 8) {
                        let img = images[dice.below(4) as usize];
                        rows.push((t + dice.below(3).saturating_sub(1), ip.clone(), img));
                    }
                    if dice.below(10) < 3 {
                        rows.push((t + 2, ip.clone(), "/api/search?q=x"));
                    }
                    t += dice.range(5, 40);
                }
                if dice.below(10) < 2 {
                    rows.push((t, ip.clone(), "/login"));
                }
            }
        }
    }
    for sec in 0..600 {
        for _ in 0..3 {
            rows.push((3 * DAY + 36_000 + sec, BOT.into(), "/login"));
        }
    }
    for sec in 0..60 {
        for _ in 0..15 {
            rows.push((5 * DAY + 50_000 + sec, SCRAPER.into(), "/api/search?q=y"));
        }
    }
    rows.sort_by_key(|r| r.0);
    let start = 1_795_000_000u64;
    let (mut old, mut new) = (String::new(), String::new());
    for (t, ip, path) in rows {
        let method = if path == "/login" { "POST" } else { "GET" };
        let when = stamp(start + t);
        let out = if t < 4 * DAY { &mut old } else { &mut new };
        writeln!(
            out,
            "{ip} - - [{when}] \"{method} {path} HTTP/1.1\" 200 512 \"-\" \"Mozilla/5.0\""
        )
        .unwrap();
    }
    let logs = vec![dir.join("access.log.1"), dir.join("access.log")];
    std::fs::write(&logs[0], old).unwrap();
    std::fs::write(&logs[1], new).unwrap();
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, CONF).unwrap();
    (logs, conf)
}

/// `[01/Dec/2026:10:00:00 +0000]`'s inside for a Unix time (UTC).
fn stamp(unix: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = (unix / 86_400) as i64 + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let secs = unix % 86_400;
    format!(
        "{day:02}/{}/{year}:{:02}:{:02}:{:02} +0000",
        MONTHS[(month - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

pub(super) fn run(args: &[&str]) -> (i32, Value, String) {
    let _busy = heavy();
    let dir = Scratch::new();
    let (logs, conf) = site(&dir);
    let mut all: Vec<&str> = vec!["size"];
    all.extend(logs.iter().map(|p| s(p)));
    if !args.contains(&"-p") {
        all.extend(["--nginx-conf", s(&conf)]);
    }
    all.extend(["--max-drop-rate", "0.1", "-q", "-f", "json"]);
    all.extend_from_slice(args);
    let out = Drip::new().args(&all).run();
    assert!(matches!(out.code, 0 | 1), "{}", out.stderr);
    let v = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    (out.code, v, out.stderr)
}

pub(super) fn line<'a>(v: &'a Value, zone: &str) -> &'a Value {
    let limits = v["limits"].as_array().unwrap();
    limits.iter().find(|l| l["zone"] == zone).unwrap()
}

/// The outliers' keys of a report part, busiest first.
fn outlier_keys(o: &Value) -> Vec<String> {
    o["keys"]
        .as_array()
        .map(|k| {
            k.iter()
                .map(|k| k["key"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_config_is_sized_for_the_clients_and_the_bots_are_named() {
    let (code, v, _) = run(&[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(outlier_keys(&line(&v, "login")["outliers"]), [BOT]);
    assert_eq!(outlier_keys(&line(&v, "api")["outliers"]), [SCRAPER]);
    for l in v["limits"].as_array().unwrap() {
        // Every line meets the targets on the rows it covers, and nobody
        // ordinary is newly hurt; no line moves more than 4× either way.
        assert!(l["after"]["dropped_pct"].as_f64().unwrap() <= 0.1, "{l}");
        assert_eq!(l["change"]["newly_hurt"], 0, "{l}");
        for f in ["rate_factor", "burst_factor"] {
            let x = l["change"][f].as_f64().unwrap();
            assert!((0.25..=4.0).contains(&x), "{f}: {l}");
        }
        // The bots are refused, as written and sized: the limits at work.
        for o in l["outliers"]["keys"].as_array().into_iter().flatten() {
            assert!(
                o["refused"].as_u64().unwrap() > o["requests"].as_u64().unwrap() / 2,
                "{o}"
            );
        }
    }
    // The login limit is not loosened to let the bot in; the per-client
    // limit, met as written, is kept.
    let login = line(&v, "login");
    assert_eq!(
        (login["rate"].as_str(), login["burst"].as_u64()),
        (Some("5r/m"), Some(3))
    );
    let perip = line(&v, "perip");
    assert_eq!(
        (perip["rate"].as_str(), perip["burst"].as_u64()),
        (Some("10r/s"), Some(50))
    );
    assert!(
        perip["change"]["kept"]
            .as_str()
            .unwrap()
            .starts_with("meets the targets as written")
    );
}

#[test]
fn kept_outliers_set_the_limits_only_past_the_guard() {
    // Sized for everyone, the bots would set the login and api limits:
    // kept as written, with the --max-change each would need.
    let (code, v, stderr) = run(&["--keep-outliers"]);
    assert_eq!(code, 1, "{v}");
    assert!(stderr.contains("beyond --max-change"), "{stderr}");
    for zone in ["login", "api"] {
        let l = line(&v, zone);
        assert_eq!(l["outliers"]["kept"], true, "{l}");
        let missed = l["missed"].as_str().unwrap();
        assert!(missed.contains("allow it with --max-change "), "{missed}");
    }
    // Allowed, the login limit loosens more than 4× to admit the bot, and
    // the report says so in its change and outliers.
    let (code, v, _) = run(&["--keep-outliers", "--max-change", "none"]);
    assert_eq!(code, 0, "{v}");
    let login = line(&v, "login");
    assert!(
        login["change"]["rate_factor"].as_f64().unwrap() > 4.0,
        "{login}"
    );
    assert!(
        login["change"]["text"].as_str().unwrap().contains("looser"),
        "{login}"
    );
    let bot = &login["outliers"]["keys"][0];
    assert!(bot["refused"].as_u64().unwrap() < bot["refused_as_written"].as_u64().unwrap());
}

#[test]
fn tighten_shows_what_the_last_request_would_cost() {
    let (code, v, _) = run(&["--tighten", "--max-change", "none"]);
    assert_eq!(code, 0, "{v}");
    let perip = line(&v, "perip");
    let change = &perip["change"];
    assert!(change["rate_factor"].as_f64().unwrap() < 0.25, "{change}");
    assert!(
        change["text"].as_str().unwrap().contains("tighter"),
        "{change}"
    );
    assert!(change["newly_hurt"].as_u64().unwrap() > 0, "{change}");
    // Without the raise, the line is kept and the flag named.
    let (_, v, _) = run(&["--tighten"]);
    let kept = line(&v, "perip")["change"]["kept"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(kept.contains("--max-change"), "{kept}");
}

#[test]
fn a_policy_sizing_refuses_the_bots_and_names_them() {
    let key = ["--key-column", "remote_addr"];
    let (code, v, _) = run(&[&key[..], &["-p", "nginx:nodelay"]].concat());
    assert_eq!(code, 0, "{v}");
    let o = &v["outliers"];
    let mut named = outlier_keys(o);
    named.sort();
    assert_eq!(named, [SCRAPER, BOT], "{o}");
    for k in o["keys"].as_array().unwrap() {
        assert!(k["refused"].as_u64().unwrap() > 0, "{k}");
    }
    // The targets were checked without them, and that is said.
    let checked = &v["recommended"]["checked"];
    assert_eq!(
        checked["requests"].as_u64().unwrap(),
        v["recommended"]["requests"].as_u64().unwrap() - 2700,
        "{checked}"
    );
    assert!(checked["drop_pct"].as_f64().unwrap() <= 0.1, "{checked}");

    // Delaying, with its 1 s wait target: the scraper is refused, both named.
    let (_, v, _) = run(&[&key[..], &["-p", "nginx"]].concat());
    assert_eq!(outlier_keys(&v["outliers"]).len(), 2, "{v}");
    let scraper = v["outliers"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == SCRAPER)
        .unwrap();
    assert!(scraper["refused"].as_u64().unwrap() > 0, "{scraper}");

    // Sized for everyone: no outliers left out, both still named.
    let (_, v, _) = run(&[&key[..], &["-p", "nginx:nodelay", "--keep-outliers"]].concat());
    assert_eq!(v["outliers"]["kept"], true);
    assert!(v["recommended"]["checked"].is_null(), "{v}");
}

#[test]
fn a_route_key_has_no_outliers() {
    // The most requested URL is the site's, not an abuser.
    let (_, v, _) = run(&["--key-column", "uri", "-p", "gcra"]);
    assert!(v["outliers"].is_null(), "{}", v["outliers"]);
}

#[test]
fn a_pick_names_the_clients_it_refuses() {
    let dir = Scratch::new();
    let (logs, _) = site(&dir);
    let key = ["--key-column", "remote_addr"];
    let (_, v, _) = run(&[&key[..], &["-p", "nginx"]].concat());
    let rec = &v["recommended"];
    let named = rec["hurt_top"].as_array().unwrap();
    assert!(!named.is_empty() && named.len() <= 3, "{rec}");
    // The clients it refuses, not the bots (named apart as outliers), each
    // with what `drip audit` counts for it.
    let spec = rec["spec"].as_str().unwrap();
    let mut args: Vec<&str> = vec!["audit"];
    args.extend(logs.iter().map(|p| s(p)));
    args.extend(["--key-column", "remote_addr", "-p", spec, "--top", "100"]);
    args.extend(["-q", "-f", "json"]);
    let audit = Drip::new().args(&args).run().stdout_json();
    let top = audit["policies"][0]["top_keys"].as_array().unwrap().clone();
    for k in named {
        assert!(k["key"] != BOT && k["key"] != SCRAPER, "{k}");
        let row = top.iter().find(|t| t["key"] == k["key"]).unwrap();
        assert_eq!(row["dropped"], k["refused"], "{row} {k}");
        assert_eq!(row["requests"], k["requests"], "{row} {k}");
    }
    // Most refused first.
    let refused: Vec<u64> = named
        .iter()
        .map(|k| k["refused"].as_u64().unwrap())
        .collect();
    assert!(refused.windows(2).all(|w| w[0] >= w[1]), "{refused:?}");
}
