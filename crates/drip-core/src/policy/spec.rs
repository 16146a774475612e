//! Policy specs: `NAME[:PARAM=VALUE,...]` with flags as bare words, any spec
//! may carry `label=NAME` and `key=COLUMN` (`key=none`: one global bucket),
//! and specs joined with `+` form one [`Stack`]. A spec that parses builds a
//! valid policy: every error names the bad part and lists what is valid.

use super::keyed::Stack;
use super::rule::ParamError;
pub use super::rule::Params;
use super::table::{POLICY_NAMES, PolicyConfig, params_of, parse_config};
use crate::time::Nanos;
use std::fmt;

/// A spec error: which part of which spec, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The whole spec, trimmed.
    pub spec: String,
    /// What is wrong with it and what is valid.
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid policy '{}': {}", self.spec, self.message)
    }
}

impl std::error::Error for SpecError {}

/// Which key a member counts by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyChoice {
    /// The driver's key (`--key-column` in audit; one bucket without it).
    Default,
    /// `key=COLUMN`: this column's value.
    Column(String),
    /// `key=none`: one global bucket.
    Global,
}

/// One member of a spec (one `+`-separated part).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The validated policy.
    pub config: PolicyConfig,
    /// Which key it counts by.
    pub key: KeyChoice,
    /// The member's text as written.
    pub text: String,
}

/// A whole spec: one member, or a `+` stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The spec as written (trimmed).
    pub text: String,
    /// `label=` if given, else the text.
    pub label: String,
    /// The `+`-separated members, in order (one without a `+`).
    pub members: Vec<Member>,
    /// `charge=each`: each member is charged as it admits, and a refusal
    /// refunds none before it (Envoy's local rate limit).
    pub charge_each: bool,
    /// `block=DURATION`: a key a member refuses is refused by it for this
    /// long after (a penalty box).
    pub block: Option<Nanos>,
}

impl Spec {
    /// The members with empty per-key state, as one stack.
    pub fn build(&self) -> Stack {
        Stack::new(self.members.iter().map(|m| m.config.build()).collect())
            .charging_each(self.charge_each)
            .blocking(self.block)
    }
}

/// Parses one spec (possibly a `+` stack).
pub fn parse_spec(text: &str) -> Result<Spec, SpecError> {
    let text = text.trim();
    let err = |message: String| SpecError {
        spec: text.to_string(),
        message,
    };
    if text.is_empty() {
        return Err(err(format!(
            "empty spec; write NAME[:PARAM=VALUE,...], NAME one of {}",
            POLICY_NAMES.join(", ")
        )));
    }
    let mut label = None;
    let mut charge = None;
    let mut block = None;
    let mut members = Vec::new();
    for part in text.split('+') {
        let (member, l, (c, b)) = parse_member(part.trim()).map_err(|e| err(e.to_string()))?;
        if let Some(b) = b {
            if block.is_some() {
                return Err(err("block= is given twice; give it once per spec".into()));
            }
            block = Some(b);
        }
        if let Some(l) = l {
            if label.is_some() {
                return Err(err("label= is given twice; give one label per spec".into()));
            }
            label = Some(l);
        }
        if let Some(c) = c {
            if charge.is_some() {
                return Err(err("charge= is given twice; give it once per stack".into()));
            }
            charge = Some(c);
        }
        members.push(member);
    }
    if charge.is_some() && members.len() < 2 {
        return Err(err(
            "charge= says how a '+' stack charges its members; a single policy has one".into(),
        ));
    }
    Ok(Spec {
        text: text.to_string(),
        label: label.unwrap_or_else(|| text.to_string()),
        members,
        charge_each: charge == Some(true),
        block,
    })
}

/// A line without its comment: `#` starts one at the start of the line or
/// after whitespace, so `label=team#1` keeps its `#`.
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    match (0..bytes.len())
        .find(|&i| bytes[i] == b'#' && (i == 0 || bytes[i - 1].is_ascii_whitespace()))
    {
        Some(i) => &line[..i],
        None => line,
    }
}

