//! The report's nginx section: each location that received rows or
//! limits requests (a limited location that matched no row is listed with
//! 0 and named as untested), zones defined and never used, and what the
//! replay could not model.

use super::{ConfExec, LocRun, Verify};
use crate::engine::outcome::{NginxLocationRow, NginxReport};
use crate::nginx_conf::location::Match;
use crate::nginx_conf::{NginxConf, Status};

impl ConfExec {
    /// The report's nginx section, once every row is decided.
    pub fn report(&mut self) -> NginxReport {
        let conf = &self.conf;
        let mut notes = conf.assumptions.clone();
        for (z, run) in self.keys.zones.iter().enumerate() {
            let zone = &conf.zones[z];
            if run.activity.peak > zone.capacity() {
                notes.push(format!(
                    "zone \"{}\": up to {} keys were active within 60 s, more than the about {} its {} bytes hold; nginx would have evicted keys, which drip does not model, so decisions after such moments may differ",
                    zone.name,
                    run.activity.peak,
                    zone.capacity(),
                    zone.size
                ));
            }
        }
        if self.locs.iter().any(|l| l.dry_run && !l.limits.is_empty()) {
            notes.push("locations in limit_req_dry_run count what they would drop and delay; nginx served those requests at once".into());
        }
        if self.router.forced.is_none() {
            notes.extend(self.try_files_notes());
            notes.extend(self.redirect_notes());
        }
        let limited = |i: usize| self.limited(i);
        let untested: Vec<String> = (0..self.locs.len())
            .filter(|&i| limited(i) && self.locs[i].counts.iter().sum::<u64>() == 0)
            .map(|i| conf.locations[i].name.clone())
            .collect();
        for u in &untested {
            notes.push(format!(
                "{u} has limit_req and matched no row of the log: untested (--fail-untested makes this fail)"
            ));
        }
        notes.extend(self.answered_notes());
        let unused_zones = unused_zones(conf);
        for z in &unused_zones {
            notes.push(format!("{z} is defined and no limit_req uses it"));
        }
        let locations = self
            .locs
            .iter()
            .zip(&conf.locations)
            .enumerate()
            .filter(|&(i, (l, _))| l.counts.iter().sum::<u64>() > 0 || limited(i))
            .map(|(_, (l, c))| location_row(conf, l, c))
            .collect();
        let verify = self.verify.as_mut().map(Verify::report);
        NginxReport {
            config: conf.path.display().to_string(),
            locations,
            notes,
            verify,
            untested,
            unused_zones,
        }
    }

    /// How many rows nginx answers before any location limits them.
    fn answered_notes(&self) -> Vec<String> {
        let a = &self.conf.answers;
        let rows = |i: usize| self.locs[i].counts.iter().sum::<u64>();
        let mut notes = Vec::new();
        if rows(a.bad_request) > 0 {
            notes.push(format!(
                "{} rows have a target nginx's parser refuses (a '..' above the root, a bad or %00 escape, a control byte): answered 400 by nginx before any limit",
                rows(a.bad_request)
            ));
        }
        if rows(a.cycle) > 0 {
            notes.push(format!(
                "{} rows are rewritten more than 10 times: answered 500 by nginx (rewrite cycle) before any limit",
                rows(a.cycle)
            ));
        }
        notes
    }

    /// What following `index` and `error_page` assumed, one line per
    /// location whose rows they sent elsewhere, and per location whose
    /// `error_page 404` was taken never to apply (no `--static`).
    fn redirect_notes(&self) -> Vec<String> {
        use super::route::Redirect;
        let conf = &self.conf;
        let mut notes: Vec<String> = self
            .router
            .redirected
            .iter()
            .map(|&(from, to, how)| {
                let l = &conf.locations[from];
                let to = &conf.locations[to].name;
                match how {
                    Redirect::Index => {
                        let first = l.index.as_ref().and_then(|i| i.first()).map_or("", String::as_str);
                        format!(
                            "{}: a request for a directory (a URI ending in /) goes to its index {first}, taken to exist (the log cannot say), and is limited by {to} when no limit of its own applied",
                            l.name
                        )
                    }
                    Redirect::Missing => format!(
                        "{}: a request for a file --static does not name goes to its error_page 404, and is limited by {to} when no limit of its own applied",
                        l.name
                    ),
                    Redirect::TryFiles => format!(
                        "{}: try_files passes a request to {} when no file exists; the log cannot say which existed, so its rows go there ({to}, whose limits apply when none of its own did), {}",
                        l.name,
                        l.try_uri.as_deref().unwrap_or_default(),
                        match &self.router.static_files {
                            Some(r) => format!("except those whose URI matches --static '{}'", r.as_str()),
                            None => "all of them (--static REGEX names the URIs of files that exist)".into(),
                        }
                    ),
                }
            })
            .collect();
        if self.router.static_files.is_none() {
            notes.extend(conf.locations.iter().filter_map(|l| {
                Some(format!(
                    "{}: error_page 404 sends requests for files that do not exist to {}; the log cannot say which existed, so every row is taken as a file that exists (--static REGEX names the URIs of files that exist)",
                    l.name,
                    l.missing_to.as_ref()?
                ))
            }));
        }
        notes
    }

