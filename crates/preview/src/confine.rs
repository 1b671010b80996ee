//! Shutting a browser off from the machine: Chromium's own sandbox, and a network namespace with
//! nothing in it, for a browser whose every request hands answers over CDP (clone_site).
//!
//! Chromium refuses its sandbox as root, and Debian's has no setuid helper, so the browser is
//! started by `unshare --user --net` with root mapped to an unprivileged id: Chromium then sees
//! another user, builds its namespace sandbox (renderers in their own user, PID and network
//! namespaces under seccomp-bpf) inside that user namespace, and the whole browser — network
//! service included — has only the loopback of an empty network namespace, which is down. Where
//! user namespaces are not available, neither is the sandbox: the browser runs with
//! `--no-sandbox`, and the caller is told why.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The id root becomes inside the browser's user namespace: any id but 0 (Chromium only asks
/// whether it is root; files of the real root show as this id's inside).
const MAPPED_ROOT: u32 = 1000;

/// What a started browser runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// Chromium's own sandbox, and a network namespace of its own with nothing in it.
    Isolated,
    /// Neither (`--no-sandbox`, the machine's network): why, for the user.
    Unconfined(String),
}

/// The command prefix that starts a program isolated (`unshare … --net --`), or why it cannot.
pub(crate) fn isolating_prefix() -> Result<String, String> {
    static PROBED: OnceLock<Result<String, String>> = OnceLock::new();
    PROBED.get_or_init(probe).clone()
}

/// `unshare` from the system's PATH only (never a project's), and whether a user namespace
/// with an empty network namespace can be made here: the same command, with `true`.
fn probe() -> Result<String, String> {
    let Some(unshare) = system_program("unshare") else {
        return Err("the system has no `unshare` program (util-linux)".to_owned());
    };
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let (inner_uid, inner_gid) = if uid == 0 { (MAPPED_ROOT, MAPPED_ROOT) } else { (uid, gid) };
    let args = [
        "--user".to_owned(),
        format!("--map-user={inner_uid}"),
        format!("--map-group={inner_gid}"),
        "--net".to_owned(),
        "--".to_owned(),
    ];
    let ran = std::process::Command::new(&unshare)
        .args(&args)
        .arg("true")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output();
    match ran {
        Ok(out) if out.status.success() => {
            let mut prefix = quote(&unshare.to_string_lossy());
            for arg in &args {
                prefix.push(' ');
                prefix.push_str(arg);
            }
            Ok(prefix)
        }
        Ok(out) => Err(format!(
            "user namespaces are not available here (`unshare --user --net` said: {})",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(err) => Err(format!("`{}` could not be run: {err}", unshare.display())),
    }
}

/// `program` in the directories of PATH that are absolute (a relative entry would be the
/// project's).
pub(crate) fn system_program(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|path| is_executable(path))
}

/// The browser to run for the setting `chromium`: an absolute path as it is, a bare name from
/// the system's PATH. Never a program of the project (its `node_modules/.bin`, a relative path):
/// the browser runs outside any sandbox hands has, with the page's content in it.
pub fn find_browser(chromium: &str) -> Option<PathBuf> {
    let path = Path::new(chromium);
    if path.is_absolute() {
        return is_executable(path).then(|| path.to_path_buf());
    }
    if chromium.contains('/') {
        return None;
    }
    system_program(chromium)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `'text'` for the shell.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browser_is_never_a_program_of_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = bin.join("sh");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_browser("node_modules/.bin/sh"), None, "a relative path");
        assert_eq!(find_browser("./sh"), None);
        assert_eq!(find_browser(&fake.to_string_lossy()), Some(fake.clone()), "an absolute one");
        let found = find_browser("sh").expect("sh is on PATH");
        assert!(!found.starts_with(dir.path()), "{}", found.display());
        assert_eq!(find_browser("/nonexistent/chromium"), None);
    }
}
