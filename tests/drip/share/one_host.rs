//! `drip gate` and `pace --share-key NAME` on one host without `--share`:
//! this user's state file of NAME (under $XDG_RUNTIME_DIR, else a private
//! folder in the temporary folder), and the same file as the fallback of
//! a Redis key under `--on-share-error local`.

use crate::common::*;
use std::os::unix::fs::PermissionsExt;
use std::time::Instant;

/// A shell loop of `n` gates with `args`, its own runtime folder; its time.
fn gate_loop(runtime: &std::path::Path, n: usize, args: &str) -> f64 {
    let script = format!("for i in $(seq {n}); do \"$DRIP\" gate {args} -- true || exit 9; done");
    let t0 = Instant::now();
    let st = std::process::Command::new("sh")
        .args(["-c", &script])
        .env("DRIP", env!("CARGO_BIN_EXE_drip"))
        .env("XDG_RUNTIME_DIR", runtime)
        .env_remove("DRIP_SHARE")
        .env_remove("DRIP_SHARE_KEY")
        .status()
        .unwrap();
    assert!(st.success(), "{args}");
    t0.elapsed().as_secs_f64()
}

#[test]
fn a_shell_loop_of_gates_with_a_share_key_is_limited() {
    let runtime = Scratch::new();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    // 20 slots at 5/s: 19 intervals of 200 ms at least.
    let took = gate_loop(&runtime, 20, "--rate 5/s --share-key t");
    assert!(took >= 3.8, "20 gates took {took:.3}s");
    let file = runtime.join("drip").join("t.share");
    assert!(file.exists());
    let mode = std::fs::metadata(runtime.join("drip"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn under_local_fallback_successive_gates_stay_limited() {
    let runtime = Scratch::new();
    // Nothing answers on port 1: every gate falls back, to one schedule.
    let took = gate_loop(
        &runtime,
        5,
        "--rate 10/s --share redis://127.0.0.1:1 --share-key api --on-share-error local --fallback-rate 5/s",
    );
    assert!(took >= 0.8, "5 gates took {took:.3}s");
    assert!(runtime.join("drip").join("api.share").exists());
}

#[test]
fn a_folder_others_can_open_is_refused() {
    let runtime = Scratch::new();
    let dir = runtime.join("drip");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = Drip::new()
        .command()
        .args(["gate", "--rate", "5/s", "--share-key", "t"])
        .env("XDG_RUNTIME_DIR", &runtime)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a private folder"), "{err}");
}
