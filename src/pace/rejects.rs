//! The rejects file (`--rejects`): every line refused, and every line read
//! and not written when the run stops early, kept as it came. When writing
//! it fails, the file is given up and the error kept: the run then takes no
//! more input, sends what was admitted, and ends with that error.

use anyhow::Context;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The rejects file, when one is given, and why it was given up.
pub(super) struct Rejects {
    path: Option<PathBuf>,
    file: Option<BufWriter<File>>,
    /// Why the file was given up.
    error: Option<io::Error>,
}

impl Rejects {
    /// Creates the file at `path`, when one is given.
    pub(super) fn open(path: Option<&Path>) -> anyhow::Result<Rejects> {
        let file = match path {
            Some(path) => Some(BufWriter::new(File::create(path).with_context(|| {
                format!("cannot create the rejects file '{}'", path.display())
            })?)),
            None => None,
        };
        Ok(Rejects {
            path: path.map(Path::to_path_buf),
            file,
            error: None,
        })
    }

    /// Whether writing the file failed (the run then reads no more).
    pub(super) fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Writes a line to the file, if there is one (and flushes it when
    /// `flush`). When that fails the file is given up and the error kept.
    pub(super) fn keep(&mut self, item: &[u8], flush: bool) {
        if let Some(w) = &mut self.file {
            let result = w
                .write_all(item)
                .and_then(|()| if flush { w.flush() } else { Ok(()) });
            if let Err(e) = result {
                self.give_up(e);
            }
        }
    }

    /// Flushes what is buffered, at the end of the run.
    pub(super) fn flush(&mut self) {
        if let Some(w) = &mut self.file
            && let Err(e) = w.flush()
        {
            self.give_up(e);
        }
    }

    fn give_up(&mut self, e: io::Error) {
        self.file = None;
        self.error = Some(e);
    }

    /// Says on stderr that the file failed and lines may be missing from
    /// it, if it did.
    pub(super) fn say_failure(&self, dropped: u64, unsent: u64) {
        if let Some(e) = &self.error {
            let path = self.path.as_deref().unwrap_or(Path::new(""));
            crate::say!(
                "drip: cannot write the rejects file '{}': {e}; input was read no further, and of the {dropped} line(s) dropped and {unsent} unsent not all are in that file; free space there or give another --rejects FILE",
                path.display(),
            );
        }
    }

    /// Where lines not written were kept, for a message ending with them.
    pub(super) fn kept_in(&self) -> String {
        match &self.path {
            Some(_) if self.failed() => String::new(),
            Some(p) => format!(" and kept in '{}'", p.display()),
            None => " (give --rejects FILE to keep them)".into(),
        }
    }
}
