//! Opening a log: a file or stdin (`-`), gzip (by its magic bytes, one
//! member after another), bytes counted for the progress bar, and a
//! compressed or binary file refused with what to do instead (also inside
//! a gzip file: gzip in gzip is refused, not read as text). A gzip file cut
//! short or damaged is named. A CSV line longer than `--max-line` stops
//! the read with its line number before it is held in memory.

use crate::quote::NotText;
use anyhow::{Context, Result, bail};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A display name for a file argument.
pub fn file_name(p: &Path) -> String {
    if p.as_os_str() == "-" {
        "<stdin>".into()
    } else {
        p.display().to_string()
    }
}

/// Counts bytes read, for the progress bar.
struct Counting<R> {
    inner: R,
    bytes: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// `reader` with its lines at most `max_line` bytes: a longer one is an
/// error naming its line (of `name`) before it is held in memory. For CSV,
/// whose parser would hold a field of any length; access-log lines are
/// read by `log::Lines`, which holds no line longer than `max_line` and
/// makes it a bad line.
pub(super) fn limit_lines(
    reader: Box<dyn BufRead + Send>,
    max_line: usize,
    name: &str,
) -> Box<dyn BufRead + Send> {
    Box::new(LineLimit {
        inner: reader,
        max: max_line,
        run: 0,
        lines: 0,
        seen: 0,
        name: name.to_string(),
    })
}

/// Opens `path`: its text as it is, or decompressed.
pub(super) fn open(path: &Path, bytes: &Arc<AtomicU64>) -> Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        let f = File::open(path)
            .with_context(|| format!("cannot open '{}'; check the path", path.display()))?;
        Box::new(f)
    };
    let mut buffered = BufReader::with_capacity(
        1 << 16,
        Counting {
            inner: raw,
            bytes: bytes.clone(),
        },
    );
    let magic = buffered
        .fill_buf()
        .with_context(|| format!("cannot read '{}'", file_name(path)))?;
    if magic.starts_with(&[0x1f, 0x8b]) {
        let mut text = BufReader::with_capacity(1 << 16, GzMembers::new(buffered, file_name(path)));
        let inside = text
            .fill_buf()
            .with_context(|| format!("cannot read '{}'", file_name(path)))?;
        if let Some(what) = crate::quote::not_text(inside) {
            let kind = match what {
                NotText::Packed { kind, .. } => format!("{kind} data"),
                NotText::Binary => "binary data (a NUL byte on its first line)".into(),
            };
            bail!(
                "'{}' is binary data, not a text log: decompressed, it is {kind} again; give the log itself (decompress it fully first, e.g. zcat '{}' | zcat | drip ... -)",
                file_name(path),
                path.display()
            );
        }
        return Ok(Box::new(text));
    }
    match crate::quote::not_text(magic) {
        Some(NotText::Packed { kind, tool }) => bail!(
            "'{}' looks compressed ({kind}), which drip does not read; decompress it into drip: {tool} '{}' | drip ... -",
            file_name(path),
            path.display()
        ),
        Some(NotText::Binary) => bail!(
            "'{}' is binary data, not a text log (its first line holds a NUL byte); give the log itself (a UTF-16 log: convert it first with iconv -f UTF-16 -t UTF-8)",
            file_name(path)
        ),
        None => {}
    }
    Ok(Box::new(buffered))
}

/// Gzip members one after another (as `cat a.gz b.gz` makes), then
/// optionally zero bytes (tape and block padding, which `gzip -t` accepts
/// too). Anything else after the last member is trailing garbage, said
/// plainly with its offset.
struct GzMembers<R: BufRead> {
    member: Option<flate2::bufread::GzDecoder<R>>,
    /// The file's display name, for its errors.
    name: String,
}

impl<R: BufRead> GzMembers<R> {
    fn new(inner: R, name: String) -> GzMembers<R> {
        GzMembers {
            member: Some(flate2::bufread::GzDecoder::new(inner)),
            name,
        }
    }

    /// A gzip error naming the file: cut short (a copy in progress, a
    /// full disk) or damaged.
    fn named(&self, e: io::Error) -> io::Error {
        let name = &self.name;
        let text = e.to_string();
        let why = if e.kind() == io::ErrorKind::UnexpectedEof || text.contains("incomplete") {
            format!(
                "'{name}' is a truncated gzip file: its compressed data stops short ({text}); it was cut while being written or copied: copy it again, or read what there is with zcat '{name}' | drip ... -"
            )
        } else {
            format!(
                "'{name}' holds damaged gzip data ({text}); check it with gzip -t '{name}', or copy it again"
            )
        };
        io::Error::new(io::ErrorKind::InvalidData, why)
    }
}

impl<R: BufRead> Read for GzMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(member) = self.member.as_mut() else {
                return Ok(0);
            };
            let n = match member.read(buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => return Err(e),
                Err(e) => return Err(self.named(e)),
            };
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // The member ended: another, padding, the end, or garbage.
            let mut inner = self.member.take().expect("a member").into_inner();
            let mut zeros = 0u64;
            loop {
                let rest = inner.fill_buf()?;
                if rest.is_empty() {
                    return Ok(0);
                }
                if zeros == 0 && rest.starts_with(&[0x1f]) {
                    self.member = Some(flate2::bufread::GzDecoder::new(inner));
                    break;
                }
                match rest.iter().position(|&b| b != 0) {
                    None => {
                        let n = rest.len();
                        zeros += n as u64;
                        inner.consume(n);
                    }
                    Some(_) => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "'{}' has trailing garbage after the gzip data (bytes that are neither another gzip member nor zero padding); the file was damaged or appended to: cut it at the end of the gzip data, or recompress the log",
                                self.name
                            ),
                        ));
                    }
                }
            }
        }
    }
}

/// A log's bytes with a line-length limit: a line longer than `max` bytes
/// (a file without line ends, binary data) is an error naming its line,
/// raised before the line is held anywhere. Each byte is looked at once,
/// as it is first seen: newlines counted, bytes since the last one summed.
struct LineLimit<R> {
    inner: R,
    max: usize,
    /// Bytes since the last line end.
    run: usize,
    /// Line ends seen.
    lines: u64,
    /// Bytes of the inner buffer already looked at.
    seen: usize,
    name: String,
}

impl<R: BufRead> BufRead for LineLimit<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let buf = self.inner.fill_buf()?;
        if buf.len() > self.seen {
            let new = &buf[self.seen..];
            match memchr::memrchr(b'\n', new) {
                Some(i) => {
                    self.lines += memchr::memchr_iter(b'\n', &new[..=i]).count() as u64;
                    self.run = new.len() - i - 1;
                }
                None => self.run += new.len(),
            }
            self.seen = buf.len();
            if self.run > self.max {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}:{}: the line is longer than {} bytes (--max-line) and has no end yet: not a log of lines (one huge line, or binary data); give the log itself, or raise --max-line",
                        self.name,
                        self.lines + 1,
                        self.max
                    ),
                ));
            }
        }
        Ok(buf)
    }

    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt);
        self.seen = self.seen.saturating_sub(amt);
    }
}

impl<R: BufRead> Read for LineLimit<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        // What is buffered, as a slice reads it.
        let n = Read::read(&mut self.fill_buf()?, out)?;
        self.consume(n);
        Ok(n)
    }
}
