//! `--journal FILE`: which input records are done, by position, so a rerun
//! on the same input skips them.
//!
//! A record is *done* once it went out whole to stdout (plain pace) or its
//! command exited 0 (`pace -- COMMAND`, any attempt). In plain pace a
//! last record without its separator is never done: the input may grow
//! to complete it, and a rerun then sends it again, whole (at least once).
//! A command, though, ran on the whole record: it is done as `POS+HASH`
//! (the FNV-1a hash of its bytes), and a rerun skips the record at POS
//! only while its bytes, separator aside, are those (so a record the
//! input grew longer still runs). Nor is such a record part of the head.
//! Positions are the
//! records' numbers in the input (1 is the first; with several files they
//! count on across them), carried with each record through the schedule,
//! the commands and their retries.
//!
//! The file is text, appended to and never rewritten:
//!
//! ```text
//! drip pace journal 1, input head: 16 records, fnv1a64 9ae16a3b2f90404f
//! 1-1000
//! 1001-1480
//! 1483
//! ```
//!
//! The first line names the input: how many of its first records were
//! hashed ([`HEAD_RECORDS`] at most; fewer when only those were read when
//! the first entry was written) and their FNV-1a hash, separators
//! included. A later head line naming more of the input replaces it (a
//! slow input's first entries are not held back for its head, and a
//! rerun names the head as far as it reads it, after the check). A rerun
//! whose input starts differently is refused before anything runs. It is
//! a check against a mistake, not a security measure; an input that only
//! grew at its end (or changes after its head) is taken as the same. The
//! other lines are a position or a range of them (`a-b`, both done), or
//! an unterminated record done (`a+hash`).
//!
//! Completions are written (one `write(2)` per wake-up or per batch of
//! command exits) right after they happen, so a SIGKILL loses at most the
//! records in flight; the file is synced at most once a second by a thread
//! of its own (the schedule never waits for a disk) and at the end of the
//! run, signals included. A last line without its newline (a write cut by
//! a crash) is cut off when the file is opened again.

use anyhow::{Context, bail};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::time::Duration;

/// Records at the input's head that name it in the journal.
pub(super) const HEAD_RECORDS: u64 = 16;
/// The least time between two syncs of the journal.
const SYNC_EVERY: Duration = Duration::from_secs(1);
/// The first line's words before the head's count.
const MAGIC: &str = "drip pace journal 1, input head: ";

/// The input's identity: how many of its first records were hashed, and
/// their FNV-1a 64 hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Head {
    pub(super) count: u64,
    pub(super) hash: u64,
}

impl Head {
    const EMPTY: Head = Head {
        count: 0,
        hash: 0xcbf2_9ce4_8422_2325,
    };

    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.hash = (self.hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.count += 1;
    }

    fn line(&self) -> String {
        format!(
            "{MAGIC}{} records, fnv1a64 {:016x}\n",
            self.count, self.hash
        )
    }

    fn parse(line: &str) -> Option<Head> {
        let rest = line.strip_prefix(MAGIC)?;
        let (count, hash) = rest.split_once(" records, fnv1a64 ")?;
        Some(Head {
            count: count.parse().ok()?,
            hash: u64::from_str_radix(hash, 16).ok()?,
        })
    }
}

/// The reader's side: hashes the input's head and skips the records done
/// in earlier runs (they take no slot and are never read further).
pub(super) struct Skip {
    /// How many head records name the input in the journal read.
    want: u64,
    /// The head as far as it was read, [`HEAD_RECORDS`] at most.
    pub(super) head: Head,
    /// The head when `want` records were read: the one to check.
    at_want: Option<Head>,
    /// Done positions: sorted, disjoint, inclusive ranges.
    done: Ranges,
    /// Records done without their separator: position and bytes' hash.
    unterminated: Vec<(u64, u64)>,
    /// The first range that may still hold a position to come.
    next: usize,
    pub(super) skipped: u64,
    pub(super) skipped_bytes: u64,
    /// The byte records end with.
    sep: u8,
}

