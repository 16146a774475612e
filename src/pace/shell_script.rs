//! `{}` inside a shell's script (`sh -c 'curl {}'`): each record would be
//! pasted into shell code, so a record `x; rm -rf ~` would run. Refused
//! before anything starts, with the form that passes the record as an
//! argument instead (`sh -c 'curl "$1"' _ {}`), where no record is code.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The shells whose `-c` takes a script.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];

/// Refuses a command whose shell script (the operand after `-c`) holds
/// `{}`.
pub(super) fn check(argv: &[OsString]) -> anyhow::Result<()> {
    let Some(script) = shell_script(argv) else {
        return Ok(());
    };
    if memchr::memmem::find(script, b"{}").is_none() {
        return Ok(());
    }
    let shell = Path::new(&argv[0])
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let shown = crate::quote::shown(script);
    anyhow::bail!(
        "the script given to {shell} -c holds {{}}, so each record would become shell code (a record such as 'x; rm -rf ~' would run): pass the record as an argument and use \"$1\" in the script, as in {shell} -c '{}' _ {{}}",
        shown.replace("{}", "\"$1\"")
    )
}

/// The script a shell's `-c` runs: the first operand after options, one
/// of which (a cluster such as `-c`, `-ec`) holds `c`. `None` when the
/// program is no shell, or it has no `-c`.
fn shell_script(argv: &[OsString]) -> Option<&[u8]> {
    let name = Path::new(argv.first()?).file_name()?.to_str()?;
    if !SHELLS.contains(&name) {
        return None;
    }
    // busybox runs the applet named first: `busybox sh -c ...`.
    let args = if name == "busybox" {
        let applet = argv.get(1)?.to_str()?;
        if !SHELLS.contains(&applet) || applet == "busybox" {
            return None;
        }
        &argv[2..]
    } else {
        &argv[1..]
    };
    let mut c = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let a = a.as_bytes();
        i += 1;
        match a {
            b"--" | b"-" => break,
            // Long options (`--norc`) are no clusters.
            [b'-', b'-', ..] => {}
            [b'-' | b'+', cluster @ ..] if !cluster.is_empty() => {
                c |= a[0] == b'-' && cluster.contains(&b'c');
                // `-o NAME` and `-O NAME` take the next argument.
                if cluster.ends_with(b"o") || cluster.ends_with(b"O") {
                    i += 1;
                }
            }
            _ => {
                i -= 1;
                break;
            }
        }
    }
    if !c {
        return None;
    }
    args.get(i).map(|s| s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(args: &[&str]) -> Option<String> {
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        shell_script(&argv).map(|s| String::from_utf8_lossy(s).into_owned())
    }

    #[test]
    fn the_script_is_the_operand_after_a_c_option() {
        assert_eq!(script(&["sh", "-c", "curl {}"]).as_deref(), Some("curl {}"));
        assert_eq!(
            script(&["/bin/bash", "-euc", "x {}", "_"]).as_deref(),
            Some("x {}")
        );
        assert_eq!(
            script(&["bash", "--norc", "-o", "pipefail", "-c", "y"]).as_deref(),
            Some("y")
        );
        assert_eq!(script(&["busybox", "sh", "-c", "z"]).as_deref(), Some("z"));
        assert_eq!(script(&["sh", "-e", "--", "run.sh"]), None);
        assert_eq!(script(&["sh", "run.sh", "-c"]), None);
        assert_eq!(script(&["curl", "-c", "{}"]), None);
        assert_eq!(script(&["busybox", "wget", "-c", "{}"]), None);
    }

    #[test]
    fn a_placeholder_in_the_script_is_refused_with_the_safe_form() {
        let argv: Vec<OsString> = ["sh", "-c", "curl -s {} | jq .", "_"]
            .iter()
            .map(OsString::from)
            .collect();
        let e = check(&argv).unwrap_err().to_string();
        assert!(e.contains("sh -c 'curl -s \"$1\" | jq .' _ {}"), "{e}");
        let safe: Vec<OsString> = ["sh", "-c", "curl \"$1\"", "_", "{}"]
            .iter()
            .map(OsString::from)
            .collect();
        assert!(check(&safe).is_ok());
    }
}
