//! The confined workspace: every file operation of the fs tools goes through a directory handle on
//! the project root (cap-std, which resolves beneath the handle with `openat2(RESOLVE_BENEATH)` where
//! the kernel has it), never through a path string compared against the root.
//!
//! Flow: a model-supplied path is first normalised lexically (so that `..` past the root and
//! absolute paths outside it get a precise error), then opened relative to the root handle, which
//! refuses anything — a symlink, a symlinked parent, a swapped folder — that resolves outside.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptionsExt as _};
use hands_core::ToolError;

/// A project root opened as a directory handle.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: Arc<PathBuf>,
    canonical: Arc<PathBuf>,
    dir: Arc<Dir>,
    /// Device and inode of the directory the handle holds, as found when it was opened.
    identity: (u64, u64),
    /// When the root path was last checked to still name that directory.
    checked: Arc<std::sync::Mutex<std::time::Instant>>,
    /// Names never read, listed or searched here (none in an ordinary session).
    hidden: Option<Arc<crate::Hidden>>,
}

/// How often [`Workspace::of`] checks that the root path still names the held directory.
const RECHECK_PATH: std::time::Duration = std::time::Duration::from_millis(250);

/// A path inside the workspace, relative to the root, normalised (no `.`, no `..`). Empty for the
/// root itself (which is also the default).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelPath(PathBuf);

impl RelPath {
    /// A path the walker found under the root (normal components only, never `..`).
    pub(crate) fn from_walk(rel: &Path) -> Self {
        RelPath(rel.to_path_buf())
    }

    /// The relative path (empty for the root).
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// The path for cap-std calls: `.` for the root.
    pub fn for_open(&self) -> &Path {
        if self.0.as_os_str().is_empty() { Path::new(".") } else { &self.0 }
    }

    /// True for the root itself.
    pub fn is_root(&self) -> bool {
        self.0.as_os_str().is_empty()
    }

    /// How the model should see it: relative, `/`-separated, `.` for the root.
    pub fn display(&self) -> String {
        if self.is_root() { ".".into() } else { self.0.to_string_lossy().into_owned() }
    }

    /// The parent folder (the root's parent is the root).
    pub fn parent(&self) -> RelPath {
        RelPath(self.0.parent().map(Path::to_path_buf).unwrap_or_default())
    }

    /// The last component.
    pub fn file_name(&self) -> Option<&std::ffi::OsStr> {
        self.0.file_name()
    }

    /// A child of this path.
    pub fn join(&self, name: impl AsRef<Path>) -> RelPath {
        RelPath(self.0.join(name))
    }

    /// True when a component is `.git` (any case: case-insensitive file systems exist).
    pub fn is_under_git(&self) -> bool {
        self.0.components().any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
    }

    /// True for hands' own project configuration, `.hands/config.toml` (any case, as for `.git`).
    pub fn is_hands_config(&self) -> bool {
        let mut parts = self.0.components().map(|c| c.as_os_str());
        matches!(
            (parts.next(), parts.next(), parts.next()),
            (Some(dir), Some(file), None)
                if dir.eq_ignore_ascii_case(".hands") && file.eq_ignore_ascii_case("config.toml")
        )
    }
}

impl Workspace {
    /// Open `root` as the workspace.
    pub fn open(root: &Path) -> io::Result<Self> {
        use cap_std::fs::MetadataExt as _;
        let dir = Dir::open_ambient_dir(root, ambient_authority())?;
        let canonical = std::fs::canonicalize(root)?;
        let held = dir.dir_metadata()?;
        Ok(Self {
            root: Arc::new(root.to_path_buf()),
            canonical: Arc::new(canonical),
            dir: Arc::new(dir),
            identity: (held.dev(), held.ino()),
            checked: Arc::new(std::sync::Mutex::new(std::time::Instant::now())),
            hidden: None,
        })
    }

    /// The same workspace hiding what `hidden` names (see [`crate::Hidden`]).
    #[must_use]
    pub fn with_hidden(mut self, hidden: Option<Arc<crate::Hidden>>) -> Self {
        self.hidden = hidden;
        self
    }

