//! A shared schedule in a state file on one host.
//!
//! The file holds one fixed-width, human-readable record:
//!
//! ```text
//! v1 00001795975200123456 00000000000000005000
//!    next_free (µs since the epoch)  interval (µs)
//! ```
//!
//! written in one positioned write, never truncated and never synced:
//! losing it only resets the schedule to idle. Each reservation takes the
//! file's lock (`flock`), reads the record, reads the wall clock *while
//! holding the lock*, applies [`reserve`](super::reserve::reserve), writes
//! the record and unlocks. The kernel drops the lock of a process that
//! dies; a *stopped* holder (Ctrl-Z) would block everyone, so the lock is
//! polled with a deadline and a holder that does not let go is an error
//! for `--on-share-error` to handle.
//!
//! The file is opened without `O_CREAT` first and created only when
//! missing, so a file another user created in a sticky world-writable
//! directory can still be opened (`fs.protected_regular`). A network
//! filesystem is refused: its locks are emulated and slow, and hosts with
//! different wall clocks would corrupt the schedule.

use super::reserve::{Outcome, Params, reserve};
use super::{Backend, wall_micros};
use anyhow::{Context, bail};
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The record's first bytes: the format's version.
const MAGIC: &[u8] = b"v1 ";
/// Bytes in one record: "v1 " + 20 digits + " " + 20 digits + "\n".
pub const RECORD: usize = 45;
/// How long a reservation waits for the lock before calling it an error
/// (less when `--share-timeout` leaves less).
pub const LOCK_DEADLINE: Duration = Duration::from_secs(2);

/// Filesystem magic numbers (statfs `f_type`) of network filesystems.
const NETWORK_FS: [(u64, &str); 4] = [
    (0x6969, "NFS"),
    (0x517B, "SMB"),
    (0xFF53_4D42, "CIFS"),
    (0xFE53_4D42, "SMB2"),
];

pub struct FileBackend {
    file: File,
    path: PathBuf,
    /// Said once: the file's schedule runs at another interval.
    warned_interval: bool,
}

/// The network filesystem `path` is on, if it is on one.
fn network_fs(path: &Path) -> io::Result<Option<&'static str>> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: an all-zero statfs is a valid value of a plain C struct.
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `buf` is a valid statfs to fill.
    if unsafe { libc::statfs(c.as_ptr(), &mut buf) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // f_type is a signed word on some targets: compare its low 32 bits.
    let kind = (buf.f_type as u64) & 0xFFFF_FFFF;
    Ok(NETWORK_FS
        .iter()
        .find(|(magic, _)| *magic == kind)
        .map(|(_, name)| *name))
}

/// Parses a record: (next_free, interval) in µs; None when unreadable.
fn parse(record: &[u8]) -> Option<(u64, u64)> {
    let rest = record.strip_prefix(MAGIC)?;
    let text = std::str::from_utf8(rest.get(..RECORD - MAGIC.len())?).ok()?;
    let (next, interval) = text.trim_end_matches('\n').split_once(' ')?;
    Some((next.parse().ok()?, interval.parse().ok()?))
}

fn format(next_free: u64, interval: u64) -> [u8; RECORD] {
    let mut out = [0u8; RECORD];
    let text = format!("v1 {next_free:020} {interval:020}\n");
    out.copy_from_slice(&text.as_bytes()[..RECORD]);
    out
}

