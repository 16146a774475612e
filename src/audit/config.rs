//! An audit's configuration: the arguments checked once into policies
//! (specs and nginx.conf runs), labels, key columns, reading options and
//! thresholds, before anything is read or written.

use super::judge::Thresholds;
use crate::cli::{AuditArgs, Format};
use crate::engine::conf as nginx;
use crate::engine::config_run::ConfigOptions;
use crate::engine::exec::ConfigRun;
use crate::engine::haproxy::HapExec;
use crate::engine::replay::DecisionSink;
use crate::engine::replay::{Run, Slot};
use crate::engine::replicas::{Balance, Instances};
use crate::engine::traefik::TraefikExec;
use crate::haproxy_cfg::HaproxyCfg;
use crate::ingest::input::{ColSel, InputSpec, MAX_KEYS, file_name};
use crate::nginx_conf::NginxConf;
use crate::policy::{KeyChoice, Spec, parse_spec, parse_specs_file};
use crate::time::Nanos;
use crate::traefik_cfg::TraefikCfg;
use anyhow::{Context, Result, anyhow, bail};
use drip_core::ingest::key_values::SPILL_AT;
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

fn load_specs(args: &AuditArgs) -> Result<Vec<Spec>> {
    let mut specs = Vec::new();
    for text in &args.policies {
        specs.push(parse_spec(text)?);
    }
    if let Some(path) = &args.policies_file {
        let contents = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read --policies file '{}'", path.display()))?;
        let from_file = parse_specs_file(&contents)
            .map_err(|(line, e)| anyhow!("{}:{line}: {e}", path.display()))?;
        if from_file.is_empty() {
            bail!("{}: no policy specs in the file", path.display());
        }
        specs.extend(from_file);
    }
    let no_config =
        args.nginx_conf.is_empty() && args.haproxy_cfg.is_empty() && args.traefik_config.is_empty();
    if specs.is_empty() && no_config {
        bail!(
            "no policy given; add --policy SPEC (e.g. --policy gcra:rate=10/s,burst=20), --policies FILE, --nginx-conf FILE, --haproxy-cfg FILE or --traefik-config FILE"
        );
    }
    let mut seen = std::collections::HashSet::new();
    for s in &specs {
        if !seen.insert(s.label.clone()) {
            bail!(
                "two policies are labelled '{}'; give each a distinct label=",
                s.label
            );
        }
    }
    Ok(specs)
}

/// Refuses, before anything is opened for writing, a decisions file or a
/// report (or standard error) that is one of the logs, the policies file,
/// a file of an nginx config (`confs`), or each other.
fn check_outputs(args: &AuditArgs, confs: &[std::path::PathBuf]) -> Result<()> {
    use crate::clash::{Endpoint, Place, check_distinct, named, report_inputs, report_outputs};
    let policies = args.policies_file.as_deref().map(|p| ("--policies", p));
    let inputs = report_inputs(&args.input.files, policies, confs)?;
    let mut outputs = report_outputs("--decisions", args.decisions.as_deref());
    if let Some(p) = &args.plot {
        outputs.push(Endpoint::new(named("--plot", p), Place::Path(p)));
    }
    check_distinct(&inputs, &outputs)
}

/// Everything an audit needs, checked before anything is read or written.
pub(super) struct Config {
    pub(super) args: AuditArgs,
    pub(super) labels: Vec<String>,
    /// One per policy spec, then one per nginx.conf, in report order.
    pub(super) runs: Vec<Run>,
    /// How the logs are read, the key columns included.
    pub(super) input: InputSpec,
    pub(super) thresholds: Thresholds,
    /// Policies given as specs (not nginx.conf): with two or more, keys are
    /// interned on the reader thread.
    pub(super) specs: usize,
    /// A plot is drawn (`--plot`, or the HTML page).
    pub(super) plotting: bool,
}

/// The policies given: specs, then nginx.conf files, with their labels.
struct Policies {
    specs: Vec<Spec>,
    /// Each config with its label: one run each, after the specs.
    confs: Vec<(String, Arc<NginxConf>)>,
    /// Each haproxy.cfg with its label: one run each, after the nginx.confs.
    haproxy: Vec<(String, Arc<HaproxyCfg>)>,
    /// Each Traefik config with its label: one run each, after those.
    traefik: Vec<(String, Arc<TraefikCfg>)>,
    /// `--nginx-var NAME=FIELD`.
    nginx_vars: HashMap<String, String>,
    /// The specs' labels, then the configs'.
    labels: Vec<String>,
}

