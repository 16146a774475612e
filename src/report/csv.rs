//! CSV for scripts: the page's tables for scripts, each with its own
//! header, one blank line between two. For the audit: the per-policy
//! summary; then, when there are any, the top keys, the timeline, each
//! nginx.conf's locations and verification (with a leading `policy`
//! column), and the `--compare` tables. Waits are decimal milliseconds,
//! exact; instants are ns since the epoch.
//!
//! Cells are quoted as CSV needs (a comma, a quote or a line break in a
//! key stays inside its cell) and are otherwise written exactly as found:
//! a script reading the file gets every key and label byte for byte. A
//! cell may therefore start with `=`, `+`, `-` or `@`, which a spreadsheet
//! opening the file may take for a formula: import a report made from
//! untrusted logs into a spreadsheet as text, not by opening it.

use super::page::{Page, Table};
use std::io::{self, Write};

fn write_table(out: &mut dyn Write, t: &Table) -> io::Result<()> {
    let mut w = ::csv::Writer::from_writer(out);
    w.write_record(&t.headers)?;
    for r in &t.rows {
        w.write_record(r)?;
    }
    w.flush()
}

/// Writes the tables of `page` for scripts.
pub fn write(page: &Page, out: &mut dyn Write) -> io::Result<()> {
    for (i, t) in page.data.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        write_table(out, t)?;
    }
    Ok(())
}
