//! CSV for scripts: the page's tables for scripts, each with its own
//! header, one blank line between two. For the audit: the per-policy
//! summary; then, when there are any, the top keys, the timeline, each
//! nginx.conf's locations and verification (with a leading `policy`
//! column), and the `--compare` tables. Waits are decimal milliseconds,
//! exact; instants are ns since the epoch.
//!
//! Cells are quoted as CSV needs (a comma, a quote or a line break in a
//! key stays inside its cell). Keys are already escaped as every format
//! escapes them; every other cell (labels, locations, file names) has its
//! control and bidi characters written as escapes here. A cell that a
//! spreadsheet would run as a formula — one that starts with `=`, `+`,
//! `-` or `@` (tabs and carriage returns are escaped), and is neither a number nor a
//! lone `-` — gets a leading `'`, as OWASP recommends, so it opens as
//! text. For keys byte for byte, read the JSON report.

use super::page::{Page, Table};
use std::borrow::Cow;
use std::io::{self, Write};

/// `cell` as written: escaped, and kept from being a formula.
fn safe(cell: &str) -> Cow<'_, str> {
    let cell = if cell.chars().any(crate::quote::hides) {
        Cow::Owned(crate::quote::visible(cell))
    } else {
        Cow::Borrowed(cell)
    };
    let formula =
        cell.starts_with(['=', '+', '-', '@']) && cell != "-" && cell.parse::<f64>().is_err();
    if formula {
        Cow::Owned(format!("'{cell}"))
    } else {
        cell
    }
}

fn write_table(out: &mut dyn Write, t: &Table) -> io::Result<()> {
    let mut w = ::csv::Writer::from_writer(out);
    w.write_record(t.headers.iter().map(|h| safe(h).into_owned()))?;
    for r in &t.rows {
        w.write_record(r.iter().map(|c| safe(c).into_owned()))?;
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

#[cfg(test)]
mod tests {
    use super::safe;

    #[test]
    fn formulas_are_text_and_controls_escaped() {
        for (cell, written) in [
            ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
            ("+1+2", "'+1+2"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tx", "\\tx"),
            ("-", "-"),
            ("-12.5", "-12.5"),
            ("+7", "+7"),
            ("1e3", "1e3"),
            ("/api/ \u{1b}[2J", "/api/ \\u{1b}[2J"),
            ("a\u{202e}b", "a\\u{202e}b"),
            ("plain", "plain"),
        ] {
            assert_eq!(safe(cell), written, "{cell:?}");
        }
    }
}
