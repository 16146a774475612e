//! Variables in keys: `map` blocks (exact keys, lowercased as nginx
//! compares them), what each variable reads, and the log fields an
//! expression needs through maps.

use super::expr::{Expr, Map, VarError};
use super::tree::Directive;
use super::{ConfError, NginxConf, VarSource, location};
use std::collections::HashMap;

impl NginxConf {
    /// Reads one `map` block.
    pub(super) fn map(&mut self, d: &Directive) -> Result<(), ConfError> {
        let [source, var] = d.args.as_slice() else {
            return Err(d.pos.err("map takes a source and a $variable"));
        };
        let Some(var) = var.strip_prefix('$') else {
            return Err(d
                .pos
                .err(format!("map result \"{var}\" must be a $variable")));
        };
        let source = Expr::parse(source).map_err(|e| d.pos.err(format!("map source {e}")))?;
        let mut entries = HashMap::new();
        let mut default = Expr::parse("").expect("empty");
        for e in d.block.as_deref().unwrap_or_default() {
            match (e.name.as_str(), e.args.as_slice()) {
                ("hostnames", []) => {
                    return Err(e.pos.err(format!(
                        "map ${var}: 'hostnames' maps are not modelled; use exact keys, or give --nginx-var {var}=FIELD with a field holding the value"
                    )));
                }
                ("volatile", []) => {}
                ("default", [v]) => {
                    default = Expr::parse(v).map_err(|x| e.pos.err(format!("map value {x}")))?;
                }
                (k, [v]) => {
                    if k.starts_with('~') {
                        return Err(e.pos.err(format!(
                            "map ${var}: regex keys ('{k}') are not modelled; use exact keys, or give --nginx-var {var}=FIELD with a field holding the value"
                        )));
                    }
                    let k = k.strip_prefix('\\').unwrap_or(k);
                    let v = Expr::parse(v).map_err(|x| e.pos.err(format!("map value {x}")))?;
                    if entries
                        .insert(k.to_ascii_lowercase().into_bytes(), v)
                        .is_some()
                    {
                        return Err(e.pos.err(format!("map ${var}: duplicate key \"{k}\"")));
                    }
                }
                _ => {
                    return Err(e.pos.err(format!(
                        "map ${var}: invalid entry '{}'; write KEY VALUE;",
                        e.name
                    )));
                }
            }
        }
        if self.maps.iter().any(|m| m.var == var) {
            return Err(d.pos.err(format!("duplicate map variable ${var}")));
        }
        self.maps.push(Map {
            var: var.to_string(),
            source,
            entries,
            default,
        });
        Ok(())
    }

