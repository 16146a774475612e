//! Opening a log: a file or stdin (`-`), gzip (by its magic bytes, one
//! member after another), bytes counted for the progress bar, and a
//! compressed or binary file refused with what to do instead.

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
        return Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            GzMembers::new(buffered),
        )));
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
}

impl<R: BufRead> GzMembers<R> {
    fn new(inner: R) -> GzMembers<R> {
        GzMembers {
            member: Some(flate2::bufread::GzDecoder::new(inner)),
        }
    }
}

impl<R: BufRead> Read for GzMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(member) = self.member.as_mut() else {
                return Ok(0);
            };
            let n = member.read(buf)?;
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
                            "trailing garbage after the gzip data (bytes that are neither another gzip member nor zero padding); the file was damaged or appended to: cut it at the end of the gzip data, or recompress the log",
                        ));
                    }
                }
            }
        }
    }
}
