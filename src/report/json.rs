//! JSON for scripts: the report as it is, pretty-printed (JSON escapes
//! every string itself). Field names are stable; times are integer
//! nanoseconds (`*_ns`), counts are integers, `drop_pct` is a number,
//! `wait` is present only for shaping policies and `timeline` only with
//! `--timeline`.

use super::page::Page;
use std::io::{self, Write};

pub fn write(page: &Page, out: &mut dyn Write) -> io::Result<()> {
    page.json.write_json(out)?;
    writeln!(out)
}
