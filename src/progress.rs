//! Progress on standard error, for every command: one rule for when it
//! shows and one look. Only drivers use it; the core never sees a bar.
//!
//! It shows unless `--quiet` or `--no-progress` is given, and then only
//! with `--progress` or when standard error is a terminal, so a pipeline or
//! a CI log never fills with redraws.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use crate::ingest::stream::Progress;

/// The command line's say on progress.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wanted {
    /// `--quiet` (a command without it passes false).
    pub quiet: bool,
    /// `--no-progress`.
    pub no_progress: bool,
    /// `--progress`.
    pub progress: bool,
}

impl Wanted {
    /// Whether progress shows: never when quiet or turned off; when asked
    /// for, or when standard error is a terminal.
    pub fn show(self) -> bool {
        self.show_on(std::io::stderr().is_terminal())
    }

    /// [`Wanted::show`] with the terminal test's answer given.
    fn show_on(self, stderr_is_terminal: bool) -> bool {
        !self.quiet && !self.no_progress && (self.progress || stderr_is_terminal)
    }
}

/// A bar drawn on stderr in the style `template`, of `len` steps (none:
/// unknown), or a hidden one when `show` is false.
fn bar(show: bool, len: Option<u64>, template: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr());
    bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
    bar
}

/// Reading a log, drawn: bytes read of the files' total size, and rows per
/// second since reading began.
pub struct Reading {
    bar: ProgressBar,
    started: Instant,
}

impl Progress for Reading {
    fn read(&self, bytes: u64, rows: u64) {
        self.bar.set_position(bytes);
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        self.bar
            .set_message(format!("{:.0} rows/s", rows as f64 / secs));
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Reading a log: bytes read of the files' total size (no length when the
/// input is stdin alone), with the reader's message and the time left.
pub fn bytes_read(show: bool, files: &[PathBuf]) -> Reading {
    let total: u64 = files
        .iter()
        .filter(|f| f.as_os_str() != "-")
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    Reading {
        bar: bar(
            show,
            (total > 0).then_some(total),
            "{spinner} {bytes}/{total_bytes} {wide_bar} {msg} eta {eta}",
        ),
        started: Instant::now(),
    }
}

/// Working through `len` items of one kind (`what`, a plural: "rates").
pub fn steps(show: bool, len: u64, what: &str) -> ProgressBar {
    bar(
        show,
        Some(len),
        &format!("{{spinner}} sweeping {{pos}}/{{len}} {what} {{wide_bar}} eta {{eta}}"),
    )
}

/// A running line: a spinner and the caller's message (no length).
pub fn status_line(show: bool) -> ProgressBar {
    bar(show, None, "{spinner} {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_and_no_progress_win_then_progress_or_a_terminal_shows_it() {
        let w = |quiet, no_progress, progress| Wanted {
            quiet,
            no_progress,
            progress,
        };
        for tty in [false, true] {
            assert!(!w(true, false, true).show_on(tty), "--quiet hides it");
            assert!(!w(false, true, true).show_on(tty), "--no-progress hides it");
            assert!(w(false, false, true).show_on(tty), "--progress shows it");
        }
        assert!(w(false, false, false).show_on(true), "a terminal shows it");
        assert!(!w(false, false, false).show_on(false), "a pipe does not");
    }

    #[test]
    fn every_style_parses_and_hidden_bars_stay_hidden() {
        // The templates are checked when a bar is shown.
        bytes_read(true, &[PathBuf::from("-")])
            .bar
            .finish_and_clear();
        steps(true, 3, "rates").finish_and_clear();
        status_line(true).finish_and_clear();
        assert!(bytes_read(false, &[]).bar.is_hidden());
        assert!(steps(false, 3, "windows").is_hidden());
        assert!(status_line(false).is_hidden());
        assert_eq!(steps(true, 3, "rates").length(), Some(3));
        assert_eq!(bytes_read(true, &[PathBuf::from("-")]).bar.length(), None);
    }
}
