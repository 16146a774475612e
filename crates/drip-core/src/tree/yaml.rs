//! YAML to [`Node`]s, from `saphyr-parser`'s events: anchors and aliases
//! resolved, `<<` merge keys applied, each node with its line.

use super::{Node, ParseError, Value};
use saphyr_parser::{Event, Parser, ScalarStyle, Span, SpannedEventReceiver};
use std::collections::HashMap;

pub(super) fn parse(text: &str) -> Result<Vec<Node>, ParseError> {
    let mut b = Builder::default();
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut b, true) {
        return Err(ParseError {
            line: e.marker().line() as u32,
            message: e.info().to_string(),
        });
    }
    match b.error {
        Some(e) => Err(e),
        None => Ok(b.docs),
    }
}

/// A map or list being read.
enum Frame {
    Map {
        entries: Vec<(String, Node)>,
        key: Option<String>,
        line: u32,
        anchor: usize,
    },
    List {
        items: Vec<Node>,
        line: u32,
        anchor: usize,
    },
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    docs: Vec<Node>,
    anchors: HashMap<usize, Node>,
    /// The document has its node.
    filled: bool,
    /// Nodes copied by aliases so far.
    nodes: u64,
    error: Option<ParseError>,
}

impl Builder {
    fn fail(&mut self, line: u32, message: &str) {
        if self.error.is_none() {
            self.error = Some(ParseError {
                line,
                message: message.to_string(),
            });
        }
    }

    /// A node read whole: a key, a value or a document.
    fn done(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => {
                self.docs.push(node);
                self.filled = true;
            }
            Some(Frame::List { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                Some(k) if k == "<<" => merge(entries, node),
                // An explicit key wins over a merged one.
                Some(k) => match entries.iter_mut().find(|(e, _)| *e == k) {
                    Some(e) => e.1 = node,
                    None => entries.push((k, node)),
                },
                None => match node.value {
                    Value::Scalar(s) => *key = Some(s),
                    Value::Null => *key = Some(String::new()),
                    _ => {
                        let line = node.line;
                        self.fail(line, "a key that is a map or a list");
                    }
                },
            },
        }
    }
}

/// The most nodes aliases may copy into one stream.
const MAX_NODES: u64 = 1_000_000;

/// The nodes in `n`, itself included.
fn size(n: &Node) -> u64 {
    1 + match &n.value {
        Value::Map(m) => m.iter().map(|(_, v)| size(v)).sum(),
        Value::List(l) => l.iter().map(size).sum(),
        _ => 0,
    }
}

/// `<<: *base` (or a list of them): the entries the map does not have.
fn merge(entries: &mut Vec<(String, Node)>, node: Node) {
    let sources = match node.value {
        Value::List(l) => l,
        v => vec![Node {
            value: v,
            line: node.line,
        }],
    };
    for s in sources {
        if let Value::Map(m) = s.value {
            for (k, v) in m {
                if !entries.iter().any(|(e, _)| *e == k) {
                    entries.push((k, v));
                }
            }
        }
    }
}

/// A plain scalar that means null.
fn null(s: &str, style: ScalarStyle) -> bool {
    style == ScalarStyle::Plain && matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

impl<'i> SpannedEventReceiver<'i> for Builder {
    fn on_event(&mut self, ev: Event<'i>, span: Span) {
        let line = span.start.line() as u32;
        match ev {
            Event::DocumentStart(_) => self.filled = false,
            Event::DocumentEnd if !self.filled => {
                self.docs.push(Node {
                    value: Value::Null,
                    line,
                });
            }
            Event::Scalar(s, style, anchor, _) => {
                let value = match null(&s, style) {
                    true => Value::Null,
                    false => Value::Scalar(s.into_owned()),
                };
                self.done(Node { value, line }, anchor);
            }
            Event::Alias(id) => match self.anchors.get(&id).cloned() {
                Some(mut n) => {
                    // Aliases of aliases can grow a document exponentially.
                    self.nodes += size(&n);
                    if self.nodes > MAX_NODES {
                        return self.fail(line, "aliases expand the document past a million nodes");
                    }
                    n.line = line;
                    self.done(n, 0);
                }
                None => self.fail(line, "an alias to an anchor not defined before it"),
            },
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                entries: Vec::new(),
                key: None,
                line,
                anchor,
            }),
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::List {
                items: Vec::new(),
                line,
                anchor,
            }),
            Event::MappingEnd | Event::SequenceEnd => {
                let (node, anchor) = match self.stack.pop() {
                    Some(Frame::Map {
                        entries,
                        line,
                        anchor,
                        ..
                    }) => (
                        Node {
                            value: Value::Map(entries),
                            line,
                        },
                        anchor,
                    ),
                    Some(Frame::List {
                        items,
                        line,
                        anchor,
                    }) => (
                        Node {
                            value: Value::List(items),
                            line,
                        },
                        anchor,
                    ),
                    None => return,
                };
                self.done(node, anchor);
            }
            _ => {}
        }
    }
}