    /// What routing through `try_files … @name` assumed, one line per
    /// location that does it.
    fn try_files_notes(&self) -> Vec<String> {
        let conf = &self.conf;
        let except = match &self.router.static_files {
            Some(r) => format!("except those whose URI matches --static '{}'", r.as_str()),
            None => "all of them (--static REGEX names the URIs of files that exist)".into(),
        };
        conf.locations
            .iter()
            .filter_map(|l| {
                let to = &conf.locations[l.try_named?];
                Some(format!(
                    "{}: try_files passes a request to {} when no file exists; the log cannot say which existed, so its rows go there, {except}",
                    l.name, to.name
                ))
            })
            .collect()
    }

    /// True when location `i` limits the requests it gets and rows can
    /// reach it: not answered by `return`, the one `--nginx-location`
    /// names if it names one, and not a server's own settings when a
    /// `location /` takes every URI.
    fn limited(&self, i: usize) -> bool {
        let (run, loc) = (&self.locs[i], &self.conf.locations[i]);
        if run.limits.is_empty() || run.returns {
            return false;
        }
        if let Some(f) = self.router.forced {
            return f == i;
        }
        let server = &self.conf.servers[loc.server];
        let root = |n: &crate::nginx_conf::location::Node| matches!(&n.how, Match::Prefix(u) | Match::NoRegex(u) if u == "/");
        !(server.fallback == i && server.tree.iter().any(root))
    }
}

/// `zone "NAME" (file:line)` of each zone no `limit_req` names.
fn unused_zones(conf: &NginxConf) -> Vec<String> {
    conf.zones
        .iter()
        .enumerate()
        .filter(|&(z, _)| {
            !conf
                .locations
                .iter()
                .any(|l| l.limits.iter().any(|x| x.zone == z))
        })
        .map(|(_, z)| format!("zone \"{}\" ({})", z.name, z.pos))
        .collect()
}

/// One location's row: its limits as written, and its rows by status.
fn location_row(conf: &NginxConf, l: &LocRun, c: &crate::nginx_conf::Location) -> NginxLocationRow {
    let n = |s: Status| l.counts[s as usize];
    let limits = if let Some(how) = c.answered {
        how.into()
    } else if l.returns {
        "return (never limited)".into()
    } else if c.limits.is_empty() {
        "none".into()
    } else {
        c.limits
            .iter()
            .map(|x| {
                let z = &conf.zones[x.zone];
                let mut s = format!("{} {}", z.name, z.rate_text);
                if x.burst > 0 {
                    s.push_str(&format!(" burst={}", x.burst));
                }
                match x.delay {
                    None => s.push_str(" nodelay"),
                    Some(0) => {}
                    Some(d) => s.push_str(&format!(" delay={d}")),
                }
                s
            })
            .collect::<Vec<_>>()
            .join(" + ")
    };
    let dry = if l.dry_run && !c.limits.is_empty() {
        " (dry run)"
    } else {
        ""
    };
    NginxLocationRow {
        location: c.name.clone(),
        limits: limits + dry,
        requests: l.counts.iter().sum(),
        passed: n(Status::Passed),
        delayed: n(Status::Delayed) + n(Status::DelayedDryRun),
        rejected: n(Status::Rejected) + n(Status::RejectedDryRun),
        unlimited: n(Status::None),
    }
}