    /// What this workspace hides, if anything.
    pub fn hidden(&self) -> Option<&Arc<crate::Hidden>> {
        self.hidden.as_ref()
    }

    /// The workspace of the call's session, opened once per session and reused while its handle
    /// is still the directory at the root path: same device and inode, and not deleted (a root
    /// removed and re-created — a fresh clone at the same path — is opened again).
    pub fn of(ctx: &hands_core::Context) -> Result<Self, ToolError> {
        let cache = ctx.session().extension::<Cached>();
        let mut slot = cache.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(ws) = slot.as_ref()
            && ws.root.as_path() == ctx.root()
            && ws.still_at_root()
        {
            return Ok(ws.clone());
        }
        let ws = Self::for_root(ctx.root())?.with_hidden(crate::Hidden::of(ctx.session()));
        *slot = Some(ws.clone());
        Ok(ws)
    }

    /// True while the handle is the live directory found at the root path. Every call checks
    /// that the held directory was not deleted (an `fstat` of the handle: cheap); whether the root
    /// path still names it (a `stat` of the path, which walks it: as dear as opening the file
    /// the tool wants) is checked at most every [`RECHECK_PATH`] — a root moved aside and
    /// replaced is noticed within that time, a root deleted (and re-created) at once.
    fn still_at_root(&self) -> bool {
        use cap_std::fs::MetadataExt as _;
        use std::os::unix::fs::MetadataExt as _;
        if !self.dir.dir_metadata().is_ok_and(|held| held.nlink() > 0) {
            return false;
        }
        let mut checked = self.checked.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if checked.elapsed() < RECHECK_PATH {
            return true;
        }
        let same =
            std::fs::metadata(&*self.root).is_ok_and(|now| (now.dev(), now.ino()) == self.identity);
        if same {
            *checked = std::time::Instant::now();
        }
        same
    }

    /// Open the root of `ctx`, as a model-facing error if that fails.
    pub fn for_root(root: &Path) -> Result<Self, ToolError> {
        Self::open(root).map_err(|err| {
            ToolError::Fatal(format!("cannot open the project root {}: {err}", root.display()))
        })
    }

