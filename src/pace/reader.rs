//! The reader: the input's bytes (the files named, in order, or stdin)
//! into records in an inbox the shaper loop takes them from.
//!
//! A record is the bytes up to and including a separator; the bytes after
//! the last separator wait in `partial` until the next read completes them
//! (or end of input makes them the last record, as they came). The reader
//! stops reading while the inbox holds [`INBOX_BUDGET`] bytes of undecided
//! records, so a blocked pacer blocks its upstream, and it never holds a
//! record longer than [`MAX_RECORD`] bytes.

use super::control;
use crate::clock::{Clock, MonotonicClock};
use crate::time::Nanos;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Undecided bytes the reader holds before it stops reading.
pub const INBOX_BUDGET: usize = 64 * 1024;
/// The longest record held while waiting for its separator. A longer one
/// stops the run: without it one unterminated "line" could fill memory.
pub const MAX_RECORD: usize = 64 * 1024 * 1024;
/// Bytes asked of stdin per read.
const READ_CHUNK: usize = 64 * 1024;

/// A record with its input line number and arrival (real time).
pub(super) struct Record {
    pub(super) line: u64,
    pub(super) arrived: Nanos,
    pub(super) bytes: Vec<u8>,
}

/// The records read and not yet taken, and the news for the main thread.
#[derive(Default)]
pub(super) struct Inbox {
    pub(super) records: VecDeque<Record>,
    /// Bytes in `records`.
    pub(super) buffered: usize,
    /// Bytes after the last separator, not yet a record.
    pub(super) partial: Vec<u8>,
    pub(super) lines_in: u64,
    pub(super) eof: bool,
    pub(super) read_error: Option<io::Error>,
    pub(super) signal: Option<i32>,
    /// Tells the reader to stop.
    pub(super) stop: bool,
    /// The reader waits for room (so a wake-up is worth a syscall).
    pub(super) reader_waiting: bool,
    /// Control commands (the FIFO, SIGUSR1) not yet applied.
    pub(super) control: Vec<control::Command>,
    /// With a command: the commands that ended, not yet accounted for.
    pub(super) exits: Vec<super::passthru::Exit>,
    /// With a command: stop signals after the first (the second sends
    /// the running commands SIGTERM).
    pub(super) more_signals: u32,
    /// With a command: downstream closed standard output.
    pub(super) out_closed: bool,
    /// The input being read, for messages (empty: standard input).
    pub(super) reading: String,
    /// With `--journal`: the input's head hashed, the records done skipped.
    pub(super) journal: Option<super::journal::Skip>,
}

impl Inbox {
    pub(super) fn push(&mut self, arrived: Nanos, bytes: Vec<u8>) {
        self.lines_in += 1;
        if let Some(j) = &mut self.journal
            && j.skips(self.lines_in, &bytes)
        {
            return;
        }
        self.buffered += bytes.len();
        self.records.push_back(Record {
            line: self.lines_in,
            arrived,
            bytes,
        });
    }

    /// Splits a chunk read at `arrived` into records after `partial`.
    pub(super) fn ingest(&mut self, chunk: &[u8], arrived: Nanos, sep: u8) {
        let mut start = 0;
        while let Some(i) = chunk[start..].iter().position(|&b| b == sep) {
            let end = start + i + 1;
            let bytes = if self.partial.is_empty() {
                chunk[start..end].to_vec()
            } else {
                let mut p = std::mem::take(&mut self.partial);
                p.extend_from_slice(&chunk[start..end]);
                p
            };
            self.push(arrived, bytes);
            start = end;
        }
        self.partial.extend_from_slice(&chunk[start..]);
    }
}

/// The inbox, locked.
pub(super) type Guard<'a> = MutexGuard<'a, Inbox>;

/// What the reader, the signal and control threads share with the main
/// thread.
pub(super) struct Shared {
    inbox: Mutex<Inbox>,
    /// Wakes the main thread: records arrived, input ended, a signal.
    pub(super) main_cv: Condvar,
    /// Wakes the reader: room in the inbox, or stop.
    pub(super) reader_cv: Condvar,
}

impl Shared {
    pub(super) fn new() -> Shared {
        Shared {
            inbox: Mutex::new(Inbox::default()),
            main_cv: Condvar::new(),
            reader_cv: Condvar::new(),
        }
    }

