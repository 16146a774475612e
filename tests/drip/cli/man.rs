//! The man pages in `man/` are generated from the CLI definition (clap's
//! name, synopsis and options, under the same headings as `--help`) and
//! the hand-written sections of `drip::help::pages` (DESCRIPTION,
//! EXAMPLES, EXIT STATUS, ENVIRONMENT, FILES, SEE ALSO). This test fails
//! when a page is stale, misses a section or a flag; docs/exit-status.md
//! is generated from the same tables. Regenerate both with
//! `DRIP_BLESS=1 cargo test --test drip cli::man`.

use drip::help::pages::{self, Page};
use roff::{Roff, bold, roman};
use std::path::Path;

/// Every page has these, in this order.
const SECTIONS: &[&str] = &[
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "EXAMPLES",
    "EXIT STATUS",
    "ENVIRONMENT",
    "FILES",
    "SEE ALSO",
];

/// The lines roff's writer starts every document with.
const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

type Part = fn(&clap_mangen::Man, &mut dyn std::io::Write) -> std::io::Result<()>;

fn clap_part(man: &clap_mangen::Man, part: Part) -> String {
    let mut out = Vec::new();
    part(man, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    text.strip_prefix(PREAMBLE).unwrap_or(&text).to_string()
}

fn ours(roff: &Roff) -> String {
    let text = roff.render();
    text.strip_prefix(PREAMBLE).unwrap_or(&text).to_string()
}

fn terms(roff: &mut Roff, title: &str, items: &[(&str, &str)]) {
    roff.control("SH", [title]);
    for (term, what) in items {
        roff.control("TP", []);
        roff.text([bold(*term)]);
        roff.text([roman(*what)]);
    }
}

/// The hand-written sections after OPTIONS.
fn manual(page: &Page) -> Roff {
    let mut roff = Roff::new();
    roff.control("SH", ["EXAMPLES"]);
    for ex in page.examples {
        roff.control("PP", []);
        roff.text([roman(ex.what)]);
        roff.control("RS", ["4"]);
        roff.control("nf", []);
        for line in ex.run.lines() {
            roff.text([bold(line)]);
        }
        roff.control("fi", []);
        roff.control("RE", []);
    }
    terms(&mut roff, "EXIT STATUS", page.exit_status);
    terms(&mut roff, "ENVIRONMENT", page.environment);
    terms(&mut roff, "FILES", page.files);
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(page.see_also.join(", "))]);
    roff
}

fn render(cmd: clap::Command, page: &Page) -> String {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut text = String::from(PREAMBLE);
    text += &clap_part(&man, clap_mangen::Man::render_title);
    text += &clap_part(&man, clap_mangen::Man::render_name_section);
    text += &clap_part(&man, clap_mangen::Man::render_synopsis_section);
    let mut description = Roff::new();
    description.control("SH", ["DESCRIPTION"]);
    for (i, para) in page.description.iter().enumerate() {
        if i > 0 {
            description.control("PP", []);
        }
        description.text([roman(*para)]);
    }
    text += &ours(&description);
    if cmd.get_arguments().next().is_some() {
        text += &clap_part(&man, clap_mangen::Man::render_options_section);
    }
    if cmd.has_subcommands() {
        text += &clap_part(&man, clap_mangen::Man::render_subcommands_section);
    }
    text += &ours(&manual(page));
    text += &clap_part(&man, clap_mangen::Man::render_version_section);
    text
}

/// Every page: `drip` and one per command.
fn pages_to_render() -> Vec<(String, clap::Command, &'static Page)> {
    let mut root = drip::help::command();
    root.build();
    let mut out = vec![("drip".to_string(), root.clone(), page(""))];
    for sub in root.get_subcommands() {
        let name = format!("drip-{}", sub.get_name());
        let leaked: &'static str = name.clone().leak();
        out.push((name, sub.clone().name(leaked), page(sub.get_name())));
    }
    out
}

fn page(name: &str) -> &'static Page {
    pages::page(name).unwrap_or_else(|| panic!("no page in drip::help::pages for '{name}'"))
}

fn check(path: &Path, text: &str) -> String {
    if std::env::var_os("DRIP_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let have = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with DRIP_BLESS=1)", path.display()));
    assert!(
        have == text,
        "{} is stale: run DRIP_BLESS=1 cargo test --test drip cli::man",
        path.display()
    );
    have
}

#[test]
fn man_pages_are_current_and_name_every_flag() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    for (name, cmd, page) in pages_to_render() {
        let have = check(&dir.join(format!("{name}.1")), &render(cmd.clone(), page));
        for arg in cmd.get_arguments() {
            if let Some(long) = arg.get_long() {
                // roff escapes '-' as '\-'
                let shown = format!("\\-\\-{}", long.replace('-', "\\-"));
                assert!(have.contains(&shown), "{name}.1 does not mention --{long}");
            }
        }
    }
}

fn section_heads(roff: &str) -> Vec<String> {
    roff.lines()
        .filter_map(|l| l.strip_prefix(".SH "))
        .map(|h| h.trim_matches('"').to_string())
        .collect()
}

#[test]
fn every_page_has_every_section_in_order() {
    for (name, cmd, page) in pages_to_render() {
        let heads = section_heads(&render(cmd, page));
        let mut at = 0;
        for want in SECTIONS {
            let found = heads[at..].iter().position(|h| h == want);
            let found = found.unwrap_or_else(|| panic!("{name}.1: no {want} after {heads:?}"));
            at += found + 1;
        }
        for part in [page.exit_status, page.environment, page.files] {
            assert!(!part.is_empty(), "{name}: an empty section");
        }
        assert!(page.examples.len() >= 3, "{name}: fewer than 3 examples");
        for see in ["nginx(8)", "pv(1)", "xargs(1)"] {
            assert!(page.see_also.contains(&see), "{name}: no {see} in SEE ALSO");
        }
    }
}

#[test]
fn the_section_check_sees_a_missing_section() {
    let (_, cmd, page) = pages_to_render().remove(1);
    let text = render(cmd, page).replace(".SH ENVIRONMENT", ".SH ENV");
    assert!(!section_heads(&text).iter().any(|h| h == "ENVIRONMENT"));
}

/// docs/exit-status.md: the commands' exit statuses as the man pages list them.
fn exit_status_doc() -> String {
    let mut doc = String::from(
        "# Exit status\n\nGenerated from the tables the man pages (EXIT STATUS) and `drip help COMMAND` show\n(`src/help/pages.rs`; regenerate with `DRIP_BLESS=1 cargo test --test drip cli::man`).\n",
    );
    for page in pages::PAGES.iter().filter(|p| !p.command.is_empty()) {
        doc += &format!(
            "\n## drip {}\n\n| status | when |\n|---|---|\n",
            page.command
        );
        for (status, when) in page.exit_status {
            doc += &format!("| {status} | {} |\n", when.replace('|', "\\|"));
        }
    }
    doc
}

#[test]
fn exit_status_doc_is_the_man_pages_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/exit-status.md");
    check(&path, &exit_status_doc());
}
