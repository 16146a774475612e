//! W3C extended log files (CloudFront standard logs, IIS): `#Version:` and
//! `#Fields:` directives, then one request per line, tab-separated
//! (CloudFront) or space-separated (IIS). Fields carry the names of the
//! `#Fields:` line (`date`, `time`, `c-ip`, `cs-uri-stem`, `x-forwarded-for`,
//! ...); `date` and `time` are joined into the default time. Times are UTC,
//! as the W3C format defines them.

use super::{Fields, LineParser, Parsed};

#[derive(Default)]
pub struct W3c {
    names: Option<Vec<String>>,
}

impl W3c {
    /// Reads a directive line; an error when `#Fields:` changes mid-file.
    fn directive(&mut self, line: &[u8]) -> Result<(), String> {
        let Some(rest) = line.strip_prefix(b"#Fields:") else {
            return Ok(());
        };
        let names: Vec<String> = String::from_utf8_lossy(rest)
            .split_ascii_whitespace()
            .map(String::from)
            .collect();
        match &self.names {
            Some(old) if *old != names => Err(format!(
                "a #Fields: line names other fields than the first ({} instead of {}); split the log where its fields change",
                names.join(" "),
                old.join(" ")
            )),
            _ => {
                self.names = Some(names);
                Ok(())
            }
        }
    }
}

impl LineParser for W3c {
    fn format(&self) -> &'static str {
        "w3c"
    }

    fn names(&self) -> Option<&[String]> {
        self.names.as_deref()
    }

    fn default_time(&mut self) -> Option<(usize, Option<usize>)> {
        let names = self.names.as_ref()?;
        let date = names.iter().position(|n| n == "date")?;
        let time = names.iter().position(|n| n == "time")?;
        Some((date, Some(time)))
    }

    fn learn(&mut self, line: &[u8]) -> bool {
        if line.starts_with(b"#") {
            // A conflicting #Fields: before any request is reported by parse.
            let _ = self.directive(line);
            true
        } else {
            false
        }
    }

    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, String> {
        if line.starts_with(b"#") {
            self.directive(line)?;
            return Ok(Parsed::Skip);
        }
        let Some(names) = &self.names else {
            return Err("a request line before any #Fields: line names the fields".into());
        };
        let sep = if memchr::memchr(b'\t', line).is_some() {
            b'\t'
        } else {
            b' '
        };
        for v in line.split(|&b| b == sep) {
            out.push_sub(line, v);
        }
        if out.spans.len() != names.len() {
            return Err(format!(
                "the line has {} field(s), the #Fields: line names {}",
                out.spans.len(),
                names.len()
            ));
        }
        Ok(Parsed::Record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_named_by_the_directive() {
        let mut p = W3c::default();
        assert!(p.learn(b"#Version: 1.0"));
        assert!(p.learn(b"#Fields: date time x-edge-location c-ip cs-uri-stem"));
        assert!(!p.learn(b"2019-12-04\t21:02:31\tLAX1\t192.0.2.100\t/index.html"));
        assert_eq!(p.default_time(), Some((0, Some(1))));
        let line = b"2019-12-04\t21:02:31\tLAX1\t192.0.2.100\t/a%20b";
        let mut f = Fields::default();
        p.parse(line, &mut f).unwrap();
        assert_eq!(f.get(line, 3).unwrap(), b"192.0.2.100");
        // IIS: spaces.
        let line = b"2019-12-04 21:02:31 - 192.0.2.1 /";
        let mut f = Fields::default();
        p.parse(line, &mut f).unwrap();
        assert_eq!(f.get(line, 2).unwrap(), b"-");
        let e = p
            .parse(b"2019-12-04\t21:02:31", &mut Fields::default())
            .err()
            .unwrap();
        assert!(e.contains("2 field(s), the #Fields: line names 5"), "{e}");
        assert!(matches!(
            p.parse(
                b"#Fields: date time x-edge-location c-ip cs-uri-stem",
                &mut f
            ),
            Ok(Parsed::Skip)
        ));
        let e = p.parse(b"#Fields: date time", &mut f).err().unwrap();
        assert!(e.contains("names other fields"), "{e}");
        let e = W3c::default().parse(b"x y", &mut f).err().unwrap();
        assert!(e.contains("before any #Fields:"), "{e}");
    }
}