impl Policies {
    /// How many gateway configs were given.
    fn configs(&self) -> usize {
        self.confs.len() + self.haproxy.len() + self.traefik.len()
    }

    fn load(args: &AuditArgs) -> Result<Policies> {
        let specs = load_specs(args)?;
        let mut labels: Vec<String> = specs.iter().map(|s| s.label.clone()).collect();
        let nginx_vars = crate::nginx_setup::parse_vars(&args.nginx_var)?;
        let confs = crate::nginx_setup::load_confs(
            &args.nginx_conf,
            &labels,
            args.quiet,
            args.strict_includes,
        )?;
        labels.extend(confs.iter().map(|(l, _)| l.clone()));
        let haproxy = crate::nginx_setup::load_haproxy(&args.haproxy_cfg, &labels, args.quiet)?;
        labels.extend(haproxy.iter().map(|(l, _)| l.clone()));
        let traefik = crate::nginx_setup::load_configs(
            &args.traefik_config,
            &labels,
            args.quiet,
            (TraefikCfg::load, |c| &c.notes),
        )?;
        labels.extend(traefik.iter().map(|(l, _)| l.clone()));
        Ok(Policies {
            specs,
            confs,
            haproxy,
            traefik,
            nginx_vars,
            labels,
        })
    }
}

impl Config {
    /// Checks the outputs, loads the policies and thresholds, gives each
    /// run its key columns, and settles how the logs are read.
    pub(super) fn from_args(args: AuditArgs) -> Result<Config> {
        let given: Vec<std::path::PathBuf> = args
            .nginx_conf
            .iter()
            .chain(&args.haproxy_cfg)
            .chain(&args.traefik_config)
            .cloned()
            .collect();
        check_outputs(&args, &given)?;
        let policies = Policies::load(&args)?;
        // Again with the configs' includes, now that they are known.
        let included: Vec<std::path::PathBuf> = (policies.confs.iter())
            .flat_map(|(_, c)| c.files.iter().cloned())
            .collect();
        check_outputs(&args, &included)?;
        let thresholds = Thresholds::from_args(&args, &policies.labels)?;
        let mut key_cols = KeyColumns::new(&args);
        let replicas = replica_setup(&args, &policies, &mut key_cols)?;
        let mut runs = spec_runs(&policies.specs, &mut key_cols, replicas.as_ref())?;
        let policy_cols = key_cols.0.len();
        // The reading options first: a config may tell how its log is written.
        let mut input = reading_options(&args, &policies.confs)?;
        conf_runs(
            &args,
            &policies,
            &input,
            &mut key_cols,
            &mut runs,
            replicas.as_ref(),
        )?;
        key_cols.check(policy_cols)?;
        input.key_cols = key_cols.0;
        if let Some(path) = &args.plot {
            crate::clash::check_output("--plot", path, "svg")?;
        }
        Ok(Config {
            plotting: args.plot.is_some() || args.format == Format::Html,
            specs: policies.specs.len(),
            args,
            labels: policies.labels,
            runs,
            input,
            thresholds,
        })
    }

    /// A timeline whose interval follows the log's span: a plot without
    /// `--timeline`.
    pub(super) fn auto_timeline(&self) -> bool {
        self.args.timeline.is_none() && self.plotting
    }

    /// The `--decisions` file, opened, and its name for messages.
    pub(super) fn open_decisions(&self) -> Result<Option<Box<dyn DecisionSink>>> {
        let (out, name): (Box<dyn Write + Send>, String) = match &self.args.decisions {
            None => return Ok(None),
            Some(p) if p.as_os_str() == "-" => (
                Box::new(std::io::BufWriter::new(std::io::stdout())),
                "standard output".into(),
            ),
            Some(p) => (
                Box::new(std::io::BufWriter::with_capacity(
                    1 << 16,
                    std::fs::File::create(p).with_context(|| {
                        format!("cannot create --decisions file '{}'", p.display())
                    })?,
                )),
                format!("'{}'", p.display()),
            ),
        };
        Ok(Some(Box::new(super::decisions::CsvDecisions::new(
            out, name,
        )?)))
    }
}

/// The distinct key columns of a run: the default first, then each
/// member's `key=` and each nginx.conf's key fields, in order of use.
struct KeyColumns(Vec<ColSel>, Option<usize>);

