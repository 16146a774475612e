//! `drip size LOG --nginx-conf nginx.conf` end to end on the NASA fixture:
//! a config of two zones and three locations (one with two `limit_req`
//! lines, one no row reaches), one zone and one line in included files.
//! The patch is applied by the real `patch -p1`, checked by the real
//! `nginx -t` (its own temporary prefix), and the patched config is
//! audited against the targets.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{Drip, Scratch, nginx_binary, s};

const LOG: &str = "fixtures/nasa_19950801.log.gz";

const MAIN: &str = "events { worker_connections 64; }
http {
    limit_req_zone $binary_remote_addr zone=perip:1m rate=1r/s;
    include limits/zones.conf;
    server {
        listen 127.0.0.1:8080;
        location /images/ {
            limit_req zone=perip burst=5;
        }
        location /shuttle/ {
            limit_req zone=perip burst=2 nodelay;
            include limits/shuttle.conf;
        }
        location /admin/ {
            limit_req zone=perurl;
        }
    }
}
";

/// The config in a folder of its own: nginx.conf and its includes.
fn config() -> Scratch {
    let d = Scratch::new();
    std::fs::create_dir_all(d.join("limits")).unwrap();
    std::fs::write(d.join("nginx.conf"), MAIN).unwrap();
    std::fs::write(
        d.join("limits/zones.conf"),
        "limit_req_zone $uri zone=perurl:32k rate=1r/s;\n",
    )
    .unwrap();
    std::fs::write(
        d.join("limits/shuttle.conf"),
        "# per URL\nlimit_req zone=perurl burst=10;\n",
    )
    .unwrap();
    d
}

fn size(conf: &Path, extra: &[&str]) -> crate::common::Out {
    let mut args = vec![
        "size",
        LOG,
        "--nginx-conf",
        s(conf),
        "--max-drop-rate",
        "0.1",
        "-q",
        // The patch's mechanics, sized as far as the targets ask (the
        // guards have tests of their own).
        "--tighten",
        "--max-change",
        "none",
    ];
    args.extend_from_slice(extra);
    Drip::new().args(&args).run()
}

/// `nginx -t` on `conf` with a temporary prefix: its exit status and output.
fn nginx_t(conf: &Path) -> (bool, String) {
    let prefix = Scratch::new();
    std::fs::create_dir_all(prefix.join("logs")).unwrap();
    let out = Command::new(nginx_binary())
        .args(["-t", "-p", s(&prefix), "-c", s(conf)])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run nginx ({e}): install it (Debian: apt-get install nginx-light)")
        });
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `audit --nginx-conf conf` with the size targets as thresholds.
fn audit_meets(conf: &Path) -> crate::common::Out {
    Drip::audit()
        .args([
            LOG,
            "--nginx-conf",
            s(conf),
            "--max-drop-rate",
            "0.1",
            "--max-wait",
            "1s",
            "-q",
        ])
        .run()
}

