//! The documentation holds what it says.
//!
//! - Every relative link in README.md, ARCHITECTURE.md, BENCHMARKS.md,
//!   docs/*.md and bench/*.md leads to a file, and its `#anchor`, if any,
//!   to a heading of that file.
//! - Every command of a ```sh block that names a shipped fixture (a path
//!   under `fixtures/`), and every command of README.md's blocks that run
//!   drip (its recipes), runs as written from a folder that holds
//!   `fixtures/`, with the built binary as `drip` on PATH, and exits as
//!   documented. The commands of one block run in order in one fresh folder,
//!   so a line that writes a file serves the lines after it.
//!
//! The conventions the docs follow for it:
//! - a command exits 0, unless its last line ends in a comment starting
//!   `# exit N` (the status it exits with);
//! - `#` lines right below a command show its output: each (but `...`)
//!   must appear in what the command printed, spaces aside;
//! - a command that cannot run here (it needs a server, or runs for
//!   minutes) ends in a comment holding `not checked:` and the reason; the
//!   test counts and prints these.
//!
//! A drip command of docs/ that names no shipped fixture is an example on
//! the reader's own files (`/var/log/nginx/access.log`): it cannot run
//! here, and the test counts and prints these too, so what is not run is
//! always said.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Scratch;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The documents checked, relative to the project folder.
fn documents() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"]
        .iter()
        .map(PathBuf::from)
        .filter(|f| Path::new(ROOT).join(f).is_file())
        .collect();
    for dir in ["docs", "bench"] {
        let mut more: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .map(|p| Path::new(dir).join(p.file_name().unwrap()))
            .collect();
        more.sort();
        files.extend(more);
    }
    files
}

fn read(file: &Path) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(file))
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// A fenced block: the line of its opening fence, its language, and its
/// lines with their line numbers.
struct Block {
    line: usize,
    lang: String,
    lines: Vec<(usize, String)>,
}

/// The text's fenced blocks, and its lines outside them (numbered).
fn split_fences(text: &str) -> (Vec<Block>, Vec<(usize, String)>) {
    let mut blocks = Vec::new();
    let mut prose = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let fence = line.trim_start().starts_with("```");
        match (&mut open, fence) {
            (None, true) => {
                open = Some(Block {
                    line: n,
                    lang: line.trim_start().trim_start_matches('`').trim().to_string(),
                    lines: Vec::new(),
                })
            }
            (Some(_), true) => blocks.push(open.take().unwrap()),
            (Some(b), false) => b.lines.push((n, line.to_string())),
            (None, false) => prose.push((n, line.to_string())),
        }
    }
    (blocks, prose)
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces
/// as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings (repeated ones numbered as
/// GitHub numbers them).
fn anchors(text: &str) -> Vec<String> {
    let (_, prose) = split_fences(text);
    let mut seen: Vec<String> = Vec::new();
    let mut times = std::collections::HashMap::new();
    for (_, line) in prose {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let n = times.entry(base.clone()).or_insert(0);
        seen.push(if *n == 0 { base } else { format!("{base}-{n}") });
        *n += 1;
    }
    seen
}

/// The link targets of a line of prose: `[text](target)`, outside code
/// spans.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Code spans are not links.
    let text: String = line
        .split('`')
        .enumerate()
        .map(|(i, s)| if i % 2 == 0 { s } else { "" })
        .collect();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        out.push(target.trim_matches(|c| c == '<' || c == '>').to_string());
        rest = &rest[end..];
    }
    out
}

