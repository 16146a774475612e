//! The `drip` binary: parse once, dispatch, print an error chain on one
//! line, and exit with the driver's status (2 for usage and input errors).

use clap::FromArgMatches;
use drip::cli::Cli;
use std::process::ExitCode;

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        drip::say!("drip: internal error{at}: {msg} (please report it)");
    }));
    let cli = match drip::help::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match drip::run(cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.chain().any(|c| c.is::<drip::StderrOntoInput>()) => {
            drip::say_on_terminal(&e.to_string());
            ExitCode::from(2)
        }
        Err(e) => {
            drip::say!("drip: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// clap's usage errors as one line; help and version as clap prints them.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
        _ => {}
    }
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    drip::say!("drip: {}", drip::help::usage::message(&e, &argv));
    ExitCode::from(2)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