/// Parses a `--policies` file: one spec per line, `#` comments and blank
/// lines ignored. An error comes with its 1-based line number.
pub fn parse_specs_file(contents: &str) -> Result<Vec<Spec>, (usize, SpecError)> {
    let mut specs = Vec::new();
    for (i, line) in contents.lines().enumerate() {
        let line = strip_comment(line).trim();
        if line.is_empty() {
            continue;
        }
        specs.push(parse_spec(line).map_err(|e| (i + 1, e))?);
    }
    Ok(specs)
}

/// Refuses the parameters no parser took, listing the valid ones.
fn finish(p: &Params<'_>) -> Result<(), ParamError> {
    if let Some(k) = p.leftover() {
        return Err(ParamError::new(format!(
            "unknown parameter '{k}' for {}; valid: {}, label, key, charge, block",
            p.name(),
            params_of(p.name()).join(", ")
        )));
    }
    Ok(())
}

/// What one member says of its whole spec: `charge=` (true: `each`) and
/// `block=`.
type StackParams = (Option<bool>, Option<Nanos>);

/// One member of a spec, its `label=`, and its `charge=` and `block=`.
fn parse_member(text: &str) -> Result<(Member, Option<String>, StackParams), ParamError> {
    let (name, rest) = match text.split_once(':') {
        Some((n, r)) => (n.trim(), r),
        None => (text.trim(), ""),
    };
    if !POLICY_NAMES.contains(&name) {
        let shown = if name.is_empty() { "(empty)" } else { name };
        return Err(ParamError::new(format!(
            "unknown policy '{shown}'; valid: {}",
            POLICY_NAMES.join(", ")
        )));
    }
    let mut values = Vec::new();
    for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (item, None),
        };
        if values.iter().any(|(seen, _)| *seen == k) {
            return Err(ParamError::new(format!("'{k}' is given twice")));
        }
        values.push((k, v));
    }
    let mut p = Params::new(name, values);
    let label = p.value("label")?.map(str::to_string);
    if label.as_deref() == Some("") {
        return Err(ParamError::new("label= needs a name"));
    }
    let charge = match p.value("charge")? {
        None => None,
        Some("each") => Some(true),
        Some("all") => Some(false),
        Some(v) => {
            return Err(ParamError::new(format!(
                "charge={v}: give charge=all (the default: a refusal charges no member, as nginx) or charge=each (each member as it admits, none refunded, as Envoy's local rate limit)"
            )));
        }
    };
    let block = match p.value("block")? {
        None => None,
        Some(v) => match crate::rate::parse_duration(v) {
            Ok(d) if d.0 > 0 => Some(d),
            _ => {
                return Err(ParamError::new(format!(
                    "block={v}: give how long a refused key stays refused, e.g. block=60s"
                )));
            }
        },
    };
    let key = match p.value("key")? {
        None => KeyChoice::Default,
        Some("none") => KeyChoice::Global,
        Some("") => {
            return Err(ParamError::new(
                "key= needs a column name or index, or none",
            ));
        }
        Some(c) => KeyChoice::Column(c.to_string()),
    };
    let config = parse_config(name, &mut p).expect("name checked against POLICY_NAMES")?;
    finish(&p)?;
    Ok((
        Member {
            config,
            key,
            text: text.to_string(),
        },
        label,
        (charge, block),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::shaper::ShaperBound;
    use crate::time::Nanos;

    fn err(t: &str) -> String {
        parse_spec(t).unwrap_err().to_string()
    }

    #[test]
    fn parses_each_policy_with_defaults() {
        let s = parse_spec("token-bucket:rate=5/s").unwrap();
        assert_eq!(s.label, "token-bucket:rate=5/s");
        assert!(matches!(s.members[0].config, PolicyConfig::TokenBucket(_)));
        let s = parse_spec("shaper:rate=1/s,max-wait=3s,label=slow,key=none").unwrap();
        assert_eq!(s.label, "slow");
        assert_eq!(s.members[0].key, KeyChoice::Global);
        match s.members[0].config {
            PolicyConfig::Shaper(sh) => {
                assert_eq!(sh.bound(), ShaperBound::MaxWait(Nanos::from_secs(3)))
            }
            _ => panic!(),
        }
        for t in [
            "leaky-bucket:rate=3/s",
            "gcra:rate=7/s,burst=4",
            "fixed-window:limit=10,window=1m,align=first-hit,count=all",
            "sliding-window:limit=10,window=1m",
            "sliding-log:limit=10,window=1s",
            "nginx:rate=30r/m,burst=2,nodelay",
            "nginx:rate=10,burst=6,delay=3",
        ] {
            parse_spec(t).unwrap();
        }
    }

    #[test]
    fn a_stack_charges_all_or_each() {
        let stack = "gcra:rate=1/s + gcra:rate=9/s,key=none";
        assert!(!parse_spec(stack).unwrap().charge_each);
        assert!(
            parse_spec(&format!("{stack},charge=each"))
                .unwrap()
                .charge_each
        );
        assert!(
            !parse_spec(&format!("{stack},charge=all"))
                .unwrap()
                .charge_each
        );
        assert!(err(&format!("{stack},charge=some")).contains("give charge=all"));
        assert!(
            err("gcra:rate=1/s,charge=each + gcra:rate=9/s,charge=each").contains("given twice")
        );
        assert!(err("gcra:rate=1/s,charge=each").contains("a single policy has one"));
        let b = parse_spec("gcra:rate=1/s,block=90s").unwrap();
        assert_eq!(b.block, Some(Nanos::from_secs(90)));
        assert!(err("gcra:rate=1/s,block=soon").contains("block=soon: give how long"));
        assert!(err("gcra:rate=1/s,block=1s + gcra:rate=2/s,block=2s").contains("given twice"));
    }

    #[test]
    fn stacks_and_keys() {
        let s = parse_spec("nginx:rate=2r/s,burst=2,delay=1,key=client + nginx:rate=10r/s,burst=2,key=none,label=both").unwrap();
        assert_eq!(s.members.len(), 2);
        assert_eq!(s.members[0].key, KeyChoice::Column("client".into()));
        assert_eq!(s.members[1].key, KeyChoice::Global);
        assert_eq!(s.label, "both");
    }

    #[test]
    fn errors_name_the_bad_part() {
        assert!(err("bucket:rate=5/s").contains("unknown policy 'bucket'; valid: token-bucket"));
        assert!(err("gcra").contains("gcra needs rate="));
        assert!(
            err("gcra:rate=5/s,brust=3")
                .contains("unknown parameter 'brust' for gcra; valid: rate, burst")
        );
        assert!(err("gcra:rate=fast").contains("invalid rate 'fast'"));
        assert!(err("gcra:rate=5/s,burst=0").contains("burst must be at least 1"));
        assert!(err("gcra:rate=5/s,burst=-1").contains("burst='-1'"));
        assert!(err("shaper:rate=5/s,burst=2,max-wait=1s").contains("not both"));
        assert!(err("fixed-window:limit=5").contains("needs window="));
        assert!(
            err("fixed-window:limit=5,window=1m,align=hour").contains("valid: epoch, first-hit")
        );
        assert!(err("nginx:rate=0.5r/s").contains("invalid nginx rate '0.5r/s'"));
        assert!(err("nginx:rate=5r/h").contains("invalid nginx rate"));
        assert!(err("nginx:rate=0r/s").contains("invalid nginx rate"));
        assert!(err("nginx:rate=5r/s,delay=1,nodelay").contains("not both"));
        assert!(
            err("gcra:rate=5/s,label=a + gcra:rate=1/s,label=b").contains("label= is given twice")
        );
        assert!(err("gcra:rate=5/s,rate=6/s").contains("given twice"));
        assert!(err("").contains("empty spec"));
    }

    #[test]
    fn specs_file_skips_comments_and_names_lines() {
        let ok =
            parse_specs_file("# limits\n\ngcra:rate=5/s  # per client\nshaper:rate=1/s\n").unwrap();
        assert_eq!(ok.len(), 2);
        let (line, e) = parse_specs_file("gcra:rate=5/s\n\nbogus\n").unwrap_err();
        assert_eq!(line, 3);
        assert!(e.to_string().contains("unknown policy 'bogus'"));
    }
}
