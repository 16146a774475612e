//! A small Redis client: the URL, the connection and the RESP2 wire, as
//! much as the shared schedule uses (PING, AUTH, SELECT, EVALSHA, EVAL).
//!
//! Every read and write waits until a deadline at most; a reply is read
//! with bounds (line length, bulk size, nesting), so a server that is not
//! Redis cannot make drip allocate or wait without end.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where a Redis server is, and how to log in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub addr: Addr,
    pub user: Option<String>,
    pub pass: Option<String>,
    pub db: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addr {
    Tcp { host: String, port: u16, tls: bool },
    Unix(PathBuf),
}

/// The port a URL without one means.
const PORT: u16 = 6379;

impl Target {
    /// `redis://[user:pass@]host[:port][/db]`, `rediss://…` (TLS), or
    /// `redis+unix:///path[?db=N&user=U&pass=P]` (also `unix://`). The
    /// error says what is wrong, without the URL (it may hold a password).
    pub fn parse(url: &str) -> Result<Target, String> {
        let (scheme, rest) = url.split_once("://").ok_or("no scheme")?;
        match scheme.to_ascii_lowercase().as_str() {
            "redis" => tcp(rest, false),
            "rediss" => tcp(rest, true),
            "redis+unix" | "unix" => unix(rest),
            other => Err(format!("unknown scheme '{other}'")),
        }
    }
}

fn tcp(rest: &str, tls: bool) -> Result<Target, String> {
    if rest.contains('?') {
        return Err("a query (?…) is only for redis+unix://".into());
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (host, port) = host_port(hostport)?;
    let db = match path {
        "" => 0,
        db => number("the database", db)?,
    };
    let (user, pass) = match userinfo {
        None => (None, None),
        Some(info) => {
            let (user, pass) = info.split_once(':').ok_or(
                "a user without a password: write user:PASS@ (or :PASS@ for the default user)",
            )?;
            let user = decode(user)?;
            (Some(user).filter(|u| !u.is_empty()), Some(decode(pass)?))
        }
    };
    Ok(Target {
        addr: Addr::Tcp { host, port, tls },
        user,
        pass,
        db,
    })
}

fn host_port(text: &str) -> Result<(String, u16), String> {
    let (host, port) = if let Some(v6) = text.strip_prefix('[') {
        let (host, after) = v6
            .split_once(']')
            .ok_or("an IPv6 address without its ']'")?;
        match after {
            "" => (host, None),
            _ => (
                host,
                Some(
                    after
                        .strip_prefix(':')
                        .ok_or("text after the IPv6 address")?,
                ),
            ),
        }
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    let port = match port {
        None => PORT,
        Some(p) => number("the port", p)?,
    };
    Ok((decode(host)?, port))
}

fn unix(rest: &str) -> Result<Target, String> {
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if !path.starts_with('/') {
        return Err("the socket's path must be absolute (redis+unix:///path)".into());
    }
    let mut target = Target {
        addr: Addr::Unix(PathBuf::from(decode(path)?)),
        user: None,
        pass: None,
        db: 0,
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        match name {
            "db" => target.db = number("the database", value)?,
            "user" => target.user = Some(decode(value)?),
            "pass" => target.pass = Some(decode(value)?),
            _ => return Err(format!("unknown parameter '{name}' (db, user, pass)")),
        }
    }
    if target.user.is_some() && target.pass.is_none() {
        return Err("a user without a password: add pass=".into());
    }
    Ok(target)
}

fn number<T: std::str::FromStr>(what: &str, text: &str) -> Result<T, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{what} is not a number"));
    }
    text.parse().map_err(|_| format!("{what} is out of range"))
}

/// Percent-decoding, as URLs write a password's `@`, `:` or `/`.
fn decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .ok_or("a '%' without two hex digits")?;
            let b = u8::from_str_radix(hex, 16).map_err(|_| "a '%' without two hex digits")?;
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "percent-escapes that are not UTF-8".into())
}

/// What a call can fail with.
#[derive(Debug)]
pub enum Error {
    /// The socket: refused, reset, timed out, interrupted.
    Io(io::Error),
    /// The server's error reply (`-ERR …`), as it wrote it.
    Server(String),
    /// A reply that is not RESP, or not the shape asked for.
    Protocol(String),
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Server(e) => write!(f, "{e}"),
            Error::Protocol(e) => write!(f, "not a Redis reply: {e}"),
        }
    }
}

impl Error {
    /// No answer in time.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Io(e) if matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock))
    }

    /// A system call a signal interrupted (EINTR).
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Error::Io(e) if e.kind() == io::ErrorKind::Interrupted)
    }

    /// The server does not have the script (`NOSCRIPT`).
    pub fn is_noscript(&self) -> bool {
        matches!(self, Error::Server(e) if e.starts_with("NOSCRIPT"))
    }
}

/// One reply, RESP2.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    Status(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

/// The longest status line, bulk string and array drip reads.
const MAX_LINE: usize = 64 * 1024;
const MAX_BULK: usize = 1 << 20;
const MAX_ITEMS: usize = 1024;
const MAX_DEPTH: usize = 4;

