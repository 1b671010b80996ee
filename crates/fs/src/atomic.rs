//! The write path shared by write_file and edit_file: first the checks (no `.git` and no
//! `.hands/config.toml`, not even through a symlinked folder; no symlink as the final component), then an atomic replace — the parent folder is
//! opened once as a handle, a temp file with a fresh random name is created in it (never replacing
//! an existing file), written, given the old file's mode, fsynced, renamed over the target within
//! that same handle, and the folder is fsynced. On any error, or when the call is cancelled before
//! the rename, the temp file is removed, so the target is either the old or the new content, never a
//! mix, and a stopped call never writes afterwards.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, Metadata, OpenOptions, PermissionsExt as _};
use hands_core::{CancellationToken, ToolError};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::{FsConfig, RelPath, Workspace};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Refuse paths that write_file and edit_file must not change: the root, anything under `.git/`
/// (by name, or by real location after symlinked folders are resolved) unless configured writable,
/// hands' own `.hands/config.toml` (the same two ways, and never configurable: a model that could
/// write it could grant itself more), and a symlink as the final component.
pub fn check_writable(
    ws: &Workspace,
    path: &RelPath,
    config: &FsConfig,
    action: &str,
) -> Result<(), ToolError> {
    if path.is_root() {
        return Err(ToolError::model(format!(
            "`path` must name a file, not the project root. Give a path like `src/main.rs` to {action}."
        )));
    }
    if path.is_under_git() && !allowed(ws, path, config) {
        return Err(protected(path, path));
    }
    if path.is_hands_config() {
        return Err(own_config(path, path));
    }
    let real = real_path(ws, path)?;
    if real.is_under_git() && !allowed(ws, &real, config) {
        return Err(protected(path, &real));
    }
    if real.is_hands_config() || config_locations(ws).contains(&real) {
        return Err(own_config(path, &real));
    }
    let name = path.file_name().unwrap_or_default();
    match parent_dir(ws, path) {
        Ok(parent) => match parent.symlink_metadata(name) {
            Ok(meta) if meta.file_type().is_symlink() => Err(ToolError::model(format!(
                "{} is a symlink; hands does not write through symlinks. Write to the file it points \
                 to instead (its real path inside the project).",
                path.display()
            ))),
            Ok(meta) if meta.is_dir() => Err(ToolError::model(format!(
                "{} is a directory, not a file. Pick a file path inside it.",
                path.display()
            ))),
            Ok(_) => Ok(()),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(err) => Err(ws.io_error("written", path, &err)),
        },
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(ws.io_error("written", path, &err)),
    }
}

fn allowed(ws: &Workspace, path: &RelPath, config: &FsConfig) -> bool {
    config
        .writable_protected
        .iter()
        .any(|entry| ws.resolve("writable_protected", entry).is_ok_and(|p| &p == path))
}

fn protected(path: &RelPath, real: &RelPath) -> ToolError {
    let through = if path == real {
        String::new()
    } else {
        format!(" (it resolves to {} through a symlink)", real.display())
    };
    ToolError::model(format!(
        "{} is inside .git{through}, which is protected: a written hook or config runs code. Change \
         the repository with git commands through bash instead, or ask the user to list the path in \
         `fs.writable_protected`.",
        path.display()
    ))
}

/// Where hands reads `.hands/config.toml` from when `.hands` or the file itself is a symlink to
/// another place inside the project: writing that place would change the configuration too.
fn config_locations(ws: &Workspace) -> Vec<RelPath> {
    let mut found = Vec::new();
    let mut add = |real: io::Result<PathBuf>| {
        if let Ok(rel) =
            real.map_err(drop).and_then(|p| ws.resolve("path", &p.to_string_lossy()).map_err(drop))
        {
            found.push(rel);
        }
    };
    add(ws.dir().canonicalize(".hands").map(|dir| dir.join("config.toml")));
    add(ws.dir().canonicalize(".hands/config.toml"));
    found
}

fn own_config(path: &RelPath, real: &RelPath) -> ToolError {
    let through = if path == real {
        String::new()
    } else {
        format!(" (it resolves to {} through a symlink)", real.display())
    };
    ToolError::model(format!(
        "{} is hands' own configuration{through}, which the tools never change: a setting there \
         decides what the tools may do. Nothing was written. The user can change hands' \
         configuration themselves; tell them which setting you need and why.",
        path.display()
    ))
}

