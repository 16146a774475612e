//! The run's side of `--journal`: before anything is decided, a journal
//! from an earlier run is checked against the input's head (another
//! input is refused); a fresh journal learns the head as it is read; at
//! the end everything done is written and synced. What counts as
//! done is marked where it happens: a write ([`shaper_loop`](super::shaper_loop))
//! or a command's exit ([`launch`](super::launch)).

use super::Pacer;
use super::reader::{Guard, Inbox, Shared};

impl Pacer {
    /// With a journal from an earlier run: waits until the input's head is
    /// read (or the input ends) and refuses an input that is not the one
    /// the journal was written for. A signal or a read error first: the
    /// run stops without the check.
    pub(super) fn check_journal<'a>(
        &mut self,
        mut g: Guard<'a>,
        shared: &'a Shared,
    ) -> anyhow::Result<Guard<'a>> {
        let Some(journal) = &mut self.journal else {
            return Ok(g);
        };
        if journal.expected().is_none() {
            return Ok(g);
        }
        loop {
            if g.signal.is_some() || g.read_error.is_some() {
                return Ok(g);
            }
            if let Some(head) = g.journal.as_ref().and_then(|s| s.head_read(g.eof)) {
                journal.check(head)?;
                return Ok(g);
            }
            g = shared.wait_main(g, None);
        }
    }

    /// Each turn: the input's head as far as it was read (a fresh journal
    /// names it), and the bytes skipped (for the progress line's ETA).
    pub(super) fn note_journal(&mut self, g: &Inbox) {
        let (Some(journal), Some(skip)) = (&mut self.journal, &g.journal) else {
            return;
        };
        self.tally.bytes_skipped = skip.skipped_bytes;
        if journal.head_open() {
            journal.note_head(skip.head);
        }
    }

    /// At the end of the run: the journal written and synced, and the
    /// records it skipped counted apart from those read.
    pub(super) fn close_journal(&mut self, g: &Inbox) {
        let (Some(journal), Some(skip)) = (&mut self.journal, &g.journal) else {
            return;
        };
        journal.close(skip.head);
        self.tally.journal_skipped = Some(skip.skipped);
    }

    /// Whether the journal could not be written.
    pub(super) fn journal_failed(&self) -> bool {
        self.journal.as_ref().is_some_and(|j| j.failed())
    }
}