/// Reads one reply; an error reply is [`Error::Server`].
pub fn read_reply(r: &mut impl BufRead) -> Result<Reply, Error> {
    read_at(r, 0)
}

fn read_at(r: &mut impl BufRead, depth: usize) -> Result<Reply, Error> {
    let line = read_line(r)?;
    let (kind, body) = line.split_at(1);
    let text = || String::from_utf8_lossy(body).into_owned();
    let length = |what: &str| -> Result<Option<usize>, Error> {
        match text().as_str() {
            "-1" => Ok(None),
            n => n
                .parse()
                .map(Some)
                .map_err(|_| Error::Protocol(format!("{what} length '{n}'"))),
        }
    };
    match kind[0] {
        b'+' => Ok(Reply::Status(text())),
        b'-' => Err(Error::Server(text())),
        b':' => text()
            .parse()
            .map(Reply::Int)
            .map_err(|_| Error::Protocol(format!("integer '{}'", text()))),
        b'$' => match length("bulk")? {
            None => Ok(Reply::Bulk(None)),
            Some(n) if n > MAX_BULK => Err(Error::Protocol(format!("a bulk string of {n} bytes"))),
            Some(n) => {
                let mut data = vec![0; n + 2];
                r.read_exact(&mut data)?;
                if !data.ends_with(b"\r\n") {
                    return Err(Error::Protocol("a bulk string without its CRLF".into()));
                }
                data.truncate(n);
                Ok(Reply::Bulk(Some(data)))
            }
        },
        b'*' => match length("array")? {
            None => Ok(Reply::Array(None)),
            Some(n) if n > MAX_ITEMS || depth >= MAX_DEPTH => {
                Err(Error::Protocol(format!("an array of {n} items")))
            }
            Some(n) => (0..n)
                .map(|_| read_at(r, depth + 1))
                .collect::<Result<_, _>>()
                .map(|items| Reply::Array(Some(items))),
        },
        other => Err(Error::Protocol(format!(
            "a reply starting {:?}",
            char::from(other)
        ))),
    }
}

/// One CRLF-terminated line, without the CRLF; never empty.
fn read_line(r: &mut impl BufRead) -> Result<Vec<u8>, Error> {
    let mut line = Vec::new();
    let n = r.take(MAX_LINE as u64 + 2).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(Error::Io(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        )));
    }
    if !line.ends_with(b"\r\n") || line.len() < 3 {
        return Err(Error::Protocol("a line without its CRLF".into()));
    }
    line.truncate(line.len() - 2);
    Ok(line)
}

/// A command as RESP: an array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The socket under a connection.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    #[cfg(feature = "tls-rustls")]
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn set_timeouts(&self, t: Duration) -> io::Result<()> {
        let t = Some(t);
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t).and(s.set_write_timeout(t)),
            Stream::Unix(s) => s.set_read_timeout(t).and(s.set_write_timeout(t)),
            #[cfg(feature = "tls-rustls")]
            Stream::Tls(s) => s.sock.set_read_timeout(t).and(s.sock.set_write_timeout(t)),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            #[cfg(feature = "tls-rustls")]
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            #[cfg(feature = "tls-rustls")]
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
            #[cfg(feature = "tls-rustls")]
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A connection, logged in and on its database.
pub struct Connection {
    stream: BufReader<Stream>,
}

/// The time left until `deadline`; none left is a timeout.
fn left(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(io::Error::new(io::ErrorKind::TimedOut, "timed out"))
    } else {
        Ok(left)
    }
}

impl Connection {
    /// Connects to `target`, logs in and selects its database, all
    /// before `deadline`.
    pub fn open(target: &Target, deadline: Instant) -> Result<Connection, Error> {
        let stream = match &target.addr {
            Addr::Unix(path) => Stream::Unix(UnixStream::connect(path)?),
            Addr::Tcp { host, port, tls } => {
                let tcp = connect_tcp(host, *port, deadline)?;
                tcp.set_nodelay(true)?;
                if *tls {
                    tls_stream(tcp, host)?
                } else {
                    Stream::Tcp(tcp)
                }
            }
        };
        let mut conn = Connection {
            stream: BufReader::new(stream),
        };
        if let Some(pass) = &target.pass {
            let mut auth: Vec<&[u8]> = vec![b"AUTH"];
            if let Some(user) = &target.user {
                auth.push(user.as_bytes());
            }
            auth.push(pass.as_bytes());
            conn.call(&auth, deadline)?;
        }
        if target.db != 0 {
            conn.call(&[b"SELECT", target.db.to_string().as_bytes()], deadline)?;
        }
        Ok(conn)
    }

    /// Sends one command and reads its reply, before `deadline`.
    pub fn call(&mut self, args: &[&[u8]], deadline: Instant) -> Result<Reply, Error> {
        self.stream.get_ref().set_timeouts(left(deadline)?)?;
        let stream = self.stream.get_mut();
        stream.write_all(&encode(args))?;
        stream.flush()?;
        self.stream.get_ref().set_timeouts(left(deadline)?)?;
        read_reply(&mut self.stream)
    }
}