    /// The root as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root's directory handle.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Normalise a model-supplied `path` (argument `field`) to a path relative to the root.
    ///
    /// Refuses absolute paths outside the root and `..` that climbs above it, with a message that
    /// says what is allowed. Symlinks are not looked at here: opening through [`Workspace::dir`]
    /// refuses those that lead outside.
    pub fn resolve(&self, field: &str, path: &str) -> Result<RelPath, ToolError> {
        if path.contains('\0') {
            return Err(ToolError::model(format!(
                "`{field}` contains a NUL byte; give a plain path."
            )));
        }
        let raw = Path::new(path);
        let relative: &Path = if raw.is_absolute() {
            match raw.strip_prefix(&*self.canonical).or_else(|_| raw.strip_prefix(&*self.root)) {
                Ok(rest) => rest,
                Err(_) => return Err(self.outside(field, path)),
            }
        } else {
            raw
        };
        let mut out = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => out.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !out.pop() {
                        return Err(self.outside(field, path));
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(self.outside(field, path)),
            }
        }
        if let Some(hidden) = &self.hidden {
            // The path as written, and where its symlinks lead (inside the root: a link that
            // leads outside fails the open later, with its own error).
            let target = self.dir.canonicalize(RelPath(out.clone()).for_open()).ok();
            if hidden.hides(&out) || target.is_some_and(|t| hidden.hides(&t)) {
                return Err(hidden.refusal(path));
            }
        }
        Ok(RelPath(out))
    }

    /// Open `path` for reading through the root handle. Only regular files (and folders, so that
    /// callers can say "that is a folder") are opened: a named pipe would block a read forever, so
    /// the open does not wait (`O_NONBLOCK`) and anything else is refused.
    pub fn open_read(&self, path: &RelPath) -> io::Result<cap_std::fs::File> {
        self.open_read_with_metadata(path).map(|(file, _)| file)
    }

    /// [`Self::open_read`], also returning the opened file's metadata (saving callers a second
    /// `statx`).
    pub fn open_read_with_metadata(
        &self,
        path: &RelPath,
    ) -> io::Result<(cap_std::fs::File, cap_std::fs::Metadata)> {
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true);
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
        let file = self.dir.open_with(path.for_open(), &options)?;
        let meta = file.metadata()?;
        let kind = meta.file_type();
        if kind.is_file() || kind.is_dir() {
            Ok((file, meta))
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is not a regular file (a named pipe, socket or device)",
            ))
        }
    }

    /// Open the folder `path` beneath the root without following a symlink at any component:
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has it, else one
    /// `openat(O_NOFOLLOW | O_DIRECTORY)` per component. A symlink on the way fails with
    /// `ELOOP` (raw OS error 40), checked at the moment of the open: a folder swapped for a link
    /// after any earlier look is refused all the same. For writers that must never reach
    /// anything through a link, even one that stays inside the root (a checkpoint restore).
    pub fn open_dir_nofollow(&self, path: &RelPath) -> io::Result<Dir> {
        open_beneath_nofollow(&self.dir, &path.0, true)
    }

    fn outside(&self, field: &str, path: &str) -> ToolError {
        ToolError::model(format!(
            "`{field}` {path:?} is outside the project root {}. Use a path relative to the root \
             (or an absolute path inside it).",
            self.root.display()
        ))
    }

    /// A model-facing error for an I/O failure on `path` while doing `action` ("read", "write", …).
    pub fn io_error(&self, action: &str, path: &RelPath, err: &io::Error) -> ToolError {
        let shown = path.display();
        match err.kind() {
            io::ErrorKind::NotFound => ToolError::model(format!(
                "{shown} does not exist. Check the path with glob or list_files."
            )),
            io::ErrorKind::PermissionDenied if escapes(err) => ToolError::model(format!(
                "{shown} resolves outside the project root (through a symlink or `..`), so it \
                 cannot be {action}. Only files inside {} are reachable.",
                self.root.display()
            )),
            io::ErrorKind::PermissionDenied => {
                ToolError::model(format!("{shown} cannot be {action}: permission denied."))
            }
            io::ErrorKind::IsADirectory => ToolError::model(format!(
                "{shown} is a directory. Use list_files or glob to see what it holds."
            )),
            io::ErrorKind::NotADirectory => ToolError::model(format!(
                "A parent of {shown} is a file, not a directory. Check the path with list_files."
            )),
            _ if err.raw_os_error() == Some(40) => ToolError::model(format!(
                "{shown} goes through a symlink loop or a symlink that leads outside the project \
                 root, so it cannot be {action}."
            )),
            _ => ToolError::model(format!("{shown} cannot be {action}: {err}.")),
        }
    }
}

/// The folder `path` (plain components only) beneath `dir`, as an `O_PATH` handle, no symlink
/// followed (see [`Workspace::open_dir_nofollow`]); `openat2` is tried first when `fast`.
fn open_beneath_nofollow(dir: &Dir, path: &Path, fast: bool) -> io::Result<Dir> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;
    if !path.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a plain relative path"));
    }
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let handle = |fd: rustix::fd::OwnedFd| Dir::from_std_file(std::fs::File::from(fd));
    if path.as_os_str().is_empty() {
        return dir.try_clone();
    }
    if fast {
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        // Without O_NOFOLLOW, which would open a final link itself (ENOTDIR): RESOLVE_NO_SYMLINKS
        // refuses a link at every component, the last one included, with ELOOP.
        match rustix::fs::openat2(dir, path, flags - OFlags::NOFOLLOW, Mode::empty(), how) {
            Ok(fd) => return Ok(handle(fd)),
            // No openat2 (old kernel, seccomp) or a rename racing it: one component at a time.
            Err(Errno::NOSYS | Errno::PERM | Errno::INVAL | Errno::AGAIN) => {}
            Err(err) => return Err(err.into()),
        }
    }
    let mut at = dir.try_clone()?;
    for part in path.components() {
        at = match rustix::fs::openat(&at, part.as_os_str(), flags, Mode::empty()) {
            Ok(fd) => handle(fd),
            // O_PATH | O_NOFOLLOW opens a link itself, which O_DIRECTORY then refuses: say "link".
            Err(Errno::NOTDIR)
                if at.symlink_metadata(part).is_ok_and(|m| m.file_type().is_symlink()) =>
            {
                return Err(Errno::LOOP.into());
            }
            Err(err) => return Err(err.into()),
        };
    }
    Ok(at)
}

