//! JSON for scripts: the [`Report`] as it is, pretty-printed.
//! Field names are stable; times are integer nanoseconds (`*_ns`), counts
//! are integers, `drop_pct` is a number, `wait` is present only for
//! shaping policies and `timeline` only with `--timeline`.

use super::Report;
use std::io::{self, Write};

pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    writeln!(out)
}
