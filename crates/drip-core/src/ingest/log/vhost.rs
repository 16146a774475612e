//! Apache's `vhost_combined` (`%v:%p %h %l %u %t "%r" %>s %O "%{Referer}i"
//! "%{User-Agent}i"`) and its common form: a Combined or Common line after
//! the virtual host, with or without its port:
//!
//! `www.example.com:443 203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 2326 "-" "curl/8"`
//!
//! Fields: `virtual_host` as written, then the Combined names (`remote_addr`,
//! `time_local`, `body_bytes_sent` for `%O`, ...), then `server_name` (the virtual host without its
//! port), `method`, `uri` and `protocol`. `time_local` is Apache's `%t`, when
//! the request arrived (the line is written when it completes); the client
//! is `remote_addr`.

use super::clf::NAMES;
use super::fixed::Layout;

/// The virtual host, then the Combined names.
const VHOST: &[&str] = &["virtual_host"];

pub static VCOMBINED: Layout = Layout::new("vcombined", &[VHOST, &NAMES], 10, 4)
    .bracketed()
    .shorter(8, "vcommon")
    .ports(&[(0, "server_name")])
    .request(5);

pub static VCOMMON: Layout = Layout::new("vcommon", &[VHOST, NAMES.split_at(7).0], 8, 4)
    .bracketed()
    .ports(&[(0, "server_name")])
    .request(5);

/// Whether a tokenised line is a Combined line after a virtual host (not
/// after the first of two forwarded addresses, `203.0.113.7,`).
pub fn combined(line: &[u8], f: &super::Fields) -> bool {
    super::forwarded::listed(line, f) == 0 && super::clf::clf_at(line, f, 1) == Some(true)
}

/// Whether a tokenised line is a Common line after a virtual host.
pub fn common(line: &[u8], f: &super::Fields) -> bool {
    super::forwarded::listed(line, f) == 0 && super::clf::clf_at(line, f, 1) == Some(false)
}

#[cfg(test)]
mod tests {
    use super::super::fixed::assert_fields;
    use super::*;

    #[test]
    fn the_virtual_host_comes_first() {
        assert_fields(
            &VCOMBINED,
            r#"vhost1.domaine.fr:443 123.123.123.123 - - [04/Jul/2019:09:20:46 +0200] "GET / HTTP/1.1" 200 32953 "-" "Mozilla/5.0 (X11; Linux x86_64)""#,
            &[
                ("virtual_host", "vhost1.domaine.fr:443"),
                ("server_name", "vhost1.domaine.fr"),
                ("remote_addr", "123.123.123.123"),
                ("time_local", "04/Jul/2019:09:20:46 +0200"),
                ("uri", "/"),
            ],
        );
    }
}