    /// Maps must not refer to themselves, directly or through others.
    pub(super) fn check_maps(&self) -> Result<(), ConfError> {
        for (i, m) in self.maps.iter().enumerate() {
            let mut stack = vec![i];
            let mut seen = vec![false; self.maps.len()];
            while let Some(j) = stack.pop() {
                let mj = &self.maps[j];
                let exprs = std::iter::once(&mj.source)
                    .chain(mj.entries.values())
                    .chain(std::iter::once(&mj.default));
                for e in exprs {
                    for v in e.vars() {
                        if let Some(k) = self.maps.iter().position(|x| x.var == v) {
                            if k == i {
                                return Err(ConfError {
                                    file: self.path.clone(),
                                    line: 0,
                                    msg: format!("map ${} depends on itself", m.var),
                                });
                            }
                            if !seen[k] {
                                seen[k] = true;
                                stack.push(k);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// What variable `name` reads for a request of `server`: an explicit
    /// `overrides` entry (one for `remote_addr` serves
    /// `binary_remote_addr` too), a map, `$remote_addr`/`$binary_remote_addr` (the
    /// `remote_addr` field), `$server_name` (the server's first name), a
    /// part of the request target (`$uri`, `$args`, `$arg_NAME`, … from
    /// the `uri` field, the target a log reader takes from `$request`), or
    /// the log field of the same name. Variables drip cannot evaluate
    /// (`geo`, `set`, …) are an error naming where they are defined.
    pub fn var_source(
        &self,
        name: &str,
        server: usize,
        overrides: &HashMap<String, String>,
    ) -> Result<VarSource, VarError> {
        if let Some(f) = overrides.get(name) {
            return Ok(VarSource::Field(f.clone()));
        }
        // Both read the client address: naming its field once is enough.
        if name == "binary_remote_addr"
            && let Some(f) = overrides.get("remote_addr")
        {
            return Ok(VarSource::Field(f.clone()));
        }
        if let Some(m) = self.maps.iter().position(|m| m.var == name) {
            return Ok(VarSource::Map(m));
        }
        if let Some(g) = self.geos.iter().position(|g| g.var == name) {
            return Ok(VarSource::Geo(g));
        }
        if let Some((pos, how)) = self.unmodelled_vars.get(name) {
            return Err(VarError(format!(
                "{pos}: ${name} is set by '{how}', which drip does not evaluate; give --nginx-var {name}=FIELD with a log field holding its value"
            )));
        }
        if let Some(t) = location::Target::of(name) {
            let field = overrides
                .get("request_uri")
                .or_else(|| overrides.get("uri"))
                .map_or("uri", String::as_str);
            return Ok(VarSource::Request(t, field.to_string()));
        }
        Ok(match name {
            "binary_remote_addr" | "remote_addr" => VarSource::Field("remote_addr".into()),
            "server_name" => VarSource::Const(
                self.servers
                    .get(server)
                    .and_then(|s| s.names.first())
                    .cloned()
                    .unwrap_or_default(),
            ),
            n if n.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(VarError(format!(
                    "${name} is a regex capture, which drip does not evaluate; give --nginx-var {name}=FIELD"
                )));
            }
            n => VarSource::Field(n.to_string()),
        })
    }

    /// The log fields an expression reads for `server`, through maps.
    pub fn fields_of(
        &self,
        e: &Expr,
        server: usize,
        overrides: &HashMap<String, String>,
        out: &mut Vec<String>,
    ) -> Result<(), VarError> {
        for v in e.vars() {
            match self.var_source(v, server, overrides)? {
                VarSource::Field(f) | VarSource::Request(_, f) => {
                    if !out.contains(&f) {
                        out.push(f);
                    }
                }
                VarSource::Const(_) => {}
                VarSource::Geo(g) => {
                    self.fields_of(&self.geos[g].source, server, overrides, out)?
                }
                VarSource::Map(m) => {
                    let m = &self.maps[m];
                    self.fields_of(&m.source, server, overrides, out)?;
                    for x in m.entries.values().chain(std::iter::once(&m.default)) {
                        self.fields_of(x, server, overrides, out)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Evaluates `e` for one request of `server`, appending to `out`;
    /// `field` gives a log field's value (empty when absent).
    #[cfg(test)]
    pub fn eval(
        &self,
        e: &Expr,
        server: usize,
        overrides: &HashMap<String, String>,
        field: &dyn Fn(&str) -> Vec<u8>,
        out: &mut Vec<u8>,
    ) {
        for p in &e.parts {
            match p {
                super::expr::Part::Lit(l) => out.extend_from_slice(l.as_bytes()),
                super::expr::Part::Var(v) => match self.var_source(v, server, overrides) {
                    Ok(VarSource::Field(f)) => out.extend_from_slice(&field(&f)),
                    Ok(VarSource::Const(c)) => out.extend_from_slice(c.as_bytes()),
                    Ok(VarSource::Request(t, f)) => t.eval(&field(&f), out),
                    Ok(VarSource::Geo(g)) => {
                        let geo = &self.geos[g];
                        let mut src = Vec::new();
                        self.eval(&geo.source, server, overrides, field, &mut src);
                        out.extend_from_slice(geo.lookup(&src).as_bytes());
                    }
                    Ok(VarSource::Map(m)) => {
                        let map = &self.maps[m];
                        let mut src = Vec::new();
                        self.eval(&map.source, server, overrides, field, &mut src);
                        let value = map.lookup(&src);
                        self.eval(value, server, overrides, field, out);
                    }
                    Err(_) => {}
                },
            }
        }
    }
}