impl Skip {
    /// Whether record `pos` (read in increasing order) was done before;
    /// the head's records are hashed first.
    pub(super) fn skips(&mut self, pos: u64, bytes: &[u8]) -> bool {
        if self.head.count < HEAD_RECORDS && bytes.last() == Some(&self.sep) {
            self.head.add(bytes);
            if self.head.count == self.want {
                self.at_want = Some(self.head);
            }
        }
        while let Some(&(_, hi)) = self.done.get(self.next) {
            if hi >= pos {
                break;
            }
            self.next += 1;
        }
        let done = self.done.get(self.next).is_some_and(|&(lo, _)| lo <= pos)
            || self.unterminated.iter().any(|&(p, h)| {
                let text = bytes.strip_suffix(&[self.sep]).unwrap_or(bytes);
                p == pos && h == fnv(text)
            });
        if done {
            self.skipped += 1;
            self.skipped_bytes += bytes.len() as u64;
        }
        done
    }

    /// The head to check against the journal's, once every record naming
    /// the input there was read (or the input ended: `ended`).
    pub(super) fn head_read(&self, ended: bool) -> Option<Head> {
        self.at_want.or(ended.then_some(self.head))
    }
}

/// The main thread's side: the file, the positions done since the last
/// write, and the sync thread.
pub(super) struct Journal {
    path: PathBuf,
    file: File,
    /// The head an earlier run wrote: this input must start with it.
    expected: Option<Head>,
    /// The last head line in the file, if any.
    written: Option<Head>,
    /// Whether the input may be named: a fresh journal, or the input's
    /// head matched the journal's.
    checked: bool,
    /// The input's head as far as it was read (a fresh journal's entries
    /// go after a line naming it).
    read: Head,
    /// A record done without its separator, to write: position, hash.
    unterminated: Option<(u64, u64)>,
    /// Records without their separator count as done (commands).
    whole_unterminated: bool,
    /// Positions done since the last write, as runs (a run of positions
    /// done in input order is one entry).
    batch: Ranges,
    text: Vec<u8>,
    sync: Option<SyncSender<()>>,
    error: Option<io::Error>,
    /// The byte records end with.
    sep: u8,
}

