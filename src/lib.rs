//! drip: pace traffic and size rate limits, exactly.
//!
//! The library holds the pure policy core ([`policy`]) on exact integer time
//! ([`time::Nanos`]) and exact rates ([`rate::Rate`]), and the drivers that
//! feed it: [`pace`] (stdin lines on a monotonic clock) and [`audit`] (log
//! rows on their own timestamps). [`cli`] is the command-line surface.

pub mod audit;
pub mod cli;
pub mod clock;
pub mod completions;
pub mod gate;
pub mod log;
pub mod nginx_conf;
pub mod pace;
pub mod policy;
pub mod rate;
pub mod report;
pub mod size;
pub mod time;