/// Where `path` really is: its deepest existing ancestor canonicalized through the root handle
/// (which refuses symlinks leading outside), joined with the components that do not exist yet.
fn real_path(ws: &Workspace, path: &RelPath) -> Result<RelPath, ToolError> {
    let mut existing = path.parent();
    let mut rest: Vec<PathBuf> = vec![PathBuf::from(path.file_name().unwrap_or_default())];
    loop {
        match ws.dir().canonicalize(existing.for_open()) {
            Ok(real) => {
                let mut full = real;
                for part in rest.iter().rev() {
                    full.push(part);
                }
                return ws.resolve("path", &full.to_string_lossy());
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound && !existing.is_root() => {
                rest.push(PathBuf::from(existing.file_name().unwrap_or_default()));
                existing = existing.parent();
            }
            Err(err) => return Err(ws.io_error("written", path, &err)),
        }
    }
}

/// The parent folder of `path` as a handle.
pub fn parent_dir(ws: &Workspace, path: &RelPath) -> io::Result<Dir> {
    let parent = path.parent();
    if parent.is_root() { ws.dir().try_clone() } else { ws.dir().open_dir(parent.for_open()) }
}

/// Replace `path` with `bytes` atomically, creating missing parent folders, keeping an existing
/// file's mode. Returns the new file's metadata.
///
/// `cancel` is the call's token (timeout or abort): it is checked between chunks of the write and
/// once more right before the rename, so that a write whose call was already answered as stopped
/// never lands afterwards. A cancelled write discards its temp file and fails with [`Cancelled`].
pub fn write(
    ws: &Workspace,
    path: &RelPath,
    bytes: &[u8],
    cancel: &CancellationToken,
) -> io::Result<Metadata> {
    let stopped =
        || -> io::Result<()> { if cancel.is_cancelled() { Err(Cancelled.into()) } else { Ok(()) } };
    stopped()?;
    let parent = path.parent();
    if !parent.is_root() {
        ws.dir().create_dir_all(parent.for_open())?;
    }
    let dir = parent_dir(ws, path)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a file path has a name"))?;
    let old = match dir.symlink_metadata(name) {
        Ok(meta) if meta.is_file() => Some(meta),
        Ok(_) => None,
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(err),
    };
    let meta = replace_in(&dir, name, |file| {
        for chunk in bytes.chunks(CHUNK) {
            stopped()?;
            file.write_all(chunk)?;
        }
        if let Some(old) = &old {
            file.set_permissions(std::fs::Permissions::from_mode(old.permissions().mode()))?;
        }
        file.sync_all()?;
        let meta = Metadata::from_just_metadata(file.metadata()?);
        // The last moment to stop: after the rename the new content is there.
        stopped()?;
        Ok(meta)
    })?;
    sync_dir(&dir)?;
    sweep_stale_temps(&dir);
    Ok(meta)
}

/// How old a named temp must be before a later write removes it: a live writer holds its name
/// for microseconds (linkat, then rename); a name this old belongs to a write killed in between.
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(2);

/// Remove the temps of writes that were killed in the instant their temp had a name: entries of
/// `dir` named exactly `.hands-tmp-<16 hex>`, regular files with one link, whose last link change
/// (ctime: the linkat) is older than [`STALE_TEMP`]. Best effort; nothing else is touched.
fn sweep_stale_temps(dir: &Dir) {
    let Ok(entries) = dir.entries() else { return };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(hex) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX)) else { continue };
        if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let Ok(stat) = rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW) else { continue };
        let regular = rustix::fs::FileType::from_raw_mode(stat.st_mode).is_file();
        let changed = std::time::UNIX_EPOCH
            + std::time::Duration::from_secs(u64::try_from(stat.st_ctime).unwrap_or(0));
        let old = now.duration_since(changed).is_ok_and(|age| age > STALE_TEMP);
        if regular && stat.st_nlink == 1 && old {
            let _ = dir.remove_file(&name);
        }
    }
}