/// A session's opened workspace.
#[derive(Default)]
struct Cached(std::sync::Mutex<Option<Workspace>>);

/// cap-std reports an escape as PermissionDenied with this text; EXDEV comes from openat2.
fn escapes(err: &io::Error) -> bool {
    err.raw_os_error() == Some(18) || err.to_string().contains("outside of the filesystem")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::open(tmp.path()).unwrap();
        (tmp, ws)
    }

    #[test]
    fn relative_paths_normalise() {
        let (_tmp, ws) = ws();
        assert_eq!(ws.resolve("path", "a/./b/../c").unwrap().display(), "a/c");
        assert!(ws.resolve("path", "").unwrap().is_root());
        assert!(ws.resolve("path", ".").unwrap().is_root());
        assert!(ws.resolve("path", "a/..").unwrap().is_root());
    }

    #[test]
    fn escapes_are_refused_lexically() {
        let (tmp, ws) = ws();
        for bad in ["..", "../x", "a/../../x", "/etc/passwd", "/proc/self/root/etc/passwd"] {
            let err = ws.resolve("path", bad).unwrap_err().to_string();
            assert!(err.contains("outside the project root"), "{bad}: {err}");
        }
        let sibling = format!("{}-evil/x", tmp.path().display());
        assert!(ws.resolve("path", &sibling).is_err());
    }

    #[test]
    fn absolute_inside_is_accepted() {
        let (tmp, ws) = ws();
        let inside = tmp.path().join("src/lib.rs");
        assert_eq!(ws.resolve("path", inside.to_str().unwrap()).unwrap().display(), "src/lib.rs");
        let canonical = std::fs::canonicalize(tmp.path()).unwrap().join("x");
        assert_eq!(ws.resolve("path", canonical.to_str().unwrap()).unwrap().display(), "x");
    }

    #[test]
    fn no_symlink_is_followed_at_any_component_by_either_way_of_opening() {
        let (tmp, ws) = ws();
        std::fs::create_dir_all(tmp.path().join("a/b/c")).unwrap();
        std::fs::create_dir_all(tmp.path().join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink("a", tmp.path().join("la")).unwrap();
        std::os::unix::fs::symlink("b", tmp.path().join("a/lb")).unwrap();
        std::os::unix::fs::symlink(".git/hooks", tmp.path().join("hooks")).unwrap();
        std::os::unix::fs::symlink("/etc", tmp.path().join("a/etc")).unwrap();
        std::fs::write(tmp.path().join("a/file"), "x").unwrap();
        for fast in [true, false] {
            for good in ["", "a", "a/b", "a/b/c"] {
                let dir = open_beneath_nofollow(ws.dir(), Path::new(good), fast).unwrap();
                assert!(dir.dir_metadata().unwrap().is_dir(), "{good}");
            }
            for bad in ["la", "la/b", "a/lb", "a/lb/c", "hooks", "a/etc"] {
                let err = open_beneath_nofollow(ws.dir(), Path::new(bad), fast).unwrap_err();
                assert_eq!(err.raw_os_error(), Some(40), "{bad} (fast {fast}): {err}");
            }
            for bad in ["..", "a/../..", "/etc", "./a"] {
                assert!(open_beneath_nofollow(ws.dir(), Path::new(bad), fast).is_err(), "{bad}");
            }
            let err = open_beneath_nofollow(ws.dir(), Path::new("a/file"), fast).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(20), "a file is not a folder");
        }
    }

    #[test]
    fn git_components_are_detected() {
        let (_tmp, ws) = ws();
        assert!(ws.resolve("path", ".git/hooks/pre-commit").unwrap().is_under_git());
        assert!(ws.resolve("path", "sub/.GIT/config").unwrap().is_under_git());
        assert!(!ws.resolve("path", ".github/workflows/ci.yml").unwrap().is_under_git());
    }
}
