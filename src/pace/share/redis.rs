//! A shared schedule in Redis, for processes on several hosts.
//!
//! The key `drip:{NAME}` holds `next_free` as plain decimal digits:
//! microseconds on the *server's* clock (`TIME`), so client clocks never
//! matter. The braces are a Cluster hash tag. Each reservation runs
//! [`SCRIPT`] atomically on the server: a line-by-line transcription of
//! [`reserve`](super::reserve::reserve), tested against it on the same
//! sequences. The key expires about a second after its last slot, so an
//! idle schedule leaves nothing behind. The script is sent by its SHA1
//! (`EVALSHA`) and loaded again when the server has lost it (`NOSCRIPT`,
//! after a restart or `SCRIPT FLUSH`).
//!
//! Connect, read and write time out after one second; a failed call drops
//! the connection, and the next call connects again.

use super::Backend;
use super::reserve::{Outcome, Params};
use super::resp::{self, Connection, Reply, Target};
use super::sha1;
use anyhow::bail;
use std::time::{Duration, Instant};

/// The reservation, run on the server. Lua numbers are doubles: exact for
/// microsecond instants (below 2^53 until the year 2255). `%d` writes plain
/// digits; `tostring` would write `1.795975200000e+15` and lose precision.
pub const SCRIPT: &str = r"local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local I, D, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tat > now + D + I * n then tat = now end
local start = math.max(tat, now)
local delay = start - now
if delay > D then return {0, delay - D, now} end
local nf = start + I * n
redis.call('SET', KEYS[1], string.format('%d', nf), 'PX', math.ceil((nf - now) / 1000) + 1000)
return {1, delay, now}
";

/// The longest one call waits: connect, write and read together.
pub const TIMEOUT: Duration = Duration::from_secs(1);

/// The Redis key of schedule `name`.
pub fn key(name: &str) -> String {
    format!("drip:{{{name}}}")
}

/// `url` with any password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, host) = match rest.rsplit_once('@') {
        Some(parts) => parts,
        None => return url.to_string(),
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => format!("{scheme}://***@{host}"),
    }
}

pub struct RedisBackend {
    target: Target,
    conn: Option<Connection>,
    key: String,
    sha: String,
}

impl RedisBackend {
    /// A backend for schedule `name` at `url`; connects on first use.
    pub fn open(url: &str, name: &str) -> anyhow::Result<RedisBackend> {
        let shown = redact(url);
        let tls = url.to_ascii_lowercase().starts_with("rediss://");
        if tls && !cfg!(feature = "tls-rustls") {
            bail!(
                "--share {shown}: this drip was built without TLS; build it with --features tls-rustls, or use redis://"
            );
        }
        let target = Target::parse(url).map_err(|e| {
            anyhow::anyhow!(
                "--share {shown}: not a Redis URL ({e}); the form is redis://[user:pass@]host[:port][/db]#NAME"
            )
        })?;
        Ok(RedisBackend {
            target,
            conn: None,
            key: key(name),
            sha: sha1::hex(SCRIPT.as_bytes()),
        })
    }

    /// Runs `f` on the connection (made first if needed); a failure drops
    /// the connection (it may be half-way through a reply). A call a
    /// signal interrupted is made again at once.
    fn with_connection<T>(
        &mut self,
        patience: Duration,
        mut f: impl FnMut(&mut Connection, &str, &str, Instant) -> Result<T, resp::Error>,
    ) -> Result<T, String> {
        let mut tries = 0;
        // Connect, write and read together take TIMEOUT at most, and no
        // longer than the patience the caller has left.
        let deadline = Instant::now() + TIMEOUT.min(patience);
        loop {
            let conn = match self.conn.take() {
                Some(conn) => Ok(conn),
                None => Connection::open(&self.target, deadline),
            };
            let result = conn.and_then(|mut conn| {
                let v = f(&mut conn, &self.key, &self.sha, deadline)?;
                Ok((conn, v))
            });
            match result {
                Ok((conn, v)) => {
                    self.conn = Some(conn);
                    return Ok(v);
                }
                Err(e) => {
                    tries += 1;
                    if !(e.is_interrupted() && tries < 3) {
                        return Err(describe(&e));
                    }
                }
            }
        }
    }

