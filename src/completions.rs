//! `drip completions SHELL`: the shell's completion script for every
//! subcommand and flag, generated from the same clap definition as the
//! parser and the man pages, so it cannot fall behind them.

use crate::cli::CompletionsArgs;
use anyhow::{Context, Result};
use std::io::Write;

/// The completion script for `shell`, as bytes. `-p`/`--policy` completes
/// the policy names (a spec starts with one; the parser itself takes any
/// spec, so the names are given to the completion's copy only).
pub fn script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = crate::help::command();
    let names = crate::policy::table::POLICY_NAMES;
    let subs: Vec<String> = cmd.get_subcommands().map(|c| c.get_name().into()).collect();
    for sub in subs {
        cmd = cmd.mut_subcommand(sub, |c| {
            let ids: Vec<clap::Id> = (c.get_arguments())
                .filter(|a| a.get_long() == Some("policy"))
                .map(|a| a.get_id().clone())
                .collect();
            ids.into_iter().fold(c, |c, id| {
                c.mut_arg(id, |a| {
                    a.value_parser(clap::builder::PossibleValuesParser::new(names))
                })
            })
        });
    }
    let mut buf = Vec::new();
    // Generated into memory: the generator cannot report a write error, and
    // a closed stdout must end quietly, not in a panic.
    clap_complete::generate(shell, &mut cmd, "drip", &mut buf);
    buf
}

pub fn run(args: CompletionsArgs) -> Result<u8> {
    let mut out = std::io::stdout().lock();
    out.write_all(&script(args.shell))
        .and_then(|_| out.flush())
        .context("cannot write the completion script")?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_shell_gets_a_script_naming_every_subcommand() {
        for shell in clap_complete::Shell::value_variants() {
            let text = String::from_utf8(script(*shell)).unwrap();
            for word in ["drip", "pace", "audit", "completions", "reorder-window"] {
                assert!(text.contains(word), "{shell}: no '{word}'");
            }
        }
    }
}
