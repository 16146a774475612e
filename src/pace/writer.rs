//! The writer: what the shaper loop releases goes to stdout in one write
//! per wake-up, stamped if asked; a line counts as sent once the pipe took
//! all of it. What is refused or left unsent goes to the rejects file.

use super::Pacer;
use super::reader::{Guard, Shared};
use super::schedule::Pending;
use super::stamp;
use crate::clock::Clock;
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

impl Pacer {
    /// Writes the lines due at `now`, without holding the inbox's lock
    /// while writing.
    pub(super) fn write_due<'a>(
        &mut self,
        g: Guard<'a>,
        shared: &'a Shared,
        now: Nanos,
    ) -> (Guard<'a>, Wrote) {
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        if self.schedule.take_due(now, &mut due) == 0 {
            self.due = due;
            return (g, Wrote::Nothing);
        }
        drop(g);
        let mut batch = std::mem::take(&mut self.batch);
        let stop = self.send(&mut due, &mut batch);
        (self.due, self.batch) = (due, batch);
        let g = shared.lock();
        (g, stop.map_or(Wrote::All, Wrote::Short))
    }

    /// Writes `due` in one write. Lines that did not go out whole are
    /// counted as unsent: those after the last whole line written when
    /// downstream closed, stdout failed, or a stop signal came while
    /// downstream was not reading (then `None`; the main loop stops).
    fn send(&mut self, due: &mut Vec<Pending<Vec<u8>>>, batch: &mut Vec<u8>) -> Option<Stop> {
        let (sent, stop) = self.write(due, batch);
        for p in due.drain(..).skip(sent) {
            self.unsent(&p.item);
        }
        stop
    }

    /// Writes one batch (stamped if asked) in one write, as far as it goes:
    /// the lines written whole, and why it stopped short, if it did.
    fn write(&mut self, due: &[Pending<Vec<u8>>], batch: &mut Vec<u8>) -> (usize, Option<Stop>) {
        let ends = self.fill(due, batch);
        let at = self.clock.now();
        let (written, result) = write_until_stopped(&self.output, &self.wake, batch, &ends);
        let lines = self.count_sent(due, &ends, written, at);
        self.update_progress();
        let stop = match result {
            Ok(()) => None,
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Some(Stop::Closed),
            Err(e) => Some(Stop::Failed(e)),
        };
        (lines, stop)
    }

    /// Puts the lines of `due` into `batch`, each after its stamp when one
    /// is asked for; returns the offset just past each line.
    fn fill(&self, due: &[Pending<Vec<u8>>], batch: &mut Vec<u8>) -> Vec<usize> {
        batch.clear();
        let mut ends = Vec::with_capacity(due.len());
        let wall = self.config.stamp.map(|_| stamp::wall_now());
        for p in due {
            if let (Some(format), Some(wall)) = (self.config.stamp, wall) {
                stamp::write_stamp(batch, format, wall);
            }
            batch.extend_from_slice(&p.item);
            ends.push(batch.len());
        }
        ends
    }

    /// Counts the lines of a write that went out `written` bytes (started
    /// at `at`): those the pipe took whole are sent, even when it then
    /// closed, and the bytes of a cut line are noted. Returns how many.
    fn count_sent(
        &mut self,
        due: &[Pending<Vec<u8>>],
        ends: &[usize],
        written: usize,
        at: Nanos,
    ) -> usize {
        let lines = ends.iter().take_while(|&&end| end <= written).count();
        let line_start = lines.checked_sub(1).map_or(0, |l| ends[l]);
        self.stats.partial_bytes = (written - line_start) as u64;
        self.schedule.wrote(self.clock.now());
        for p in &due[..lines] {
            self.stats.sent(p.arrived, at);
        }
        lines
    }

    /// Accounts for a line read and not written: counted, and kept in the
    /// rejects file when there is one.
    pub(super) fn unsent(&mut self, item: &[u8]) {
        self.stats.unsent += 1;
        self.keep(item, false);
    }

    /// Writes a line to the rejects file, if there is one (and flushes it
    /// when `flush`). When that fails the file is given up and the error
    /// kept: the run then stops taking input and ends with it.
    pub(super) fn keep(&mut self, item: &[u8], flush: bool) {
        if let Some(w) = &mut self.rejects {
            let result = w
                .write_all(item)
                .and_then(|()| if flush { w.flush() } else { Ok(()) });
            if let Err(e) = result {
                self.rejects = None;
                self.rejects_error = Some(e);
            }
        }
    }

    /// Redraws the progress line (indicatif limits the redraw rate). The
    /// current rate is measured over the last second or more of writes;
    /// nothing wakes up just to redraw.
    pub(super) fn update_progress(&mut self) {
        if self.progress.is_hidden() {
            return;
        }
        let now = self.clock.now();
        let (at, out) = self.rate_mark;
        let span = now.saturating_sub(at);
        if span >= Nanos::from_secs(1) {
            // Display only: a float is fine here.
            self.shown_rate = (self.stats.lines_out - out) as f64 * 1e9 / span.0 as f64;
            self.rate_mark = (now, self.stats.lines_out);
        }
        self.progress.set_message(format!(
            "{} sent, {} dropped, {} waiting, {:.1}/s",
            self.stats.lines_out,
            self.stats.dropped,
            self.schedule.backlog(),
            self.shown_rate
        ));
        self.progress.tick();
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
