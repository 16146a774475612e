//! One thread for every command of a run: it polls each running
//! command's stdout and stderr pipes, passes their lines on through the
//! [`Printer`] (whole lines, `--keep-order`, `--tag`), and reaps each
//! command's exit as it happens and reports it to the shaper loop. A
//! thread per command would cost a thread's start and end for each
//! record, which at high rates delays the next starts.
//!
//! The main thread hands each command over through a queue and a wake
//! pipe. Exits are seen through a pidfd per command on Linux, else by
//! polling again after a short time. Pidfds take only the descriptors
//! the pipes of `--jobs` commands leave under the open-file limit; a
//! command beyond that is polled. The exit does not wait for the pipes:
//! a background child of the command may hold them open for long after.
//! What the command wrote before it exited is read first; what its
//! background children write later is still passed on while the run lasts
//! (after the command's turn, with `--keep-order`).

use super::passthru::{Exit, Printer, Stream, Watch};
use super::reader::Shared;
use crate::clock::{Clock, MonotonicClock};
use crate::time::Nanos;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::sync::{Arc, Mutex};

/// How long to wait before looking again for the exit of a command whose
/// pipes ended, where no pidfd tells it.
const RECHECK_MS: i32 = 2;
/// Where no pidfd tells a command's exit: how often to look for it while
/// its pipes are open.
const RECHECK_RUNNING_MS: i32 = 20;
/// Reads of a pipe at a command's exit to take what it wrote before.
const DRAIN_READS: usize = 64;

/// A command just started, handed to the relay.
pub(super) struct Started {
    pub(super) child: Child,
    /// Its place among the commands started (for `--keep-order`).
    pub(super) index: u64,
    /// `--tag`: the record and a tab.
    pub(super) tag: Option<Vec<u8>>,
    pub(super) record: Vec<u8>,
    /// The record's position in the input.
    pub(super) line: u64,
    /// When it started (real time).
    pub(super) at: Nanos,
}

/// The commands handed over and not yet taken by the relay thread.
#[derive(Default)]
struct Queue {
    started: Vec<Started>,
    /// No more commands come: the thread ends once none runs.
    closed: bool,
}

/// The main thread's end of the relay.
pub(super) struct Relay {
    queue: Arc<Mutex<Queue>>,
    wake: io::PipeWriter,
}

impl Relay {
    /// Starts the relay thread, printing through `printer` and reporting
    /// exits into `shared`, their durations read on `clock`; at most
    /// `jobs` commands run at once.
    pub(super) fn start(
        printer: Arc<Printer>,
        shared: Arc<Shared>,
        clock: MonotonicClock,
        jobs: usize,
    ) -> io::Result<Relay> {
        let (wake_rx, wake) = io::pipe()?;
        let queue = Arc::new(Mutex::new(Queue::default()));
        let thread = Thread {
            queue: Arc::clone(&queue),
            wake: wake_rx,
            printer,
            shared,
            clock,
            running: Vec::new(),
            closed: false,
            pidfd_room: pidfd_room(jobs),
        };
        std::thread::Builder::new()
            .name("relay".into())
            .spawn(move || thread.run())?;
        Ok(Relay { queue, wake })
    }

    /// Hands a command that started to the relay thread.
    pub(super) fn watch(&self, started: Started) {
        let mut q = lock(&self.queue);
        let was_empty = q.started.is_empty();
        q.started.push(started);
        drop(q);
        // The thread takes the whole queue at each wake-up: one byte for
        // the first command queued is enough.
        if was_empty {
            let _ = (&self.wake).write_all(&[1]);
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        lock(&self.queue).closed = true;
        let _ = (&self.wake).write_all(&[1]);
    }
}

fn lock(q: &Mutex<Queue>) -> std::sync::MutexGuard<'_, Queue> {
    q.lock().unwrap_or_else(|e| e.into_inner())
}

/// A command the relay thread watches.
struct Running {
    child: Child,
    /// Its stdout and stderr, until each ends.
    pipes: [Option<File>; 2],
    watch: Watch,
    /// Readable when the command exits (Linux); `None` elsewhere.
    exit_fd: Option<OwnedFd>,
    /// Its exit may have come: look for it.
    check: bool,
    /// Its exit was reported; only pipes its background children hold
    /// are left.
    exited: bool,
    record: Vec<u8>,
    line: u64,
    at: Nanos,
}