impl Journal {
    /// Opens (or creates) the journal at `path`, locked for this run, and
    /// reads what earlier runs did: the reader's part to skip with.
    pub(super) fn open(path: &Path, sep: u8) -> anyhow::Result<(Journal, Skip)> {
        let shown = path.display();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .with_context(|| format!("cannot open the --journal file '{shown}'"))?;
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            bail!("the --journal file '{shown}' is not a regular file; give a file path");
        }
        if file.try_lock().is_err() {
            bail!(
                "the --journal file '{shown}' is in use by another run; wait for it to end, or give another file"
            );
        }
        let mut text = Vec::new();
        file.read_to_end(&mut text)
            .with_context(|| format!("cannot read the --journal file '{shown}'"))?;
        let whole = whole_lines(&text);
        // Nothing is changed in a file that is not a journal: its whole
        // lines parse, or its only (torn) line starts a head line.
        let parsed = match whole == 0 && !text.is_empty() && !torn_head(&text) {
            true => Err(1),
            false => parse(&text[..whole]),
        };
        let (head, done, unterminated) = parsed.map_err(|line| {
            anyhow::anyhow!(
                "the --journal file '{shown}' line {line} is not a pace journal line; give a new file to start over"
            )
        })?;
        if whole < text.len() {
            // A write cut by a crash: its record was not counted as done.
            file.set_len(whole as u64)
                .with_context(|| format!("cannot repair the --journal file '{shown}'"))?;
        }
        let sync = start_sync(&file, path)?;
        let skip = Skip {
            want: head.map_or(HEAD_RECORDS, |h| h.count),
            head: Head::EMPTY,
            at_want: (head.is_some_and(|h| h.count == 0)).then_some(Head::EMPTY),
            done,
            unterminated,
            next: 0,
            skipped: 0,
            skipped_bytes: 0,
            sep,
        };
        let journal = Journal {
            path: path.to_path_buf(),
            file,
            expected: head,
            written: head,
            checked: head.is_none(),
            read: head.unwrap_or(Head::EMPTY),
            batch: Vec::new(),
            unterminated: None,
            whole_unterminated: false,
            text: Vec::new(),
            sync: Some(sync),
            error: None,
            sep,
        };
        Ok((journal, skip))
    }

    /// The head an earlier run wrote, which this input must start with.
    pub(super) fn expected(&self) -> Option<Head> {
        self.expected
    }

    /// Refuses an input whose head is not the one the journal names.
    pub(super) fn check(&mut self, read: Head) -> anyhow::Result<()> {
        match self.expected {
            Some(want) if want != read => bail!(
                "the --journal file '{}' was written for another input (its first {} record(s) differ); give the input it was written for, or a new --journal file to start over",
                self.path.display(),
                want.count
            ),
            _ => {
                self.checked = true;
                Ok(())
            }
        }
    }

    /// Whether the head named may still grow (not yet [`HEAD_RECORDS`]).
    pub(super) fn head_open(&self) -> bool {
        self.read.count < HEAD_RECORDS
    }

    /// The input's head as read so far (after the check, for a journal
    /// from an earlier run). The next write starts with a head line naming
    /// it, when the file names less.
    pub(super) fn note_head(&mut self, read: Head) {
        if self.checked && read.count > self.read.count {
            self.read = read;
        }
    }

    /// A record without its separator counts as done too, by its bytes
    /// (a command ran on it whole).
    pub(super) fn keep_unterminated(&mut self) {
        self.whole_unterminated = true;
    }

    /// Record `pos`, `bytes`, is done (written at the next
    /// [`commit`](Self::commit)); one without its separator only after
    /// [`keep_unterminated`](Self::keep_unterminated).
    pub(super) fn done(&mut self, pos: u64, bytes: &[u8]) {
        if bytes.last() != Some(&self.sep) {
            if self.whole_unterminated {
                self.unterminated = Some((pos, fnv(bytes)));
            }
            return;
        }
        match self.batch.last_mut() {
            Some(run) if run.1 + 1 == pos => run.1 = pos,
            _ => self.batch.push((pos, pos)),
        }
    }

    /// Writes the positions done since the last commit, as ranges, in one
    /// write; the sync thread syncs the file soon after.
    pub(super) fn commit(&mut self) {
        ranges_text(&mut self.batch, &mut self.text);
        if let Some((pos, hash)) = self.unterminated.take() {
            let _ = writeln!(self.text, "{pos}+{hash:016x}");
        }
        if self.text.is_empty() || self.error.is_some() {
            return;
        }
        if self.written != Some(self.read) {
            // The entries follow a line naming the input as far as it was
            // read; a later one, naming more of it, replaces it.
            let mut text = self.read.line().into_bytes();
            text.append(&mut self.text);
            self.text = text;
            self.written = Some(self.read);
        }
        if let Err(e) = (&self.file).write_all(&self.text) {
            self.give_up(e);
            return;
        }
        self.text.clear();
        if let Some(tx) = &self.sync {
            // Full: a sync is already asked for, and it comes after this write.
            let _ = tx.try_send(());
        }
    }

    /// At the end of the run: writes what is done, after the head as far
    /// as it was read, and syncs the file.
    pub(super) fn close(&mut self, head: Head) {
        self.note_head(head);
        // A head of no record would match any input: without one, the
        // file stays empty (nothing was done).
        if self.written != Some(self.read) && self.read.count > 0 && self.error.is_none() {
            self.written = Some(self.read);
            let line = self.read.line();
            self.text.splice(0..0, line.into_bytes());
        }
        self.commit();
        self.sync = None;
        if self.error.is_none()
            && let Err(e) = self.file.sync_data()
        {
            self.give_up(e);
        }
    }

    fn give_up(&mut self, e: io::Error) {
        crate::say!(
            "drip: cannot write the --journal file '{}': {e}; records done from now on are not in it (a rerun runs them again)",
            self.path.display()
        );
        self.error = Some(e);
    }

    /// Whether writing the journal failed.
    pub(super) fn failed(&self) -> bool {
        self.error.is_some()
    }
}