/// What is wrong with the relative links of `file` (whose text is `text`):
/// one line each, naming the file and line.
fn broken_links(file: &Path, text: &str, read: &dyn Fn(&Path) -> Option<String>) -> Vec<String> {
    let mut wrong = Vec::new();
    let (_, prose) = split_fences(text);
    let dir = file.parent().unwrap_or(Path::new(""));
    for (n, line) in prose {
        for target in link_targets(&line) {
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let linked = if path.is_empty() {
                file.to_path_buf()
            } else {
                normalise(&dir.join(path))
            };
            let here = format!("{}:{n}: ({target})", file.display());
            let Some(body) = (if path.is_empty() {
                Some(text.to_string())
            } else {
                read(&linked)
            }) else {
                wrong.push(format!("{here}: no file {}", linked.display()));
                continue;
            };
            if let Some(a) = anchor
                && !anchors(&body).iter().any(|h| h == a)
            {
                wrong.push(format!("{here}: no heading #{a} in {}", linked.display()));
            }
        }
    }
    wrong
}

/// `p` with `.` and `..` taken out.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// A file's text, or for a folder an empty text (a link may name a
/// folder); None when there is nothing there.
fn read_linked(p: &Path) -> Option<String> {
    let full = Path::new(ROOT).join(p);
    if full.is_dir() {
        return Some(String::new());
    }
    std::fs::read(&full)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[test]
fn relative_links_lead_to_files_and_headings() {
    let mut wrong = Vec::new();
    let mut links = 0;
    for file in documents() {
        let text = read(&file);
        links += split_fences(&text)
            .1
            .iter()
            .map(|(_, l)| link_targets(l).len())
            .sum::<usize>();
        wrong.extend(broken_links(&file, &text, &read_linked));
    }
    assert!(
        links > 20,
        "only {links} links found: is the parsing broken?"
    );
    assert!(wrong.is_empty(), "broken links:\n{}", wrong.join("\n"));
}

/// `line` cut at its comment: the code, and the comment's text (after `#`)
/// if any. A `#` inside quotes or inside a word is not a comment.
fn split_comment(line: &str) -> (&str, Option<&str>) {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                return (line[..i].trim_end(), Some(line[i + 1..].trim()));
            }
            _ => {}
        }
        prev = c;
    }
    (line.trim_end(), None)
}

/// One shell command of a block: its first line, its code (continuation
/// lines joined), its comments, and the `#` lines shown right below it.
#[derive(Debug, Default)]
struct Cmd {
    line: usize,
    code: String,
    comments: Vec<String>,
    shown: Vec<String>,
}

