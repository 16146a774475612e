//! Refusing an output that is also an input, or another output, before
//! anything is opened for writing: `--decisions log.csv` would truncate the
//! log it is about to read, `--rejects in.txt < in.txt` would empty the
//! input, a report redirected onto the rejects file would overwrite it,
//! `drip audit … >> nginx.conf` (or `2>> nginx.conf`) would write into the
//! config it checks. Standard error is an output too, compared with the
//! inputs only (`> out 2>&1` is fine); when it is an input, the refusal
//! cannot be written there ([`StderrOntoInput`]).
//!
//! Files are compared by device and inode, so a symlink, a hard link or
//! `/dev/stdout` pointing at the same file is caught too. Only regular
//! files and pipes are compared (`/dev/stdin` naming the input's pipe is
//! caught): a terminal or `/dev/null` on both sides is fine. An
//! output that does not exist yet cannot be an input; two such outputs are
//! compared by their directory's canonical path and their name.

use anyhow::{Result, bail};
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where an input or output is.
pub enum Place<'a> {
    Path(&'a Path),
    Stdin,
    Stdout,
    Stderr,
}

/// An input or output with what it is for, e.g. `--rejects 'r.txt'`.
pub struct Endpoint<'a> {
    pub what: String,
    pub place: Place<'a>,
}

impl<'a> Endpoint<'a> {
    pub fn new(what: impl Into<String>, place: Place<'a>) -> Endpoint<'a> {
        Endpoint {
            what: what.into(),
            place,
        }
    }
}

#[derive(PartialEq, Eq)]
enum Identity {
    File { dev: u64, ino: u64 },
    NotYet(PathBuf),
}

fn identity(place: &Place) -> Option<Identity> {
    let meta = match place {
        Place::Path(p) => match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let name = p.file_name()?;
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                let dir = dir.canonicalize().ok()?;
                return Some(Identity::NotYet(dir.join(name)));
            }
            Err(_) => return None,
        },
        Place::Stdin => File::from(io::stdin().as_fd().try_clone_to_owned().ok()?)
            .metadata()
            .ok()?,
        Place::Stdout => File::from(io::stdout().as_fd().try_clone_to_owned().ok()?)
            .metadata()
            .ok()?,
        Place::Stderr => File::from(io::stderr().as_fd().try_clone_to_owned().ok()?)
            .metadata()
            .ok()?,
    };
    // A pipe is compared as a file is: `--rejects /dev/stdin` with piped
    // input would feed the run its own output.
    use std::os::unix::fs::FileTypeExt;
    (meta.is_file() || meta.file_type().is_fifo()).then(|| Identity::File {
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

/// Standard error is one of the inputs: the refusal, which cannot be
/// written there, for the binary to show on the terminal if it has one.
#[derive(Debug)]
pub struct StderrOntoInput(pub String);

impl std::fmt::Display for StderrOntoInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StderrOntoInput {}

/// Fails with one line naming the pair when an output is the same file as
/// an input or as another output, or standard error is an input.
pub fn check_distinct(inputs: &[Endpoint], outputs: &[Endpoint]) -> Result<()> {
    let ins: Vec<Option<Identity>> = inputs.iter().map(|e| identity(&e.place)).collect();
    if let Some(err) = identity(&Place::Stderr) {
        let onto = inputs
            .iter()
            .zip(&ins)
            .find(|(_, i)| i.as_ref() == Some(&err));
        if let Some((i, _)) = onto {
            return Err(StderrOntoInput(format!(
                "standard error is the same file as {}: a message would be written into it; nothing was written, send standard error elsewhere",
                i.what
            ))
            .into());
        }
    }
    let outs: Vec<Option<Identity>> = outputs.iter().map(|e| identity(&e.place)).collect();
    for (o, oid) in outputs.iter().zip(&outs) {
        let Some(oid) = oid else { continue };
        for (i, iid) in inputs.iter().zip(&ins) {
            if iid.as_ref() == Some(oid) {
                bail!(
                    "{} is the same file as {}: writing it would destroy the input; nothing was written, choose another output",
                    o.what,
                    i.what
                );
            }
        }
    }
    if let Some((a, b)) = same_pair(outputs, &outs) {
        bail!(
            "{} and {} are the same file: one would overwrite the other; nothing was written, choose another output",
            a.what,
            b.what
        );
    }
    Ok(())
}

/// The first two of `ends` with the same known identity (`ids`, theirs
/// in order).
fn same_pair<'e, 'a>(
    ends: &'e [Endpoint<'a>],
    ids: &[Option<Identity>],
) -> Option<(&'e Endpoint<'a>, &'e Endpoint<'a>)> {
    ends.iter().zip(ids).enumerate().find_map(|(n, (a, aid))| {
        let aid = aid.as_ref()?;
        let (b, _) = ends
            .iter()
            .zip(ids)
            .skip(n + 1)
            .find(|(_, bid)| bid.as_ref() == Some(aid))?;
        Some((a, b))
    })
}

/// Fails with one line naming the pair when two logs are the same file
/// (named twice, or through a link): its rows would be counted twice.
pub fn check_logs_once(logs: &[Endpoint]) -> Result<()> {
    let ids: Vec<Option<Identity>> = logs
        .iter()
        .map(|e| identity(&e.place).filter(|i| matches!(i, Identity::File { .. })))
        .collect();
    if let Some((a, b)) = same_pair(logs, &ids) {
        bail!(
            "{} and {} are the same file: its rows would be counted twice; give each log once",
            a.what,
            b.what
        );
    }
    Ok(())
}

/// The logs a command reads, as inputs: each file, and standard input
/// when no file is given or `-` is one of them.
pub fn logs(files: &[PathBuf]) -> Vec<Endpoint<'_>> {
    inputs(files, "the log", "standard input (the log)")
}

