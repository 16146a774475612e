//! What the commands print, passed through whole lines at a time: each
//! command's stdout and stderr are pipes the relay thread reads; complete
//! lines go to drip's own stdout or stderr in one write under one lock, so
//! two commands' lines never mix inside a line. With `--keep-order` a
//! command's lines are held until it ends and printed in the order the
//! commands started; with `--tag` each line starts with its record and a
//! tab. A last line without a newline gets one. A line longer than
//! [`MAX_LINE`] is passed on in pieces.

use crate::time::Nanos;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::sync::Mutex;

/// The longest line held while waiting for its newline.
pub(super) const MAX_LINE: usize = 1 << 20;

/// A command that ended, as the relay reports it.
pub(super) struct Exit {
    pub(super) pid: u32,
    pub(super) record: Vec<u8>,
    /// The record's position in the input.
    pub(super) line: u64,
    /// The exit status, or 128 + the signal that ended it.
    pub(super) code: i32,
    pub(super) took: Nanos,
    /// Downstream closed drip's stdout while the command printed.
    pub(super) closed: bool,
}

/// Which of drip's outputs a piece of text goes to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Stream {
    Out,
    Err,
}

/// drip's stdout and stderr, shared by the relay and the main thread.
pub(super) struct Printer {
    inner: Mutex<Sinks>,
    keep_order: bool,
}

struct Sinks {
    stdout: File,
    stderr: File,
    /// `--keep-order`: the next command (by start) whose output goes out.
    next: u64,
    /// `--keep-order`: outputs of commands that ended before their turn.
    held: BTreeMap<u64, Vec<(Stream, Vec<u8>)>>,
}

impl Printer {
    pub(super) fn new(stdout: File, stderr: File, keep_order: bool) -> Printer {
        Printer {
            inner: Mutex::new(Sinks {
                stdout,
                stderr,
                next: 0,
                held: BTreeMap::new(),
            }),
            keep_order,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sinks> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes whole lines to `stream` at once. An error on stdout means
    /// downstream is gone: the caller stops the run.
    fn emit(&self, stream: Stream, text: &[u8]) -> io::Result<()> {
        let mut s = self.lock();
        s.write(stream, text)
    }

    /// `--keep-order`: the output of command `index` (by start), printed
    /// once every command started before it has printed.
    fn finish(&self, index: u64, chunks: Vec<(Stream, Vec<u8>)>) -> io::Result<()> {
        let mut s = self.lock();
        s.held.insert(index, chunks);
        let mut result = Ok(());
        loop {
            let next = s.next;
            let Some(chunks) = s.held.remove(&next) else {
                break;
            };
            s.next += 1;
            for (stream, text) in chunks {
                if let Err(e) = s.write(stream, &text) {
                    result = Err(e);
                }
            }
        }
        result
    }

    /// `--keep-order`: command `index` never started (it could not be
    /// spawned): the commands after it are not held for it.
    pub(super) fn skip(&self, index: u64) -> io::Result<()> {
        self.finish(index, Vec::new())
    }
}

impl Sinks {
    fn write(&mut self, stream: Stream, text: &[u8]) -> io::Result<()> {
        match stream {
            Stream::Out => (&self.stdout).write_all(text),
            // stderr failing is not a reason to stop the commands.
            Stream::Err => {
                let _ = (&self.stderr).write_all(text);
                Ok(())
            }
        }
    }
}

/// One command's output as it is read: the text of a line not yet
/// complete on each stream, and with `--keep-order` everything so far.
pub(super) struct Watch {
    /// `--tag`: the record, then a tab, before each line.
    tag: Option<Vec<u8>>,
    index: u64,
    partial: [Vec<u8>; 2],
    held: Vec<(Stream, Vec<u8>)>,
    /// The command exited and its output took its turn: what its
    /// background children write later goes on at once.
    released: bool,
    /// Downstream closed drip's stdout.
    pub(super) closed: bool,
}

impl Watch {
    /// The output of command `index` (by start), tagged with `tag`.
    pub(super) fn new(index: u64, tag: Option<Vec<u8>>) -> Watch {
        Watch {
            tag,
            index,
            partial: [Vec::new(), Vec::new()],
            held: Vec::new(),
            released: false,
            closed: false,
        }
    }

    /// Bytes read from `stream`: the complete lines go on, the rest waits.
    pub(super) fn take(&mut self, printer: &Printer, stream: Stream, bytes: &[u8]) {
        let partial = &mut self.partial[slot(stream)];
        partial.extend_from_slice(bytes);
        let cut = match partial.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if partial.len() >= MAX_LINE => partial.len(),
            None => return,
        };
        let rest = partial.split_off(cut);
        let lines = std::mem::replace(partial, rest);
        self.pass(printer, stream, &lines);
    }

    /// Both pipes ended: a last line without a newline gets one.
    pub(super) fn flush(&mut self, printer: &Printer) {
        for stream in [Stream::Out, Stream::Err] {
            let rest = std::mem::take(&mut self.partial[slot(stream)]);
            if !rest.is_empty() {
                let mut line = rest;
                line.push(b'\n');
                self.pass(printer, stream, &line);
            }
        }
    }

    /// Whole lines (ending in a newline) to `stream`, tagged if asked.
    fn pass(&mut self, printer: &Printer, stream: Stream, lines: &[u8]) {
        let text = match &self.tag {
            Some(tag) => tagged(tag, lines),
            None => lines.to_vec(),
        };
        if printer.keep_order && !self.released {
            self.held.push((stream, text));
        } else if printer.emit(stream, &text).is_err() {
            self.closed = true;
        }
    }

    /// The command ended: with `--keep-order`, its output takes its turn.
    pub(super) fn done(&mut self, printer: &Printer) {
        self.released = true;
        if printer.keep_order {
            let held = std::mem::take(&mut self.held);
            if printer.finish(self.index, held).is_err() {
                self.closed = true;
            }
        }
    }
}

fn slot(stream: Stream) -> usize {
    match stream {
        Stream::Out => 0,
        Stream::Err => 1,
    }
}

/// Each line of `lines` after `tag`.
fn tagged(tag: &[u8], lines: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len() + tag.len() * 2);
    for line in lines.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(tag);
        out.extend_from_slice(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_starts_every_line() {
        assert_eq!(tagged(b"r\t", b"a\nb\n"), b"r\ta\nr\tb\n");
        assert_eq!(tagged(b"r\t", b"a"), b"r\ta");
    }
}
