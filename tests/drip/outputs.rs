//! Standard output and standard error are outputs too: a run whose
//! stdout or stderr is one of its inputs (a log, an nginx config or one of
//! its includes, the input of `pace`), appended or not, is refused before
//! it writes, and the file is left as it was. Redirections are real: the
//! child's descriptors are opened on the files, as a shell's `>>` does.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::{Drip, Scratch, s};

/// A log of three clients, and a config that limits them (with an include).
fn site(tmp: &Scratch) -> (String, String, String) {
    let mut log = String::from("ts,client\n");
    for i in 0..60 {
        log.push_str(&format!("2024-05-01T12:00:{:02}Z,c{}\n", i, i % 3));
    }
    let log = tmp.write("log.csv", &log);
    let limits = tmp.write("limits.conf", "limit_req zone=perip burst=2 nodelay;\n");
    let conf = tmp.write(
        "nginx.conf",
        &format!(
            "events {{}}\nhttp {{\n    limit_req_zone $binary_remote_addr zone=perip:1m rate=1r/m;\n    server {{\n        listen 80;\n        location / {{ include {}; }}\n    }}\n}}\n",
            s(&limits)
        ),
    );
    (s(&log).into(), s(&conf).into(), s(&limits).into())
}

fn append(path: &str) -> File {
    OpenOptions::new().append(true).open(path).unwrap()
}

/// `drip ARGS >> out` (`onto_stderr`: `2>> out`), the other stream piped.
fn run_onto(args: &[&str], out: &str, onto_stderr: bool) -> Output {
    let mut cmd = Drip::new().command();
    cmd.args(args).stdin(Stdio::null());
    if onto_stderr {
        cmd.stdout(Stdio::piped()).stderr(append(out));
    } else {
        cmd.stdout(append(out)).stderr(Stdio::piped());
    }
    cmd.output().unwrap()
}

fn refused(args: &[&str], onto: &str, onto_stderr: bool, says: &str) {
    let before = std::fs::read(onto).unwrap();
    let out = run_onto(args, onto, onto_stderr);
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}{stdout}");
    assert_eq!(
        std::fs::read(onto).unwrap(),
        before,
        "{args:?} wrote {onto}"
    );
    if onto_stderr {
        assert!(stdout.is_empty(), "{stdout}");
    } else {
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_report_onto_the_config_it_checks_is_refused() {
    let tmp = Scratch::new();
    let (log, conf, limits) = site(&tmp);
    let audit = [
        "audit",
        &log,
        "--nginx-conf",
        &conf,
        "-q",
        "--nginx-var",
        "remote_addr=client",
    ];
    refused(
        &audit,
        &conf,
        false,
        "standard output (the report) is the same file as the config",
    );
    refused(&audit, &conf, true, "");
    // An included file, known once the config is read.
    refused(&audit, &limits, false, &format!("the config '{limits}'"));
    refused(&audit, &limits, true, "");
    refused(&audit, &log, true, "");
    let size = [
        "size",
        &log,
        "--nginx-conf",
        &conf,
        "--max-drop-rate",
        "1",
        "-q",
        "--nginx-var",
        "remote_addr=client",
    ];
    let patch: Vec<&str> = size.iter().copied().chain(["--patch", "-"]).collect();
    refused(
        &patch,
        &limits,
        false,
        "standard output (--patch -) is the same file as the config",
    );
    refused(&size, &conf, true, "");
    refused(&size, &limits, true, "");
}

#[test]
fn pace_onto_its_input_is_refused_and_both_streams_onto_one_file_are_fine() {
    let tmp = Scratch::new();
    let input = tmp.write("in.txt", "a\nb\n");
    let input = s(&input);
    refused(&["pace", "--rate", "1000/s", input], input, true, "");
    let (log, conf, _) = site(&tmp);
    // `> out 2>&1`: stdout and stderr are one file, not an input.
    let out = tmp.write("out.txt", "");
    let file = append(s(&out));
    let status = Drip::new()
        .command()
        .args(["audit", &log, "--nginx-conf", &conf])
        .args(["--nginx-var", "remote_addr=client"])
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("drip: ") && text.contains("perip"), "{text}");
    assert!(Path::new(&out).exists());
}