/// Replace the entry `name` of the folder `dir` in one rename: `fill` writes the new content
/// into a fresh temp file created in `dir` (see [`Temp`]), which is then renamed over `name`
/// within that same handle. Whatever `name` is (a file, or a symlink: the link itself is
/// replaced, never what it points to). On any error the temp file is removed and `name` is as
/// it was. No fsync: the caller syncs as it needs.
pub fn replace_in<T>(
    dir: &Dir,
    name: &OsStr,
    fill: impl FnOnce(&mut std::fs::File) -> io::Result<T>,
) -> io::Result<T> {
    let mut temp = Temp::create(dir)?;
    let result = fill(temp.file()).and_then(|value| temp.commit(dir, name).map(|()| value));
    if result.is_err() {
        temp.discard(dir);
    }
    result
}

/// Replace the entry `name` of the folder `dir` with a symlink to `target`, in one rename from
/// a fresh temp name (as [`replace_in`]: an existing link is replaced, never followed).
pub fn replace_with_symlink(dir: &Dir, name: &OsStr, target: &std::path::Path) -> io::Result<()> {
    let temp = fresh_name(|temp| rustix::fs::symlinkat(target, dir, temp))?;
    dir.rename(&temp, dir, name).inspect_err(|_| {
        let _ = dir.remove_file(&temp);
    })
}

/// Bytes written between two looks at the cancellation token.
const CHUNK: usize = 1024 * 1024;

/// The error of a write stopped by its call's cancellation (inside an `io::Error`).
#[derive(Debug, thiserror::Error)]
#[error("the write was stopped (timeout or abort) before it landed")]
pub struct Cancelled;

impl From<Cancelled> for io::Error {
    fn from(err: Cancelled) -> Self {
        io::Error::new(io::ErrorKind::Interrupted, err)
    }
}

/// The model-facing error of a failed [`write`] of `path` by `tool`: a cancelled write says that
/// nothing was written; anything else is the workspace's I/O message.
pub fn write_error(ws: &Workspace, tool: &str, path: &RelPath, err: &io::Error) -> ToolError {
    if err.get_ref().is_some_and(|inner| inner.is::<Cancelled>()) {
        return ToolError::model(format!(
            "{tool} was stopped (timeout or abort) before the write landed; nothing was written \
             to {}.",
            path.display()
        ));
    }
    ws.io_error("written", path, err)
}

/// The new content on its way to its name.
///
/// Preferably an anonymous `O_TMPFILE` inode: a process killed while writing it leaves nothing
/// behind. It gets a name only for the instant between `linkat` and `rename`. Where the file system
/// has no `O_TMPFILE`, a named temp file is used instead. Either way the name is a fresh random
/// [`temp_name`], never derived from the target's name (a long target name would overflow
/// NAME_MAX), and an existing file of that name is never touched: the link or create is retried
/// under another name. So only a name this write created is ever removed.
enum Temp {
    Anonymous(std::fs::File, Option<PathBuf>),
    Named(std::fs::File, PathBuf),
}

/// Names tried before giving up when every one is taken (practically never: 64 random bits).
const NAME_TRIES: usize = 16;

impl Temp {
    fn create(dir: &Dir) -> io::Result<Self> {
        let flags = OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC;
        match rustix::fs::openat(dir, ".", flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => return Ok(Self::Anonymous(std::fs::File::from(fd), None)),
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOSYS) => {}
            Err(err) => return Err(err.into()),
        }
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        for _ in 0..NAME_TRIES {
            let temp = temp_name();
            match dir.open_with(&temp, &options) {
                Ok(file) => return Ok(Self::Named(file.into_std(), temp)),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(err),
            }
        }
        Err(taken())
    }

    fn file(&mut self) -> &mut std::fs::File {
        match self {
            Self::Anonymous(file, _) | Self::Named(file, _) => file,
        }
    }

    /// Give the content its name, replacing the old file in one rename.
    fn commit(&mut self, dir: &Dir, name: &OsStr) -> io::Result<()> {
        match self {
            Self::Named(_, temp) => dir.rename(&*temp, dir, name),
            Self::Anonymous(file, linked) => {
                let temp = link(file, dir)?;
                *linked = Some(temp.clone());
                dir.rename(&temp, dir, name)
            }
        }
    }

    /// Remove the name the temp file got from this write, if any.
    fn discard(&self, dir: &Dir) {
        match self {
            Self::Named(_, temp) | Self::Anonymous(_, Some(temp)) => {
                let _ = dir.remove_file(temp);
            }
            Self::Anonymous(_, None) => {}
        }
    }
}

