//! Apache `LogFormat` strings given to `--log-format`, read as the nginx
//! `log_format` they amount to: each `%` directive becomes a variable with
//! nginx's name where nginx has one (`%h` → `remote_addr`, `%t` →
//! `[time_local]`, `%r` → `request`, `%>s` → `status`, `%b` →
//! `body_bytes_sent`, `%{Referer}i` → `http_referer`), else a name of its
//! own (`%v` → `server_name`, `%{X-Api-Key}i` → `http_x_api_key`).
//!
//! Times: `%t` and `%{sec}t`, `%{msec}t`, `%{usec}t` are when the request
//! arrived (`time_local`, `time_epoch_s`, `time_epoch_ms`, `time_epoch_us`);
//! with `end:` they are when it completed (`time_end_local`, ...). Durations
//! keep their unit in their name: `%D` and `%{us}T` → `request_time_us`,
//! `%{ms}T` → `request_time_ms`, `%T` and `%{s}T` → `request_time` (s), so
//! that `--duration-column` reads them exactly and arrival = completion −
//! duration for a completion time.

use anyhow::{Result, bail};

/// Whether `format` is an Apache `LogFormat` string: `%` directives and no
/// nginx `$variable`.
pub fn is_apache(format: &str) -> bool {
    let b = format.as_bytes();
    let dollar = b
        .windows(2)
        .any(|w| w[0] == b'$' && (w[1].is_ascii_alphabetic() || w[1] == b'_' || w[1] == b'{'));
    let percent = b
        .windows(2)
        .any(|w| w[0] == b'%' && (w[1].is_ascii_alphabetic() || b"{><!".contains(&w[1])));
    percent && !dollar
}

/// Directives and the names they get, whatever their argument.
const PLAIN: [(char, &str); 24] = [
    ('h', "remote_addr"),
    ('A', "server_addr"),
    ('b', "body_bytes_sent"),
    ('B', "response_size"),
    ('D', "request_time_us"),
    ('f', "filename"),
    ('H', "server_protocol"),
    ('I', "bytes_received"),
    ('k', "keepalive_requests"),
    ('l', "ident"),
    ('L', "log_id"),
    ('m', "request_method"),
    ('O', "bytes_sent"),
    ('P', "pid"),
    ('q', "query_string"),
    ('r', "request"),
    ('R', "handler"),
    ('s', "status"),
    ('S', "bytes_transferred"),
    ('u', "remote_user"),
    ('U', "url_path"),
    ('v', "server_name"),
    ('V', "canonical_server_name"),
    ('X', "connection_status"),
];

/// Directives whose argument names a header, cookie, variable or note:
/// the prefix of its name (`%{X-Api-Key}i` → `http_x_api_key`).
const NAMED: [(char, &str); 6] = [
    ('C', "cookie_"),
    ('e', "env_"),
    ('i', "http_"),
    ('n', "note_"),
    ('o', "sent_http_"),
    ('p', "server_port_"),
];

/// The nginx name of a directive `%{arg}c`.
fn name(c: char, arg: Option<&str>) -> Result<String> {
    if let Some((_, n)) = PLAIN.iter().find(|(d, _)| *d == c) {
        return Ok(n.to_string());
    }
    if let (Some((_, prefix)), Some(a)) = (NAMED.iter().find(|(d, _)| *d == c), arg) {
        return Ok(format!(
            "{prefix}{}",
            a.to_ascii_lowercase().replace('-', "_")
        ));
    }
    Ok(match (c, arg) {
        ('a', Some("c")) => "peer_addr".into(),
        ('a', _) => "client_addr".into(),
        ('p', None) => "server_port".into(),
        ('t', a) => time_name(a.unwrap_or(""))?,
        ('T', None | Some("s")) => "request_time".into(),
        ('T', Some("ms")) => "request_time_ms".into(),
        ('T', Some("us")) => "request_time_us".into(),
        _ => bail!(
            "invalid --log-format: the Apache directive %{}{c} is not one drip reads",
            arg.map_or(String::new(), |a| format!("{{{a}}}"))
        ),
    })
}

/// The name of a `%{format}t` time: arrival unless `end:`.
fn time_name(arg: &str) -> Result<String> {
    let (end, form) = match arg.split_once(':') {
        Some(("end", f)) => (true, f),
        Some(("begin", f)) => (false, f),
        _ => (false, arg),
    };
    let kind = match form {
        "" => "local",
        "sec" => "epoch_s",
        "msec" => "epoch_ms",
        "usec" => "epoch_us",
        _ => bail!(
            "invalid --log-format: %{{{arg}}}t is a strftime time; log it with %t or %{{msec}}t, or read the log as CSV with --time-format"
        ),
    };
    Ok(format!("time_{}{kind}", if end { "end_" } else { "" }))
}

/// The nginx `log_format` an Apache `LogFormat` string amounts to.
pub fn translate(format: &str) -> Result<String> {
    let text = format.trim();
    // As written in httpd.conf: `LogFormat "..." nickname`, quoted.
    let text = text.strip_prefix("LogFormat").map_or(text, str::trim_start);
    let text = match text.strip_prefix('"') {
        Some(rest) => rest.rsplit_once('"').map_or(rest, |(body, _)| body),
        None => text,
    };
    let text = text.replace("\\\"", "\"");
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        // Conditions and the original/final marks: %400,501{..}i, %>s.
        while chars.peek().is_some_and(|c| "<>!,0123456789".contains(*c)) {
            chars.next();
        }
        let mut arg = None;
        if chars.peek() == Some(&'{') {
            chars.next();
            let a: String = chars.by_ref().take_while(|&c| c != '}').collect();
            arg = Some(a);
        }
        let Some(d) = chars.next() else {
            bail!("invalid --log-format: a '%' at the end names no directive");
        };
        match d {
            '%' => out.push('%'),
            't' if arg
                .as_deref()
                .is_none_or(|a| a.is_empty() || a == "end:" || a == "begin:") =>
            {
                out.push_str(&format!("[${}]", time_name(arg.as_deref().unwrap_or(""))?));
            }
            _ => {
                out.push_str("${");
                out.push_str(&name(d, arg.as_deref())?);
                out.push('}');
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apache_directives_become_nginx_variables() {
        let f = r#"%h %l %u %t "%r" %>s %b %D "%{X-Forwarded-For}i""#;
        assert!(is_apache(f));
        assert!(!is_apache("$remote_addr [$time_local] 100%"));
        assert_eq!(
            translate(f).unwrap(),
            r#"${remote_addr} ${ident} ${remote_user} [$time_local] "${request}" ${status} ${body_bytes_sent} ${request_time_us} "${http_x_forwarded_for}""#
        );
        assert_eq!(
            translate(r#"LogFormat "%v:%p %{end:msec}t %{ms}T \"%r\"" vhost"#).unwrap(),
            r#"${server_name}:${server_port} ${time_end_epoch_ms} ${request_time_ms} "${request}""#
        );
        let e = translate("%{%d/%b/%Y}t %h").unwrap_err().to_string();
        assert!(e.contains("strftime"), "{e}");
        let e = translate("%h %Z").unwrap_err().to_string();
        assert!(e.contains("%Z"), "{e}");
    }
}
