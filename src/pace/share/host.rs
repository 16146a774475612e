//! The per-user state file of a named schedule on this host: what
//! `--share-key NAME` shares without `--share` (a shell loop of `drip gate
//! --share-key api` is limited with nothing else set), and where
//! `--on-share-error local` keeps its fallback schedule for a Redis key,
//! so successive processes on one host stay limited during an outage.
//!
//! The folder is `$XDG_RUNTIME_DIR/drip` (per user by definition), else
//! `drip-UID` in the temporary folder (`$TMPDIR`, else `/tmp`), created
//! with mode 0700 and refused when it is not a folder of this user's that
//! only this user can open (a link, or another user's, could be swapped
//! to hand the schedule to someone else). The file is `NAME.share`, with
//! bytes other than letters, digits, `-`, `_` and `.` written `%XX`.

use anyhow::{Context, bail};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::PathBuf;

/// The state file for schedule `name`, its folder made if needed.
pub fn state_file(name: &str) -> anyhow::Result<PathBuf> {
    let dir = folder()?;
    Ok(dir.join(format!("{}.share", file_name(name))))
}

/// The per-user folder, made (0700) if needed, and checked.
fn folder() -> anyhow::Result<PathBuf> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute() && d.is_dir());
    // SAFETY: getuid(2) cannot fail and touches no memory.
    let uid = unsafe { libc::getuid() };
    let dir = match runtime {
        Some(d) => d.join("drip"),
        None => std::env::temp_dir().join(format!("drip-{uid}")),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(e).with_context(|| {
                format!(
                    "cannot create the folder '{}' for --share-key's state file; give --share PATH",
                    dir.display()
                )
            });
        }
    }
    let meta = std::fs::symlink_metadata(&dir)
        .with_context(|| format!("cannot read '{}'", dir.display()))?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        bail!(
            "'{}' is not a private folder of this user's (a folder, owned by uid {uid}, mode 0700), so --share-key's state file cannot be kept there safely; remove it, or give --share PATH",
            dir.display()
        );
    }
    Ok(dir)
}

/// `name` as a file name: safe bytes as they are, others `%XX`.
fn file_name(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_') || (b == b'.' && !out.is_empty()) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_safe_file_names() {
        let cases = [
            ("api-1_x.v2", "api-1_x.v2"),
            // No way out of the folder, and no hidden file.
            ("../etc", "%2E.%2Fetc"),
            ("a b/c", "a%20b%2Fc"),
        ];
        for (name, file) in cases {
            assert_eq!(file_name(name), file, "{name}");
        }
    }
}
