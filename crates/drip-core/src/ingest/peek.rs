//! A look at a log's first lines before it is read: its format's field
//! names, or which `log_format` it was written with.

use super::input::InputSpec;
use super::log::InputFormat;

/// The first line of a log file (gzip or plain), for choosing its format.
fn first_line(path: &std::path::Path) -> Option<Vec<u8>> {
    first_lines(path, 1).into_iter().next().map(|(_, l)| l)
}

/// Up to `n` first non-empty lines of a (possibly gzipped) log, with
/// their line numbers; a UTF-8 byte order mark is no part of the first.
pub fn first_lines(path: &std::path::Path, n: usize) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    let Some(mut r) = open_log(path) else {
        return out;
    };
    let mut number = 0;
    while out.len() < n {
        let Some(mut line) = next_line(&mut r) else {
            break;
        };
        number += 1;
        if number == 1 {
            let bom = line.len() - crate::ingest::log::strip_bom(&line).len();
            line.drain(..bom);
        }
        if !line.is_empty() {
            out.push((number, line));
        }
    }
    out
}

fn open_log(path: &std::path::Path) -> Option<Box<dyn std::io::BufRead>> {
    use std::io::{BufRead, BufReader};
    let mut raw = BufReader::new(std::fs::File::open(path).ok()?);
    let gz = raw.fill_buf().ok()?.starts_with(&[0x1f, 0x8b]);
    Some(if gz {
        Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(raw)))
    } else {
        Box::new(raw)
    })
}

fn next_line(r: &mut Box<dyn std::io::BufRead>) -> Option<Vec<u8>> {
    use std::io::{BufRead, Read};
    let mut line = Vec::new();
    let n = r
        .by_ref()
        .take(crate::ingest::log::MAX_LINE as u64)
        .read_until(b'\n', &mut line)
        .ok()?;
    if n == 0 {
        return None;
    }
    while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        line.pop();
    }
    Some(line)
}

/// The log's field names when they can be known before reading: a CSV
/// header, or the names a line format gives. `None` when they cannot (stdin,
/// JSON lines, a W3C file before its `#Fields:` line).
pub fn log_fields(spec: &InputSpec) -> Option<Vec<String>> {
    let path = spec.files.first().filter(|f| f.as_os_str() != "-")?;
    let line = first_line(path)?;
    let format = match spec.input_format {
        InputFormat::Auto => crate::ingest::log::detect(&line).unwrap_or(InputFormat::Csv),
        f => f,
    };
    match format {
        InputFormat::Csv | InputFormat::Tsv | InputFormat::Auto => {
            if spec.no_header {
                return None;
            }
            let name = path.to_string_lossy();
            let name = name.strip_suffix(".gz").unwrap_or(&name);
            let delimiter = spec.delimiter.unwrap_or(
                if format == InputFormat::Tsv || name.ends_with(".tsv") || name.ends_with(".tab") {
                    b'\t'
                } else {
                    b','
                },
            );
            let mut r = csv::ReaderBuilder::new()
                .has_headers(false)
                .delimiter(delimiter)
                .from_reader(line.as_slice());
            let rec = r.byte_records().next()?.ok()?;
            Some(
                rec.iter()
                    .map(|f| String::from_utf8_lossy(f).trim().to_string())
                    .collect(),
            )
        }
        InputFormat::Ndjson => None,
        f => {
            let p = crate::ingest::log::parser(f, spec.log_format.as_deref()).ok()?;
            p.names().map(<[String]>::to_vec)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bom_is_no_part_of_the_first_line() {
        let dir = std::env::temp_dir().join(format!("drip-peek-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bom.csv");
        std::fs::write(&p, b"\xEF\xBB\xBFts,key\n1,a\n").unwrap();
        let lines = super::first_lines(&p, 2);
        assert_eq!(lines[0], (1, b"ts,key".to_vec()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
