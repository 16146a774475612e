//! Targets per limit for `size --nginx-conf`: `--target SCOPE:LIST` gives
//! one zone, one location's own `limit_req` lines, or one line (FILE:LINE)
//! targets of its own over the global ones, or keeps it as written
//! (`keep`); `--only-zones` sizes the named zones only. A line no
//! `--target` names keeps the global targets.
//!
//! A rate is its zone's, so a zone whose lines have different targets is
//! sized at the rate where each line meets its own; `keep` on a location
//! or a line keeps its whole zone.

use super::conf_rows::Unit;
use super::goal::{Goal, keys_hurt};
use crate::cli::{SizeArgs, WaitCap, wait_cap_arg};
use crate::nginx_conf::NginxConf;
use crate::percent::Percent;
use crate::quote::{names, shown_str};
use anyhow::{Result, anyhow};

/// The targets of every line, and the zones kept by request.
pub struct PerLine {
    /// By line: the targets it is sized to.
    pub goals: Vec<Goal>,
    /// By line: the `--target` values that set its own targets (`None`:
    /// the global ones).
    pub own: Vec<Option<String>>,
    /// By zone: the flag that keeps it as written.
    pub keep: Vec<Option<String>>,
}

/// One target of a `--target` list.
#[derive(Clone, Debug)]
enum Item {
    Keep,
    DropRate(Percent),
    Drops(u64),
    KeysHurt(super::goal::KeysHurt),
    Wait(WaitCap),
}

/// What a `--target` names, most general first (applied in that order,
/// so a line's own value wins over its location's, and that over its
/// zone's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Zone,
    Location,
    Line,
}

/// One `--target` value, resolved.
struct Given {
    text: String,
    kind: Kind,
    lines: Vec<usize>,
    items: Vec<Item>,
}

/// Every line's targets: the global `goal`, with the `--target` values
/// that name it applied, and the zones `keep` or `--only-zones` hold.
pub fn resolve(args: &SizeArgs, conf: &NginxConf, units: &[Unit], goal: &Goal) -> Result<PerLine> {
    let mut given = (args.target.iter())
        .map(|t| given(t, conf, units))
        .collect::<Result<Vec<_>>>()?;
    given.sort_by_key(|g| g.kind);
    let mut out = PerLine {
        goals: vec![goal.clone(); units.len()],
        own: vec![None; units.len()],
        keep: vec![None; conf.zones.len()],
    };
    for g in &given {
        for &u in &g.lines {
            let own = out.own[u].get_or_insert_with(String::new);
            if !own.is_empty() {
                own.push_str(", ");
            }
            own.push_str(&format!("--target {}", crate::quote::shell_word(&g.text)));
            for item in &g.items {
                apply(&mut out.goals[u], item);
                if matches!(item, Item::Keep) {
                    out.keep[units[u].zone] = Some(format!(
                        "kept as written: --target {}",
                        crate::quote::shell_word(&g.text)
                    ));
                }
            }
        }
    }
    if let Some(only) = &args.only_zones {
        let named = only_zones(only, conf)?;
        for (z, keep) in out.keep.iter_mut().enumerate() {
            if !named.contains(&z) && keep.is_none() {
                *keep = Some(format!(
                    "kept as written: not among --only-zones {}",
                    crate::quote::shell_word(only)
                ));
            }
        }
    }
    Ok(out)
}

fn apply(goal: &mut Goal, item: &Item) {
    match item {
        Item::Keep => {}
        Item::DropRate(p) => goal.drop_rate = Some(*p),
        Item::Drops(n) => goal.drops = Some(*n),
        Item::KeysHurt(k) => goal.keys_hurt = Some(*k),
        Item::Wait(WaitCap::At(w)) => {
            goal.max_wait = Some(*w);
            goal.wait_default = false;
        }
        Item::Wait(WaitCap::Lifted) => {
            goal.max_wait = None;
            goal.wait_default = false;
        }
    }
}

/// `--only-zones a,b`: the zones named, each one of the config's.
fn only_zones(list: &str, conf: &NginxConf) -> Result<Vec<usize>> {
    let zones: Vec<&str> = conf.zones.iter().map(|z| z.name.as_str()).collect();
    (list.split(',').map(str::trim).filter(|n| !n.is_empty()))
        .map(|n| {
            zones.iter().position(|z| *z == n).ok_or_else(|| {
                anyhow!(
                    "--only-zones: no limit_req_zone of {} is named '{}'; its zones: {}",
                    conf.path.display(),
                    shown_str(n),
                    names(&zones)
                )
            })
        })
        .collect()
}

/// A `--target SCOPE:LIST` value, its scope found among the config's
/// zones, locations and lines.
fn given(text: &str, conf: &NginxConf, units: &[Unit]) -> Result<Given> {
    let (scope, list) = text.rsplit_once(':').ok_or_else(|| {
        anyhow!(
            "invalid --target '{}': give SCOPE:TARGETS, e.g. login:max-wait=none, '= /login:keep' or nginx.conf:42:max-drop-rate=1",
            shown_str(text)
        )
    })?;
    let items = (list.split(',').map(str::trim))
        .map(|i| item(i, text))
        .collect::<Result<Vec<_>>>()?;
    let (kind, lines) = scope_lines(scope.trim(), conf, units).map_err(|why| {
        anyhow!(
            "--target '{}': {why}; its zones: {}; its locations with limit_req lines of their own: {}",
            shown_str(text),
            names(&conf.zones.iter().map(|z| &z.name).collect::<Vec<_>>()),
            names(&own_locations(conf, units))
        )
    })?;
    Ok(Given {
        text: text.to_string(),
        kind,
        lines,
        items,
    })
}

