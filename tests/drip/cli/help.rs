//! Help as a new user meets it: `-h` fits a screen (40 lines) with three
//! examples, `--help` groups the options under headings in a fixed order,
//! a usage error names the command's own `--help` and the flag most likely
//! meant, every example of the help and man pages runs on the shipped
//! fixtures, and `drip help COMMAND` shows the manual with or without man.

use crate::common::{Drip, Out, Scratch, s};
use drip::help::pages::PAGES;
use std::path::Path;
use std::process::Stdio;

const COMMANDS: &[&str] = &["", "audit", "size", "pace", "gate", "completions", "help"];

fn help(command: &str, flag: &str) -> Out {
    let mut args: Vec<&str> = vec![];
    if !command.is_empty() {
        args.push(command);
    }
    args.push(flag);
    let out = Drip::new().args(&args).run();
    assert_eq!(out.code, 0, "drip {command} {flag}: {}", out.stderr);
    out
}

/// `drip COMMAND -h` on a terminal `columns` wide (clap reads COLUMNS
/// when stdout is not a terminal).
fn short_help(command: &str, columns: &str) -> String {
    let mut cmd = Drip::new().command();
    cmd.env("COLUMNS", columns);
    if !command.is_empty() {
        cmd.arg(command);
    }
    let out = cmd.arg("-h").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "drip {command} -h");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn short_help_fits_forty_lines_of_80_columns_with_three_examples() {
    for command in COMMANDS {
        for columns in ["80", "100", "200"] {
            let text = short_help(command, columns);
            let lines = text.lines().count();
            assert!(
                lines <= 40,
                "drip {command} -h, {columns} columns: {lines} lines\n{text}"
            );
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
            assert!(widest <= columns.parse().unwrap(), "{text}");
        }
        let text = short_help(command, "80");
        {
            let examples = text.lines().filter(|l| l.starts_with("  # ")).count();
            assert_eq!(examples, 3, "drip {command} -h:\n{text}");
        }
        if !command.is_empty() {
            assert!(
                text.contains("--help for all ") && text.contains(" options;"),
                "drip {command} -h:\n{text}"
            );
        }
    }
}

/// The headings `--help` shows, in order.
fn headings(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':') && !l.contains(' '))
        .map(|l| l.trim_end_matches(':'))
        .collect()
}

#[test]
fn long_help_groups_options_under_headings_most_used_first() {
    let want: &[(&str, &[&str])] = &[
        (
            "audit",
            &[
                "Arguments",
                "Policies",
                "Gateways",
                "Thresholds",
                "Output",
                "Input",
                "Control",
                "Examples",
            ],
        ),
        (
            "size",
            &[
                "Arguments",
                "Policies",
                "Targets",
                "Sizing",
                "Gateways",
                "Output",
                "Input",
                "Control",
                "Examples",
            ],
        ),
        (
            "pace",
            &[
                "Arguments",
                "Policies",
                "Commands",
                "Output",
                "Input",
                "Sharing",
                "Replay",
                "Control",
                "Examples",
            ],
        ),
        (
            "gate",
            &[
                "Arguments",
                "Policies",
                "Sharing",
                "Output",
                "Control",
                "Examples",
            ],
        ),
        ("completions", &["Arguments", "Control", "Examples"]),
    ];
    for (command, order) in want {
        let out = help(command, "--help");
        assert_eq!(&headings(&out.stdout), order, "drip {command} --help");
        // The long text stays in --help: more lines than -h, every flag.
        assert!(out.stdout.lines().count() > help(command, "-h").stdout.lines().count());
    }
    // The rate comes first in pace.
    let pace = help("pace", "--help").stdout;
    let first = pace
        .lines()
        .skip_while(|l| *l != "Policies:")
        .nth(1)
        .unwrap();
    assert!(first.contains("--rate"), "{first}");
}

