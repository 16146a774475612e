//! `limit_req_zone KEY zone=NAME:SIZE rate=RATE [sync]` → a [`Zone`], and
//! the zone each `limit_req` line names, once every zone is known.

use super::expr::Expr;
use super::tree::Directive;
use super::{ConfError, Limit, LimitLine, NginxConf, Zone};
use crate::policy::nginx::parse_nginx_rate;

impl NginxConf {
    /// Gives each location its `limit_req` lines with their zones
    /// resolved: names are resolved once every zone is known, as nginx
    /// does.
    pub(super) fn resolve_zones(
        &mut self,
        pending: Vec<(usize, Vec<LimitLine>)>,
    ) -> Result<(), ConfError> {
        for (loc, limits) in pending {
            let mut resolved = Vec::new();
            for (zone, burst, delay, pos) in limits {
                let z = self
                    .zones
                    .iter()
                    .position(|z| z.name == zone)
                    .ok_or_else(|| {
                        pos.err(format!(
                            "unknown limit_req_zone \"{zone}\"; zones defined: {}",
                            if self.zones.is_empty() {
                                "none".into()
                            } else {
                                self.zones
                                    .iter()
                                    .map(|z| z.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            }
                        ))
                    })?;
                resolved.push(Limit {
                    zone: z,
                    burst,
                    delay,
                    pos,
                });
            }
            self.locations[loc].limits = resolved;
        }
        Ok(())
    }

    /// Reads one `limit_req_zone` line.
    pub(super) fn zone(&mut self, d: &Directive) -> Result<(), ConfError> {
        let Some((key, params)) = d.args.split_first() else {
            return Err(d
                .pos
                .err("limit_req_zone needs a key, zone=NAME:SIZE and rate=RATE"));
        };
        let key = Expr::parse(key).map_err(|e| d.pos.err(format!("limit_req_zone key {e}")))?;
        let mut name = None;
        let mut size = 0;
        let mut rate = None;
        for p in params {
            if let Some(z) = p.strip_prefix("zone=") {
                let (n, s) = z.split_once(':').ok_or_else(|| {
                    d.pos.err(format!(
                        "invalid zone size in \"{p}\"; write zone=NAME:SIZE, e.g. zone=perip:10m"
                    ))
                })?;
                if n.is_empty() {
                    return Err(d.pos.err(format!("invalid zone name in \"{p}\"")));
                }
                size = parse_size(s).ok_or_else(|| {
                    d.pos.err(format!(
                        "invalid zone size \"{s}\"; give bytes with k, m or g, e.g. 10m"
                    ))
                })?;
                if size < 8 * 4096 {
                    return Err(d.pos.err(format!(
                        "zone \"{n}\" is too small; nginx needs at least 32k"
                    )));
                }
                name = Some(n.to_string());
            } else if let Some(r) = p.strip_prefix("rate=") {
                rate = Some((
                    parse_nginx_rate(r).map_err(|e| d.pos.err(e.to_string()))?,
                    r.to_string(),
                ));
            } else if p == "sync" {
                self.note(
                    &d.pos,
                    "sync",
                    "zones shared across a cluster are decided as one nginx would",
                );
            } else {
                return Err(d
                    .pos
                    .err(format!("invalid limit_req_zone parameter \"{p}\"")));
            }
        }
        let name = name.ok_or_else(|| {
            d.pos
                .err("limit_req_zone must have a zone=NAME:SIZE parameter")
        })?;
        let rate = rate.ok_or_else(|| {
            d.pos.err(format!(
                "invalid number of arguments in \"limit_req_zone\" directive (zone \"{name}\" has no rate=): nginx -t refuses this config; add rate=, e.g. rate=10r/s"
            ))
        })?;
        if self.zones.iter().any(|z| z.name == name) {
            return Err(d.pos.err(format!("duplicate zone \"{name}\"")));
        }
        self.zones.push(Zone {
            name,
            key,
            rate: rate.0,
            rate_text: rate.1,
            size,
            pos: d.pos.clone(),
        });
        Ok(())
    }
}

/// nginx sizes: bytes, or with `k`/`m`/`g` (either case).
fn parse_size(s: &str) -> Option<u64> {
    let (num, mul) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1 << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}
