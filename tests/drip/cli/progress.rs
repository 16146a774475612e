//! Progress on a real terminal: audit, size and pace run under a
//! pseudo-terminal (`script` from util-linux), so standard error is a
//! terminal as it is for a person at a shell. Each shows its progress
//! there by default, and none does with `--no-progress` (or `--quiet`).

use std::process::{Command, Stdio};

use crate::common::NASA;

/// Runs `drip ARGS` (stdout to /dev/null) with standard error on a
/// pseudo-terminal, and returns what that terminal received.
fn on_a_terminal(args: &str) -> String {
    let line = format!(
        "cd '{}' && {} {args} > /dev/null",
        env!("CARGO_MANIFEST_DIR"),
        env!("CARGO_BIN_EXE_drip")
    );
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("DRIP_SHARE")
        .stdin(Stdio::null())
        .output()
        .expect("run script (util-linux) to get a pseudo-terminal");
    assert!(
        out.status.success(),
        "{line}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn audit_shows_bytes_read_on_a_terminal_unless_told_not_to() {
    let args = format!("audit {NASA} -p gcra:rate=1/s --key-column host -f json");
    let shown = on_a_terminal(&args);
    assert!(shown.contains("MiB/2.23 MiB"), "{shown}");
    for off in ["--no-progress", "--quiet"] {
        let hidden = on_a_terminal(&format!("{args} {off}"));
        assert!(!hidden.contains("MiB"), "{off}: {hidden}");
    }
}

#[test]
fn size_shows_bytes_read_and_its_sweep_on_a_terminal_unless_told_not_to() {
    let args =
        format!("size {NASA} -p gcra --rate 1/s,2/s --key-column host --max-drop-rate 1 -f json");
    let shown = on_a_terminal(&args);
    assert!(shown.contains("MiB/2.23 MiB"), "{shown}");
    for off in ["--no-progress", "--quiet"] {
        let hidden = on_a_terminal(&format!("{args} {off}"));
        assert!(
            !hidden.contains("MiB") && !hidden.contains("sweeping"),
            "{off}: {hidden}"
        );
    }
}

#[test]
fn pace_shows_its_status_line_on_a_terminal_unless_told_not_to() {
    let shown = on_a_terminal("pace --rate 50/s < fixtures/small.csv");
    assert!(
        shown.contains(" sent, 0 dropped, ") && shown.contains(" waiting, "),
        "{shown}"
    );
    let hidden = on_a_terminal("pace --rate 50/s --no-progress < fixtures/small.csv");
    assert!(!hidden.contains(" sent, "), "{hidden}");
}

/// With a command the status line shows the commands running, failed
/// and retried, and no made-up rate before a second of starts.
#[test]
fn pace_with_a_command_shows_running_failed_and_retried() {
    let shown = on_a_terminal(
        "pace --rate 20/s --retry 1 --retry-delay 100ms -- sh -c 'sleep 0.2; [ $1 != x ]' _ < fixtures/small.csv",
    );
    assert!(
        shown.contains(" running, ") && shown.contains(" failed, ") && shown.contains(" retried"),
        "{shown}"
    );
    assert!(shown.contains("waiting, -/s"), "{shown}");
}

#[test]
fn pace_shows_an_eta_when_the_input_size_is_known() {
    // A file named: its size is known, so the status line has an ETA.
    let named = on_a_terminal("pace --rate 50/s fixtures/small.csv");
    assert!(named.contains(", ETA "), "{named}");
    // Standard input: no size, no ETA.
    let piped = on_a_terminal("pace --rate 50/s < fixtures/small.csv");
    assert!(!piped.contains("ETA"), "{piped}");
}
