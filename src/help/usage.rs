//! A usage error as one line: what clap found wrong, the flag most likely
//! meant, and the help of the command it was typed for.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use std::ffi::OsString;

/// Flags other commands have, or that people guess: what to type instead.
const HINTS: &[(&str, &str, &str)] = &[
    (
        "audit",
        "--rate",
        "a rate goes in a policy spec: -p gcra:rate=5/s,burst=10 (or -p nginx:rate=5r/s)",
    ),
    (
        "audit",
        "--burst",
        "a burst goes in a policy spec: -p gcra:rate=5/s,burst=10 (or -p nginx:rate=5r/s)",
    ),
    (
        "audit",
        "--threshold",
        "the thresholds are --max-drop-rate PCT, --max-drops N, --max-wait DUR, --max-keys-hurt N",
    ),
    (
        "size",
        "--burst",
        "size finds the burst: -p names the policy without it, --rate LIST the rates to try",
    ),
    (
        "pace",
        "--key-column",
        "pace takes each line's key with --key REGEX, --key-field N or --key-json PATH",
    ),
    (
        "pace",
        "--max-drop-rate",
        "pace sends every line unless --on-full drop; 'drip audit' measures drop rates",
    ),
];

/// The message for a usage error of the command line `argv` (the
/// program's name first), without the `drip: ` prefix.
pub fn message(e: &clap::Error, argv: &[OsString]) -> String {
    let root = super::command();
    let sub = argv
        .get(1)
        .and_then(|a| a.to_str())
        .and_then(|name| root.find_subcommand(name));
    let text = unstripped(e, argv);
    let mut line = first_line(&text);
    let tip = sub
        .and_then(|s| close_miss(s, e))
        .or_else(|| clap_tip(&text))
        .map(|t| format!("; {t}"))
        .unwrap_or_default();
    let help = match sub {
        Some(s) => format!("drip {} --help", s.get_name()),
        None => "drip --help".to_string(),
    };
    line.push_str(&format!("{tip} (see '{help}')"));
    crate::quote::visible(&line)
}

/// clap's message as text. Its `Display` strips every escape sequence,
/// those the user typed included, so a value typed with one would be
/// quoted wrong: the same arguments parsed again without styles render the
/// user's bytes as they were (escaped by the caller).
fn unstripped(e: &clap::Error, argv: &[OsString]) -> String {
    let plain = super::command().styles(clap::builder::Styles::plain());
    match plain.try_get_matches_from(argv) {
        Err(again) if again.kind() == e.kind() => again.render().ansi().to_string(),
        _ => e.to_string(),
    }
}

/// clap's first line, with the arguments it lists on the next lines.
fn first_line(text: &str) -> String {
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    if line.ends_with(':') {
        // "required arguments were not provided:" lists them on the next lines.
        let listed: Vec<&str> = lines
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect();
        line = format!("{line} {}", listed.join(", "));
    }
    line
}

/// clap's own tip, or the values that would have been valid.
fn clap_tip(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let l = l.trim();
        l.strip_prefix("tip: ").map(str::to_string).or_else(|| {
            // "[possible values: a, b]" says what would have been valid.
            l.strip_prefix("[possible values: ")
                .and_then(|v| v.strip_suffix(']'))
                .map(|v| format!("valid: {v}"))
        })
    })
}

/// What `sub`'s user most likely meant: a hint for a flag of another
/// command, the flags an unknown one begins (`--max-drop`: `--max-drops`,
/// `--max-drop-rate`), or the command that `-j`/`--retry` need.
fn close_miss(sub: &clap::Command, e: &clap::Error) -> Option<String> {
    let name = sub.get_name();
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let Some(ContextValue::String(typed)) = e.get(ContextKind::InvalidArg) else {
                return None;
            };
            let flag = typed.split('=').next().unwrap_or(typed);
            if let Some((_, _, hint)) = HINTS.iter().find(|(c, f, _)| *c == name && *f == flag) {
                return Some(hint.to_string());
            }
            let word = flag.strip_prefix("--")?;
            let longer: Vec<String> = sub
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter_map(|a| a.get_long())
                .filter(|l| l.len() > word.len() && l.starts_with(word))
                .map(|l| format!("'--{l}'"))
                .take(4)
                .collect();
            match longer.len() {
                0 => elsewhere(sub, word),
                1 => Some(format!("did you mean {}?", longer[0])),
                n => Some(format!(
                    "did you mean {} or {}?",
                    longer[..n - 1].join(", "),
                    longer[n - 1]
                )),
            }
        }
        ErrorKind::InvalidValue => optional_value(sub, e),
        ErrorKind::MissingRequiredArgument if name == "pace" => {
            let missing = e.get(ContextKind::InvalidArg);
            let wants_command = matches!(missing, Some(ContextValue::Strings(v))
                if v.iter().any(|s| s.contains("<COMMAND>")));
            wants_command.then(|| {
                "those options are for a command given after '--': drip pace -r 5/s -j 4 urls.txt -- curl -fsS {}"
                    .to_string()
            })
        }
        _ => None,
    }
}