/// A fresh temp name, `.hands-tmp-<16 hex>`: a hash of a process-wide counter, the pid and the
/// time under a randomly keyed hasher, so that concurrent writers (threads or processes) and a
/// stale temp of a crashed write practically never collide; a collision only costs a retry.
fn temp_name() -> PathBuf {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    PathBuf::from(format!("{TEMP_PREFIX}{:016x}", hasher.finish()))
}

/// How every temp name starts.
const TEMP_PREFIX: &str = ".hands-tmp-";

fn taken() -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, "no free temp file name in the folder")
}

/// Link the anonymous `file` into `dir` under a fresh temp name, and return that name. A name
/// that exists is left alone and another one is tried.
fn link(file: &std::fs::File, dir: &Dir) -> io::Result<PathBuf> {
    fresh_name(|temp| match rustix::fs::linkat(file, "", dir, temp, AtFlags::EMPTY_PATH) {
        // Without CAP_DAC_READ_SEARCH, AT_EMPTY_PATH is refused: go through /proc instead.
        Err(Errno::NOENT | Errno::PERM) => {
            let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
            rustix::fs::linkat(rustix::fs::CWD, proc, dir, temp, AtFlags::SYMLINK_FOLLOW)
        }
        other => other,
    })
}

/// Create something under a fresh [`temp_name`] through `make`, and return that name. A name
/// that exists is left alone and another one is tried.
fn fresh_name(mut make: impl FnMut(&PathBuf) -> rustix::io::Result<()>) -> io::Result<PathBuf> {
    for _ in 0..NAME_TRIES {
        let temp = temp_name();
        match make(&temp) {
            Ok(()) => return Ok(temp),
            Err(Errno::EXIST) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Err(taken())
}

/// Make the rename durable: fsync the folder that holds the entry.
fn sync_dir(dir: &Dir) -> io::Result<()> {
    // The root handle may be an O_PATH descriptor, which cannot be fsynced: open the folder itself.
    let handle = dir.open_with(".", OpenOptions::new().read(true))?;
    handle.sync_all()
}

/// Whether `path` (a relative path through the handle) names a temp file of ours.
#[cfg(test)]
fn is_temp(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(TEMP_PREFIX))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn live() -> CancellationToken {
        CancellationToken::new()
    }

    fn ws() -> (tempfile::TempDir, Workspace) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::open(tmp.path()).unwrap();
        (tmp, ws)
    }

    #[test]
    fn writes_create_parents_and_keep_mode() {
        let (tmp, ws) = ws();
        let path = ws.resolve("path", "a/b/c.sh").unwrap();
        write(&ws, &path, b"one", &live()).unwrap();
        let real = tmp.path().join("a/b/c.sh");
        assert_eq!(std::fs::read(&real).unwrap(), b"one");
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        write(&ws, &path, b"two", &live()).unwrap();
        assert_eq!(std::fs::read(&real).unwrap(), b"two");
        assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o755);
        let leftovers: Vec<_> = std::fs::read_dir(tmp.path().join("a/b"))
            .unwrap()
            .filter(|e| is_temp(&e.as_ref().unwrap().path()))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn failed_write_leaves_no_temp() {
        let (tmp, ws) = ws();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        // The target is a directory: the rename fails, the temp must go.
        let path = ws.resolve("path", "d").unwrap();
        assert!(write(&ws, &path, b"x", &live()).is_err());
        let names: Vec<_> =
            std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("d")]);
    }

    /// Review finding 3: the temp name was `.NAME.hands-tmp`, so writing `x` removed a user's
    /// `.x.hands-tmp`; now a file the write did not create is never touched.
    #[test]
    fn review_finding_3_a_users_file_named_like_the_old_temp_survives() {
        let (tmp, ws) = ws();
        std::fs::write(tmp.path().join(".x.hands-tmp"), "precious").unwrap();
        let path = ws.resolve("path", "x").unwrap();
        write(&ws, &path, b"one", &live()).unwrap();
        write(&ws, &path, b"two", &live()).unwrap();
        assert_eq!(std::fs::read(tmp.path().join(".x.hands-tmp")).unwrap(), b"precious");
        assert_eq!(std::fs::read(tmp.path().join("x")).unwrap(), b"two");
        let mut names: Vec<_> =
            std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, [".x.hands-tmp", "x"]);
    }

    /// A write killed between naming its temp and the rename leaves the name; a later write in the
    /// folder removes it once it is older than a live writer's, and nothing else.
    #[test]
    fn a_stale_named_temp_is_removed_by_a_later_write_and_a_fresh_one_is_not() {
        let (tmp, ws) = ws();
        let stale = ".hands-tmp-00112233445566ff";
        std::fs::write(tmp.path().join(stale), "left by a killed write").unwrap();
        std::fs::write(tmp.path().join(".hands-tmp-not-hex-at-all!"), "a user's").unwrap();
        let path = ws.resolve("path", "x").unwrap();
        write(&ws, &path, b"one", &live()).unwrap();
        assert!(tmp.path().join(stale).exists(), "too fresh to be a killed write's");
        std::thread::sleep(STALE_TEMP + std::time::Duration::from_millis(200));
        write(&ws, &path, b"two", &live()).unwrap();
        let mut names: Vec<_> =
            std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, [".hands-tmp-not-hex-at-all!", "x"]);
    }

    /// Review finding 3: a temp name built from a 245–255-byte target name overflowed NAME_MAX.
    #[test]
    fn review_finding_3_names_up_to_name_max_can_be_written() {
        let (tmp, ws) = ws();
        for len in [245, 250, 255] {
            let name = "n".repeat(len);
            let path = ws.resolve("path", &name).unwrap();
            write(&ws, &path, b"one", &live()).unwrap();
            write(&ws, &path, b"two", &live()).unwrap();
            assert_eq!(std::fs::read(tmp.path().join(&name)).unwrap(), b"two");
        }
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 3);
    }

    #[test]
    fn replacing_a_symlink_replaces_the_link_never_its_target() {
        let (tmp, ws) = ws();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("t"), "precious").unwrap();
        std::os::unix::fs::symlink(outside.path().join("t"), tmp.path().join("x")).unwrap();
        replace_in(ws.dir(), OsStr::new("x"), |file| file.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read(outside.path().join("t")).unwrap(), b"precious");
        assert_eq!(std::fs::read(tmp.path().join("x")).unwrap(), b"new");
        std::os::unix::fs::symlink(outside.path().join("t"), tmp.path().join("y")).unwrap();
        replace_with_symlink(ws.dir(), OsStr::new("y"), std::path::Path::new("x")).unwrap();
        assert_eq!(std::fs::read_link(tmp.path().join("y")).unwrap(), PathBuf::from("x"));
        let failed = replace_in(ws.dir(), OsStr::new("x"), |_| -> io::Result<()> {
            Err(io::Error::other("stop"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(tmp.path().join("x")).unwrap(), b"new", "as it was");
        assert_eq!(std::fs::read(outside.path().join("t")).unwrap(), b"precious");
        let mut names: Vec<_> =
            std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["x", "y"], "no temp left");
    }

    #[test]
    fn temp_names_are_short_and_fresh() {
        let a = temp_name();
        let b = temp_name();
        assert_ne!(a, b);
        assert!(is_temp(&a), "{a:?}");
        assert_eq!(a.as_os_str().len(), TEMP_PREFIX.len() + 16);
    }

    #[test]
    fn git_is_protected_even_through_a_symlinked_folder() {
        let (tmp, ws) = ws();
        std::fs::create_dir_all(tmp.path().join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(".git", tmp.path().join("linkdir")).unwrap();
        let config = FsConfig::default();
        for p in [".git/hooks/x", "linkdir/hooks/x", "linkdir/new/deeper/x"] {
            let path = ws.resolve("path", p).unwrap();
            let err = check_writable(&ws, &path, &config, "write").unwrap_err().to_string();
            assert!(err.contains(".git"), "{p}: {err}");
        }
        let ok = ws.resolve("path", "src/x").unwrap();
        assert!(check_writable(&ws, &ok, &config, "write").is_ok());
        let config = FsConfig {
            writable_protected: vec![".git/info/exclude".into()],
            ..FsConfig::default()
        };
        let path = ws.resolve("path", ".git/info/exclude").unwrap();
        assert!(check_writable(&ws, &path, &config, "write").is_ok());
    }
}