/// The thread that syncs the journal when asked, at most once per
/// [`SYNC_EVERY`]; it ends when the journal drops its sender.
fn start_sync(file: &File, path: &Path) -> anyhow::Result<SyncSender<()>> {
    let shown = path.display();
    let file = file
        .try_clone()
        .with_context(|| format!("cannot use the --journal file '{shown}'"))?;
    let (tx, rx) = sync_channel::<()>(1);
    std::thread::Builder::new()
        .name("journal".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                let _ = file.sync_data();
                std::thread::sleep(SYNC_EVERY);
            }
        })
        .context("cannot start the journal's sync thread")?;
    Ok(tx)
}

/// The length of `text`'s whole lines: a last line without its newline
/// (and NUL bytes a crash may leave) are not part of the journal.
fn whole_lines(text: &[u8]) -> usize {
    text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
}

/// Whether `text`, a file without a newline, is a head line cut by a
/// crash in the first write (NUL bytes after it included).
fn torn_head(text: &[u8]) -> bool {
    let text = match text.iter().position(|&b| b == 0) {
        Some(i) if text[i..].iter().all(|&b| b == 0) => &text[..i],
        _ => text,
    };
    let magic = MAGIC.as_bytes();
    let n = text.len().min(magic.len());
    !text.is_empty() && text[..n] == magic[..n]
}

/// Inclusive ranges of positions.
type Ranges = Vec<(u64, u64)>;