impl Cmd {
    /// The status the docs give it: `# exit N`, else 0.
    fn status(&self) -> i32 {
        self.comments
            .iter()
            .find_map(|c| {
                c.strip_prefix("exit ")?
                    .split(|c: char| !c.is_ascii_digit())
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(0)
    }

    /// The reason it is not run, when the docs mark it so.
    fn not_checked(&self) -> Option<&str> {
        self.comments
            .iter()
            .find_map(|c| Some(c[c.find("not checked:")?..].trim()))
    }

    fn runs_drip(&self) -> bool {
        self.code
            .split(|c: char| c.is_whitespace() || "|;()&".contains(c))
            .any(|w| w == "drip")
    }
}

/// A block's commands.
fn commands(block: &Block) -> Vec<Cmd> {
    let mut cmds: Vec<Cmd> = Vec::new();
    let mut continued = false;
    let mut below = false;
    for (n, line) in &block.lines {
        let (code, comment) = split_comment(line);
        if continued {
            let cmd = cmds.last_mut().unwrap();
            cmd.code.push(' ');
            cmd.code
                .push_str(code.trim().trim_end_matches('\\').trim_end());
            cmd.comments.extend(comment.map(str::to_string));
        } else if code.trim().is_empty() {
            // A `#` line right below a command shows its output; a blank
            // line ends what it shows.
            match comment {
                Some(c) if below => cmds.last_mut().unwrap().shown.push(c.to_string()),
                _ => below = false,
            }
            continue;
        } else {
            cmds.push(Cmd {
                line: *n,
                code: code.trim().trim_end_matches('\\').trim_end().to_string(),
                comments: comment.map(str::to_string).into_iter().collect(),
                shown: Vec::new(),
            });
        }
        below = true;
        continued = code.ends_with('\\')
            || code.ends_with('|')
            || code.ends_with("&&")
            || code.ends_with("||");
    }
    cmds
}

/// The commands of `file`'s blocks the test runs: those naming a fixture,
/// and in README.md every command of a block that runs drip. Each block's
/// list is run in order.
fn checked_blocks(file: &Path, text: &str) -> Vec<(usize, Vec<Cmd>)> {
    let readme = file == Path::new("README.md");
    split_fences(text)
        .0
        .iter()
        .filter(|b| b.lang == "sh")
        .map(|b| {
            let cmds = commands(b);
            let recipe = readme && cmds.iter().any(Cmd::runs_drip);
            let picked: Vec<Cmd> = cmds
                .into_iter()
                .filter(|c| recipe || c.code.contains("fixtures/"))
                .collect();
            (b.line, picked)
        })
        .filter(|(_, cmds)| !cmds.is_empty())
        .collect()
}

/// A fresh folder to run a block in: `fixtures/` linked in, `drip` on PATH
/// the binary cargo built, a home and runtime folder of its own.
struct Place {
    dir: Scratch,
    path: String,
}

impl Place {
    fn new() -> Place {
        let dir = Scratch::new();
        std::os::unix::fs::symlink(Path::new(ROOT).join("fixtures"), dir.join("fixtures")).unwrap();
        let bin = dir.join(".bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_drip"), bin.join("drip")).unwrap();
        for d in [".home", ".run"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join(".run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Place { dir, path }
    }

    /// Runs `code` with sh; its status and what it printed (stdout, then
    /// stderr), or why it did not finish.
    fn run(&self, code: &str, limit: Duration) -> Result<(i32, String), String> {
        let mut child = Command::new("sh")
            .args(["-c", code])
            .current_dir(&self.dir)
            .env("PATH", &self.path)
            .env("HOME", self.dir.join(".home"))
            .env("XDG_RUNTIME_DIR", self.dir.join(".run"))
            .env_remove("DRIP_SHARE")
            .env_remove("DRIP_SHARE_KEY")
            // What a reader sees in a pipe or a CI log: 80 columns.
            .env_remove("COLUMNS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start sh: {e}"))?;
        let start = Instant::now();
        while child.try_wait().map_err(|e| e.to_string())?.is_none() {
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "still running after {limit:?}: shorten it, or mark it `# not checked: REASON`"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let printed = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok((out.status.code().unwrap_or(-1), printed))
    }
}

/// Spaces collapsed to one.
fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs `cmd` in `place`: None when it exits as documented and prints what
/// the lines below it show, else what went wrong.
fn check(place: &Place, cmd: &Cmd, limit: Duration) -> Option<String> {
    let (code, printed) = match place.run(&cmd.code, limit) {
        Ok(r) => r,
        Err(e) => return Some(e),
    };
    let want = cmd.status();
    if code != want {
        return Some(format!(
            "exit {code}, documented {want} (mark another status with `# exit N`); it printed:\n{printed}"
        ));
    }
    let all = squeeze(&printed);
    let missing: Vec<&String> = cmd
        .shown
        .iter()
        .filter(|s| s.as_str() != "..." && !all.contains(&squeeze(s)))
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "it did not print what the doc shows: {missing:?}; it printed:\n{printed}"
        ));
    }
    None
}