impl KeyColumns {
    fn new(args: &AuditArgs) -> KeyColumns {
        let mut k = KeyColumns(Vec::new(), None);
        if let Some(c) = args.input.key_column.as_deref() {
            // The first column can always be added.
            k.1 = k.slot(ColSel::parse(c)).ok();
        }
        k
    }

    /// The place of `sel` among the key columns, added if new.
    fn slot(&mut self, sel: ColSel) -> Result<usize> {
        if let Some(i) = self.0.iter().position(|c| *c == sel) {
            return Ok(i);
        }
        self.0.push(sel);
        Ok(self.0.len() - 1)
    }

    /// Checks that the policies count by few enough columns: a config's
    /// keys and routing read any number of fields (the ids past an event's
    /// room spill beside it), but the policies, which may be decided on
    /// other threads, take theirs from the event: the first `policy_cols`
    /// columns.
    fn check(&self, policy_cols: usize) -> Result<()> {
        let beside_conf = policy_cols < self.0.len();
        let room = match beside_conf && self.0.len() > MAX_KEYS {
            true => SPILL_AT,
            false => MAX_KEYS,
        };
        if policy_cols <= room {
            return Ok(());
        }
        let read: Vec<String> = self.0[..policy_cols]
            .iter()
            .map(|c| c.to_string())
            .collect();
        let beside = match beside_conf {
            true => " beside an nginx.conf that reads more fields",
            false => "",
        };
        bail!(
            "the policies count by {policy_cols} distinct key columns ({}, by --key-column and their key=); at most {room} can be counted by in one run{beside}: audit the policies in two runs",
            read.join(", ")
        )
    }

    /// Where each member of `spec` takes its key from.
    fn slots(&mut self, spec: &Spec) -> Result<Vec<Slot>> {
        spec.members
            .iter()
            .map(|m| {
                Ok(match &m.key {
                    KeyChoice::Default => self.1.map_or(Slot::Global, Slot::Column),
                    KeyChoice::Global => Slot::Global,
                    KeyChoice::Column(c) => Slot::Column(self.slot(ColSel::parse(c))?),
                })
            })
            .collect()
    }
}

/// A run per policy spec, in order, each member keyed by its column.
fn spec_runs(
    specs: &[Spec],
    key_cols: &mut KeyColumns,
    replicas: Option<&Replicas>,
) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let slots = key_cols.slots(s)?;
        runs.push(match replicas {
            Some(&(n, ref balance, window)) => {
                Run::replicated(s, slots, i, (n, balance.clone(), window))
            }
            None => Run::new(s, slots, i),
        });
    }
    Ok(runs)
}

/// `--replicas N`: how many instances, behind which balancer, and the
/// window the edge is counted over.
type Replicas = (u32, Balance, Nanos);

fn replica_setup(
    args: &AuditArgs,
    policies: &Policies,
    key_cols: &mut KeyColumns,
) -> Result<Option<Replicas>> {
    let Some(n) = args.replicas else {
        return Ok(None);
    };
    if policies.specs.is_empty() && policies.configs() == 0 {
        bail!("--replicas needs a policy to replicate: give -p SPEC, --policies FILE or a config");
    }
    if args.verify_column.is_some() {
        bail!(
            "--verify-column checks drip against the decisions one gateway logged; with --replicas the log says nothing of which instance took a row: audit without --replicas to verify"
        );
    }
    let text = args.balance.as_deref().unwrap_or("round-robin");
    let balance = Balance::parse(text, |column| key_cols.slot(ColSel::parse(column)))?;
    let window = args.edge_window.unwrap_or(Nanos::from_secs(1));
    Ok(Some((n, balance, window)))
}

/// A config's run, its instances made by `make` (`quiet`: the config's
/// notes said already): one, or with `--replicas` N and one as written.
fn config_run(
    mut make: impl FnMut(bool) -> Result<Box<dyn ConfigRun>>,
    replicas: Option<&Replicas>,
    (label, spec, order): (String, String, usize),
) -> Result<Run> {
    let Some(&(n, ref balance, window)) = replicas else {
        return Ok(Run::config(make(false)?, label, spec, order));
    };
    let written = make(false)?;
    let parts = (0..n).map(|_| make(true)).collect::<Result<Vec<_>>>()?;
    let instances: Instances = (parts, written);
    Ok(Run::replicated_config(
        instances,
        (label, spec, order),
        (balance.clone(), window),
    ))
}

