//! drip: pace traffic and size rate limits, exactly.
//!
//! The library holds the pure policy core (`policy`) on exact integer time
//! and exact rates, and the drivers that feed it: `pace` (stdin lines on a
//! monotonic clock), `audit` and `size` (log rows on their own timestamps),
//! `gate`. What the binary and the tests reach is public: [`cli`] (the
//! command-line surface), [`run`], and the parts of the shared schedule and
//! of the size plot that tests drive directly; everything else is private
//! to the crate, so the compiler sees what is unused.

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

mod audit;
mod clash;
pub mod cli;
mod clock;
mod completions;
mod engine;
mod gate;
pub mod help;
mod ingest;
mod nginx_conf;
mod pace;
mod percent;
mod policy;
mod progress;
mod quote;
mod rate;
mod report;
mod size;
#[doc(hidden)]
pub mod testing;
mod time;
mod wait_stats;

/// Runs a parsed command: the exit status, or an error the binary prints
/// on one line (exit status 2).
pub fn run(command: cli::Command) -> anyhow::Result<u8> {
    use cli::Command;
    match command {
        Command::Pace(args) => pace::run(args),
        Command::Audit(args) => audit::run(args),
        Command::Gate(args) => gate::run(args),
        Command::Size(args) => size::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Help(args) => help::run(args),
    }
}

/// The shared schedule's parts that its cost benchmark and the tests of
/// the Redis script drive directly, without a `drip pace` around them.
pub mod share {
    pub use crate::pace::share::Backend;
    pub use crate::pace::share::file::{FileBackend, LOCK_DEADLINE};
    pub use crate::pace::share::redis::{RedisBackend, SCRIPT};
    pub use crate::pace::share::reserve::{Outcome, Params, reserve};
}

/// The size plot's drawing, for the tests that render it.
pub mod plot {
    pub use crate::report::plot::{
        Figures, FrontierPoint, NeedPoint, SizePlot, size_plot_size, size_svg,
    };
}
