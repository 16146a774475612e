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

use super::clf::{Token, tokens};
use super::{Fields, LineParser, Parsed, split_request};

/// How one format writes its lines.
pub struct Layout {
    /// The format's name, as `--input-format` takes it.
    pub format: &'static str,
    /// The written fields, in line order.
    pub names: &'static [&'static str],
    /// Fields every line has.
    pub least: usize,
    /// The default time field.
    pub time: usize,
    /// An `ip:port` field, and the name given to the address alone.
    pub ports: &'static [(usize, &'static str)],
    /// The quoted request line (`GET /a HTTP/1.1`), split into `method`,
    /// `uri` and `protocol`.
    pub request: Option<usize>,
}

/// Field names given past the named ones.
const EXTRA_NAMED: usize = 16;

/// Lines of one [`Layout`].
pub struct Fixed {
    layout: &'static Layout,
    names: Vec<String>,
    /// Where a line's tokens go before they are ordered.
    tokens: Fields,
}

impl Fixed {
    pub fn new(layout: &'static Layout) -> Fixed {
        let mut names: Vec<String> = layout.names.iter().map(|s| s.to_string()).collect();
        names.extend(layout.ports.iter().map(|(_, n)| n.to_string()));
        if layout.request.is_some() {
            names.extend(["method", "uri", "protocol"].map(String::from));
        }
        for i in names.len()..names.len() + EXTRA_NAMED {
            names.push(format!("field{i}"));
        }
        Fixed {
            layout,
            names,
            tokens: Fields::default(),
        }
    }

    /// The index of the first derived field.
    fn derived(&self) -> usize {
        self.layout.names.len()
    }

    /// The line's tokens into `self.tokens`; `Ok(true)` when its tail was
    /// cut or garbled after the fields that matter.
    fn read_tokens(&mut self, line: &[u8]) -> Result<bool, String> {
        let l = self.layout;
        self.tokens.clear();
        match tokens(line, &mut self.tokens, l.names) {
            Ok(Token::Whole) => Ok(false),
            Ok(Token::Cut(i)) if i + 1 >= l.least => Ok(true),
            Ok(Token::Cut(i)) => Err(super::clf::unclosed(i, l.names)),
            Err(_) if self.tokens.spans.len() >= l.least => Ok(true),
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
        self.names.iter().position(|n| n == name).or_else(|| {
            // Any further field by its position: field40.
            name.strip_prefix("field")
                .and_then(|d| d.parse::<usize>().ok())
                .filter(|&i| i >= self.names.len() - EXTRA_NAMED)
        })
    }

    fn default_time(&mut self) -> Option<(usize, Option<usize>)> {
        Some((self.layout.time, None))
    }

    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, String> {
        let cut = self.read_tokens(line)?;
        let l = self.layout;
        let got = self.tokens.spans.len();
        if got < l.least {
            return Err(format!(
                "the line has {got} field(s), a {} line has at least {} ({}); no {}",
                l.format,
                l.least,
                l.names[..l.least].join(" "),
                l.names[got]
            ));
        }
        let time = self.tokens.in_line(line, l.time);
        if time.is_empty() || time == b"-" {
            return Err(format!(
                "field {} ({}) holds no time",
                l.time, l.names[l.time]
            ));
        }
        let written = got.min(self.derived());
        out.spans.extend_from_slice(&self.tokens.spans[..written]);
        out.spans.resize(self.derived(), super::MISSING);
        for &(i, _) in l.ports {
            out.push_sub(line, super::key::strip_port(out.in_line(line, i)));
        }
        if let Some(r) = l.request {
            let (m, u, p) = split_request(out.in_line(line, r));
            out.push_sub(line, m);
            out.push_sub(line, u);
            out.push_sub(line, p);
        }
        out.spans.extend_from_slice(&self.tokens.spans[written..]);
        out.cut = cut;
        Ok(Parsed::Record)
    }
}

/// A test line's fields by name, for the format modules' tests.
#[cfg(test)]
pub fn named(layout: &'static Layout, line: &str) -> Result<Vec<(String, String)>, String> {
    let mut p = Fixed::new(layout);
    let mut f = Fields::default();
    p.parse(line.as_bytes(), &mut f)?;
    Ok((0..f.spans.len())
        .filter_map(|i| {
            let v = f.get(line.as_bytes(), i)?;
            Some((p.names[i].clone(), String::from_utf8_lossy(v).into_owned()))
        })
        .collect())
}