/// Files read in order as inputs, each named `file 'path'`, and standard
/// input (named `stdin`) when no file is given or `-` is one of them.
pub fn inputs<'a>(files: &'a [PathBuf], file: &str, stdin: &str) -> Vec<Endpoint<'a>> {
    let mut inputs: Vec<Endpoint> = files
        .iter()
        .filter(|f| f.as_os_str() != "-")
        .map(|f| Endpoint::new(named(file, f), Place::Path(f)))
        .collect();
    if files.is_empty() || files.iter().any(|f| f.as_os_str() == "-") {
        inputs.push(Endpoint::new(stdin, Place::Stdin));
    }
    inputs
}

/// What a report reads, as inputs: the logs (refused when one is named
/// twice), one more file a flag names (`--policies`, `--exclude-keys`),
/// and the files of an nginx config.
pub fn report_inputs<'a>(
    files: &'a [PathBuf],
    flagged: Option<(&str, &'a Path)>,
    confs: &'a [PathBuf],
) -> Result<Vec<Endpoint<'a>>> {
    let mut inputs = logs(files);
    check_logs_once(&inputs)?;
    if let Some((flag, p)) = flagged {
        inputs.push(Endpoint::new(named(flag, p), Place::Path(p)));
    }
    inputs.extend(conf_files(confs));
    Ok(inputs)
}

/// What a report writes: standard output (the report, or `flag`'s output
/// when it is `-`), and `flag`'s file when it names one.
pub fn report_outputs<'a>(flag: &str, path: Option<&'a Path>) -> Vec<Endpoint<'a>> {
    match path {
        Some(p) if p.as_os_str() == "-" => {
            vec![Endpoint::new(
                format!("standard output ({flag} -)"),
                Place::Stdout,
            )]
        }
        Some(p) => vec![
            Endpoint::new("standard output (the report)", Place::Stdout),
            Endpoint::new(named(flag, p), Place::Path(p)),
        ],
        None => vec![Endpoint::new("standard output (the report)", Place::Stdout)],
    }
}

/// The files of a gateway config (the one given and its includes), as
/// inputs.
pub fn conf_files(files: &[PathBuf]) -> Vec<Endpoint<'_>> {
    (files.iter())
        .map(|f| Endpoint::new(named("the config", f), Place::Path(f)))
        .collect()
}

/// `what 'path'` for messages.
pub fn named(what: &str, path: &Path) -> String {
    format!("{what} '{}'", path.display())
}

/// Fails early, before a long replay, when `path` cannot be an output
/// file of this kind: a wrong extension, or a directory that is not there.
pub fn check_output(flag: &str, path: &std::path::Path, ext: &str) -> Result<()> {
    let has_ext = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext));
    if !has_ext {
        bail!(
            "{flag} '{}': the file is written as {}; give a name ending in .{ext}",
            path.display(),
            ext.to_uppercase()
        );
    }
    if path.is_dir() {
        bail!(
            "{flag} '{}' is a directory; give a file name",
            path.display()
        );
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        bail!(
            "{flag} '{}': no directory '{}'; create it or choose another path",
            path.display(),
            dir.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_the_same_file_and_new_paths_compare_by_name() {
        let dir = std::env::temp_dir().join(format!("drip-clash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a.csv");
        std::fs::write(&a, "x").unwrap();
        let hard = dir.join("hard.csv");
        let _ = std::fs::remove_file(&hard);
        std::fs::hard_link(&a, &hard).unwrap();
        let sym = dir.join("sym.csv");
        let _ = std::fs::remove_file(&sym);
        std::os::unix::fs::symlink(&a, &sym).unwrap();
        let other = dir.join("other.csv");
        std::fs::write(&other, "y").unwrap();
        let input = [Endpoint::new("the log", Place::Path(&a))];
        for out in [&a, &hard, &sym] {
            let outs = [Endpoint::new("--decisions", Place::Path(out))];
            let e = check_distinct(&input, &outs).unwrap_err().to_string();
            assert!(
                e.starts_with("--decisions is the same file as the log"),
                "{e}"
            );
        }
        let outs = [Endpoint::new("--decisions", Place::Path(&other))];
        assert!(check_distinct(&input, &outs).is_ok());
        let new = dir.join("new.csv");
        let again = dir.join(".").join("new.csv");
        let outs = [
            Endpoint::new("one", Place::Path(&new)),
            Endpoint::new("two", Place::Path(&again)),
        ];
        assert!(check_distinct(&input, &outs).is_err());
        let dev_null = Path::new("/dev/null");
        let both = [Endpoint::new("null", Place::Path(dev_null))];
        assert!(check_distinct(&both, &both).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
