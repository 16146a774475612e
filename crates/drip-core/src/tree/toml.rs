//! TOML to a [`Node`], from the `toml` crate's spanned tables: each node
//! with the line its value (a table: its first key) starts on.

use super::{Node, ParseError, Value};
use ::toml::Spanned;
use ::toml::de::{DeTable, DeValue};

pub(super) fn parse(text: &str) -> Result<Node, ParseError> {
    let lines = Lines::of(text);
    match DeTable::parse(text) {
        Ok(doc) => {
            let span = doc.span();
            Ok(table(doc.get_ref(), lines.at(span.start), &lines))
        }
        Err(e) => Err(ParseError {
            line: e.span().map_or(1, |s| lines.at(s.start)),
            message: e.message().trim().to_string(),
        }),
    }
}

/// Where each line starts, to turn byte offsets into lines.
struct Lines(Vec<usize>);

impl Lines {
    fn of(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines(starts)
    }

    fn at(&self, offset: usize) -> u32 {
        self.0.partition_point(|&s| s <= offset) as u32
    }
}

fn table(t: &DeTable, line: u32, lines: &Lines) -> Node {
    // In the document's order (the parser's map is sorted by key).
    let mut keyed: Vec<_> = t.iter().collect();
    keyed.sort_by_key(|(k, _)| k.span().start);
    let entries = keyed
        .into_iter()
        .map(|(k, v)| (k.get_ref().to_string(), value(v, lines)))
        .collect::<Vec<_>>();
    let first = t.iter().map(|(k, _)| lines.at(k.span().start)).min();
    Node {
        value: Value::Map(entries),
        line: first.unwrap_or(line),
    }
}

fn value(v: &Spanned<DeValue>, lines: &Lines) -> Node {
    let line = lines.at(v.span().start);
    let scalar = |s: String| Node {
        value: Value::Scalar(s),
        line,
    };
    match v.get_ref() {
        DeValue::String(s) => scalar(s.to_string()),
        DeValue::Integer(i) => match i.radix() {
            10 => scalar(i.as_str().to_string()),
            r => scalar(
                i64::from_str_radix(&i.as_str().replace('_', ""), r)
                    .map_or_else(|_| i.to_string(), |n| n.to_string()),
            ),
        },
        DeValue::Float(f) => scalar(f.as_str().to_string()),
        DeValue::Boolean(b) => scalar(b.to_string()),
        DeValue::Datetime(d) => scalar(d.to_string()),
        DeValue::Array(a) => Node {
            value: Value::List(a.iter().map(|x| value(x, lines)).collect()),
            line,
        },
        DeValue::Table(t) => table(t, line, lines),
    }
}
