//! Directives valid at any level (`limit_req`, `limit_req_dry_run`,
//! `limit_req_status`, `access_log`, and the ones drip notes as not
//! modelled), and `log_format`.

use super::tree::Directive;
use super::{AccessLog, ConfError, Level, LimitLine, LogFormat, NginxConf};

impl NginxConf {
    /// Directives valid at http, server and location level.
    pub(super) fn level_directive(
        &mut self,
        d: &Directive,
        level: &mut Level,
        ctx: &str,
    ) -> Result<(), ConfError> {
        match d.name.as_str() {
            "limit_req" => {
                let l = parse_limit_req(d)?;
                let list = level.limits.get_or_insert_with(Vec::new);
                if list.iter().any(|x| x.0 == l.0) {
                    return Err(d.pos.err(format!("limit_req zone \"{}\" is duplicate in this block", l.0)));
                }
                list.push(l);
            }
            "index" => level.index = Some(d.args.clone()),
            "error_page" => {
                let codes: Vec<u16> = d.args.iter().map_while(|a| a.parse().ok()).collect();
                match d.args.last() {
                    Some(to) if !codes.is_empty() && d.args.len() > codes.len() => level
                        .error_pages
                        .get_or_insert_with(Vec::new)
                        .push((codes, to.clone())),
                    _ => {
                        return Err(d.pos.err(
                            "error_page takes status codes, an optional =RESPONSE and a URI or @name",
                        ));
                    }
                }
            }
            "limit_req_dry_run" => {
                level.dry_run = Some(match d.args.as_slice() {
                    [v] if v == "on" => true,
                    [v] if v == "off" => false,
                    _ => return Err(d.pos.err("limit_req_dry_run takes 'on' or 'off'")),
                });
            }
            "limit_req_status" => {
                let code = match d.args.as_slice() {
                    [v] => v.parse::<u16>().ok().filter(|c| (400..=599).contains(c)),
                    _ => None,
                };
                level.status = Some(code.ok_or_else(|| {
                    d.pos
                        .err("limit_req_status takes one status code from 400 to 599")
                })?);
            }
            "access_log" => {
                if let Some(path) = d.args.first()
                    && path != "off"
                {
                    let format = d
                        .args
                        .get(1)
                        .filter(|a| !a.contains('='))
                        .cloned()
                        .unwrap_or_else(|| "combined".into());
                    self.access_logs.push(AccessLog {
                        path: path.clone(),
                        format,
                        pos: d.pos.clone(),
                    });
                }
            }
            "limit_conn" => self.note(
                &d.pos,
                "limit_conn",
                "it limits concurrent connections, which a log does not show; requests it refuses are counted as limit_req sees them",
            ),
            "set" if ctx != "http" => {
                if let Some(v) = d.args.first().and_then(|a| a.strip_prefix('$')) {
                    self.unmodelled_vars
                        .insert(v.to_string(), (d.pos.clone(), "set".into()));
                }
            }
            "if" if ctx != "http" => {
                let inner = d.block.as_deref().unwrap_or_default();
                if let Some(x) = inner.iter().find(|x| x.name.starts_with("limit_req")) {
                    return Err(x.pos.err(format!(
                        "\"{}\" directive is not allowed here (inside 'if'): nginx -t refuses this config; put it in a location",
                        x.name
                    )));
                }
                if let Some(x) = inner
                    .iter()
                    .find(|x| matches!(x.name.as_str(), "return" | "rewrite" | "set"))
                {
                    self.note(
                        &x.pos,
                        &format!("if … {{ {} }}", x.name),
                        "its condition is not evaluated; rows are decided as if it never held",
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Reads one `log_format` line (a later one of a built-in name
    /// replaces it).
    pub(super) fn log_format(&mut self, d: &Directive) -> Result<(), ConfError> {
        let Some((name, rest)) = d.args.split_first() else {
            return Err(d.pos.err("log_format needs a name and a format"));
        };
        // `escape=` says how nginx escapes values; the log reader unescapes
        // what any of them writes.
        let parts = match rest.split_first() {
            Some((e, parts)) if e.starts_with("escape=") => parts,
            _ => rest,
        };
        if parts.is_empty() {
            return Err(d
                .pos
                .err(format!("log_format \"{name}\" has no format text")));
        }
        if self
            .log_formats
            .iter()
            .any(|f| f.name == *name && f.pos.is_some())
        {
            return Err(d.pos.err(format!("duplicate log_format name \"{name}\"")));
        }
        self.log_formats.retain(|f| f.name != *name);
        self.log_formats.push(LogFormat {
            name: name.clone(),
            format: parts.concat(),
            pos: Some(d.pos.clone()),
        });
        Ok(())
    }
}

/// A `limit_req` line: zone name, burst, delay (`None`: nodelay).
fn parse_limit_req(d: &Directive) -> Result<LimitLine, ConfError> {
    if d.args.is_empty() || d.args.len() > 3 {
        return Err(d.pos.err("invalid number of arguments in \"limit_req\"; write limit_req zone=NAME [burst=N] [nodelay | delay=N]"));
    }
    let mut zone = None;
    let mut burst = 0;
    let mut delay = Some(0);
    let positive = |v: &str, what: &str| -> Result<u64, ConfError> {
        v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
            d.pos.err(format!(
                "invalid {what} value \"{v}\"; give a positive whole number"
            ))
        })
    };
    for a in &d.args {
        if let Some(z) = a.strip_prefix("zone=") {
            zone = Some(z.to_string());
        } else if let Some(b) = a.strip_prefix("burst=") {
            burst = positive(b, "burst")?;
        } else if let Some(x) = a.strip_prefix("delay=") {
            delay = Some(positive(x, "delay")?);
        } else if a == "nodelay" {
            delay = None;
        } else {
            return Err(d.pos.err(format!("invalid parameter \"{a}\" in limit_req")));
        }
    }
    let zone = zone.ok_or_else(|| d.pos.err("limit_req needs zone=NAME"))?;
    Ok((zone, burst, delay, d.pos.clone()))
}
