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
/// message is never worth losing the run's result for. Every message
/// goes through here, and here every character that would act on a
/// terminal (controls, line breaks, bidi marks) is written as an escape,
/// whatever a file name, config or log line put in it.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = $crate::visible(&format!($($arg)*));
        let _ = writeln!(std::io::stderr(), "{line}");
    }};
}

#[doc(hidden)]
pub use drip_core::quote::visible;

pub use clash::StderrOntoInput;

/// A message for a run whose standard error is one of its inputs: written
/// to the controlling terminal when there is one (never into the input),
/// else nowhere; the exit status still says the run was refused.
pub fn say_on_terminal(message: &str) {
    use std::io::Write as _;
    if let Ok(mut tty) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
        let _ = writeln!(tty, "drip: {}", visible(message));
    }
}

/// Where the core's notes go: each printed on stderr as `drip: NOTE`,
/// unless `quiet`.
fn notes(quiet: bool) -> drip_core::notes::Notes {
    if quiet {
        drip_core::notes::Notes::silent()
    } else {
        drip_core::notes::Notes::to(|note| say!("drip: {note}"))
    }
}

// The core's layers, named as the commands' code names them.
use drip_core::{
    engine, haproxy_cfg, ingest, nginx_conf, policy, quote, rate, time, traefik_cfg, wait_stats,
};

mod audit;
mod clash;
pub mod cli;
mod clock;
mod completions;
mod gate;
pub mod help;
mod nginx_setup;
mod pace;
mod percent;
mod progress;
mod report;
mod size;
#[doc(hidden)]
pub use drip_core::testing;

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

/// The size plot's drawing, and the width of text on a plot, for the tests
/// that render and measure them.
pub mod plot {
    pub use crate::report::plot::text::width_at_em;
    pub use crate::report::plot::{
        Figures, FrontierPoint, NeedPoint, SizePlot, size_plot_size, size_svg,
    };
}
