//! What the test modules share: the built binary run through one builder
//! ([`Drip`]), pace with its output timed line by line, a temporary folder
//! per test ([`Scratch`]), and the JSON a run prints.

use std::ffi::OsStr;
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

/// A run of the built binary, from the project folder (fixture paths are
/// relative to it), with no sharing inherited from the environment:
///
/// ```ignore
/// let report = Drip::audit().arg(&log).args(["-p", "gcra:rate=1/s", "-f", "json"]).json();
/// let out = Drip::pace().args(["--rate", "5/s"]).stdin(numbered(3)).output();
/// ```
///
/// Without [`Drip::stdin`] the run's standard input is /dev/null; with it, a
/// pipe that a thread fills and closes (a reader that stops early is not a
/// failure of the test).
pub struct Drip {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

impl Drip {
    /// `drip` before any argument.
    pub fn new() -> Drip {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_drip"));
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
        for v in ["DRIP_SHARE", "DRIP_SHARE_KEY"] {
            cmd.env_remove(v);
        }
        // Tests read the table report's lines whole; `report::width` sets
        // the widths it checks the fitting at.
        cmd.env("COLUMNS", "1000");
        Drip { cmd, stdin: None }
    }

    /// `drip audit`.
    pub fn audit() -> Drip {
        Drip::new().arg("audit")
    }

    /// `drip size`.
    pub fn size() -> Drip {
        Drip::new().arg("size")
    }

    /// `drip pace --no-progress`.
    pub fn pace() -> Drip {
        Drip::new().args(["pace", "--no-progress"])
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Drip {
        self.cmd.arg(arg);
        self
    }

    pub fn args(mut self, args: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Drip {
        self.cmd.args(args);
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Drip {
        self.cmd.env_remove(key);
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Drip {
        self.cmd.env(key, value);
        self
    }

    /// `data` on standard input, through a pipe.
    pub fn stdin(mut self, data: impl AsRef<[u8]>) -> Drip {
        self.stdin = Some(data.as_ref().to_vec());
        self
    }

    /// The command itself, for what the builder does not cover (its own
    /// standard streams, a child to signal); stdin given to the builder is
    /// not part of it.
    pub fn command(self) -> Command {
        self.cmd
    }

    /// Starts the run with stdin, stdout and stderr piped (stdin given to
    /// the builder is not written).
    pub fn spawn(mut self) -> Child {
        self.cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run drip")
    }

    /// Runs to the end: what it printed, as bytes.
    pub fn output(mut self) -> Output {
        let stdin = self.stdin.take();
        self.cmd
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self.cmd.spawn().expect("run drip");
        let feeder = stdin.map(|data| {
            let mut pipe = child.stdin.take().unwrap();
            // drip may stop reading early: a broken pipe is not a failure.
            thread::spawn(move || {
                let _ = pipe.write_all(&data);
            })
        });
        let out = child.wait_with_output().unwrap();
        if let Some(feeder) = feeder {
            feeder.join().unwrap();
        }
        out
    }

    /// Runs to the end: what it printed, as text.
    pub fn run(self) -> Out {
        let out = self.output();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs to the end, which must be a success: the JSON it printed.
    pub fn json(self) -> serde_json::Value {
        self.run().json()
    }

    /// Runs with `--decisions FILE` (a file of its own) to the end: what
    /// it printed, and the decisions file.
    pub fn run_with_decisions(self) -> (Out, String) {
        let tmp = Scratch::new();
        let file = tmp.join("decisions.csv");
        let out = self.arg("--decisions").arg(&file).run();
        assert_eq!(out.code, 0, "stderr: {}", out.stderr);
        (out, std::fs::read_to_string(&file).unwrap())
    }
}

impl Out {
    /// The report a successful run printed on stdout, as JSON.
    pub fn json(&self) -> serde_json::Value {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        self.stdout_json()
    }

    /// Stdout as JSON, whatever the exit status (size exits 1 with its
    /// report when a target is missed).
    pub fn stdout_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\nstderr: {}", self.stdout, self.stderr))
    }

    /// Stdout of a successful run.
    pub fn ok(self) -> String {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        self.stdout
    }
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

/// The NASA access log of 1 August 1995 as TSV (30,969 rows).
pub const NASA: &str = "fixtures/nasa_19950801.tsv";

/// The nginx binary: Debian installs it outside a user's PATH.
pub fn nginx_binary() -> PathBuf {
    for p in ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(p).is_file() {
            return PathBuf::from(p);
        }
    }
    PathBuf::from("nginx")
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---- pace -----------------------------------------------------------------

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
    let mut child = Drip::pace().args(args).spawn();
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

/// Tests that measure real time (a pace's rate, as its commands' shells
/// log it) hold this exclusively, and the tests that keep both cores busy
/// for seconds (sizing a week of logs) hold it shared: on a 2-core host a
/// heavy test beside a timed one delays the shells the timed one reads,
/// which no pacer can undo.
pub static CLOCK: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// [`CLOCK`] held alone, for a test that measures real time.
pub fn timed_alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    CLOCK.write().unwrap_or_else(|e| e.into_inner())
}

/// [`CLOCK`] held shared, for a test that keeps the cores busy.
pub fn heavy() -> std::sync::RwLockReadGuard<'static, ()> {
    CLOCK.read().unwrap_or_else(|e| e.into_inner())
}
