//! drip: pace traffic and size rate limits, exactly.
//!
//! The library holds the pure policy core ([`policy`]) on exact integer time
//! ([`time::Nanos`]) and exact rates ([`rate::Rate`]), and the drivers that
//! feed it: [`pace`] (stdin lines on a monotonic clock) and [`audit`] (log
//! rows on their own timestamps). [`cli`] is the command-line surface.

/// Writes a line to stderr, like `eprintln!`, but a stderr that cannot
/// be written (closed, `/dev/full`) is ignored instead of panicking: a
/// message is never worth losing the run's result for.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod audit;
pub mod clash;
pub mod cli;
pub mod clock;
pub mod completions;
pub mod gate;
pub mod log;
pub mod nginx_conf;
pub mod pace;
pub mod policy;
mod progress;
pub mod quote;
pub mod rate;
pub mod report;
pub mod size;
#[cfg(test)]
mod testing;
pub mod time;
pub(crate) mod wait_stats;