impl Running {
    fn new(s: Started, pidfd: bool) -> Running {
        let mut child = s.child;
        let out = child.stdout.take().map(|o| File::from(OwnedFd::from(o)));
        let err = child.stderr.take().map(|e| File::from(OwnedFd::from(e)));
        let exit_fd = pidfd.then(|| exit_fd(child.id())).flatten();
        Running {
            check: exit_fd.is_none(),
            child,
            pipes: [out, err],
            watch: Watch::new(s.index, s.tag),
            exit_fd,
            exited: false,
            record: s.record,
            line: s.line,
            at: s.at,
        }
    }

    fn pipes_ended(&self) -> bool {
        self.pipes.iter().all(Option::is_none)
    }
}

/// Which file a poll entry watches.
#[derive(Clone, Copy)]
enum Polled {
    Wake,
    Pipe(usize, Stream),
    Exit(usize),
}

/// The relay thread's state.
struct Thread {
    queue: Arc<Mutex<Queue>>,
    wake: io::PipeReader,
    printer: Arc<Printer>,
    shared: Arc<Shared>,
    clock: MonotonicClock,
    running: Vec<Running>,
    /// No more commands come.
    closed: bool,
    /// Pidfds that may still be opened.
    pidfd_room: usize,
}

impl Thread {
    fn run(mut self) {
        let mut buf = vec![0u8; 64 * 1024];
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut what: Vec<Polled> = Vec::new();
        loop {
            let timeout = self.poll_set(&mut fds, &mut what);
            // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if ready < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // poll(2) cannot fail otherwise with valid descriptors;
                // looking again after a while keeps the run going.
                std::thread::sleep(std::time::Duration::from_millis(RECHECK_MS as u64));
            }
            for (fd, polled) in fds.iter().zip(&what) {
                if fd.revents == 0 {
                    continue;
                }
                match *polled {
                    Polled::Wake => self.take_queue(&mut buf),
                    Polled::Pipe(i, stream) => self.read_pipe(i, stream, &mut buf),
                    // The exit is reaped below.
                    Polled::Exit(i) => self.running[i].check = true,
                }
            }
            self.reap(&mut buf);
            if self.closed && self.running.is_empty() {
                return;
            }
        }
    }

    /// The files to poll, and how long to wait at most (-1: no limit).
    fn poll_set(&self, fds: &mut Vec<libc::pollfd>, what: &mut Vec<Polled>) -> i32 {
        fds.clear();
        what.clear();
        let mut add = |fd: RawFd, polled: Polled| {
            fds.push(libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
            what.push(polled);
        };
        add(self.wake.as_raw_fd(), Polled::Wake);
        let mut timeout = -1;
        for (i, r) in self.running.iter().enumerate() {
            for (pipe, stream) in r.pipes.iter().zip([Stream::Out, Stream::Err]) {
                if let Some(f) = pipe {
                    add(f.as_raw_fd(), Polled::Pipe(i, stream));
                }
            }
            match &r.exit_fd {
                _ if r.exited => {}
                Some(fd) => add(fd.as_raw_fd(), Polled::Exit(i)),
                None if r.pipes_ended() => timeout = RECHECK_MS,
                None if timeout < 0 => timeout = RECHECK_RUNNING_MS,
                None => {}
            }
        }
        timeout
    }

    /// Takes the commands handed over, and whether more will come.
    fn take_queue(&mut self, buf: &mut [u8]) {
        let _ = (&self.wake).read(buf);
        let mut q = lock(&self.queue);
        let started = std::mem::take(&mut q.started);
        self.closed = q.closed;
        drop(q);
        for s in started {
            let r = Running::new(s, self.pidfd_room > 0);
            self.pidfd_room -= usize::from(r.exit_fd.is_some());
            self.running.push(r);
        }
    }

    /// Reads what command `i` wrote on `stream`; the end of input closes
    /// that pipe.
    fn read_pipe(&mut self, i: usize, stream: Stream, buf: &mut [u8]) {
        let r = &mut self.running[i];
        let slot = match stream {
            Stream::Out => 0,
            Stream::Err => 1,
        };
        let Some(file) = &mut r.pipes[slot] else {
            return;
        };
        match file.read(buf) {
            Ok(0) => r.pipes[slot] = None,
            Ok(n) => r.watch.take(&self.printer, stream, &buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => r.pipes[slot] = None,
        }
        if r.pipes_ended() {
            r.watch.flush(&self.printer);
            r.check = true;
        }
    }

    /// Reports the commands that exited, whether or not their pipes
    /// ended; one whose pipes ended after its exit is let go.
    fn reap(&mut self, buf: &mut [u8]) {
        let mut exits = Vec::new();
        let mut i = 0;
        while i < self.running.len() {
            let r = &mut self.running[i];
            if r.exited || !r.check {
                match r.exited && r.pipes_ended() {
                    true => drop(self.running.swap_remove(i)),
                    false => i += 1,
                }
                continue;
            }
            r.check = r.exit_fd.is_none();
            let status = match r.child.try_wait() {
                Ok(None) => {
                    i += 1;
                    continue;
                }
                Ok(Some(status)) => Some(status),
                Err(_) => None,
            };
            // What it wrote before it exited is in the pipes now.
            self.drain(i, buf);
            exits.push(self.ended(i, status));
            match self.running[i].pipes_ended() {
                true => drop(self.running.swap_remove(i)),
                false => i += 1,
            }
        }
        if !exits.is_empty() {
            self.shared.lock().exits.extend(exits);
            self.shared.main_cv.notify_one();
        }
    }

    /// Reads what command `i`'s pipes hold now (a bounded number of
    /// reads: a background child may write on).
    fn drain(&mut self, i: usize, buf: &mut [u8]) {
        for _ in 0..DRAIN_READS {
            let r = &self.running[i];
            let fds: Vec<(libc::pollfd, Stream)> = r
                .pipes
                .iter()
                .zip([Stream::Out, Stream::Err])
                .filter_map(|(p, stream)| {
                    let fd = p.as_ref()?.as_raw_fd();
                    let events = libc::POLLIN;
                    Some((
                        libc::pollfd {
                            fd,
                            events,
                            revents: 0,
                        },
                        stream,
                    ))
                })
                .collect();
            let mut polled: Vec<libc::pollfd> = fds.iter().map(|f| f.0).collect();
            // SAFETY: `polled` is a valid array of `polled.len()` pollfd structs.
            let ready = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, 0) };
            if ready <= 0 {
                return;
            }
            for (f, p) in fds.iter().zip(&polled) {
                if p.revents != 0 {
                    self.read_pipe(i, f.1, buf);
                }
            }
        }
    }

    /// A command's exit as the shaper loop takes it (255: its status
    /// could not be read).
    fn ended(&mut self, i: usize, status: Option<ExitStatus>) -> Exit {
        let r = &mut self.running[i];
        r.exited = true;
        if r.exit_fd.take().is_some() {
            self.pidfd_room += 1;
        }
        r.watch.done(&self.printer);
        let code = status.map_or(255, |s| {
            s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
        });
        Exit {
            pid: r.child.id(),
            record: std::mem::take(&mut r.record),
            line: r.line,
            code,
            took: self.clock.now().saturating_sub(r.at),
            closed: r.watch.closed,
        }
    }
}

/// How many pidfds fit under the open-file limit beside the two pipes of
/// each of `jobs` commands and a margin for the rest of the run.
fn pidfd_room(jobs: usize) -> usize {
    let limit = super::fds::soft_limit().map_or(0, |l| usize::try_from(l).unwrap_or(usize::MAX));
    limit
        .saturating_sub(64)
        .saturating_sub(jobs.saturating_mul(2))
        .min(jobs)
}

/// A pidfd of process `pid`, readable once it exits.
#[cfg(target_os = "linux")]
fn exit_fd(pid: u32) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open(2) takes a pid and flags, and returns a new
    // descriptor this function then owns, or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    let fd = RawFd::try_from(fd).ok().filter(|&fd| fd >= 0)?;
    // SAFETY: `fd` was just opened and nothing else owns it.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// No pidfd here: the relay looks again after [`RECHECK_MS`].
#[cfg(not(target_os = "linux"))]
fn exit_fd(_pid: u32) -> Option<OwnedFd> {
    None
}
