//! Helpers the end-to-end test files share: run the built binary (any
//! subcommand, audit, or pace with its output timed line by line), a
//! temporary folder per test, and the JSON a run prints.
// Each test file uses its own subset of these.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

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

/// A test's own temporary folder, under cargo's scratch folder for tests
/// (inside `target/`, not the system's temporary folder). It is removed
/// when the value goes out of scope, or kept and named on stderr when the
/// test fails. Keep it alive while a child process uses a path in it.
pub struct Scratch(TempDir);

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("drip-test-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        Scratch(dir)
    }

    /// A file named `name` in the folder, holding `contents`.
    pub fn write(&self, name: &str, contents: &(impl AsRef<[u8]> + ?Sized)) -> PathBuf {
        let p = self.join(name);
        std::fs::write(&p, contents).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.disable_cleanup(true);
            eprintln!("kept {}", self.0.path().display());
        }
    }
}

/// The folder's path: `tmp.join("log.csv")`, `s(&tmp)`.
impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// The folder as an argument or a variable's value of a child process.
impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.path().as_os_str()
    }
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