impl FileBackend {
    /// Opens (or creates) the state file at `path` and checks that it is
    /// one: a local file, empty or holding a record.
    pub fn open(path: &Path, allow_network_fs: bool) -> anyhow::Result<FileBackend> {
        let shown = path.display();
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let dir = match path.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                check_local(dir, path, allow_network_fs)?;
                match OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(path)
                {
                    Ok(f) => f,
                    // Another process created it first: use theirs.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open(path)
                        .with_context(|| format!("cannot open the share state file '{shown}'"))?,
                    Err(e) => {
                        return Err(e).with_context(|| {
                            format!("cannot create the share state file '{shown}'")
                        });
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
                bail!(
                    "--share '{shown}' is a directory; give a file path in it, such as '{shown}/drip.share'"
                )
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot open the share state file '{shown}'"));
            }
        };
        check_local(path, path, allow_network_fs)?;
        let meta = file
            .metadata()
            .with_context(|| format!("cannot read the share state file '{shown}'"))?;
        if !meta.is_file() {
            bail!("--share '{shown}' is not a regular file; give a state file path");
        }
        let mut head = [0u8; 64];
        let n = file
            .read_at(&mut head, 0)
            .with_context(|| format!("cannot read the share state file '{shown}'"))?;
        let head = &head[..n];
        if !head.is_empty() && !head.starts_with(MAGIC) {
            if head.len() > 2 && head[0] == b'v' && head[1].is_ascii_digit() {
                bail!(
                    "'{shown}' holds a schedule in another format ({}); a different drip version shares it: use the same version everywhere, or another file",
                    String::from_utf8_lossy(
                        &head[..head.iter().position(|&b| b == b' ').unwrap_or(2)]
                    )
                );
            }
            bail!(
                "'{shown}' is not a drip share state file (it does not start with 'v1 '); give a new path, drip creates the file"
            );
        }
        if meta.len() > RECORD as u64 {
            bail!(
                "'{shown}' is not a drip share state file ({} bytes, a state file has {RECORD}); give a new path, drip creates the file",
                meta.len()
            );
        }
        Ok(FileBackend {
            file,
            path: path.to_path_buf(),
            warned_interval: false,
        })
    }

