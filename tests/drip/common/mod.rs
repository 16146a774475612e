//! Helpers the end-to-end test files share: run the built binary (any
//! subcommand, audit, or pace with its output timed line by line), fresh
//! temporary paths, and the JSON a run prints.
// Each test file uses its own subset of these.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// What a run of the binary printed, and its exit status (-1: a signal).
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The built binary, run from the project folder (fixture paths are
/// relative to it), with no sharing inherited from the environment.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_drip"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    for v in ["DRIP_SHARE", "DRIP_SHARE_KEY"] {
        c.env_remove(v);
    }
    c
}

/// Runs `drip ARGS` with `stdin` piped in (or none) and collects its output.
pub fn run(args: &[&str], stdin: Option<&[u8]>) -> Out {
    let mut cmd = bin();
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run drip");
    if let Some(data) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let data = data.to_vec();
        // drip may stop reading early: a broken pipe here is not a failure.
        thread::spawn(move || {
            let _ = pipe.write_all(&data);
        });
    }
    let out = child.wait_with_output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `drip audit ARGS` from the project folder, with `stdin` piped in
/// (or none).
pub fn drip(args: &[&str], stdin: Option<&[u8]>) -> Out {
    let mut all = vec!["audit"];
    all.extend_from_slice(args);
    run(&all, stdin)
}

/// The report a successful run printed on stdout, as JSON.
pub fn json(out: &Out) -> serde_json::Value {
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// A fresh directory per call (tests run in parallel). They live in one
/// directory per test process under cargo's scratch folder for tests (inside
/// `target/`, not the system's temporary folder); the first call removes what
/// finished runs left there.
pub fn tmpdir() -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let root = ROOT.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        sweep_finished(base);
        let root = base.join(format!("drip-test-{}", std::process::id()));
        // Left by an earlier run that had this process id.
        let _ = std::fs::remove_dir_all(&root);
        root
    });
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = root.join(n.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Removes the directories of test processes that are no longer running
/// and have not written to them for an hour (a process still running keeps
/// its own, even one this process cannot see, in another PID namespace
/// sharing `target/`).
fn sweep_finished(base: &Path) {
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("drip-test-"))
            .and_then(|p| p.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // Signal 0 only asks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < hour_ago);
        if gone && old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A fresh path per call (tests run in parallel), ending in `name`.
pub fn tmp(name: &str) -> PathBuf {
    tmpdir().join(name)
}

/// A fresh file named `name` holding `contents`.
pub fn write(name: &str, contents: &(impl AsRef<[u8]> + ?Sized)) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, contents).unwrap();
    p
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---- pace -----------------------------------------------------------------

/// `drip pace --no-progress`, ready for its arguments.
pub fn pace() -> Command {
    let mut c = bin();
    c.args(["pace", "--no-progress"]);
    c
}

/// Starts `drip pace ARGS` with stdin, stdout and stderr piped.
pub fn spawn_pace(args: &[&str]) -> Child {
    pace()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs `drip pace ARGS` with `input` on stdin; returns its output.
pub fn run_pace(args: &[&str], input: &[u8]) -> Output {
    let mut child = spawn_pace(args);
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = thread::spawn(move || {
        // drip may stop reading early (fail, drop at EOF): ignore EPIPE.
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

/// Lines "1\n" to "N\n".
pub fn numbered(n: usize) -> Vec<u8> {
    (1..=n)
        .map(|i| format!("{i}\n"))
        .collect::<String>()
        .into_bytes()
}

/// Output split into lines.
pub fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The JSON summary line (`--stats=json`) on stderr.
pub fn summary(stderr: impl AsRef<[u8]>) -> serde_json::Value {
    let text = String::from_utf8_lossy(stderr.as_ref());
    let line = text
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON summary in stderr: {text}"));
    serde_json::from_str(line).unwrap()
}

/// Sends signal `sig` (a name: INT, TERM, USR1...) to process `pid`.
pub fn kill(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([format!("-{sig}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// What the child wrote on stderr, read to its end.
pub fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

/// A running `drip pace` whose stdout lines are collected with their
/// arrival times on a thread; its stdin stays with the test (or a feeder,
/// after [`Timed::fed`]).
pub struct Timed {
    pub child: Child,
    pub reader: thread::JoinHandle<Vec<(Instant, String)>>,
}

/// Spawns `drip pace ARGS` with piped stdin, stdout and stderr.
pub fn spawn_timed(args: &[&str]) -> Timed {
    let mut child = spawn_pace(args);
    let stdout = child.stdout.take().unwrap();
    let reader = thread::spawn(move || {
        let mut got = Vec::new();
        for line in BufReader::new(stdout).lines() {
            got.push((Instant::now(), line.unwrap()));
        }
        got
    });
    Timed { child, reader }
}

impl Timed {
    /// Writes `input` to drip's stdin on a thread, then closes it.
    pub fn fed(mut self, input: Vec<u8>) -> Timed {
        let mut stdin = self.child.stdin.take().unwrap();
        thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        self
    }

    /// Waits for the end: (lines with arrival times, exit code, stderr).
    pub fn finish(mut self) -> (Vec<(Instant, String)>, Option<i32>, String) {
        let got = self.reader.join().unwrap();
        let code = self.child.wait().unwrap().code();
        let err = stderr_of(&mut self.child);
        (got, code, err)
    }
}

/// The gaps between consecutive arrivals.
pub fn gaps(got: &[(Instant, String)]) -> Vec<Duration> {
    got.windows(2).map(|w| w[1].0 - w[0].0).collect()
}