#[test]
fn the_patch_applies_passes_nginx_t_and_meets_the_targets() {
    let tmp = Scratch::new();
    let dir = config();
    let conf = dir.join("nginx.conf");
    // As written, the config misses the wait target (delays of 4 s).
    assert_eq!(audit_meets(&conf).code, 1);
    let patch = tmp.join("sized.patch");
    let out = size(&conf, &["--patch", s(&patch), "-f", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let diff = std::fs::read_to_string(&patch).unwrap();
    assert_eq!(v["patch"].as_str().unwrap(), diff);
    assert!(
        diff.contains("--- a/nginx.conf\n+++ b/nginx.conf\n")
            && diff.contains("--- a/limits/shuttle.conf\n")
            && diff.contains("-    limit_req_zone $binary_remote_addr zone=perip:1m rate=1r/s;\n"),
        "{diff}"
    );
    // Every sized line meets the targets on the rows it sees.
    let limits = v["limits"].as_array().unwrap();
    assert_eq!(limits.len(), 4, "{}", out.stdout);
    for l in limits.iter().filter(|l| l["tested"] == true) {
        let after = &l["after"];
        assert!(after["dropped_pct"].as_f64().unwrap() <= 0.1, "{l}");
        assert!(
            after["wait_max_ns"].as_u64().unwrap() <= 1_000_000_000,
            "{l}"
        );
        assert!(l["missed"].is_null(), "{l}");
    }
    let admin = limits
        .iter()
        .find(|l| l["locations"] == "location /admin/")
        .unwrap();
    assert_eq!(admin["tested"], false);
    assert_eq!(admin["burst"], admin["burst_today"]);
    // Applied by the real patch, accepted by the real nginx.
    let (ok, msg) = nginx_t(&conf);
    assert!(ok, "the config before: {msg}");
    let applied = Command::new("patch")
        .args(["-p1", "-i", s(&patch)])
        .current_dir(&dir)
        .output()
        .expect("patch(1) is installed (Debian: apt-get install patch)");
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stdout)
    );
    let (ok, msg) = nginx_t(&conf);
    assert!(ok, "{msg}");
    // Only the sized values changed: the comment and the rest are kept.
    let shuttle = std::fs::read_to_string(dir.join("limits/shuttle.conf")).unwrap();
    assert!(
        shuttle.starts_with("# per URL\nlimit_req zone=perurl"),
        "{shuttle}"
    );
    let out = audit_meets(&conf);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // The figures after are the audit's of the patched config: its drops
    // are the lines' drops, its longest wait the longest of theirs.
    let out = Drip::audit()
        .args([LOG, "--nginx-conf", s(&conf), "-q", "-f", "json"])
        .run();
    let audit: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let sum = |f: &'static str| limits.iter().map(move |l| l["after"][f].as_u64().unwrap());
    let p = &audit["policies"][0];
    assert_eq!(
        p["dropped"].as_u64(),
        Some(sum("dropped").sum::<u64>()),
        "{p}"
    );
    assert_eq!(
        p["wait"]["max_ns"].as_u64(),
        sum("wait_max_ns").max(),
        "{p}"
    );
    // Sized again, the patched config needs no change.
    let again = size(&conf, &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("nothing to change"),
        "{}",
        again.stdout
    );
}

#[test]
fn the_table_prints_the_patch_and_names_the_untested_location() {
    let dir = config();
    let out = size(&dir.join("nginx.conf"), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("--- a/nginx.conf")
            && out.stdout.contains(&format!(
                "patch -p1 < PATCH && nginx -t -c {}",
                dir.join("nginx.conf").display()
            ))
            && out.stdout.contains("untested: not sized")
            && out.stdout.contains(
                "(zone perurl, location /admin/): no row of the log reaches it: untested, not sized, left as written"
            ),
        "{}",
        out.stdout
    );
    let md = size(&dir.join("nginx.conf"), &["-f", "markdown"]);
    assert!(
        md.stdout.contains("| perip |") && md.stdout.contains("## Patch"),
        "{}",
        md.stdout
    );
}