#[test]
fn documented_commands_run_and_exit_as_documented() {
    let mut wrong = Vec::new();
    let mut ran = 0;
    let mut skipped = Vec::new();
    let mut own_files = 0;
    for file in documents() {
        let text = read(&file);
        // Every marker counts, wherever it is.
        let readme = file == Path::new("README.md");
        for b in split_fences(&text).0 {
            for c in commands(&b) {
                if let Some(why) = c.not_checked() {
                    skipped.push(format!("{}:{}: {why}", file.display(), c.line));
                } else if b.lang == "sh"
                    && !readme
                    && c.runs_drip()
                    && !c.code.contains("fixtures/")
                {
                    own_files += 1;
                }
            }
        }
        for (_, cmds) in checked_blocks(&file, &text) {
            let place = Place::new();
            for cmd in cmds.iter().filter(|c| c.not_checked().is_none()) {
                ran += 1;
                if let Some(e) = check(&place, cmd, Duration::from_secs(60)) {
                    wrong.push(format!(
                        "{}:{}: {}\n  {e}",
                        file.display(),
                        cmd.line,
                        cmd.code
                    ));
                }
            }
        }
    }
    eprintln!(
        "{ran} documented commands run; {} marked not checked:",
        skipped.len()
    );
    for s in &skipped {
        eprintln!("  {s}");
    }
    eprintln!(
        "{own_files} drip commands of docs/ run on the reader's own files (they name no shipped fixture) and are not run"
    );
    assert!(
        ran >= 10,
        "only {ran} commands found: is the parsing broken?"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// The checks themselves find what they are for: a link to no file, an
/// anchor to no heading, a wrong status, output the doc shows but the
/// command does not print, and a marked command left out.
#[test]
fn the_checks_catch_what_they_are_for() {
    let doc = "# Top\n\n## Two words\n\nSee [a](#two-words), [b](#nothing), [c](nowhere.md), \
               [d](https://example.com/x), `[e](code.md)`.\n";
    let files = |p: &Path| (p == Path::new("docs/other.md")).then(|| "# Other\n".to_string());
    let wrong = broken_links(Path::new("docs/x.md"), doc, &files);
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(
        wrong[0].contains("docs/x.md:5: (#nothing): no heading"),
        "{wrong:?}"
    );
    assert!(wrong[1].contains("no file docs/nowhere.md"), "{wrong:?}");
    assert!(broken_links(Path::new("docs/x.md"), "[o](other.md#other)", &files).is_empty());
    assert!(!broken_links(Path::new("docs/x.md"), "[o](other.md#top)", &files).is_empty());

    let text = "```sh\n\
                drip audit fixtures/small.csv -p gcra:rate=1/s \\\n    --max-drops 0  # exit 1\n\
                drip audit fixtures/small.csv -p gcra:rate=1/s --max-drops 0\n\
                printf 'a  b\\n'\n\
                # a b\n\
                printf 'a\\n'\n\
                # b\n\
                drip pace --share redis://h/0 --rate 1/s  # not checked: needs Redis\n\
                ```\n";
    let blocks = checked_blocks(Path::new("README.md"), text);
    assert_eq!(blocks.len(), 1);
    let cmds = &blocks[0].1;
    assert_eq!(cmds.len(), 5, "{cmds:?}");
    assert_eq!(
        cmds[0].code,
        "drip audit fixtures/small.csv -p gcra:rate=1/s --max-drops 0"
    );
    assert_eq!((cmds[0].status(), cmds[1].status()), (1, 0));
    assert_eq!(cmds[4].not_checked(), Some("not checked: needs Redis"));
    let place = Place::new();
    let limit = Duration::from_secs(30);
    // The first drops requests, so it exits 1 as its comment says.
    assert_eq!(check(&place, &cmds[0], limit), None);
    // The second is documented as 0 but drops too.
    assert!(
        check(&place, &cmds[1], limit)
            .unwrap()
            .contains("exit 1, documented 0")
    );
    assert_eq!(check(&place, &cmds[2], limit), None);
    assert!(
        check(&place, &cmds[3], limit)
            .unwrap()
            .contains("did not print")
    );
    // Outside README.md only commands naming a fixture are run.
    let docs = checked_blocks(Path::new("docs/x.md"), text);
    assert_eq!(docs[0].1.len(), 2);
    assert_eq!(split_comment("date +%T.%N # x"), ("date +%T.%N", Some("x")));
    assert_eq!(split_comment("echo 'a # b'"), ("echo 'a # b'", None));
    assert_eq!(split_comment("x redis://h#key"), ("x redis://h#key", None));
}