/// The head (its last line: one naming more of the input replaces an
/// earlier one) and the done ranges (sorted, merged) of a journal's whole
/// lines; `Err(line)` names a line that is neither.
fn parse(text: &[u8]) -> Result<Parsed, usize> {
    let text = std::str::from_utf8(text).map_err(|e| {
        1 + text[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    })?;
    let mut lines = text.lines();
    let Some(first) = lines.next() else {
        return Ok((None, Vec::new(), Vec::new()));
    };
    let mut head = Head::parse(first).ok_or(1usize)?;
    let mut ranges = Vec::new();
    let mut unterminated = Vec::new();
    for (i, line) in lines.enumerate() {
        if let Some(h) = Head::parse(line) {
            head = h;
            continue;
        }
        if let Some((pos, hash)) = line.split_once('+') {
            match (pos.parse::<u64>(), u64::from_str_radix(hash, 16)) {
                (Ok(p), Ok(h)) if p >= 1 && hash.len() == 16 => unterminated.push((p, h)),
                _ => return Err(i + 2),
            }
            continue;
        }
        let range = match line.split_once('-') {
            Some((a, b)) => a.parse().ok().zip(b.parse().ok()),
            None => line.parse().ok().map(|a| (a, a)),
        };
        match range {
            // Positions count records from 1.
            Some((a, b)) if 1 <= a && a <= b => ranges.push((a, b)),
            _ => return Err(i + 2),
        }
    }
    Ok((Some(head), merged(ranges), unterminated))
}

/// A journal read: its head, the done ranges, the unterminated records
/// done.
type Parsed = (Option<Head>, Ranges, Vec<(u64, u64)>);

/// The FNV-1a 64 hash of `bytes`.
fn fnv(bytes: &[u8]) -> u64 {
    let mut h = Head::EMPTY;
    h.add(bytes);
    h.hash
}

/// Inclusive ranges sorted and merged where they touch or overlap.
fn merged(mut ranges: Ranges) -> Ranges {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Appends the runs of `batch` (emptied) to `text`, merged, one line each.
fn ranges_text(batch: &mut Ranges, text: &mut Vec<u8>) {
    if batch.len() > 1 {
        *batch = merged(std::mem::take(batch));
    }
    for (lo, hi) in batch.drain(..) {
        let _ = match lo == hi {
            true => writeln!(text, "{lo}"),
            false => writeln!(text, "{lo}-{hi}"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_become_ranges_and_ranges_merge() {
        let path = std::env::temp_dir().join(format!("drip-journal-{}", std::process::id()));
        let (mut j, _) = Journal::open(&path, b'\n').unwrap();
        let _ = std::fs::remove_file(&path);
        for pos in [5, 1, 2, 3, 7, 8] {
            j.done(pos, b"x\n");
        }
        j.done(9, b"unterminated");
        assert_eq!(j.batch, [(5, 5), (1, 3), (7, 8)]);
        let mut text = Vec::new();
        ranges_text(&mut j.batch, &mut text);
        assert_eq!(text, b"1-3\n5\n7-8\n");
        assert_eq!(
            merged(vec![(5, 5), (1, 3), (4, 4), (7, 9), (8, 8)]),
            [(1, 5), (7, 9)]
        );
    }

    #[test]
    fn a_journal_reads_back_and_a_bad_line_is_named() {
        let mut head = Head::EMPTY;
        head.add(b"a\n");
        let text = format!("{}1-2\n4\n", head.line());
        let (h, done, _) = parse(text.as_bytes()).unwrap();
        assert_eq!(h, Some(head));
        assert_eq!(done, [(1, 2), (4, 4)]);
        let mut more = head;
        more.add(b"b\n");
        let grown = format!("{}1\n{}2\n", head.line(), more.line());
        assert_eq!(
            parse(grown.as_bytes()),
            Ok((Some(more), vec![(1, 2)], Vec::new()))
        );
        let bad = format!("{}1-2\nx\n", head.line());
        assert_eq!(parse(bad.as_bytes()), Err(3));
        assert_eq!(parse(b"1-2\n"), Err(1));
        assert_eq!(parse(b""), Ok((None, Vec::new(), Vec::new())));
    }

    #[test]
    fn a_torn_last_line_is_not_read() {
        assert_eq!(whole_lines(b"h\n1-2\n3-"), 6);
        assert_eq!(whole_lines(b"h\n1-2\n\0\0"), 6);
        assert_eq!(whole_lines(b"partial"), 0);
        assert!(torn_head(b"drip pace journal 1, inp"));
        assert!(torn_head(b"drip pace journal 1, input head: 3 rec\0\0"));
        assert!(!torn_head(b"partial"));
        assert!(!torn_head(b"\0\0"));
    }

    #[test]
    fn done_positions_are_skipped_in_order_after_the_head_is_hashed() {
        let mut skip = Skip {
            want: 2,
            head: Head::EMPTY,
            at_want: None,
            done: vec![(2, 3), (6, 6)],
            unterminated: vec![(7, fnv(b"last"))],
            next: 0,
            skipped: 0,
            skipped_bytes: 0,
            sep: b'\n',
        };
        let skipped: Vec<u64> = (1..=7).filter(|&p| skip.skips(p, b"x\n")).collect();
        assert_eq!(skipped, [2, 3, 6]);
        // The head to check is the first two; the head named grows on.
        let mut two = Head::EMPTY;
        two.add(b"x\n");
        two.add(b"x\n");
        assert_eq!(skip.head_read(false), Some(two));
        assert_eq!(skip.head.count, 7);
        assert_eq!((skip.skipped, skip.skipped_bytes), (3, 6));
    }
}
