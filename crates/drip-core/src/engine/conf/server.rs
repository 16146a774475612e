//! Which server a row goes to, as nginx chooses it: among the servers
//! listening on the connection's port (and local address) when the log
//! says them (`$server_port`, `$server_addr`), by the request's host; with
//! no host in the log, the one server that can limit. Each combination
//! of host, port and address is looked up once.

use super::{ConfOptions, LogFields};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::ingest::keys::EMPTY_KEY;
use crate::nginx_conf::NginxConf;
use crate::notes::Notes;
use anyhow::Result;
use std::collections::HashMap;

/// The fields a row's server is chosen by, and what was learnt of them.
pub(super) struct Servers {
    host: Option<usize>,
    port: Option<usize>,
    addr: Option<usize>,
    /// The server of every row when the log says neither host nor port.
    fixed: Option<usize>,
    /// Server per host id (no port or address in the log).
    hosts: Vec<u32>,
    /// Server per (host, port, address) ids.
    at: HashMap<(u32, u32, u32), u32>,
}

/// The log field `var` is read from: `--nginx-var var=FIELD`, else the
/// first of `names` the log has (any of them when its fields are known
/// only once read).
fn field_of(opts: &ConfOptions, log: LogFields, var: &str, names: &[&str]) -> Option<String> {
    match opts.overrides.get(var) {
        Some(f) => Some(f.clone()),
        None => names
            .iter()
            .find(|f| log.named(f))
            .map(|f| f.to_string())
            .or_else(|| log.unknown().then(|| names[0].to_string())),
    }
}

impl Servers {
    /// Plans the choice for `conf` (nothing to choose with one server, or
    /// `forced`), registering the fields it reads through `slot`.
    pub(super) fn new(
        conf: &NginxConf,
        opts: &ConfOptions,
        notes: &Notes,
        forced: bool,
        log: LogFields,
        slot: &mut dyn FnMut(&str) -> Result<usize>,
    ) -> Result<Servers> {
        let several = !forced && conf.servers.len() > 1;
        let apart = several && conf.listens_apart();
        let mut read = |var: &str, names: &[&str], when: bool| -> Result<Option<usize>> {
            match field_of(opts, log, var, names) {
                Some(f) if when => Ok(Some(slot(&f)?)),
                _ => Ok(None),
            }
        };
        let host = read("host", &["host", "http_host", "server_name"], several)?;
        let port = read("server_port", &["server_port"], apart)?;
        let addr = read("server_addr", &["server_addr"], apart && port.is_some())?;
        if apart && port.is_none() && !notes.is_silent() {
            notes.say(format_args!(
                "{} has servers listening on several ports and the log has no $server_port: rows are routed by name alone; log $server_port (and $server_addr) to route them as nginx does",
                conf.path.display()
            ));
        }
        let fixed = (several && host.is_none() && port.is_none()).then(|| fixed(conf, notes));
        Ok(Servers {
            host,
            port,
            addr,
            fixed,
            hosts: Vec::new(),
            at: HashMap::new(),
        })
    }

    /// The server of `conf` the row `ev` goes to.
    #[inline]
    pub(super) fn of(&mut self, conf: &NginxConf, ev: &Event, names: &KeyValues) -> usize {
        let id = |slot: Option<usize>| slot.map_or(EMPTY_KEY, |c| names.id(ev, c));
        let text = |slot: Option<usize>, id: u32| {
            let c = slot.filter(|_| id != EMPTY_KEY)?;
            Some(String::from_utf8_lossy(names[c].get(id)).into_owned())
        };
        if self.port.is_some() {
            let key = (id(self.host), id(self.port), id(self.addr));
            if let Some(&s) = self.at.get(&key) {
                return s as usize;
            }
            let host = text(self.host, key.0);
            let port = text(self.port, key.1).and_then(|p| p.trim().parse().ok());
            let addr = text(self.addr, key.2);
            let s = conf.server_at(host.as_deref(), port, addr.as_deref());
            self.at.insert(key, s as u32);
            return s;
        }
        let Some(h) = self.host else {
            return self.fixed.unwrap_or_else(|| conf.server_for(None));
        };
        let hid = names.id(ev, h);
        if hid == EMPTY_KEY {
            return conf.server_for(None);
        }
        let i = hid as usize;
        if i >= self.hosts.len() {
            self.hosts.resize(i + 1, u32::MAX);
        }
        if self.hosts[i] == u32::MAX {
            let host = text(self.host, hid);
            self.hosts[i] = conf.server_for(host.as_deref()) as u32;
        }
        self.hosts[i] as usize
    }
}

/// With several servers and no host in the log: the server that can
/// limit, if only one can (a plain-HTTP server that only redirects
/// cannot), else the default one; said to `notes`.
fn fixed(conf: &NginxConf, notes: &Notes) -> usize {
    let limiting: Vec<usize> = (0..conf.servers.len())
        .filter(|&s| !conf.locations[conf.servers[s].fallback].returns)
        .collect();
    let chosen = match limiting.as_slice() {
        [one] => *one,
        _ => conf.server_for(None),
    };
    if !notes.is_silent() {
        let s = &conf.servers[chosen];
        notes.say(format_args!(
            "{} has {} server blocks and the log has no host field: every row goes to the one at {} ({}); give --nginx-var host=FIELD to route by host",
            conf.path.display(),
            conf.servers.len(),
            s.pos,
            s.names.first().map_or("no server_name", |n| n.as_str())
        ));
    }
    chosen
}
