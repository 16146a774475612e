//! nginx "complex values" as zone keys and map values: literal text and
//! variables (`$name`, `${name}`) back to back, evaluated by concatenation.
//! An empty result exempts a request from the zone, as nginx does.

use std::fmt;

/// Why a text is no complex value: a `$` with no variable name after it,
/// or a `${` never closed; the text is quoted in the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError(String);

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExprError {}

/// Why drip cannot evaluate a variable (one set by `set`,
/// `split_clients`, …, or a regex capture), and the `--nginx-var` that
/// names a log field to read it from instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarError(pub(super) String);

impl fmt::Display for VarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for VarError {}

/// One piece of an expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Lit(String),
    Var(String),
}

/// An expression as written, split into its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expr {
    pub text: String,
    pub parts: Vec<Part>,
}

impl Expr {
    /// Splits `text`; a `$` not followed by a name is an error, as in nginx.
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let b = text.as_bytes();
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut i = 0;
        let is_name = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        while i < b.len() {
            if b[i] != b'$' {
                let ch = text[i..].chars().next().expect("inside the text");
                lit.push(ch);
                i += ch.len_utf8();
                continue;
            }
            let (name, end) = if b.get(i + 1) == Some(&b'{') {
                let close = text[i + 2..]
                    .find('}')
                    .ok_or_else(|| ExprError(format!("'{text}': '${{' without a closing '}}'")))?;
                (&text[i + 2..i + 2 + close], i + 3 + close)
            } else {
                let mut j = i + 1;
                while j < b.len() && is_name(b[j]) {
                    j += 1;
                }
                (&text[i + 1..j], j)
            };
            if name.is_empty() || !name.bytes().all(is_name) {
                return Err(ExprError(format!(
                    "'{text}': '$' is not followed by a variable name"
                )));
            }
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(&mut lit)));
            }
            parts.push(Part::Var(name.to_string()));
            i = end;
        }
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Expr {
            text: text.to_string(),
            parts,
        })
    }

    /// The variables named, in order.
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Lit(_) => None,
        })
    }

    /// The variable, when the expression is one variable and nothing else.
    pub fn single_var(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Var(v)] => Some(v),
            _ => None,
        }
    }
}

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// `map SOURCE $var { default V; KEY V; … }` with exact keys. nginx
/// compares the source value with the keys case-insensitively (both are
/// lowercased); the result is itself an expression.
#[derive(Clone, Debug)]
pub struct Map {
    pub var: String,
    pub source: Expr,
    pub entries: std::collections::HashMap<Vec<u8>, Expr>,
    /// The value when no key matches (empty unless `default` is given).
    pub default: Expr,
}

impl Map {
    /// The value expression for a source value.
    #[cfg(test)]
    pub fn lookup(&self, source: &[u8]) -> &Expr {
        let low = source.to_ascii_lowercase();
        self.entries.get(&low).unwrap_or(&self.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts() {
        let e = Expr::parse("$binary_remote_addr").unwrap();
        assert_eq!(e.single_var(), Some("binary_remote_addr"));
        let e = Expr::parse("k:${http_x_api_key}_$server_name.x").unwrap();
        assert_eq!(
            e.parts,
            [
                Part::Lit("k:".into()),
                Part::Var("http_x_api_key".into()),
                Part::Lit("_".into()),
                Part::Var("server_name".into()),
                Part::Lit(".x".into()),
            ]
        );
        assert_eq!(
            e.vars().collect::<Vec<_>>(),
            ["http_x_api_key", "server_name"]
        );
        assert_eq!(
            Expr::parse("global").unwrap().parts,
            [Part::Lit("global".into())]
        );
        assert!(Expr::parse("").unwrap().parts.is_empty());
        assert!(Expr::parse("a$").is_err());
        assert!(Expr::parse("${a").is_err());
        assert!(Expr::parse("$-x").is_err());
    }
}
