//! Rotated logs named in any order: `access.log access.log.1
//! access.log.2.gz`, as a shell glob orders them, is newest first. Files
//! read one after another (not `--merge`) are read oldest first, by the
//! earliest time among each file's first rows, whatever order they were
//! named in; a note says so when that is not the order given. Files whose
//! times overlap by more than the reorder window still fail, when the
//! first row older than another file's is read ("these overlap: pass
//! --merge").

use super::input::InputSpec;
use super::open::file_name;
use super::reader::{self, Said};
use crate::time::Nanos;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// `spec` with its files in time order, when that is not the order given
/// (`None`: read as given: one file, `--merge`, standard input or a pipe,
/// or a file whose first rows cannot be read, which reading then says).
pub fn in_time_order(spec: &InputSpec) -> Option<InputSpec> {
    if spec.merge || spec.files.len() < 2 || !super::window::scannable(&spec.files, 0) {
        return None;
    }
    let mut peek = spec.clone();
    peek.notes = crate::notes::Notes::silent();
    let mut starts = Vec::with_capacity(spec.files.len());
    for idx in 0..spec.files.len() {
        let mut first: Option<Nanos> = None;
        let bytes = Arc::new(AtomicU64::new(0));
        reader::read_one(&peek, idx, &bytes, Said::default(), None, |batch| {
            first = batch.events.iter().map(|e| e.at).min();
            false
        })
        .ok()?;
        starts.push((first, idx));
    }
    // Stable: files without rows, and ties, keep the order given.
    starts.sort_by_key(|&(first, _)| first);
    if starts.iter().enumerate().all(|(i, &(_, idx))| i == idx) {
        return None;
    }
    let mut ordered = spec.clone();
    ordered.files = starts.iter().map(|&(_, i)| spec.files[i].clone()).collect();
    if !spec.notes.is_silent() {
        let names: Vec<String> = ordered.files.iter().map(|f| file_name(f)).collect();
        spec.notes.say(format_args!(
            "reading the files oldest first, by the times of their first rows: {} (pass --merge if they are logs of one period from several servers)",
            names.join(", ")
        ));
    }
    Some(ordered)
}
