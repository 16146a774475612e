//! The man pages in `man/` are generated from the CLI definition: this test
//! fails when they are stale (regenerate with `DRIP_BLESS=1 cargo test --test man`)
//! and checks that every long flag appears in its page.

use clap::CommandFactory;
use drip::cli::Cli;
use std::path::Path;

fn render(cmd: clap::Command) -> String {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn man_pages_are_current_and_name_every_flag() {
    let root = Cli::command();
    let mut pages = vec![("drip".to_string(), root.clone())];
    for sub in root.get_subcommands() {
        let name = format!("drip-{}", sub.get_name());
        let leaked: &'static str = name.clone().leak();
        pages.push((name, sub.clone().name(leaked)));
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    for (name, cmd) in pages {
        let text = render(cmd.clone());
        let path = dir.join(format!("{name}.1"));
        if std::env::var_os("DRIP_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
        }
        let have = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run with DRIP_BLESS=1)", path.display()));
        assert!(
            have == text,
            "{} is stale: run DRIP_BLESS=1 cargo test --test man",
            path.display()
        );
        for arg in cmd.get_arguments() {
            if let Some(long) = arg.get_long() {
                // roff escapes '-' as '\-'
                let shown = format!("\\-\\-{}", long.replace('-', "\\-"));
                assert!(have.contains(&shown), "{name}.1 does not mention --{long}");
            }
        }
    }
}