/// One target of a list: `keep`, or NAME=VALUE with NAME a target flag
/// without its dashes.
fn item(text: &str, whole: &str) -> Result<Item> {
    if text == "keep" {
        return Ok(Item::Keep);
    }
    let bad = |why: String| anyhow!("invalid --target '{}': {why}", shown_str(whole));
    let (name, value) = text.split_once('=').ok_or_else(|| {
        bad(format!(
            "'{}' is neither keep nor NAME=VALUE; the names: max-drop-rate, max-drops, max-keys-hurt, max-wait",
            shown_str(text)
        ))
    })?;
    let value = value.trim();
    Ok(match name.trim() {
        "max-drop-rate" => Item::DropRate(Percent::parse(value).ok_or_else(|| {
            bad("max-drop-rate takes a percentage from 0 to 100, e.g. 0.5".into())
        })?),
        "max-drops" => Item::Drops(
            value
                .parse()
                .map_err(|_| bad("max-drops takes a count, e.g. 10".into()))?,
        ),
        "max-keys-hurt" => Item::KeysHurt(keys_hurt(value).map_err(|e| bad(e.to_string()))?),
        "max-wait" => Item::Wait(wait_cap_arg(value).map_err(bad)?),
        other => {
            return Err(bad(format!(
                "no target is named '{}'; the names: max-drop-rate, max-drops, max-keys-hurt, max-wait, and keep",
                shown_str(other)
            )));
        }
    })
}

/// The lines a scope names: a zone's, a location's own, or the line at
/// FILE:LINE; else why none.
fn scope_lines(
    scope: &str,
    conf: &NginxConf,
    units: &[Unit],
) -> Result<(Kind, Vec<usize>), String> {
    if let Some(z) = conf.zones.iter().position(|z| z.name == scope) {
        let lines = (0..units.len()).filter(|&u| units[u].zone == z).collect();
        return Ok((Kind::Zone, lines));
    }
    if let Some(lines) = at_line(scope, units) {
        return Ok((Kind::Line, lines));
    }
    let locs: Vec<usize> = (0..conf.locations.len())
        .filter(|&l| names_location(&conf.locations[l].name, scope))
        .collect();
    if locs.is_empty() {
        return Err(format!(
            "no zone, location or limit_req line (FILE:LINE) of {} is '{}'",
            conf.path.display(),
            shown_str(scope)
        ));
    }
    let lines: Vec<usize> = (0..units.len())
        .filter(|&u| units[u].members.iter().all(|(l, _)| locs.contains(l)))
        .collect();
    if lines.is_empty() {
        let inherited: Vec<String> = (units.iter())
            .filter(|u| u.members.iter().any(|(l, _)| locs.contains(l)))
            .map(|u| format!("{} from {}", conf.zones[u.zone].name, u.pos))
            .collect();
        return Err(format!(
            "location '{}' has no limit_req line of its own (it inherits {}); give the zone instead",
            shown_str(scope),
            if inherited.is_empty() {
                "none".to_string()
            } else {
                names(&inherited)
            }
        ));
    }
    Ok((Kind::Location, lines))
}

/// A location's name (`location = /login`, or with its server's name in
/// front) names `scope` (`= /login`, `location = /login`, `/api/`).
fn names_location(name: &str, scope: &str) -> bool {
    let bare = scope.strip_prefix("location ").unwrap_or(scope).trim();
    name == scope
        || name == format!("location {bare}")
        || name.ends_with(&format!(" location {bare}"))
}

/// `FILE:LINE` of a `limit_req` line: FILE the config's path as given, a
/// tail of it, or its file name.
fn at_line(scope: &str, units: &[Unit]) -> Option<Vec<usize>> {
    let (file, line) = scope.rsplit_once(':')?;
    let line: usize = line.parse().ok()?;
    let lines: Vec<usize> = (0..units.len())
        .filter(|&u| units[u].pos.line == line && units[u].pos.file.ends_with(file))
        .collect();
    (!lines.is_empty()).then_some(lines)
}

/// The locations that have `limit_req` lines of their own, for messages.
fn own_locations(conf: &NginxConf, units: &[Unit]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for u in units {
        if let [(l, _)] = u.members.as_slice() {
            let name = &conf.locations[*l].name;
            let name = name.strip_prefix("location ").unwrap_or(name).to_string();
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_named_with_or_without_its_word() {
        assert!(names_location("location = /login", "= /login"));
        assert!(names_location("location = /login", "location = /login"));
        assert!(names_location("api.example.com location /api/", "/api/"));
        assert!(!names_location("location /api/v2/", "/api/"));
        assert!(!names_location("server", "/"));
    }

    #[test]
    fn items_parse_and_bad_ones_say_what_is_wanted() {
        assert!(matches!(item("keep", "x:keep").unwrap(), Item::Keep));
        assert!(matches!(
            item("max-wait=none", "x").unwrap(),
            Item::Wait(WaitCap::Lifted)
        ));
        assert!(matches!(item("max-drops=3", "x").unwrap(), Item::Drops(3)));
        let e = item("max-delay=1s", "x:max-delay=1s")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no target is named 'max-delay'"), "{e}");
        let e = item("max-drop-rate=200", "x").unwrap_err().to_string();
        assert!(e.contains("percentage from 0 to 100"), "{e}");
    }
}
