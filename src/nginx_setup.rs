//! Loading the configs given with `--nginx-conf` and `--haproxy-cfg`, and
//! reading the log with the `log_format` an nginx.conf's `access_log`
//! names.

use crate::ingest::input::{ColSel, InputSpec, file_name};
use crate::ingest::log::nginx::Nginx;
use crate::ingest::log::{Fields, InputFormat, LineParser};
use crate::ingest::peek::first_lines;
use crate::nginx_conf::{AccessLog, NginxConf, Status};
use anyhow::{Result, bail};
use drip_core::haproxy_cfg::HaproxyCfg;
use drip_core::traefik_cfg::TraefikCfg;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The configs given with `--nginx-conf`, each with its report label (its
/// file name, or the path as given when two share a name). Notes on what
/// is not modelled go to stderr unless `quiet`.
pub fn load_confs(
    paths: &[std::path::PathBuf],
    taken: &[String],
    quiet: bool,
    strict_includes: bool,
) -> Result<Vec<(String, Arc<NginxConf>)>> {
    let mut out: Vec<(String, Arc<NginxConf>)> = Vec::new();
    for p in paths {
        let conf = NginxConf::load(p, strict_includes)?;
        if !quiet {
            for n in conf.assumptions.iter().chain(&conf.notes) {
                crate::say!("drip: {n}");
            }
        }
        let label = label(p, paths, taken, out.iter().map(|(l, _)| l.as_str()));
        out.push((label, Arc::new(conf)));
    }
    Ok(out)
}

/// A config's label in the report: its file name, or its path when
/// another config or a policy has that name.
fn label<'a>(
    p: &std::path::Path,
    paths: &[std::path::PathBuf],
    taken: &[String],
    given: impl Iterator<Item = &'a str> + Clone,
) -> String {
    let short = p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let clash = |l: &str| taken.iter().any(|t| t == l) || given.clone().any(|t| t == l);
    let twins = paths
        .iter()
        .filter(|q| q.file_name() == p.file_name())
        .count();
    let mut label = match clash(&short) || twins > 1 {
        true => p.display().to_string(),
        false => short,
    };
    let mut n = 2;
    while clash(&label) {
        label = format!("{}#{n}", p.display());
        n += 1;
    }
    label
}

/// Each config of one gateway (`--haproxy-cfg`, `--traefik-config`),
/// loaded and labelled after the labels `taken`, its notes said unless
/// `quiet`.
pub fn load_configs<C>(
    paths: &[std::path::PathBuf],
    taken: &[String],
    quiet: bool,
    (load, notes): (impl Fn(&Path) -> Result<C>, fn(&C) -> &[String]),
) -> Result<Vec<(String, Arc<C>)>> {
    let mut out: Vec<(String, Arc<C>)> = Vec::new();
    for p in paths {
        let cfg = load(p)?;
        if !quiet {
            for n in notes(&cfg) {
                crate::say!("drip: {}: {n}", p.display());
            }
        }
        let label = label(p, paths, taken, out.iter().map(|(l, _)| l.as_str()));
        out.push((label, Arc::new(cfg)));
    }
    Ok(out)
}

/// Each `--haproxy-cfg` (see [`load_configs`]).
pub fn load_haproxy(
    paths: &[std::path::PathBuf],
    taken: &[String],
    quiet: bool,
) -> Result<Vec<(String, Arc<HaproxyCfg>)>> {
    let load = |p: &Path| Ok(HaproxyCfg::load(p)?);
    load_configs(paths, taken, quiet, (load, |c| &c.notes))
}

/// What a Traefik config limits, for the report's spec column.
pub fn describe_traefik(cfg: &TraefikCfg) -> String {
    let limited = cfg.routers.iter().filter(|r| !r.limits.is_empty()).count();
    format!(
        "{} rateLimit middleware(s), {} router(s) that use them",
        cfg.limits.len(),
        limited
    )
}

/// What a haproxy.cfg limits, for the report's spec column.
pub fn describe_haproxy(cfg: &HaproxyCfg) -> String {
    let refusing = (cfg.proxies.iter())
        .filter(|p| {
            p.rules.iter().any(|r| {
                matches!(
                    r.action,
                    drip_core::haproxy_cfg::Action::Deny { .. }
                        | drip_core::haproxy_cfg::Action::Tarpit { .. }
                )
            })
        })
        .count();
    format!(
        "{} stick-table(s), {} proxy(ies) that deny",
        cfg.tables.len(),
        refusing
    )
}

/// `--nginx-var NAME=FIELD` pairs.
pub fn parse_vars(given: &[String]) -> Result<HashMap<String, String>> {
    let mut out = HashMap::new();
    for g in given {
        let Some((name, field)) = g.split_once('=') else {
            bail!("invalid --nginx-var '{g}': write NAME=FIELD, e.g. remote_addr=client_ip");
        };
        let name = name.trim().trim_start_matches('$');
        let field = field.trim();
        if name.is_empty()
            || field.is_empty()
            || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            bail!("invalid --nginx-var '{g}': write NAME=FIELD, e.g. remote_addr=client_ip");
        }
        out.insert(name.to_string(), field.to_string());
    }
    Ok(out)
}

/// A one-line description of a config for the report's spec column.
pub fn describe(conf: &NginxConf) -> String {
    let limited = conf
        .locations
        .iter()
        .filter(|l| !l.limits.is_empty() && !l.returns)
        .count();
    format!(
        "{} zone(s), {} location(s) with limit_req",
        conf.zones.len(),
        limited
    )
}

