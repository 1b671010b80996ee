//! Where hands keeps its own files, and how it creates them. Every crate that writes under the
//! state, data, configuration or cache folder goes through here, so that whichever component
//! runs first (the checkpoint store, the secret store, a process record, `hands serve`'s token,
//! the session database) the folders it makes are 0700 and its files 0600, whatever the umask.
//!
//! The locations are the XDG ones: `$XDG_STATE_HOME/hands` (`~/.local/state/hands`),
//! `$XDG_DATA_HOME/hands`, `$XDG_CONFIG_HOME/hands`, `$XDG_CACHE_HOME/hands`; `HANDS_STATE_DIR`
//! moves the state folder and `HANDS_SECRETS_DIR` the secret store. An `XDG_*` value that is not
//! absolute is ignored, as the XDG spec says. [`all`] lists every one of them (for the roots a
//! session may not have, and for what a sandbox must not see).

use std::ffi::OsString;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The mode of every folder hands creates for itself.
pub const DIR_MODE: u32 = 0o700;

/// The mode of every file hands creates for itself.
pub const FILE_MODE: u32 = 0o600;

/// A lookup of environment variables: the process's own ([`process_env`]) or, in tests, a
/// fixed one.
pub trait Env {
    /// The value of `name`, `None` when unset or empty.
    fn get(&self, name: &str) -> Option<PathBuf>;
}

/// The process's environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn get(&self, name: &str) -> Option<PathBuf> {
        std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
    }
}

impl<F: Fn(&str) -> Option<OsString>> Env for F {
    fn get(&self, name: &str) -> Option<PathBuf> {
        self(name).filter(|v| !v.is_empty()).map(PathBuf::from)
    }
}

/// The process's environment, as an [`Env`].
pub fn process_env() -> ProcessEnv {
    ProcessEnv
}

/// `$<name>/hands` when that variable is absolute, else `~/<fallback>/hands`.
fn xdg(env: &dyn Env, name: &str, fallback: &str) -> Option<PathBuf> {
    match env.get(name).filter(|d| d.is_absolute()) {
        Some(base) => Some(base.join("hands")),
        None => env.get("HOME").map(|home| home.join(fallback).join("hands")),
    }
}

/// The state folder: `$HANDS_STATE_DIR`, else `$XDG_STATE_HOME/hands`, else
/// `~/.local/state/hands`; `None` without any of them.
pub fn state_dir() -> Option<PathBuf> {
    state_dir_in(&ProcessEnv)
}

/// [`state_dir`] in `env`.
pub fn state_dir_in(env: &dyn Env) -> Option<PathBuf> {
    env.get("HANDS_STATE_DIR").or_else(|| xdg(env, "XDG_STATE_HOME", ".local/state"))
}

/// The data folder (the session database by default): `$XDG_DATA_HOME/hands`, else
/// `~/.local/share/hands`.
pub fn data_dir() -> Option<PathBuf> {
    data_dir_in(&ProcessEnv)
}

/// [`data_dir`] in `env`.
pub fn data_dir_in(env: &dyn Env) -> Option<PathBuf> {
    xdg(env, "XDG_DATA_HOME", ".local/share")
}

/// The configuration folder (`config.toml`, skills): `$XDG_CONFIG_HOME/hands`, else
/// `~/.config/hands`.
pub fn config_dir() -> Option<PathBuf> {
    xdg(&ProcessEnv, "XDG_CONFIG_HOME", ".config")
}

/// The cache folder: `$XDG_CACHE_HOME/hands`, else `~/.cache/hands`.
pub fn cache_dir() -> Option<PathBuf> {
    xdg(&ProcessEnv, "XDG_CACHE_HOME", ".cache")
}

/// The secret store's folder: `$HANDS_SECRETS_DIR`, else `secrets` in the state folder.
pub fn secrets_dir() -> Option<PathBuf> {
    ProcessEnv.get("HANDS_SECRETS_DIR").or_else(|| state_dir().map(|d| d.join("secrets")))
}

/// Every folder hands may keep its own files in, as the environment names them: the four above,
/// the secret store's, and the `~/…` fallbacks too when an `XDG_*` variable points elsewhere (a
/// hands started with another environment uses those). Settings can add more (a configured store
/// path, a checkpoint folder); the caller adds those.
pub fn all() -> Vec<PathBuf> {
    // The XDG state folder too when HANDS_STATE_DIR moves it: a hands started without that
    // variable keeps its files there.
    let xdg_state = xdg(&ProcessEnv, "XDG_STATE_HOME", ".local/state");
    let mut dirs: Vec<PathBuf> =
        [state_dir(), xdg_state, data_dir(), config_dir(), cache_dir(), secrets_dir()]
            .into_iter()
            .flatten()
            .collect();
    if let Some(home) = ProcessEnv.get("HOME") {
        for fallback in [".local/state", ".local/share", ".config", ".cache"] {
            dirs.push(home.join(fallback).join("hands"));
        }
    }
    let mut seen = Vec::new();
    dirs.retain(|d| {
        let new = !seen.contains(d);
        seen.push(d.clone());
        new
    });
    dirs
}