#[test]
fn a_usage_error_names_the_command_s_help_and_the_flag_meant() {
    let out = Drip::audit()
        .args(["--max-drop", "1", "fixtures/small.csv"])
        .run();
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("did you mean '--max-drop-rate' or '--max-drops'?"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("(see 'drip audit --help')"),
        "{}",
        out.stderr
    );
    let out = Drip::size().args(["-p", "gcra", "--key-col", "host"]).run();
    assert!(out.stderr.contains("'--key-column'"), "{}", out.stderr);
    assert!(
        out.stderr.contains("(see 'drip size --help')"),
        "{}",
        out.stderr
    );
    let out = Drip::new().args(["pace", "--on-ful", "drop"]).run();
    assert!(out.stderr.contains("'--on-full'"), "{}", out.stderr);
    assert!(
        out.stderr.contains("(see 'drip pace --help')"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

#[test]
fn a_usage_error_quotes_what_was_typed_with_its_control_characters_escaped() {
    // An escape sequence typed into a value is shown, not stripped (the
    // message would otherwise quote a value that was not typed) nor sent to
    // the terminal; a carriage return is escaped too.
    for (args, want) in [
        (&["help", "pa\x1b[31mce"][..], "'pa\\u{1b}[31mce'"),
        (
            &["pace", "--rate", "5\x1b[2J/s"][..],
            "invalid rate '5\\u{1b}[2J/s'",
        ),
        (&["audit", "--nosuch\rX"][..], "'--nosuch\\rX'"),
    ] {
        let out = Drip::new().args(args).stdin(b"").run();
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(want),
            "{args:?}: {want} in {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains(['\x1b', '\r']),
            "{args:?}: {:?}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}

#[test]
fn pace_reads_a_file_given_after_the_rate() {
    let out = Drip::new()
        .args(["pace", "--rate", "1000/s", "fixtures/small.csv"])
        .run();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let file =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/small.csv"))
            .unwrap();
    assert_eq!(out.stdout, file);
}

/// Every example of every page, run by sh in a fresh folder that holds the
/// fixtures, with this build's drip first on PATH: each exits as the page
/// says.
#[test]
fn every_example_runs_on_the_fixtures() {
    let exe = Path::new(env!("CARGO_BIN_EXE_drip"));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let path = format!(
        "{}:{}",
        exe.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for page in PAGES {
        for ex in page.examples {
            let dir = Scratch::new();
            std::os::unix::fs::symlink(&fixtures, dir.join("fixtures")).unwrap();
            let out = std::process::Command::new("sh")
                .args(["-c", ex.run])
                .current_dir(&dir)
                .env("PATH", &path)
                .env("HOME", &dir)
                .env("XDG_RUNTIME_DIR", &dir)
                .env_remove("DRIP_SHARE")
                .env_remove("DRIP_SHARE_KEY")
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(ex.status),
                "drip {}: {}\nstderr: {}",
                page.command,
                ex.run,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

const SECTIONS: &[&str] = &[
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "OPTIONS",
    "EXAMPLES",
    "EXIT STATUS",
    "ENVIRONMENT",
    "FILES",
    "SEE ALSO",
];

#[test]
fn help_without_man_prints_the_manual_as_text() {
    let no_man = Scratch::new();
    for command in COMMANDS {
        let mut cmd = Drip::new().command();
        cmd.env("PATH", &no_man).arg("help");
        if !command.is_empty() {
            cmd.arg(command);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        let heads: Vec<&str> = text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with(' '))
            .filter(|l| l.chars().all(|c| c.is_ascii_uppercase() || c == ' '))
            .collect();
        assert_eq!(heads, SECTIONS, "drip help {command}:\n{text}");
        if ["", "pace", "gate"].contains(command) {
            assert!(
                text.contains("DRIP_SHARE_KEY"),
                "drip help {command}:\n{text}"
            );
        }
    }
    let out = {
        let mut cmd = Drip::new().command();
        cmd.env("PATH", &no_man).args(["help", "audit"]);
        cmd.output().unwrap()
    };
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "--max-drop-rate",
        "--nginx-conf",
        "fixtures/policies.txt",
        "nginx(8)",
    ] {
        assert!(text.contains(want), "no {want}:\n{text}");
    }
}

/// With man(1) installed and the page where man looks (a MANPATH made
/// here), `drip help size` is man's rendering of man/drip-size.1.
#[test]
fn help_with_man_and_the_page_installed_runs_man() {
    let root = Scratch::new();
    std::fs::create_dir_all(root.join("man1")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("man/drip-size.1"),
        root.join("man1/drip-size.1"),
    )
    .unwrap();
    let out = Drip::new()
        .command()
        .env("MANPATH", s(&root))
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "100")
        .args(["help", "size"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // man's layout: the title line, sections indented by man.
    assert!(text.starts_with("drip-size(1)"), "{text}");
    assert!(text.contains("\nEXIT STATUS\n"), "{text}");
    // A page man does not know falls back to the text.
    let out = Drip::new()
        .command()
        .env("MANPATH", s(&root))
        .args(["help", "gate"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("NAME\n    drip gate - "), "{text}");
}
