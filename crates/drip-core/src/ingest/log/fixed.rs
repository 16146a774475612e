//! Lines whose fields come in a fixed order, separated by spaces, some of
//! them `"quoted"` or `[bracketed]` (see [`tokens`]): the layout of each
//! format is data ([`Layout`]), one per format module (combined, common,
//! vcombined, vcommon, Traefik CLF, Classic ELB, S3, Squid, Envoy).
//!
//! A line's fields are, in order: the written ones by their names, then the
//! derived ones (an address without its port, the request split into
//! `method`, `uri` and `protocol`), then fields past the named ones as
//! `fieldN` by their index. A line may lack the written fields after the
//! first `least`; they are missing there.
//!
//! A line cut by its end inside a quoted field after the first `least - 1`
//! fields, or garbled after the first `least`, keeps its row: its time and
//! key are intact. Such a line is marked cut ([`Fields::cut`]) and counted.

use super::tokens::{Token, tokens};
use super::{Fields, LineError, LineParser, Parsed, split_request};

/// How one format writes its lines.
pub struct Layout {
    /// The format's name, as `--input-format` takes it.
    pub format: &'static str,
    /// The written fields, in line order, as parts laid end to end (a
    /// format that extends another lists the other's names as a part).
    pub names: &'static [&'static [&'static str]],
    /// Fields every line has.
    pub least: usize,
    /// The default time field.
    pub time: usize,
    /// The time is written `[bracketed]`: a line whose time field is not
    /// is of another shape.
    pub time_bracketed: bool,
    /// An `ip:port` field, and the name given to the address alone.
    pub ports: &'static [(usize, &'static str)],
    /// The quoted request line (`GET /a HTTP/1.1`), split into `method`,
    /// `uri` and `protocol`.
    pub request: Option<usize>,
    /// A shorter variant of the format lines of it may be written in (a
    /// Common line in a Combined log): its fields and its name. Such a line
    /// lacks the fields past its own, and is counted as of the variant.
    pub shorter: Option<(usize, &'static str)>,
}

impl Layout {
    /// Lines of `names` (parts joined), every line with the first `least`,
    /// the time in field `time`; no ports, no request line.
    pub const fn new(
        format: &'static str,
        names: &'static [&'static [&'static str]],
        least: usize,
        time: usize,
    ) -> Layout {
        Layout {
            format,
            names,
            least,
            time,
            time_bracketed: false,
            ports: &[],
            request: None,
            shorter: None,
        }
    }

    /// With the time written `[bracketed]`.
    pub const fn bracketed(mut self) -> Layout {
        self.time_bracketed = true;
        self
    }

    /// With `ip:port` fields and the names of their addresses alone.
    pub const fn ports(mut self, ports: &'static [(usize, &'static str)]) -> Layout {
        self.ports = ports;
        self
    }

    /// With lines of a shorter variant, `name`, of `fields` fields.
    pub const fn shorter(mut self, fields: usize, name: &'static str) -> Layout {
        self.shorter = Some((fields, name));
        self
    }

    /// With a quoted request line at field `i`.
    pub const fn request(mut self, i: usize) -> Layout {
        self.request = Some(i);
        self
    }
}

/// Field names given past the named ones.
const EXTRA_NAMED: usize = 16;

/// Lines of one [`Layout`].
pub struct Fixed {
    layout: &'static Layout,
    /// The written fields' names, the parts joined.
    written: Vec<&'static str>,
    names: Vec<String>,
    /// The derived fields a run reads, a bit each in their order (`None`:
    /// all of them, until a field is asked for by name or position): the
    /// others are left missing, not computed on every line.
    derive: Option<u64>,
}

impl Fixed {
    pub fn new(layout: &'static Layout) -> Fixed {
        let written: Vec<&'static str> = layout.names.concat();
        let mut names: Vec<String> = written.iter().map(|s| s.to_string()).collect();
        names.extend(layout.ports.iter().map(|(_, n)| n.to_string()));
        if layout.request.is_some() {
            names.extend(["method", "uri", "protocol"].map(String::from));
        }
        for i in names.len()..names.len() + EXTRA_NAMED {
            names.push(format!("field{i}"));
        }
        Fixed {
            layout,
            written,
            names,
            derive: None,
        }
    }

    /// The index of the first derived field.
    fn derived(&self) -> usize {
        self.written.len()
    }

    /// How many fields are derived: the ports' addresses, the request's parts.
    fn derived_count(&self) -> usize {
        self.layout.ports.len() + if self.layout.request.is_some() { 3 } else { 0 }
    }

    /// Notes that the run reads field `i`.
    fn mark(&mut self, i: usize) {
        let count = self.derived_count();
        let bits = self.derive.get_or_insert(0);
        if let Some(k) = i.checked_sub(self.written.len())
            && k < count
        {
            *bits |= 1 << k;
        }
    }

    /// Puts a line's tokens `t` (the written fields in order) into `out`
    /// (empty), with the derived fields and the ones past the named.
    pub fn lay_out(&self, line: &[u8], t: &Fields, out: &mut Fields) -> Result<(), LineError> {
        out.spans.extend_from_slice(&t.spans);
        self.arrange(line, out)
    }

