//! A YAML or TOML document as one tree of maps, lists and scalars, each
//! node with the line it starts on: what the gateway configs written in
//! YAML or TOML (Traefik, Kong, Envoy) are read from, so that every error
//! names `file:line`.

mod toml;
mod yaml;

use std::path::Path;

/// One node of a document.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Value,
    /// The line it starts on (1-based).
    pub line: u32,
}

/// What a node holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Keys and their nodes, in the document's order.
    Map(Vec<(String, Node)>),
    List(Vec<Node>),
    /// A string, number, boolean or date, as written (YAML's quotes and
    /// escapes resolved).
    Scalar(String),
    /// YAML's `null`, `~` or nothing.
    Null,
}

/// A document that is not YAML or TOML: the message and its line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: u32,
    pub message: String,
}

/// Reads `text` as YAML: every document of the stream, in order.
pub fn parse_yaml(text: &str) -> Result<Vec<Node>, ParseError> {
    yaml::parse(text)
}

/// Reads `text` as TOML: one document.
pub fn parse_toml(text: &str) -> Result<Node, ParseError> {
    toml::parse(text)
}

/// Reads a file as TOML when its name ends in `.toml`, else as YAML (a
/// JSON file is YAML too); the errors name `file:line`.
pub fn load(path: &Path) -> anyhow::Result<Vec<Node>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("{}: cannot read the config: {e}", path.display()))?;
    let toml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let parsed = match toml {
        true => parse_toml(&text).map(|n| vec![n]),
        false => parse_yaml(&text),
    };
    parsed.map_err(|e| {
        let kind = if toml { "TOML" } else { "YAML" };
        anyhow::anyhow!(
            "{}:{}: not {kind}: {}; fix the file or give another",
            path.display(),
            e.line,
            crate::quote::shown(e.message.as_bytes())
        )
    })
}

impl Node {
    /// The node under `key` of a map (keys compared exactly).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entries()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The node under `key` of a map, keys compared without regard to
    /// ASCII case (as Traefik reads its dynamic configuration).
    pub fn get_ci(&self, key: &str) -> Option<&Node> {
        (self.entries().iter())
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    }

    /// The items under `key` (compared as [`Node::get_ci`] compares):
    /// none when it is absent.
    pub fn items_ci(&self, key: &str) -> &[Node] {
        self.get_ci(key).map_or(&[], Node::items)
    }

    /// A map's entries (none for anything else).
    pub fn entries(&self) -> &[(String, Node)] {
        match &self.value {
            Value::Map(m) => m,
            _ => &[],
        }
    }

    /// A list's items; a scalar or map is a list of itself; null is empty.
    pub fn items(&self) -> &[Node] {
        match &self.value {
            Value::List(l) => l,
            Value::Null => &[],
            _ => std::slice::from_ref(self),
        }
    }

    /// The scalar's text.
    pub fn str(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// True for a null node.
    pub fn is_null(&self) -> bool {
        self.value == Value::Null
    }

    /// True for a map.
    pub fn is_map(&self) -> bool {
        matches!(self.value, Value::Map(_))
    }

    /// The scalar as a whole number (`_` separators allowed, as in TOML).
    pub fn int(&self) -> Option<i64> {
        let s = self.str()?.replace('_', "");
        s.parse().ok()
    }

    /// The scalar as a number.
    pub fn float(&self) -> Option<f64> {
        let s = self.str()?;
        s.parse().ok().filter(|f: &f64| f.is_finite())
    }

    /// The scalar as a boolean.
    pub fn bool(&self) -> Option<bool> {
        match self.str()? {
            "true" | "True" | "TRUE" => Some(true),
            "false" | "False" | "FALSE" => Some(false),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