/// A flag whose value is optional took the next word for it (`--stats
/// urls.txt`): how to give the value and the word apart.
fn optional_value(sub: &clap::Command, e: &clap::Error) -> Option<String> {
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let Some(ContextValue::String(typed)) = e.get(ContextKind::InvalidValue) else {
        return None;
    };
    let long = arg.strip_prefix("--")?.split([' ', '=']).next()?;
    let a = sub.get_arguments().find(|a| a.get_long() == Some(long))?;
    if a.get_num_args().is_none_or(|n| n.min_values() > 0) {
        return None;
    }
    let first = a.get_possible_values().into_iter().next()?;
    Some(format!(
        "the value of --{long} is optional: to give '{typed}' as an argument of its own, write --{long}={} (or put '{typed}' before --{long})",
        first.get_name()
    ))
}

/// For a flag `sub` lacks: the other commands that have it.
fn elsewhere(sub: &clap::Command, word: &str) -> Option<String> {
    let root = super::command();
    let owners: Vec<String> = root
        .get_subcommands()
        .filter(|c| c.get_name() != sub.get_name())
        .filter(|c| c.get_arguments().any(|a| a.get_long() == Some(word)))
        .map(|c| format!("'drip {}'", c.get_name()))
        .collect();
    (!owners.is_empty()).then(|| {
        format!(
            "--{word} is an option of {}, not of 'drip {}'",
            owners.join(" and "),
            sub.get_name()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(args: &[&str]) -> String {
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        let e = super::super::command()
            .try_get_matches_from(&argv)
            .expect_err("a usage error");
        message(&e, &argv)
    }

    #[test]
    fn a_file_after_an_optional_value_flag_gets_the_equals_form() {
        let m = said(&["drip", "pace", "-r", "5/s", "--stats", "urls.txt"]);
        assert!(
            m.contains("write --stats=text (or put 'urls.txt' before --stats)"),
            "{m}"
        );
        let m = said(&["drip", "pace", "-r", "5/s", "--on-full", "later"]);
        assert!(!m.contains("is optional"), "{m}");
    }

    #[test]
    fn a_prefix_of_several_flags_names_them_all() {
        let m = said(&["drip", "audit", "--max-drop", "1", "x.csv"]);
        assert!(
            m.contains("did you mean '--max-drop-rate' or '--max-drops'?"),
            "{m}"
        );
        assert!(m.ends_with("(see 'drip audit --help')"), "{m}");
    }

    #[test]
    fn a_flag_of_another_command_gets_its_hint() {
        let m = said(&["drip", "audit", "--rate", "5/s", "x.csv"]);
        assert!(m.contains("-p gcra:rate=5/s"), "{m}");
        assert!(!m.contains("use '-- --rate'"), "{m}");
        let m = said(&["drip", "pace", "--key-column", "1"]);
        assert!(m.contains("--key-json PATH"), "{m}");
        let m = said(&["drip", "audit", "--rejects", "r.txt", "x.csv"]);
        assert!(
            m.contains("--rejects is an option of 'drip pace', not of 'drip audit'"),
            "{m}"
        );
        assert!(!m.contains("use '-- --rejects'"), "{m}");
    }

    #[test]
    fn command_options_without_a_command_say_where_it_goes() {
        let m = said(&["drip", "pace", "-j", "4", "urls.txt"]);
        assert!(m.contains("after '--'"), "{m}");
        assert!(m.ends_with("(see 'drip pace --help')"), "{m}");
    }

    #[test]
    fn a_typo_keeps_clap_s_suggestion_and_the_root_names_drip_help() {
        let m = said(&["drip", "size", "-p", "gcra", "--plott", "x.svg"]);
        assert!(m.contains("'--plot'"), "{m}");
        let m = said(&["drip", "audti"]);
        assert!(
            m.contains("'audit'") && m.ends_with("(see 'drip --help')"),
            "{m}"
        );
    }
}