    /// Orders a line's tokens, the only spans in `out`: the written fields
    /// (checked), the derived ones, then the ones past the named.
    fn arrange(&self, line: &[u8], out: &mut Fields) -> Result<(), LineError> {
        let l = self.layout;
        let names = &self.written;
        let got = out.spans.len();
        match l.shorter {
            Some((fields, name)) if got < l.least && got >= fields => out.variant = Some(name),
            _ => {}
        }
        if got < l.least && out.variant.is_none() {
            return Err(LineError::new(format!(
                "the line has {got} field(s), a {} line has at least {} ({}); no {}",
                l.format,
                l.least,
                names[..l.least].join(" "),
                names[got]
            )));
        }
        let time = out.in_line(line, l.time);
        let unbracketed = l.time_bracketed && !super::tokens::wrapped(line, out, l.time, b'[');
        if time.is_empty() || time == b"-" || unbracketed {
            return Err(LineError::new(format!(
                "field {} ({}) holds no time",
                l.time, names[l.time]
            )));
        }
        let written = self.derived();
        if got < written {
            out.spans.resize(written, super::MISSING);
        }
        let want = |k: usize| self.derive.is_none_or(|bits| bits & (1 << k) != 0);
        for (k, &(i, _)) in l.ports.iter().enumerate() {
            let host = out.in_line(line, i);
            if host.ends_with(b",") {
                // The first of a list of addresses (X-Forwarded-For).
                return Err(LineError::new(format!(
                    "field {i} ({}) ends with a comma: not a host",
                    names[i]
                )));
            }
            match want(k) {
                true => out.push_sub(line, super::key::address_of(host)),
                false => out.spans.push(super::MISSING),
            }
        }
        if let Some(r) = l.request {
            let k = l.ports.len();
            if want(k) || want(k + 1) || want(k + 2) {
                let (m, u, p) = split_request(out.in_line(line, r));
                out.push_sub(line, m);
                out.push_sub(line, u);
                out.push_sub(line, p);
            } else {
                for _ in 0..3 {
                    out.spans.push(super::MISSING);
                }
            }
        }
        if got > written {
            // The fields past the named ones go after the derived.
            out.spans[written..].rotate_right(self.derived_count());
        }
        Ok(())
    }

    /// The line's tokens into `out`; `Ok(true)` when its tail was cut or
    /// garbled after the fields that matter.
    fn read_tokens(&self, line: &[u8], out: &mut Fields) -> Result<bool, LineError> {
        let l = self.layout;
        match tokens(line, out, &self.written) {
            Ok(Token::Whole) => Ok(false),
            Ok(Token::Cut(i)) if i + 1 >= l.least => Ok(true),
            Ok(Token::Cut(i)) => Err(super::tokens::unclosed(i, &self.written)),
            Err(_) if out.spans.len() >= l.least => Ok(true),
            Err(e) => Err(e),
        }
    }
}

impl LineParser for Fixed {
    fn format(&self) -> &'static str {
        self.layout.format
    }

    fn names(&self) -> Option<&[String]> {
        Some(&self.names)
    }

    fn field(&mut self, name: &str) -> Option<usize> {
        let i = self.names.iter().position(|n| n == name).or_else(|| {
            // Any further field by its position: field40.
            name.strip_prefix("field")
                .and_then(|d| d.parse::<usize>().ok())
                .filter(|&i| i >= self.names.len() - EXTRA_NAMED)
        })?;
        self.mark(i);
        Some(i)
    }

    fn field_at(&mut self, i: usize) -> Option<usize> {
        self.mark(i);
        Some(i)
    }

    fn default_time(&mut self) -> Option<(usize, Option<usize>)> {
        Some((self.layout.time, None))
    }

    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, LineError> {
        let cut = self.read_tokens(line, out)?;
        self.arrange(line, out)?;
        out.cut = cut;
        Ok(Parsed::Record)
    }
}

/// Asserts that `line` read by `layout` has the values `want` by name.
#[cfg(test)]
pub fn assert_fields(layout: &'static Layout, line: &str, want: &[(&str, &str)]) {
    let mut p = Fixed::new(layout);
    let mut f = Fields::default();
    p.parse(line.as_bytes(), &mut f).unwrap();
    for (name, value) in want {
        let i = p.field(name).unwrap_or_else(|| panic!("no field {name}"));
        let got = f.get(line.as_bytes(), i).map(String::from_utf8_lossy);
        assert_eq!(got.as_deref(), Some(*value), "{name} in {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::super::elb::ELB;
    use super::*;

    #[test]
    fn only_the_derived_fields_asked_for_are_read() {
        let line = br#"2015-05-13T23:39:43.945958Z lb 192.168.131.39:2817 10.0.0.1:80 0.1 0.2 0.3 200 200 0 29 "GET http://h/ HTTP/1.1" "curl" - - past"#;
        let mut p = Fixed::new(&ELB);
        let at = |name: &str| p.names.iter().position(|n| n == name).unwrap();
        let (uri, first_past) = (at("uri"), p.names.len() - EXTRA_NAMED);
        let (client, uri, past) = (
            p.field("client").unwrap(),
            p.field_at(uri).unwrap(),
            p.field(&format!("field{first_past}")).unwrap(),
        );
        let mut f = Fields::default();
        p.parse(line, &mut f).unwrap();
        assert_eq!(f.get(line, client), Some(&b"192.168.131.39"[..]));
        assert_eq!(f.get(line, uri), Some(&b"http://h/"[..]));
        assert_eq!(f.get(line, past), Some(&b"past"[..]));
        // Not asked for: left missing.
        let backend = p.names.iter().position(|n| n == "backend").unwrap();
        assert_eq!(f.get(line, backend), None);
        // A comma after a host is still refused, asked for or not.
        let listed = br#"2015-05-13T23:39:43.945958Z lb 192.168.131.39:2817 10.0.0.1, 0.1 0.2 0.3 200 200 0 29 "GET / HTTP/1.1" "curl" - -"#;
        f.clear();
        assert!(
            p.parse(listed, &mut f)
                .unwrap_err()
                .to_string()
                .contains("comma")
        );
    }
}
