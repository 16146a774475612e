//! The writer: what the shaper loop releases goes to stdout in one write
//! per wake-up, stamped if asked; a line counts as sent once the pipe took
//! all of it. What is left unsent is the loop's to account for. The
//! input's bytes go out as they came, but for one: a last record without
//! its separator that went out before other records (per-key lanes, a
//! replay's sorting) gets one before the next, so two records never glue.

use super::schedule::{Pending, Schedule};
use super::stamp;
use crate::cli::Stamp;
use crate::clock::{Clock, MonotonicClock};
use crate::time::Nanos;
use std::fs::File;
use std::io::{self, Write};

/// What writing the lines due did.
pub(super) enum Wrote {
    /// Nothing was due.
    Nothing,
    /// Every line due went out whole.
    All,
    /// The write stopped short.
    Short(Stop),
}

/// Standard output, the lines due in this wake-up and the bytes of their
/// one write.
pub(super) struct Output {
    file: File,
    /// Readable once a stop signal has arrived: lets a write that waits on
    /// a downstream which stopped reading give up between two lines.
    wake: io::PipeReader,
    stamp: Option<Stamp>,
    due: Vec<Pending<Vec<u8>>>,
    batch: Vec<u8>,
    /// Why standard output failed.
    error: Option<io::Error>,
    /// The byte records end with.
    sep: u8,
    /// The last record written lacked its separator.
    open: bool,
}

/// What one write did: when it started, the lines that went out whole,
/// the bytes of a line cut after them, and why it stopped short, if it did.
pub(super) struct Written {
    pub(super) at: Nanos,
    pub(super) lines: usize,
    pub(super) partial: u64,
    pub(super) stop: Option<Stop>,
}

impl Output {
    pub(super) fn new(file: File, wake: io::PipeReader, stamp: Option<Stamp>, sep: u8) -> Output {
        Output {
            file,
            wake,
            stamp,
            due: Vec::new(),
            batch: Vec::new(),
            error: None,
            sep,
            open: false,
        }
    }

    /// Takes the lines due at `now` from the schedule; false when none is.
    pub(super) fn take_due(&mut self, schedule: &mut Schedule<Vec<u8>>, now: Nanos) -> bool {
        self.take_due_upto(schedule, now, usize::MAX)
    }

    /// [`take_due`](Self::take_due), `most` lines at most.
    pub(super) fn take_due_upto(
        &mut self,
        schedule: &mut Schedule<Vec<u8>>,
        now: Nanos,
        most: usize,
    ) -> bool {
        self.due.clear();
        schedule.take_due_upto(now, &mut self.due, most) > 0
    }

    /// The lines taken, to be handed on elsewhere (commands to start).
    pub(super) fn take_pending(&mut self) -> Vec<Pending<Vec<u8>>> {
        std::mem::take(&mut self.due)
    }

    /// Writes the lines taken (stamped if asked) in one write, as far as
    /// it goes. A line counts as written once the pipe took all of it,
    /// even when it then closed; the bytes of a cut line are noted.
    pub(super) fn write(&mut self, clock: &MonotonicClock) -> Written {
        let ends = self.fill();
        let at = clock.now();
        let (written, result) = write_until_stopped(&self.file, &self.wake, &self.batch, &ends);
        let lines = ends.iter().take_while(|&&end| end <= written).count();
        let line_start = lines.checked_sub(1).map_or(0, |l| ends[l]);
        let stop = match result {
            Ok(()) => None,
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Some(Stop::Closed),
            Err(e) => Some(Stop::Failed(e)),
        };
        Written {
            at,
            lines,
            partial: (written - line_start) as u64,
            stop,
        }
    }

    /// The first `lines` lines taken: those a write sent.
    pub(super) fn sent(&self, lines: usize) -> &[Pending<Vec<u8>>] {
        &self.due[..lines]
    }

    /// Empties the lines taken, giving those after the first `lines` (not
    /// written whole).
    pub(super) fn drain_unsent(&mut self, lines: usize) -> impl Iterator<Item = Vec<u8>> + '_ {
        self.due.drain(..).skip(lines).map(|p| p.item)
    }

    /// Puts the lines taken into the batch, each after its stamp when one
    /// is asked for; returns the offset just past each line.
    fn fill(&mut self) -> Vec<usize> {
        self.batch.clear();
        let mut ends = Vec::with_capacity(self.due.len());
        let wall = self.stamp.map(|_| stamp::wall_now());
        for p in &self.due {
            if self.open {
                self.batch.push(self.sep);
            }
            self.open = p.item.last() != Some(&self.sep);
            if let (Some(format), Some(wall)) = (self.stamp, wall) {
                stamp::write_stamp(&mut self.batch, format, wall);
            }
            self.batch.extend_from_slice(&p.item);
            ends.push(self.batch.len());
        }
        ends
    }

    /// Keeps why standard output failed.
    pub(super) fn failed(&mut self, e: io::Error) {
        self.error = Some(e);
    }

    /// Why standard output failed, if it did.
    pub(super) fn take_error(&mut self) -> Option<io::Error> {
        self.error.take()
    }
}

/// Why a write stopped short of the batch.
pub(super) enum Stop {
    /// Downstream closed the pipe.
    Closed,
    /// Standard output failed (a full disk, `/dev/full`).
    Failed(io::Error),
}

/// Writes `batch` to `out` and returns how many bytes went out, with the
/// error that stopped it, if any. Without an error: all of them, or fewer
/// when `wake` became readable (a stop signal) while `out` was not taking
/// bytes. It then stops only at a line end (`ends`: the offset just past
/// each line), so no line is ever cut.
///
/// It waits with poll(2) and writes at most `PIPE_BUF` bytes after each
/// wake-up, which a pipe then takes without blocking, and ends each write
/// at a line end when one is within reach: every wait then starts between
/// two lines, so a downstream that stopped reading cannot hold it past a
/// signal at any rate. Only a line longer than `PIPE_BUF` is written in
/// pieces, and inside it only stdout is waited for.
fn write_until_stopped(
    out: &File,
    wake: &io::PipeReader,
    batch: &[u8],
    ends: &[usize],
) -> (usize, io::Result<()>) {
    use std::os::fd::AsRawFd;
    const PIPE_BUF: usize = 4096;
    let mut done = 0;
    while done < batch.len() {
        let at_line_end = done == 0 || ends.binary_search(&done).is_ok();
        let mut fds = [
            libc::pollfd {
                fd: out.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            },
            libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Between lines, a stop signal ends the write; inside one, only
        // stdout is waited for.
        let nfds = if at_line_end { 2 } else { 1 };
        // SAFETY: `fds` is a valid array of `nfds` pollfd structs.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), nfds, -1) };
        if ready < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return (done, Err(e));
        }
        if at_line_end && fds[1].revents != 0 && fds[0].revents & libc::POLLOUT == 0 {
            return (done, Ok(()));
        }
        if fds[0].revents == 0 {
            continue;
        }
        let reach = batch.len().min(done + PIPE_BUF);
        let end = match ends.binary_search(&reach) {
            Ok(_) => reach,
            Err(i) if i > 0 && ends[i - 1] > done => ends[i - 1],
            Err(_) => reach,
        };
        match (&*out).write(&batch[done..end]) {
            Ok(0) => return (done, Err(io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (done, Err(e)),
        }
    }
    (done, Ok(()))
}