/// Why `line`, read with `parser`, is not a line of its format: it does
/// not parse, or a variable nginx never writes with a space (an address, a
/// status, a number) holds one, or `$limit_req_status` holds no status.
fn misfit(parser: &mut Nginx, line: &[u8]) -> Option<String> {
    let mut fields = Fields::default();
    if let Err(e) = parser.parse(line, &mut fields) {
        return Some(e.to_string());
    }
    const SPACELESS: [&str; 14] = [
        "remote_addr",
        "realip_remote_addr",
        "remote_port",
        "status",
        "limit_req_status",
        "msec",
        "request_time",
        "body_bytes_sent",
        "bytes_sent",
        "request_length",
        "time_iso8601",
        "connection",
        "server_port",
        "host",
    ];
    for v in SPACELESS {
        if !parser.has(v) {
            continue;
        }
        let Some(i) = parser.field(v) else { continue };
        let Some(value) = fields.get(line, i) else {
            continue;
        };
        if value.iter().any(|b| b.is_ascii_whitespace()) {
            return Some(format!(
                "${v} would hold '{}', and nginx never writes a space in it",
                String::from_utf8_lossy(value)
            ));
        }
        if v == "limit_req_status" && Status::parse(value).is_none() {
            return Some(format!(
                "$limit_req_status would hold '{}', which is no status",
                String::from_utf8_lossy(value)
            ));
        }
    }
    None
}

/// What [`fitting_log_format`] found: the `log_format` to read the log
/// with, and the notes to say about it.
#[derive(Debug, Default)]
pub struct LogFormatFit {
    /// The `log_format` string that fits the log's first lines.
    pub format: Option<String>,
    /// Arrival = the logged time − `$request_time` (the format has both).
    pub request_time: bool,
    /// What to tell the user (what was adopted, or why none was).
    pub notes: Vec<String>,
}

impl LogFormatFit {
    /// Reads the log as found: the reading options finished.
    pub fn apply(self, spec: &mut InputSpec) {
        for note in &self.notes {
            spec.notes.say(note);
        }
        if let Some(format) = self.format {
            spec.input_format = InputFormat::Nginx;
            spec.log_format = Some(format);
        }
        if self.request_time {
            spec.duration_col = Some(ColSel::Name("request_time".into()));
        }
    }
}

/// With `--input-format auto` and no `--log-format`: when the config's
/// `access_log` lines use a `log_format` of its own that fits the log's
/// first lines (see [`misfit`]), the log is read with it (the `access_log` whose file name
/// matches the log's is tried first). When that format has a time and
/// `$request_time`, arrival = time − `$request_time` unless
/// `--duration-column` says otherwise: nginx writes the line when the
/// request completes, and `limit_req` decided at its arrival.
pub fn fitting_log_format(conf: &NginxConf, spec: &InputSpec, verify: bool) -> LogFormatFit {
    let mut fit = LogFormatFit::default();
    if spec.input_format != InputFormat::Auto || spec.log_format.is_some() {
        return fit;
    }
    let Some(path) = spec.files.first().filter(|f| f.as_os_str() != "-") else {
        return fit;
    };
    let lines = first_lines(path, 5);
    if lines.is_empty() {
        return fit;
    }
    let base = |p: &str| {
        let name = std::path::Path::new(p)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        name.split(".log").next().unwrap_or_default().to_string()
    };
    let log_base = base(&path.to_string_lossy());
    let mut logs: Vec<&AccessLog> = conf.access_logs.iter().collect();
    logs.sort_by_key(|a| base(&a.path) != log_base);
    let mut tried = Vec::new();
    let mut rejected: Option<String> = None;
    for a in logs {
        if tried.contains(&a.format) {
            continue;
        }
        tried.push(a.format.clone());
        let Some(f) = conf
            .log_formats
            .iter()
            .find(|f| f.name == a.format && f.pos.is_some())
        else {
            continue;
        };
        let Ok(mut parser) = Nginx::compile(&f.format) else {
            continue;
        };
        let file = file_name(path);
        if let Some((n, why)) = lines
            .iter()
            .find_map(|(n, l)| misfit(&mut parser, l).map(|w| (n, w)))
        {
            if rejected.is_none() {
                rejected = Some(format!(
                    "{file}:{n} is not written with log_format '{}' ({}): {why}; detecting the format from the lines instead (give --log-format to insist)",
                    f.name,
                    f.pos.as_ref().map_or(String::new(), |p| p.to_string()),
                ));
            }
            continue;
        }
        fit.format = Some(f.format.clone());
        let timed = ["msec", "time_local", "time_iso8601"]
            .iter()
            .any(|t| parser.has(t));
        fit.request_time = spec.duration_col.is_none() && timed && parser.has("request_time");
        fit.notes.push(format!(
            "reading {file} with log_format '{}' ({}), used by access_log {} ({})",
            f.name,
            f.pos.as_ref().map_or(String::new(), |p| p.to_string()),
            a.path,
            a.pos
        ));
        if fit.request_time {
            fit.notes.push("nginx writes a line when the request completes; replaying arrivals at the logged time minus $request_time, when limit_req decided (--duration-column sets another)".into());
        }
        if !verify && parser.has("limit_req_status") {
            fit.notes.push("the log has $limit_req_status; add --verify-column limit_req_status to check drip's decisions against nginx's".into());
        }
        return fit;
    }
    fit.notes.extend(rejected);
    fit
}