/// How the logs are read: the options given, with the `log_format` of the
/// first nginx.conf's access log when the options leave it open.
fn reading_options(args: &AuditArgs, confs: &[(String, Arc<NginxConf>)]) -> Result<InputSpec> {
    let mut input = args.input.spec(Vec::new(), args.quiet)?;
    if let Some((_, conf)) = confs.first() {
        crate::nginx_setup::fitting_log_format(conf, &input, args.verify_column.is_some())
            .apply(&mut input);
    }
    Ok(input)
}

/// Adds a run per nginx.conf, then per haproxy.cfg, after the specs' runs.
fn conf_runs(
    args: &AuditArgs,
    policies: &Policies,
    input: &InputSpec,
    key_cols: &mut KeyColumns,
    runs: &mut Vec<Run>,
    replicas: Option<&Replicas>,
) -> Result<()> {
    let (confs, nginx_vars) = (&policies.confs, &policies.nginx_vars);
    let log_fields = if policies.configs() == 0 {
        None
    } else {
        crate::ingest::peek::log_fields(input)
    };
    let static_files = args
        .static_files
        .as_deref()
        .map(|r| {
            regex::Regex::new(r).map_err(|e| {
                anyhow::anyhow!(
                    "--static '{r}': not a regex drip can evaluate ({}); give a regex of the URIs of existing files, e.g. '\\.(css|js|png)$'",
                    e.to_string().lines().last().unwrap_or("invalid").trim()
                )
            })
        })
        .transpose()?;
    let conf_opts = nginx::ConfOptions {
        static_files: static_files.as_ref(),
        log_fields: log_fields.as_deref(),
        overrides: nginx_vars,
        location: args.nginx_location.as_deref(),
        verify: args.verify_column.as_deref(),
        files: if args.input.files.is_empty() {
            vec!["<stdin>".into()]
        } else {
            args.input.files.iter().map(|f| file_name(f)).collect()
        },
    };
    for (label, conf) in confs {
        let make = |quiet: bool| -> Result<Box<dyn ConfigRun>> {
            let exec = nginx::ConfExec::new(
                conf.clone(),
                &conf_opts,
                &crate::notes(args.quiet || quiet),
                &mut |f| key_cols.slot(ColSel::Name(f.to_string())),
            )?;
            Ok(Box::new(exec))
        };
        let order = runs.len();
        let spec = crate::nginx_setup::describe(conf);
        runs.push(config_run(make, replicas, (label.clone(), spec, order))?);
    }
    let opts = ConfigOptions {
        log_fields: log_fields.as_deref(),
        verify: args.verify_column.as_deref(),
        files: conf_opts.files.clone(),
    };
    let mut gateway = Gateways {
        key_cols,
        runs,
        replicas,
    };
    gateway.add(
        &policies.haproxy,
        |cfg, slot| Ok(Box::new(HapExec::new(cfg, &opts, slot)?)),
        crate::nginx_setup::describe_haproxy,
    )?;
    gateway.add(
        &policies.traefik,
        |cfg, slot| Ok(Box::new(TraefikExec::new(cfg, &opts, slot)?)),
        crate::nginx_setup::describe_traefik,
    )?;
    Ok(())
}

/// Where the runs of gateway configs go.
struct Gateways<'a> {
    key_cols: &'a mut KeyColumns,
    runs: &'a mut Vec<Run>,
    replicas: Option<&'a Replicas>,
}

impl Gateways<'_> {
    /// A run per config of one gateway, after the runs so far: `exec`
    /// makes its executor from the config and the key column of each log
    /// field it reads, `describe` gives the report's spec column.
    fn add<C>(
        &mut self,
        configs: &[(String, Arc<C>)],
        exec: impl Fn(Arc<C>, &mut dyn FnMut(&str) -> Result<usize>) -> Result<Box<dyn ConfigRun>>,
        describe: fn(&C) -> String,
    ) -> Result<()> {
        for (label, cfg) in configs {
            let key_cols = &mut *self.key_cols;
            let make = |_quiet: bool| {
                exec(cfg.clone(), &mut |f| {
                    key_cols.slot(ColSel::Name(f.to_string()))
                })
            };
            let order = self.runs.len();
            let run = config_run(make, self.replicas, (label.clone(), describe(cfg), order))?;
            self.runs.push(run);
        }
        Ok(())
    }
}
