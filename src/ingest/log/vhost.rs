//! Apache's `vhost_combined` (`%v:%p %h %l %u %t "%r" %>s %O "%{Referer}i"
//! "%{User-Agent}i"`) and its common form: a Combined or Common line after
//! the virtual host, with or without its port:
//!
//! `www.example.com:443 203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 2326 "-" "curl/8"`
//!
//! Fields: `virtual_host` as written, then the Combined names (`remote_addr`,
//! `time_local`, ...), then `server_name` (the virtual host without its
//! port), `method`, `uri` and `protocol`. `time_local` is Apache's `%t`, when
//! the request arrived (the line is written when it completes); the client
//! is `remote_addr`.

use super::fixed::Layout;

/// The fields of a vhost_combined line.
const NAMES: [&str; 10] = [
    "virtual_host",
    "remote_addr",
    "ident",
    "remote_user",
    "time_local",
    "request",
    "status",
    "bytes_sent",
    "http_referer",
    "http_user_agent",
];

pub static VCOMBINED: Layout = Layout {
    format: "vcombined",
    names: &NAMES,
    least: 10,
    time: 4,
    ports: &[(0, "server_name")],
    request: Some(5),
};

pub static VCOMMON: Layout = Layout {
    format: "vcommon",
    names: NAMES.split_at(8).0,
    least: 8,
    time: 4,
    ports: &[(0, "server_name")],
    request: Some(5),
};

/// Whether a tokenised line is a CLF line after a virtual host.
pub fn looks_like(line: &[u8], f: &super::Fields) -> Option<super::InputFormat> {
    use super::InputFormat::{Vcombined, Vcommon};
    super::clf::clf_at(line, f, 1).map(|combined| if combined { Vcombined } else { Vcommon })
}

#[cfg(test)]
mod tests {
    use super::super::fixed::named;
    use super::*;

    #[test]
    fn the_virtual_host_comes_first() {
        let f = named(
            &VCOMBINED,
            r#"vhost1.domaine.fr:443 123.123.123.123 - - [04/Jul/2019:09:20:46 +0200] "GET / HTTP/1.1" 200 32953 "-" "Mozilla/5.0 (X11; Linux x86_64)""#,
        )
        .unwrap();
        let get = |n: &str| f.iter().find(|(k, _)| k == n).unwrap().1.clone();
        assert_eq!(get("virtual_host"), "vhost1.domaine.fr:443");
        assert_eq!(get("server_name"), "vhost1.domaine.fr");
        assert_eq!(get("remote_addr"), "123.123.123.123");
        assert_eq!(get("time_local"), "04/Jul/2019:09:20:46 +0200");
        assert_eq!(get("uri"), "/");
    }
}