    pub(super) fn lock(&self) -> Guard<'_> {
        // A poisoned lock only means another thread panicked; the data is
        // still consistent enough to account for every line.
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The main thread waits for news (records, the end of input, a
    /// signal, a command), for `timeout` at most (`None`: no limit).
    pub(super) fn wait_main<'a>(&'a self, g: Guard<'a>, timeout: Option<Duration>) -> Guard<'a> {
        match timeout {
            None => self.main_cv.wait(g).unwrap_or_else(|e| e.into_inner()),
            Some(timeout) => {
                self.main_cv
                    .wait_timeout(g, timeout)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        }
    }
}

/// What a run reads: the files named, in order (`-` is standard input;
/// none: standard input), and the byte records end with.
#[derive(Clone)]
pub(super) struct InputConfig {
    pub(super) files: Vec<std::path::PathBuf>,
    pub(super) separator: u8,
    /// `--journal`: the records done, by position.
    pub(super) journal: Option<std::path::PathBuf>,
}

/// One input: a file named on the command line, or standard input.
pub(super) struct Source {
    /// For messages: `'path'`, or `standard input`.
    pub(super) name: String,
    pub(super) file: File,
}

/// The reader thread: reads the inputs in order, each until it ends, then
/// the next, until one fails or the main thread says stop. A file's last
/// bytes without a separator are a record of their own, given one unless
/// they end the last input.
pub(super) fn read_loop(inputs: Vec<Source>, shared: &Shared, clock: MonotonicClock, sep: u8) {
    let count = inputs.len();
    for (n, input) in inputs.into_iter().enumerate() {
        shared.lock().reading = input.name;
        if !read_one(input.file, shared, clock, sep, n + 1 == count) {
            return;
        }
    }
}

/// Reads one input to its end; false when the run reads no further (the
/// input failed, or the main thread said stop).
fn read_one(mut input: File, shared: &Shared, clock: MonotonicClock, sep: u8, last: bool) -> bool {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        if !wait_for_room(shared) {
            return false;
        }
        let result = input.read(&mut buf);
        let now = clock.now();
        let mut g = shared.lock();
        match result {
            Ok(0) if !last => {
                // The next file starts a new record, as awk reads files.
                if !g.partial.is_empty() {
                    g.partial.push(sep);
                }
                end_of_file(&mut g, now);
                drop(g);
                shared.main_cv.notify_one();
                return true;
            }
            Ok(0) => end_of_input(&mut g, now),
            Ok(n) => {
                g.ingest(&buf[..n], now, sep);
                if g.partial.len() > MAX_RECORD {
                    g.read_error = Some(too_long(sep));
                    g.eof = true;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                g.read_error = Some(e);
                g.eof = true;
            }
        }
        let done = g.eof;
        drop(g);
        shared.main_cv.notify_one();
        if done {
            return false;
        }
    }
}

/// Waits while the inbox is full; false once the main thread says stop.
fn wait_for_room(shared: &Shared) -> bool {
    let mut g = shared.lock();
    while !g.stop && !g.records.is_empty() && g.buffered >= INBOX_BUDGET {
        g.reader_waiting = true;
        g = shared.reader_cv.wait(g).unwrap_or_else(|e| e.into_inner());
        g.reader_waiting = false;
    }
    !g.stop
}

/// The input ended: bytes after the last separator are the last record.
fn end_of_input(g: &mut Inbox, now: Nanos) {
    end_of_file(g, now);
    g.eof = true;
}

/// A file ended: bytes after its last separator are a record.
fn end_of_file(g: &mut Inbox, now: Nanos) {
    if !g.partial.is_empty() {
        let last = std::mem::take(&mut g.partial);
        g.push(now, last);
    }
}

/// The error for a record longer than [`MAX_RECORD`], with the likely fix.
fn too_long(sep: u8) -> io::Error {
    let (what, hint) = if sep == 0 {
        ("NUL", "is the input newline-separated? then drop -0")
    } else {
        ("newline", "is it NUL-separated (find -print0)? then add -0")
    };
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "a record has no {what} in its first {} MiB; {hint}",
            MAX_RECORD >> 20
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(inbox: &Inbox) -> Vec<&[u8]> {
        inbox.records.iter().map(|r| r.bytes.as_slice()).collect()
    }

    #[test]
    fn records_split_across_reads_keep_every_byte() {
        let mut inbox = Inbox::default();
        inbox.ingest(b"one\ntw", Nanos(1), b'\n');
        inbox.ingest(b"o\n\xff\xfe", Nanos(2), b'\n');
        inbox.ingest(b"\n", Nanos(3), b'\n');
        assert_eq!(records(&inbox), [&b"one\n"[..], b"two\n", b"\xff\xfe\n"]);
        // A record's arrival is the read that completed it.
        let arrivals: Vec<Nanos> = inbox.records.iter().map(|r| r.arrived).collect();
        assert_eq!(arrivals, [Nanos(1), Nanos(2), Nanos(3)]);
        assert_eq!(inbox.buffered, 11);
        assert_eq!(inbox.lines_in, 3);
        assert!(inbox.partial.is_empty());
        inbox.ingest(b"tail", Nanos(4), b'\n');
        assert_eq!(inbox.partial, b"tail");
        assert_eq!(inbox.lines_in, 3);
    }

    #[test]
    fn nul_separates_and_newlines_are_data() {
        let mut inbox = Inbox::default();
        inbox.ingest(b"a\nb\0c\0", Nanos(0), 0);
        assert_eq!(records(&inbox), [&b"a\nb\0"[..], b"c\0"]);
    }
}