/// The first of `host`'s addresses that accepts before `deadline`.
fn connect_tcp(host: &str, port: u16, deadline: Instant) -> Result<TcpStream, Error> {
    let mut last = None;
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, left(deadline)?) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(Error::Io(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::NotFound, format!("no address for {host}"))
    })))
}

#[cfg(not(feature = "tls-rustls"))]
fn tls_stream(_: TcpStream, _: &str) -> Result<Stream, Error> {
    Err(Error::Protocol(
        "this drip was built without TLS (--features tls-rustls)".into(),
    ))
}

/// TLS over `tcp`, the server's certificate checked for `host` against
/// the system's roots (or `SSL_CERT_FILE`).
#[cfg(feature = "tls-rustls")]
fn tls_stream(tcp: TcpStream, host: &str) -> Result<Stream, Error> {
    use std::sync::Arc;
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        Error::Io(io::Error::other(format!("TLS: {what}: {e}")))
    };
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for cert in found.certs {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(bad("no trusted root certificates", &"set SSL_CERT_FILE"));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("protocol versions", &e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| bad("server name", &e))?;
    let conn =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| bad("client", &e))?;
    Ok(Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> Addr {
        Addr::Tcp {
            host: host.into(),
            port,
            tls: false,
        }
    }

    #[test]
    fn urls() {
        let t = Target::parse("redis://h").unwrap();
        assert_eq!(
            (t.addr, t.user, t.pass, t.db),
            (tcp("h", 6379), None, None, 0)
        );
        let t = Target::parse("redis://u:p%40ss@h:6380/2").unwrap();
        assert_eq!(t.addr, tcp("h", 6380));
        assert_eq!(
            (t.user.as_deref(), t.pass.as_deref(), t.db),
            (Some("u"), Some("p@ss"), 2)
        );
        let t = Target::parse("redis://:secret@[::1]:7000").unwrap();
        assert_eq!(
            (t.addr, t.user, t.pass.as_deref()),
            (tcp("::1", 7000), None, Some("secret"))
        );
        let t = Target::parse("REDISS://h/").unwrap();
        assert!(matches!(t.addr, Addr::Tcp { tls: true, .. }));
        let t = Target::parse("redis+unix:///run/r.sock?db=3&pass=x").unwrap();
        assert_eq!(
            (t.addr, t.db, t.pass.as_deref()),
            (Addr::Unix("/run/r.sock".into()), 3, Some("x"))
        );
        for (url, says) in [
            ("redis://h:notaport", "port is not a number"),
            ("redis://h:99999", "port is out of range"),
            ("redis://h/x", "database is not a number"),
            ("redis://", "no host"),
            ("redis://u@h", "without a password"),
            ("redis://h?db=1", "only for redis+unix"),
            ("redis://[::1", "IPv6"),
            ("redis://:p%4@h", "hex digits"),
            ("unix://r.sock", "absolute"),
            ("unix:///r.sock?x=1", "unknown parameter"),
            ("http://h", "unknown scheme"),
        ] {
            let e = Target::parse(url).unwrap_err();
            assert!(e.contains(says), "{url}: {e}");
        }
    }

    fn reply(wire: &[u8]) -> Result<Reply, Error> {
        read_reply(&mut &wire[..])
    }

    #[test]
    fn replies() {
        assert_eq!(reply(b"+PONG\r\n").unwrap(), Reply::Status("PONG".into()));
        assert_eq!(reply(b":-12\r\n").unwrap(), Reply::Int(-12));
        assert_eq!(
            reply(b"$3\r\na\nb\r\n").unwrap(),
            Reply::Bulk(Some(b"a\nb".to_vec()))
        );
        assert_eq!(reply(b"$-1\r\n").unwrap(), Reply::Bulk(None));
        assert_eq!(
            reply(b"*3\r\n:1\r\n:0\r\n:17\r\n").unwrap(),
            Reply::Array(Some(vec![Reply::Int(1), Reply::Int(0), Reply::Int(17)]))
        );
        let e = reply(b"-NOSCRIPT No matching script\r\n").unwrap_err();
        assert!(e.is_noscript(), "{e}");
        for bad in [
            &b"?\r\n"[..],
            b"+x\n",
            b":x\r\n",
            b"$9999999999\r\n",
            b"$2\r\nabcd",
            b"*5000\r\n",
            b"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
        ] {
            assert!(reply(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let e = reply(b"").unwrap_err();
        assert!(e.to_string().contains("closed"), "{e}");
        let long = [b"+".as_slice(), &vec![b'a'; MAX_LINE + 10], b"\r\n"].concat();
        assert!(matches!(reply(&long), Err(Error::Protocol(_))));
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        assert_eq!(
            encode(&[b"GET", b"drip:{a b}"]),
            b"*2\r\n$3\r\nGET\r\n$10\r\ndrip:{a b}\r\n"
        );
    }
}
