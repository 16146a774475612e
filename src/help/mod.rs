//! Help and manuals: the clap command with each command's examples and a
//! `-h` that fits a screen, and `drip help COMMAND`, the manual through
//! man(1) when its page is installed, else the same sections as plain text.

pub mod pages;
pub mod usage;

use crate::cli::{Cli, HelpArgs, heading};
use anyhow::{Context, Result};
use clap::{Arg, ArgAction, CommandFactory};
use pages::{Example, Page};
use std::io::Write;

/// The command line as parsed, completed and documented: clap's
/// definition with each command's examples, and `-h`/`-V` under Control.
pub fn command() -> clap::Command {
    let root = pages::page("").expect("drip's page");
    let mut cmd = Cli::command()
        .after_help(format!(
            "{}\n\n'drip COMMAND -h' for a command's options, 'drip help COMMAND' for its manual.",
            short_examples(root)
        ))
        .after_long_help(long_examples(root, ""));
    for page in pages::PAGES.iter().filter(|p| !p.command.is_empty()) {
        cmd = cmd.mut_subcommand(page.command, |sub| decorate(sub, page));
    }
    cmd
}

/// A subcommand with its examples, and its help and version flags under
/// the Control heading at the end, where they take no room from the
/// options that matter.
fn decorate(sub: clap::Command, page: &Page) -> clap::Command {
    let sub = sub
        .version(env!("CARGO_PKG_VERSION"))
        .disable_help_flag(true)
        .disable_version_flag(true)
        .arg(
            Arg::new("help")
                .short('h')
                .long("help")
                .action(ArgAction::Help)
                .help("Print help (--help: every option, with the long text)")
                .help_heading(heading::CONTROL),
        )
        .arg(
            Arg::new("version")
                .short('V')
                .long("version")
                .action(ArgAction::Version)
                .help("Print version")
                .help_heading(heading::CONTROL)
                .hide_short_help(true),
        );
    let options = sub
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .count();
    let short = format!(
        "{}\n\n--help for all {options} options; 'drip help {}' for the manual.",
        short_examples(page),
        page.command
    );
    sub.after_help(short)
        .after_long_help(long_examples(page, page.command))
}

/// The first three examples, a comment line and the command each (the
/// first three of a page fit one line of 100 columns each).
fn short_examples(page: &Page) -> String {
    let mut out = String::from("Examples:");
    for ex in page.examples.iter().take(3) {
        out.push_str(&example_text(ex));
    }
    out
}

/// Every example, and where the manual is.
fn long_examples(page: &Page, name: &str) -> String {
    let mut out = String::from("Examples:");
    for ex in page.examples {
        out.push_str(&example_text(ex));
    }
    let (help, man) = match name {
        "" => ("drip help".to_string(), "drip".to_string()),
        n => (format!("drip help {n}"), format!("drip-{n}")),
    };
    out.push_str(&format!(
        "\n\nThe manual (exit status, environment, files): '{help}' or 'man {man}'."
    ));
    out
}

fn example_text(ex: &Example) -> String {
    let mut out = format!("\n  # {}", ex.what);
    for line in ex.run.lines() {
        out.push_str("\n  ");
        out.push_str(line);
    }
    out
}

/// `drip help [COMMAND]`: `man drip-COMMAND` when man(1) finds that page,
/// else the manual as plain text on stdout.
pub fn run(args: HelpArgs) -> Result<u8> {
    let name = args.command.unwrap_or_default();
    let man_page = match name.as_str() {
        "" => "drip".to_string(),
        n => format!("drip-{n}"),
    };
    if man_has(&man_page) {
        let status = std::process::Command::new("man")
            .arg(&man_page)
            .status()
            .context("cannot run man")?;
        return Ok(status.code().map_or(2, |c| c.clamp(0, 255) as u8));
    }
    let text = plain_page(&name);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .context("cannot write the manual")?;
    Ok(0)
}

/// Whether man(1) is installed and knows `page` (`man -w` finds it).
fn man_has(page: &str) -> bool {
    std::process::Command::new("man")
        .args(["-w", page])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The manual of `name` (`""`: drip's) as plain text: the sections of the
/// man page, the options as `--help` shows them.
pub fn plain_page(name: &str) -> String {
    let page = pages::page(name).expect("a page for every command");
    let mut root = command();
    root.build();
    let mut cmd = match name {
        "" => root,
        n => root
            .find_subcommand(n)
            .expect("a subcommand for every page")
            .clone(),
    };
    let title = match name {
        "" => "drip".to_string(),
        n => format!("drip {n}"),
    };
    let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
    let usage = cmd.render_usage().to_string();
    let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage).to_string();
    let options = cmd
        .clone()
        .bin_name(&title)
        .help_template("{all-args}")
        .render_long_help()
        .to_string();
    let mut out = format!("NAME\n    {title} - {about}\n\nSYNOPSIS\n    {usage}\n\nDESCRIPTION\n");
    let paragraphs: Vec<String> = page
        .description
        .iter()
        .map(|p| indent(&wrap(p, 74), 4))
        .collect();
    out.push_str(&paragraphs.join("\n\n"));
    out.push('\n');
    out.push_str(&format!("\nOPTIONS\n{}\n", options.trim_end()));
    out.push_str("\nEXAMPLES");
    for ex in page.examples {
        out.push_str(&example_text(ex).replace("\n  ", "\n    "));
        out.push('\n');
    }
    section(&mut out, "EXIT STATUS", page.exit_status);
    section(&mut out, "ENVIRONMENT", page.environment);
    section(&mut out, "FILES", page.files);
    out.push_str(&format!("\nSEE ALSO\n    {}\n", page.see_also.join(", ")));
    out
}

fn section(out: &mut String, title: &str, items: &[(&str, &str)]) {
    out.push_str(&format!("\n{title}\n"));
    for (term, what) in items {
        out.push_str(&format!("    {term}\n{}\n", indent(&wrap(what, 70), 8)));
    }
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.join("\n")
}

fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines()
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_command_is_consistent_and_every_command_has_a_page() {
        let cmd = command();
        cmd.clone().debug_assert();
        for sub in cmd.get_subcommands() {
            assert!(pages::page(sub.get_name()).is_some(), "{}", sub.get_name());
        }
        // drip's own page, and one per command.
        assert_eq!(pages::PAGES.len(), cmd.get_subcommands().count() + 1);
    }

    #[test]
    fn text_wraps_at_spaces() {
        assert_eq!(wrap("aa bb cc", 5), "aa bb\ncc");
        assert_eq!(indent("a\nb", 2), "  a\n  b");
    }
}