    /// Runs the script once, within `patience`: (granted, delay or
    /// retry_after, server now), µs.
    pub fn call(&mut self, params: Params, patience: Duration) -> Result<(bool, u64, u64), String> {
        let [granted, wait, now] = self.with_connection(patience, |conn, key, sha, deadline| {
            let args = [
                params.interval.to_string(),
                params.max_delay.to_string(),
                params.slots.to_string(),
            ];
            let run = |conn: &mut Connection, how: &str, script: &str| {
                let mut call: Vec<&[u8]> = vec![how.as_bytes(), script.as_bytes(), b"1"];
                call.push(key.as_bytes());
                call.extend(args.iter().map(|a| a.as_bytes()));
                conn.call(&call, deadline)
            };
            // By its SHA1; when the server has lost it (a restart,
            // SCRIPT FLUSH), by its text, which loads it again.
            let reply = match run(conn, "EVALSHA", sha) {
                Err(e) if e.is_noscript() => run(conn, "EVAL", SCRIPT),
                other => other,
            }?;
            three_integers(reply)
        })?;
        Ok((
            granted == 1,
            u64::try_from(wait).unwrap_or(0),
            u64::try_from(now).unwrap_or(0),
        ))
    }
}

/// The script's reply: three integers.
fn three_integers(reply: Reply) -> Result<[i64; 3], resp::Error> {
    if let Reply::Array(Some(items)) = &reply
        && let [Reply::Int(a), Reply::Int(b), Reply::Int(c)] = items[..]
    {
        return Ok([a, b, c]);
    }
    Err(resp::Error::Protocol(format!(
        "the script replied {reply:?}, not three integers"
    )))
}

/// A Redis error as one line.
fn describe(e: &resp::Error) -> String {
    if e.is_timeout() {
        return "no answer within 1 s (the server accepts connections and does not reply)".into();
    }
    e.to_string().lines().next().unwrap_or("error").to_string()
}

impl Backend for RedisBackend {
    fn connect(&mut self, patience: Duration) -> Result<(), String> {
        self.with_connection(patience, |conn, _, _, deadline| {
            match conn.call(&[b"PING"], deadline)? {
                Reply::Status(s) if s == "PONG" => Ok(()),
                other => Err(resp::Error::Protocol(format!("PING replied {other:?}"))),
            }
        })
    }

    /// A Redis call (connect, write and read) waits up to 1 s, and no
    /// longer than `patience`.
    fn reserve(&mut self, params: Params, patience: Duration) -> Result<Outcome, String> {
        let (granted, wait, _) = self.call(params, patience)?;
        Ok(if granted {
            Outcome::Granted { delay: wait }
        } else {
            Outcome::Refused { retry_after: wait }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(redact("redis://u:pw@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(redact("redis://:pw@h"), "redis://:***@h");
        assert_eq!(redact("redis://h:6379"), "redis://h:6379");
        assert_eq!(
            redact("redis+unix:///run/r.sock"),
            "redis+unix:///run/r.sock"
        );
    }

    #[test]
    fn keys_carry_a_hash_tag() {
        assert_eq!(key("jobs"), "drip:{jobs}");
    }

    #[test]
    fn bad_urls_are_usage_errors() {
        let e = RedisBackend::open("redis://h:notaport", "x").err().unwrap();
        assert!(e.to_string().contains("not a Redis URL"), "{e}");
    }

    #[test]
    fn the_script_is_the_function_line_by_line() {
        // Same steps, same order: read TIME and the state, clamp, start,
        // delay, refuse without writing, write the new state.
        let steps = [
            "redis.call('TIME')",
            "redis.call('GET', KEYS[1]) or '0'",
            "if tat > now + D + I * n then tat = now end",
            "local start = math.max(tat, now)",
            "local delay = start - now",
            "if delay > D then return {0, delay - D, now} end",
            "local nf = start + I * n",
            "string.format('%d', nf)",
            "return {1, delay, now}",
        ];
        let mut at = 0;
        for s in steps {
            let found = SCRIPT[at..].find(s).unwrap_or_else(|| panic!("{s}"));
            at += found + s.len();
        }
    }
}
