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
    client: redis::Client,
    conn: Option<redis::Connection>,
    key: String,
    script: redis::Script,
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
        let bad = |e: redis::RedisError| {
            anyhow::anyhow!(
                "--share {shown}: not a Redis URL ({}); the form is redis://[user:pass@]host[:port][/db]#NAME",
                e.to_string().replace(url, &shown)
            )
        };
        let client = redis::Client::open(url).map_err(bad)?;
        // No CLIENT SETINFO at connect: its replies are read with a timeout
        // each and their failure ignored, which doubled a connect's wait.
        let info = client.get_connection_info().clone();
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let client = redis::Client::open(info.set_redis_settings(settings)).map_err(bad)?;
        Ok(RedisBackend {
            client,
            conn: None,
            key: key(name),
            script: redis::Script::new(SCRIPT),
        })
    }

    /// The connection, made if needed; connecting, and then each write
    /// and read, waits until `deadline` at most.
    fn connection(
        &mut self,
        deadline: Instant,
    ) -> Result<&mut redis::Connection, redis::RedisError> {
        let left = || {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                Err(redis::RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "timed out",
                )))
            } else {
                Ok(left)
            }
        };
        if self.conn.is_none() {
            self.conn = Some(self.client.get_connection_with_timeout(left()?)?);
        }
        let conn = self.conn.as_mut().expect("connected above");
        let t = left()?;
        conn.set_read_timeout(Some(t))?;
        conn.set_write_timeout(Some(t))?;
        Ok(conn)
    }

    /// Runs `f` on the connection; a failure drops the connection (it may
    /// be half-way through a reply). A call a signal interrupted is made
    /// again at once: a socket read with a timeout fails with EINTR when a
    /// signal arrives, whatever the handler's flags say.
    fn with_connection<T>(
        &mut self,
        patience: Duration,
        mut f: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, String> {
        let mut tries = 0;
        // Connect, write and read together take TIMEOUT at most, and no
        // longer than the patience the caller has left.
        let deadline = Instant::now() + TIMEOUT.min(patience);
        loop {
            let result = self.connection(deadline).and_then(&mut f);
            match result {
                Ok(v) => return Ok(v),
                Err(e) => {
                    self.conn = None;
                    tries += 1;
                    if !(interrupted(&e) && tries < 3) {
                        return Err(describe(e));
                    }
                }
            }
        }
    }

    /// Runs the script once, within `patience`: (granted, delay or
    /// retry_after, server now), µs.
    pub fn call(&mut self, params: Params, patience: Duration) -> Result<(bool, u64, u64), String> {
        let key = self.key.clone();
        let script = self.script.clone();
        let (granted, wait, now): (i64, i64, i64) = self.with_connection(patience, |conn| {
            script
                .key(&key)
                .arg(params.interval)
                .arg(params.max_delay)
                .arg(params.slots)
                .invoke(conn)
        })?;
        Ok((
            granted == 1,
            u64::try_from(wait).unwrap_or(0),
            u64::try_from(now).unwrap_or(0),
        ))
    }
}

/// An I/O error that is a system call interrupted by a signal (EINTR).
fn interrupted(e: &redis::RedisError) -> bool {
    e.is_io_error()
        && e.to_string()
            .contains(&format!("(os error {})", libc::EINTR))
}

/// A Redis error as one line.
fn describe(e: redis::RedisError) -> String {
    if e.is_timeout() {
        return "no answer within 1 s (the server accepts connections and does not reply)".into();
    }
    e.to_string().lines().next().unwrap_or("error").to_string()
}

impl Backend for RedisBackend {
    fn connect(&mut self, patience: Duration) -> Result<(), String> {
        let _: String = self.with_connection(patience, |conn| redis::cmd("PING").query(conn))?;
        Ok(())
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