/// Create `dir` and every missing parent, each with mode 0700 from the start (`mkdir` with that
/// mode: the umask can only narrow it). Folders that exist already are left as they are: this
/// never widens, and never changes a folder it did not create.
pub fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(meta) if meta.is_dir() => break,
            Ok(_) => {
                return Err(std::io::Error::new(
                    ErrorKind::NotADirectory,
                    format!("{} is not a folder", at.display()),
                ));
            }
            Err(err) if err.kind() == ErrorKind::NotFound => {
                missing.push(at);
                match at.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => at = parent,
                    _ => break,
                }
            }
            Err(err) => return Err(err),
        }
    }
    for folder in missing.into_iter().rev() {
        match DirBuilder::new().mode(DIR_MODE).create(folder) {
            Ok(()) => {}
            // Another process made it meanwhile.
            Err(err) if err.kind() == ErrorKind::AlreadyExists && folder.is_dir() => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// [`create_private_dir_all`], then `dir` itself (hands' own folder, e.g. one an older hands
/// made with the umask) is narrowed to 0700 when group or others have any access. Only `dir`:
/// its parents may be the user's.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    create_private_dir_all(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.is_dir() && meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}

/// Options that open (creating when missing, mode 0600) a file of hands' own for writing without
/// truncating it and without following a symlink at its last component (a lock file, a log).
pub fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    options
}

/// Create the new file `path` (0600; an existing file or symlink there is an error).
pub fn create_private_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}

/// Replace `path` with `bytes` atomically: a new 0600 temporary file beside it, written and
/// synced, then renamed over `path`. A crash leaves the old or the new content, never a mix,
/// and the result is 0600 whatever the old file's mode was. Its folder must exist.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut name = OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(".tmp-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let tmp = dir.join(name);
    let written = (|| {
        let mut file = create_private_file(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(err) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(err);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_folders_follow_the_xdg_variables_then_home() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(*v))
        };
        let home = env(&[("HOME", "/home/u")]);
        assert_eq!(state_dir_in(&home), Some(PathBuf::from("/home/u/.local/state/hands")));
        assert_eq!(data_dir_in(&home), Some(PathBuf::from("/home/u/.local/share/hands")));
        let xdg = env(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "/s"), ("XDG_DATA_HOME", "rel")]);
        assert_eq!(state_dir_in(&xdg), Some(PathBuf::from("/s/hands")));
        // A relative XDG value is ignored, as the spec says.
        assert_eq!(data_dir_in(&xdg), Some(PathBuf::from("/home/u/.local/share/hands")));
        let moved = env(&[("HANDS_STATE_DIR", "/st"), ("XDG_STATE_HOME", "/s")]);
        assert_eq!(state_dir_in(&moved), Some(PathBuf::from("/st")));
        assert_eq!(state_dir_in(&env(&[("HOME", "")])), None);
    }

    #[test]
    fn every_created_folder_is_private_and_existing_ones_are_kept() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let deep = tmp.path().join("a/b/c");
        create_private_dir_all(&deep).unwrap();
        for folder in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode(&tmp.path().join(folder)), 0o700, "{folder}");
        }
        assert_eq!(mode(tmp.path()), 0o755, "a folder that existed is not changed");
        create_private_dir_all(&deep).unwrap();
        std::fs::set_permissions(&deep, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&deep).unwrap();
        assert_eq!(mode(&deep), 0o700, "hands' own folder is narrowed");
        std::fs::write(tmp.path().join("file"), "x").unwrap();
        assert!(create_private_dir_all(&tmp.path().join("file/sub")).is_err());
    }

    #[test]
    fn files_are_private_and_symlinks_are_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f.json");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "no temporary file left");

        let target = tmp.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = tmp.path().join("lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(private_options().open(&link).is_err(), "a symlink is not followed");
        assert!(create_private_file(&link).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        let lock = tmp.path().join("new.lock");
        drop(private_options().open(&lock).unwrap());
        assert_eq!(mode(&lock), 0o600);
    }
}
