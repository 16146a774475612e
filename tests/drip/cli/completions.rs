//! `drip completions`: each generated script passes its shell's own syntax
//! check, and bash and fish really complete drip's subcommands and flags
//! with it. The shells are real programs (CI installs bash, zsh and fish).

use std::path::PathBuf;

use crate::common::{Drip, Scratch};
use std::process::{Command, Stdio};

fn script(shell: &str) -> String {
    let out = Drip::new()
        .command()
        .args(["completions", shell])
        .output()
        .expect("run drip");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("a script is text")
}

/// The script written to a fresh file in `tmp`: tests run at once, and one
/// must never read a script another is still writing.
fn saved(tmp: &Scratch, shell: &str) -> PathBuf {
    let path = tmp.join(format!("drip.{shell}"));
    std::fs::write(&path, script(shell)).unwrap();
    path
}

/// Runs an installed shell; a missing shell fails the test with what to do.
fn run_shell(shell: &str, args: &[&str]) -> std::process::Output {
    match Command::new(shell).args(args).stdin(Stdio::null()).output() {
        Ok(out) => out,
        Err(e) => panic!("cannot run {shell} ({e}): install it (apt-get install {shell})"),
    }
}

fn syntax_ok(shell: &str, check: &[&str]) {
    let tmp = Scratch::new();
    let path = saved(&tmp, shell);
    let mut args = check.to_vec();
    args.push(path.to_str().unwrap());
    let out = run_shell(shell, &args);
    assert!(
        out.status.success(),
        "{shell} {check:?} rejects the script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bash_script_parses() {
    syntax_ok("bash", &["-n"]);
}

#[test]
fn zsh_script_parses() {
    syntax_ok("zsh", &["-n"]);
}

#[test]
fn fish_script_parses() {
    syntax_ok("fish", &["--no-execute"]);
}

#[test]
fn bash_completes_subcommands_and_flags() {
    let tmp = Scratch::new();
    let path = saved(&tmp, "bash");
    let probe = format!(
        r#"source '{}'
COMP_WORDS=(drip au); COMP_CWORD=1; COMP_LINE='drip au'; COMP_POINT=7
_drip drip au drip; echo "sub: ${{COMPREPLY[*]}}"
COMP_WORDS=(drip audit --reorder); COMP_CWORD=2; COMP_LINE='drip audit --reorder'; COMP_POINT=20
_drip drip --reorder audit; echo "flag: ${{COMPREPLY[*]}}"
COMP_WORDS=(drip completions f); COMP_CWORD=2; COMP_LINE='drip completions f'; COMP_POINT=18
_drip drip f completions; echo "shell: ${{COMPREPLY[*]}}"
COMP_WORDS=(drip audit -p g); COMP_CWORD=3; COMP_LINE='drip audit -p g'; COMP_POINT=15
_drip drip g -p; echo "policy: ${{COMPREPLY[*]}}""#,
        path.display()
    );
    let out = run_shell("bash", &["-c", &probe]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("sub: audit"), "{text}");
    assert!(text.contains("flag: --reorder-window"), "{text}");
    assert!(text.contains("shell: fish"), "{text}");
    assert!(text.contains("policy: gcra\n"), "{text}");
}

#[test]
fn fish_completes_subcommands_and_flags() {
    let tmp = Scratch::new();
    let path = saved(&tmp, "fish");
    let probe = format!(
        "source '{}'; complete -C 'drip pa'; complete -C 'drip pace --on-f'; complete -C 'drip size -p sl'",
        path.display()
    );
    let out = run_shell("fish", &["--no-config", "-c", &probe]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.lines().any(|l| l.starts_with("pace")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("--on-full")), "{text}");
    for name in ["sliding-window", "sliding-log"] {
        assert!(text.lines().any(|l| l.starts_with(name)), "{text}");
    }
}

#[test]
fn unknown_shell_is_one_line_and_status_2() {
    let out = Drip::new()
        .command()
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("tcsh") && err.contains("bash"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn closed_stdout_is_not_an_error() {
    let mut child = Drip::new()
        .command()
        .args(["completions", "zsh"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end before drip writes: its write meets a broken pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