    /// Takes the lock, polling for up to `patience`.
    fn lock(&self, patience: Duration) -> Result<(), String> {
        let start = Instant::now();
        let mut pause = Duration::from_micros(20);
        loop {
            match self.file.try_lock() {
                Ok(()) => return Ok(()),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => {
                    return Err(format!("cannot lock '{}': {e}", self.path.display()));
                }
            }
            let waited = start.elapsed();
            if waited >= patience {
                return Err(format!(
                    "share lock on '{}' held by another process for {} (is one stopped, with Ctrl-Z?)",
                    self.path.display(),
                    humantime::format_duration(Duration::from_millis(waited.as_millis() as u64))
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(1));
        }
    }

    fn reserve_locked(&mut self, params: Params) -> Result<Outcome, String> {
        let mut buf = [0u8; RECORD];
        let n = self
            .file
            .read_at(&mut buf, 0)
            .map_err(|e| format!("cannot read '{}': {e}", self.path.display()))?;
        let now = wall_micros();
        let (state, interval) = parse(&buf[..n]).unwrap_or((0, params.interval));
        if interval != params.interval && state > now && !self.warned_interval {
            self.warned_interval = true;
            crate::say!(
                "drip: warning: '{}' is shared at an interval of {interval} µs, this process uses {} µs: every process sharing a schedule should use the same --rate",
                self.path.display(),
                params.interval
            );
        }
        let (next, outcome) = reserve(state, now, params);
        if let Outcome::Granted { .. } = outcome {
            self.file
                .write_all_at(&format(next, params.interval), 0)
                .map_err(|e| format!("cannot write '{}': {e}", self.path.display()))?;
        }
        Ok(outcome)
    }
}

/// Refuses a network filesystem unless allowed (then warns).
fn check_local(probe: &Path, path: &Path, allow: bool) -> anyhow::Result<()> {
    let fs = network_fs(probe).with_context(|| {
        format!(
            "cannot check the filesystem of the share state file '{}'",
            path.display()
        )
    })?;
    match (fs, allow) {
        (None, _) => Ok(()),
        (Some(name), false) => bail!(
            "state file '{}' is on a network filesystem ({name}); use --share redis://... for several hosts (or --share-allow-network-fs to use it anyway)",
            path.display()
        ),
        (Some(name), true) => {
            crate::say!(
                "drip: warning: state file '{}' is on a network filesystem ({name}): locks are slow there and hosts' clocks must agree",
                path.display()
            );
            Ok(())
        }
    }
}

impl Backend for FileBackend {
    fn connect(&mut self, _patience: Duration) -> Result<(), String> {
        Ok(())
    }

    fn reserve(&mut self, params: Params, patience: Duration) -> Result<Outcome, String> {
        self.lock(patience)?;
        let result = self.reserve_locked(params);
        // Unlocking a lock we hold cannot fail in a way we could act on;
        // closing the file would drop it anyway.
        let _ = self.file.unlock();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::super::reserve::tests::P;
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("drip-share-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("state")
    }

    #[test]
    fn records_round_trip() {
        let r = format(1_795_975_200_123_456, 5_000);
        assert_eq!(&r[..], b"v1 00001795975200123456 00000000000000005000\n");
        assert_eq!(parse(&r), Some((1_795_975_200_123_456, 5_000)));
        assert_eq!(parse(b"v1 garbage"), None);
        assert_eq!(parse(b""), None);
    }

    #[test]
    fn two_handles_share_one_schedule() {
        let path = temp("two");
        let mut a = FileBackend::open(&path, false).unwrap();
        let mut b = FileBackend::open(&path, false).unwrap();
        let mut slots = Vec::new();
        for i in 0..8 {
            let backend = if i % 2 == 0 { &mut a } else { &mut b };
            let before = wall_micros();
            match backend.reserve(P, LOCK_DEADLINE).unwrap() {
                Outcome::Granted { delay } => slots.push(before + delay),
                o => panic!("{o:?}"),
            }
        }
        // Eight slots, each at least one interval after the one before
        // (the clock moved a little between calls, never back).
        for w in slots.windows(2) {
            assert!(w[1] + 1_000 >= w[0] + P.interval, "{slots:?}");
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.len(), RECORD);
        assert!(text.starts_with("v1 "));
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn garbage_state_counts_as_idle_and_a_far_future_is_clamped() {
        let path = temp("clamp");
        std::fs::write(&path, format(u64::MAX / 2, 5_000)).unwrap();
        let mut a = FileBackend::open(&path, false).unwrap();
        assert_eq!(
            a.reserve(P, LOCK_DEADLINE).unwrap(),
            Outcome::Granted { delay: 0 }
        );
        std::fs::write(&path, b"v1 not a number at all, but 45 bytes long!\n").unwrap();
        assert_eq!(
            a.reserve(P, LOCK_DEADLINE).unwrap(),
            Outcome::Granted { delay: 0 }
        );
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn other_files_are_never_overwritten() {
        let path = temp("other");
        std::fs::write(&path, b"export PATH=/usr/bin\n").unwrap();
        let e = FileBackend::open(&path, false).err().unwrap().to_string();
        assert!(e.contains("not a drip share state file"), "{e}");
        std::fs::write(&path, b"v2 00000000000000000001\n").unwrap();
        let e = FileBackend::open(&path, false).err().unwrap().to_string();
        assert!(e.contains("another format (v2)"), "{e}");
        let dir = path.parent().unwrap();
        let e = FileBackend::open(dir, false).err().unwrap().to_string();
        assert!(e.contains("is a directory"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_held_lock_times_out_with_a_message() {
        let path = temp("held");
        let mut a = FileBackend::open(&path, false).unwrap();
        let holder = File::open(&path).unwrap();
        holder.lock().unwrap();
        let started = Instant::now();
        let e = a.reserve(P, LOCK_DEADLINE).unwrap_err();
        assert!(started.elapsed() >= LOCK_DEADLINE);
        assert!(e.contains("held by another process for 2s"), "{e}");
        // A shorter patience gives up sooner and says how long it waited.
        let started = Instant::now();
        let e = a.reserve(P, Duration::from_millis(300)).unwrap_err();
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < LOCK_DEADLINE, "{waited:?}");
        // It says how long it waited: 300 ms and a little (the last poll).
        let said = e.split("held by another process for ").nth(1).unwrap_or("");
        let ms: String = said.chars().take_while(char::is_ascii_digit).collect();
        assert!(said.starts_with(&format!("{ms}ms")), "{e}");
        assert!(
            (300..2_000).contains(&ms.parse::<u64>().unwrap_or(0)),
            "{e}"
        );
        holder.unlock().unwrap();
        assert!(a.reserve(P, LOCK_DEADLINE).is_ok());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn this_machines_temp_dir_is_local() {
        assert_eq!(network_fs(&std::env::temp_dir()).unwrap(), None);
    }
}
