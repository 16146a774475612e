//! What the core would tell the person running it, besides its results:
//! the format it detected, rows it re-sorted, a key column it would
//! suggest. The core never prints; it hands each note, one line of text, to
//! the sink its caller gave (the command line prints them on stderr, a
//! library caller collects or drops them).

use std::fmt;
use std::sync::Arc;

/// A sink for notes, cheap to clone and to pass to reader threads.
/// [`Notes::silent`] (the default) drops every note.
#[derive(Clone, Default)]
pub struct Notes {
    sink: Option<Sink>,
}

/// The function each note is handed to.
type Sink = Arc<dyn Fn(&str) + Send + Sync>;

impl Notes {
    /// Drops every note.
    pub fn silent() -> Notes {
        Notes::default()
    }

    /// Hands every note to `sink`, one line of text without a newline.
    pub fn to(sink: impl Fn(&str) + Send + Sync + 'static) -> Notes {
        Notes {
            sink: Some(Arc::new(sink)),
        }
    }

    /// Whether notes are dropped (so a caller can skip work that only
    /// serves a note).
    pub fn is_silent(&self) -> bool {
        self.sink.is_none()
    }

    /// Hands `text` to the sink, if there is one.
    pub fn say(&self, text: impl fmt::Display) {
        if let Some(sink) = &self.sink {
            sink(&text.to_string());
        }
    }
}

impl fmt::Debug for Notes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_silent() {
            "Notes(silent)"
        } else {
            "Notes(sink)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Notes;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_sink_gets_each_note_and_silent_drops_them() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let seen = got.clone();
        let notes = Notes::to(move |t| seen.lock().unwrap().push(t.to_string()));
        assert!(!notes.is_silent());
        notes.clone().say(format_args!("read {} rows", 3));
        Notes::silent().say("never");
        assert_eq!(*got.lock().unwrap(), ["read 3 rows"]);
        assert!(Notes::silent().is_silent());
    }
}