#[test]
fn errors_are_one_line() {
    let dir = Scratch::new();
    let conf = dir.join("nginx.conf");
    std::fs::write(
        &conf,
        "events {}\nhttp { server { listen 8080; location / { } } }\n",
    )
    .unwrap();
    let out = size(&conf, &[]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("no limit_req in this config"),
        "{}",
        out.stderr
    );
    let dir = config();
    let conf = dir.join("nginx.conf");
    let out = size(&conf, &["-p", "nginx"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("-p does not go with --nginx-conf"),
        "{}",
        out.stderr
    );
}

#[test]
fn one_line_on_every_row_gets_the_pick_of_size_p() {
    let dir = Scratch::new();
    let conf = dir.join("nginx.conf");
    std::fs::write(
        &conf,
        "events {}\nhttp {\n    limit_req_zone $binary_remote_addr zone=ip:1m rate=1r/s;\n    server {\n        location / {\n            limit_req zone=ip burst=5 nodelay;\n        }\n    }\n}\n",
    )
    .unwrap();
    let out = size(&conf, &["-f", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let line = &v["limits"][0];
    let p = Drip::size()
        .args([
            LOG,
            "-p",
            "nginx:nodelay",
            "--key-column",
            "remote_addr",
            "--max-drop-rate",
            "0.1",
            "-q",
            "-f",
            "json",
        ])
        .run();
    let rec: serde_json::Value = serde_json::from_str(&p.stdout).unwrap();
    let rec = &rec["recommended"];
    assert_eq!(
        (line["rate"].as_str(), line["burst"].as_u64()),
        (rec["rate"].as_str(), rec["size"].as_u64()),
        "{line} {rec}"
    );
    assert_eq!(line["after"]["dropped"], rec["dropped"]);
    assert_eq!(line["after"]["seen"].as_u64(), Some(30969));
}

#[test]
fn the_patch_is_never_written_over_what_the_run_reads() {
    let tmp = Scratch::new();
    let dir = config();
    let conf = dir.join("nginx.conf");
    let included = dir.join("limits/shuttle.conf");
    let before = std::fs::read_to_string(&included).unwrap();
    let log = tmp.join("access.log.gz");
    std::fs::copy(LOG, &log).unwrap();
    for (target, says) in [
        (&included, "is the same file as the config"),
        (&dir.join("limits"), "is a folder"),
    ] {
        let out = size(&conf, &["--patch", s(target)]);
        assert_eq!(out.code, 2, "{}", out.stdout);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(says), "{}", out.stderr);
    }
    assert_eq!(std::fs::read_to_string(&included).unwrap(), before);
    // `--patch -`: the patch itself on standard output, no file named `-`.
    let json = size(&conf, &["-f", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let out = size(&conf, &["--patch", "-"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, v["patch"].as_str().unwrap());
    assert!(out.stdout.starts_with("--- a/limits/shuttle.conf\n"));
    assert!(!Path::new(env!("CARGO_MANIFEST_DIR")).join("-").exists());
}

/// `nginx.conf` including a symlinked site, a file by an absolute path
/// outside its folder, and files whose names hold a blank, a quote and a
/// newline; each holds a line the sizing changes.
fn scattered_config(top: &Scratch) -> (PathBuf, Vec<PathBuf>) {
    let dir = top.join("etc");
    for d in ["sites-available", "sites-enabled", "my dir", "odd"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::create_dir_all(top.join("shared")).unwrap();
    let zones = top.join("shared/zones.conf");
    std::fs::write(
        &zones,
        "limit_req_zone $binary_remote_addr zone=perip:1m rate=1r/s;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("nginx.conf"),
        format!(
            "events {{ worker_connections 64; }}\nhttp {{\n    include {};\n    server {{\n        listen 127.0.0.1:8080;\n        include sites-enabled/*;\n        include \"my dir/*.conf\";\n        include odd/*.conf;\n    }}\n}}\n",
            zones.display()
        ),
    )
    .unwrap();
    let site = dir.join("sites-available/app");
    std::fs::write(
        &site,
        "location /images/ {\n    limit_req zone=perip burst=1;\n}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("../sites-available/app", dir.join("sites-enabled/app")).unwrap();
    let spaced = dir.join("my dir/shuttle \"x\".conf");
    std::fs::write(
        &spaced,
        "location /shuttle/ {\n    limit_req zone=perip burst=1;\n}\n",
    )
    .unwrap();
    let odd = dir.join("odd/new\nline.conf");
    std::fs::write(&odd, "location / {\n    limit_req zone=perip burst=1;\n}\n").unwrap();
    (dir.join("nginx.conf"), vec![zones, site, spaced, odd])
}

/// `size --nginx-conf conf --patch sized.patch` run in a folder of its
/// own (a relative --patch), then the apply command the report prints run
/// from another folder (less its `nginx -t -c CONF`, which must name the
/// config given, made absolute; the test checks it on its own prefix):
/// the patch.
fn size_and_apply_as_printed(conf: &Path) -> String {
    let cwd = Scratch::new();
    let out = Drip::new()
        .command()
        .current_dir(&cwd)
        .args(["size", s(&std::fs::canonicalize(LOG).unwrap())])
        .args(["--nginx-conf", s(conf), "--max-drop-rate", "0.1", "-q"])
        .args(["--tighten", "--max-change", "none"])
        .args(["--patch", "sized.patch"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let apply = stdout
        .lines()
        .find_map(|l| l.split_once("; apply: "))
        .unwrap_or_else(|| panic!("{stdout}"))
        .1;
    let patch = cwd.join("sized.patch");
    let config = std::path::absolute(conf).unwrap();
    let check = format!(
        " && nginx -t -c {}",
        drip_core::quote::shell_word(s(&config))
    );
    let command = apply
        .strip_suffix(&check)
        .unwrap_or_else(|| panic!("{apply}: not ending {check}"));
    assert!(command.contains(s(&patch)), "{command}");
    let elsewhere = Scratch::new();
    // bash: a name holding a newline is printed as $'…'.
    let applied = Command::new("bash")
        .args(["-c", command])
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    assert!(
        applied.status.success(),
        "{command}: {}{}",
        String::from_utf8_lossy(&applied.stdout),
        String::from_utf8_lossy(&applied.stderr)
    );
    String::from_utf8_lossy(&std::fs::read(&patch).unwrap()).into_owned()
}

#[test]
fn a_debian_site_given_by_its_symlink_is_patched_where_it_lives() {
    let dir = Scratch::new();
    for d in ["sites-available", "sites-enabled"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(
        dir.join("nginx.conf"),
        "events {}\nhttp {\n    include sites-enabled/*;\n}\n",
    )
    .unwrap();
    let site = dir.join("sites-available/app");
    std::fs::write(
        &site,
        "limit_req_zone $binary_remote_addr zone=ip:1m rate=1r/s;\nserver {\n    listen 127.0.0.1:8080;\n    location / { limit_req zone=ip; }\n}\n",
    )
    .unwrap();
    let link = dir.join("sites-enabled/app");
    std::os::unix::fs::symlink("../sites-available/app", &link).unwrap();
    let before = std::fs::read_to_string(&site).unwrap();
    let diff = size_and_apply_as_printed(&link);
    assert!(diff.starts_with("--- a/app\n+++ b/app\n"), "{diff}");
    assert_ne!(std::fs::read_to_string(&site).unwrap(), before);
    assert!(link.is_symlink());
    let (ok, msg) = nginx_t(&dir.join("nginx.conf"));
    assert!(ok, "{msg}");
    let again = size(&link, &[]);
    assert!(
        again.stdout.contains("nothing to change"),
        "{}",
        again.stdout
    );
}

/// A config in a folder whose name holds a newline and a terminal escape:
/// the apply command is one line, and runs as printed.
#[test]
fn the_printed_command_runs_as_printed_for_a_folder_named_with_a_newline() {
    let tmp = Scratch::new();
    let dir = tmp.join("new\nline \x1b[2J'dir");
    std::fs::create_dir_all(dir.join("limits")).unwrap();
    let from = config();
    for f in ["nginx.conf", "limits/zones.conf", "limits/shuttle.conf"] {
        std::fs::copy(from.join(f), dir.join(f)).unwrap();
    }
    let diff = size_and_apply_as_printed(&dir.join("nginx.conf"));
    assert!(diff.contains("--- a/limits/shuttle.conf\n"), "{diff}");
    let shuttle = std::fs::read_to_string(dir.join("limits/shuttle.conf")).unwrap();
    assert_ne!(shuttle, "# per URL\nlimit_req zone=perurl burst=10;\n");
}

#[test]
fn the_printed_command_applies_the_whole_patch_wherever_the_files_are() {
    let tmp = Scratch::new();
    let (conf, files) = scattered_config(&tmp);
    let (ok, msg) = nginx_t(&conf);
    assert!(ok, "the config before: {msg}");
    let before: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let diff = size_and_apply_as_printed(&conf);
    assert!(
        diff.contains("--- a/shared/zones.conf\n")
            && diff.contains("--- a/etc/sites-available/app\n")
            && diff.contains("--- \"a/etc/my dir/shuttle \\\"x\\\".conf\"\n")
            && diff.contains("--- \"a/etc/odd/new\\nline.conf\"\n"),
        "{diff}"
    );
    for (f, old) in files.iter().zip(&before) {
        assert_ne!(&std::fs::read_to_string(f).unwrap(), old, "{}", f.display());
    }
    assert!(
        conf.parent()
            .unwrap()
            .join("sites-enabled/app")
            .is_symlink()
    );
    let (ok, msg) = nginx_t(&conf);
    assert!(ok, "{msg}");
    let again = size(&conf, &[]);
    assert!(
        again.stdout.contains("nothing to change"),
        "{}",
        again.stdout
    );
}

#[test]
fn two_limit_req_of_one_zone_on_one_line_are_refused() {
    let dir = Scratch::new();
    let conf = dir.join("nginx.conf");
    let text = |line: &str| {
        format!(
            "events {{}}\nhttp {{\n    limit_req_zone $binary_remote_addr zone=ip:1m rate=1r/s;\n    limit_req_zone $uri zone=u:1m rate=1r/s;\n    server {{\n        {line}\n    }}\n}}\n"
        )
    };
    std::fs::write(
        &conf,
        text("location /a { limit_req zone=ip; } location /b { limit_req zone=ip burst=50; }"),
    )
    .unwrap();
    let out = size(&conf, &[]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("nginx.conf:6:")
            && out
                .stderr
                .contains("put each limit_req on its own line to size it"),
        "{}",
        out.stderr
    );
    // Two zones on one line, or one limit_req and a comment, are told apart.
    for line in [
        "location /a { limit_req zone=ip; } location /b { limit_req zone=u burst=50; }",
        "location / { limit_req zone=ip; } # was: limit_req zone=ip burst=9;",
    ] {
        std::fs::write(&conf, text(line)).unwrap();
        let out = size(&conf, &[]);
        assert_eq!(out.code, 0, "{line}: {}", out.stderr);
    }
}

#[test]
fn an_untested_line_whose_zone_rate_moves_is_told_so() {
    // /nosuch/ never matches the log, but shares the zone that `/` sizes:
    // its burst stays, its rate is the zone's new one.
    let dir = Scratch::new();
    let conf = dir.join("nginx.conf");
    std::fs::write(
        &conf,
        "events {}\nhttp {\n    limit_req_zone $binary_remote_addr zone=ip:1m rate=1r/s;\n    server {\n        location /nosuch/ { limit_req zone=ip burst=2; }\n        location / { limit_req zone=ip; }\n    }\n}\n",
    )
    .unwrap();
    let out = size(&conf, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "(zone ip, location /nosuch/): no row of the log reaches it: untested and not sized; its burst is left as written, but its zone's rate changes from 1r/s to "
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn look_alike_text_and_latin1_bytes_are_kept_and_the_patch_passes_nginx_t() {
    // A Latin-1 comment (nginx reads bytes), a zone key that starts with
    // `rate=`, and `limit_req zone=perip burst=…` inside a quoted header
    // value before the real directive on its line.
    let mut main =
        b"events { worker_connections 64; }\nhttp {\n    # Zone f\xfcr Clients\n".to_vec();
    main.extend_from_slice(
        b"    limit_req_zone \"rate=$binary_remote_addr\" zone=perip:1m rate=1r/s;\n\
          \x20   server {\n\
          \x20       listen 127.0.0.1:8080;\n\
          \x20       location /images/ {\n\
          \x20           add_header X-Note \"limit_req zone=perip burst=99;\"; limit_req zone=perip burst=5; # \xe9t\xe9\n\
          \x20       }\n\
          \x20   }\n\
          }\n",
    );
    let d = Scratch::new();
    let conf = d.join("nginx.conf");
    std::fs::write(&conf, &main).unwrap();
    let patch = size_and_apply_as_printed(&conf);
    assert!(!patch.is_empty(), "nothing to change");
    let new = std::fs::read(&conf).unwrap();
    let (old_lines, new_lines): (Vec<&[u8]>, Vec<&[u8]>) = (
        main.split(|&b| b == b'\n').collect(),
        new.split(|&b| b == b'\n').collect(),
    );
    assert_eq!(old_lines.len(), new_lines.len());
    let mut changed = 0;
    for (a, b) in old_lines.iter().zip(&new_lines) {
        if a == b {
            continue;
        }
        changed += 1;
        // Only the numbers of rate= and burst= move; the rest is the same
        // bytes, the look-alikes included.
        let shape = |l: &[u8]| -> Vec<u8> {
            let text = String::from_utf8_lossy(l).into_owned();
            let mut out = Vec::new();
            for w in text.split(' ') {
                if w.starts_with("rate=") && !w.contains('$') {
                    out.extend_from_slice(b"rate=N;");
                } else if w.starts_with("burst=") && !w.contains("99") {
                    out.extend_from_slice(b"burst=N;");
                } else {
                    out.extend_from_slice(w.as_bytes());
                }
                out.push(b' ');
            }
            out
        };
        assert_eq!(
            shape(a),
            shape(b),
            "{}\n{}",
            String::from_utf8_lossy(a),
            String::from_utf8_lossy(b)
        );
    }
    assert!(changed > 0, "{patch}");
    assert!(
        new.windows(4).any(|w| w == b"f\xfcr "),
        "the Latin-1 byte is kept"
    );
    assert!(new.windows(4).any(|w| w == b"\xe9t\xe9\n"));
    let (ok, msg) = nginx_t(&conf);
    assert!(ok, "nginx -t: {msg}\n{patch}");
}

#[test]
fn a_snippet_included_under_two_names_is_one_line_and_one_diff() {
    // One snippet, included by a relative path, by an absolute one and
    // through a symlinked folder: nginx reads one file three times.
    let d = Scratch::new();
    std::fs::create_dir_all(d.join("snippets")).unwrap();
    std::fs::write(
        d.join("snippets/limit.conf"),
        "limit_req zone=perip burst=5;\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("snippets", d.join("linked")).unwrap();
    let abs = std::fs::canonicalize(d.join("snippets/limit.conf")).unwrap();
    let main = format!(
        "events {{ worker_connections 64; }}
http {{
    limit_req_zone $binary_remote_addr zone=perip:1m rate=1r/s;
    server {{
        listen 127.0.0.1:8080;
        location /images/ {{ include snippets/limit.conf; }}
        location /shuttle/ {{ include {}; }}
        location /history/ {{ include linked/limit.conf; }}
    }}
}}
",
        abs.display()
    );
    let conf = d.join("nginx.conf");
    std::fs::write(&conf, main).unwrap();
    let out = size(&conf, &["-f", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v = out.stdout_json();
    let limits = v["limits"].as_array().unwrap();
    assert_eq!(limits.len(), 1, "one line: {limits:?}");
    let locations = limits[0]["locations"].to_string();
    for l in ["/images/", "/shuttle/", "/history/"] {
        assert!(locations.contains(l), "{locations}");
    }
    let patch = size_and_apply_as_printed(&conf);
    assert_eq!(
        patch.matches("--- a/snippets/limit.conf\n").count(),
        1,
        "{patch}"
    );
    assert_eq!(
        patch.matches("limit.conf\n@@").count(),
        1,
        "one diff: {patch}"
    );
    let (ok, msg) = nginx_t(&conf);
    assert!(ok, "nginx -t: {msg}\n{patch}");
    let out = audit_meets(&conf);
    assert_eq!(out.code, 0, "{}\n{}\n{patch}", out.stdout, out.stderr);
}
