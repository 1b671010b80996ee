//! The walker shared by glob and grep: where a search starts (confined through the root handle),
//! which patterns are allowed, and a parallel walk over ripgrep's `ignore` crate that gives each
//! thread its own state and hands all of them back at the end, so that results merge without locks.
//!
//! The walk always starts at the root (with no ignore files read above it) and is narrowed to the
//! `path` subtree by `filter_entry`, so that the root's `.gitignore` applies to a subfolder search too.
//! A `path` that is itself ignored (or lies in an ignored folder) is still searched, as rg does: the
//! `ignore` crate applies ignore rules before `filter_entry`, so when `filter_entry` never saw the
//! start folder, the walk is run again rooted at it.
//!
//! The `ignore` crate opens every folder's `.gitignore`, `.ignore` and `.git/info/exclude` with a
//! plain blocking open, so a named pipe there (or a device, through a symlink) would hang the walk
//! thread until the call's timeout and leave it blocked. Each folder's ignore files are therefore
//! checked with `stat` (which never blocks) before the walk enters it: a folder whose ignore file
//! is not a regular file is not entered, and the start folder's own such file turns that kind
//! of ignore file off for the walk; both are reported ([`note_skipped`]).

use std::ffi::OsStr;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use globset::{GlobBuilder, GlobMatcher};
use hands_core::{CancellationToken, ToolError};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

use crate::{FsConfig, RelPath, Workspace};

/// Where a search starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Start {
    /// A folder (the root when empty): walk it.
    Dir(RelPath),
    /// A single file: search only it.
    File(RelPath),
}

/// Resolve the `path` argument (`field`) and check it through the root handle: a path that leads
/// outside the root (by `..`, an absolute path, or a symlink on the way) is refused, and a symlink
/// as the last component is refused too, because walks never follow symlinks.
pub(crate) fn start(ws: &Workspace, field: &str, path: Option<&str>) -> Result<Start, ToolError> {
    let rel = ws.resolve(field, path.unwrap_or("."))?;
    if rel.is_root() {
        return Ok(Start::Dir(rel));
    }
    let link =
        ws.dir().symlink_metadata(rel.for_open()).map_err(|e| ws.io_error("searched", &rel, &e))?;
    if link.file_type().is_symlink() {
        // Following gives the precise error when the link leads outside.
        ws.dir().metadata(rel.for_open()).map_err(|e| ws.io_error("searched", &rel, &e))?;
        let target = ws
            .dir()
            .read_link_contents(rel.for_open())
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into());
        return Err(ToolError::model(format!(
            "`{field}` {} is a symlink (-> {target}); symlinks are not followed. Give the path of \
             its target inside the project instead.",
            rel.display()
        )));
    }
    if link.is_dir() {
        // Opening the folder through the handle is the confinement check for every component.
        ws.dir().open_dir(rel.for_open()).map_err(|e| ws.io_error("searched", &rel, &e))?;
        Ok(Start::Dir(rel))
    } else {
        Ok(Start::File(rel))
    }
}

/// Refuse a glob (argument `field`) that is absolute or climbs with `..`: patterns are matched
/// against paths inside the search folder and could never match outside it.
pub(crate) fn check_pattern(field: &str, pattern: &str) -> Result<(), ToolError> {
    if pattern.trim().is_empty() {
        return Err(ToolError::model(format!("`{field}` is empty; give a glob such as `*.rs`.")));
    }
    let path = Path::new(pattern);
    let absolute = path.has_root() || pattern.starts_with('/') || pattern.starts_with('\\');
    let climbs = path.components().any(|c| matches!(c, Component::ParentDir))
        || pattern.split(['/', '\\']).any(|part| part == "..");
    if absolute || climbs {
        return Err(ToolError::model(format!(
            "`{field}` {pattern:?} is absolute or contains `..`, which would reach outside the project root; patterns match paths inside the \
             search folder. Use a relative pattern (e.g. `**/*.rs`) and set `path` to choose the \
             folder."
        )));
    }
    Ok(())
}

/// A file glob as glob and grep's `include` use it: without `/` it matches the file name at any
/// depth (like `rg -g`); with `/` it matches the path relative to the search folder.
#[derive(Debug, Clone)]
pub(crate) struct FileGlob {
    matcher: GlobMatcher,
    by_name: bool,
}

impl FileGlob {
    /// Compile `pattern` (argument `field`), refusing absolute or climbing ones.
    pub(crate) fn new(field: &str, pattern: &str) -> Result<Self, ToolError> {
        check_pattern(field, pattern)?;
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let by_name = !pattern.contains('/');
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                ToolError::model(format!("`{field}` {pattern:?} is not a valid glob: {e}."))
            })?;
        Ok(Self { matcher: glob.compile_matcher(), by_name })
    }

    /// True when the file at `rel` (relative to the search folder) matches.
    pub(crate) fn is_match(&self, rel: &Path) -> bool {
        if self.by_name {
            rel.file_name().is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(rel)
        }
    }
}

/// How a walk is set up.
#[derive(Debug, Clone)]
pub(crate) struct WalkSpec {
    /// Folder to walk, relative to the root.
    pub start: RelPath,
    /// Also walk what .gitignore/.ignore exclude.
    pub include_ignored: bool,
    /// Names never entered or visited (the workspace's [`crate::Hidden`] rules).
    pub hidden: Option<Arc<crate::Hidden>>,
}

/// The number of walker threads for `config`.
pub(crate) fn threads(config: &FsConfig) -> usize {
    if config.threads > 0 {
        config.threads
    } else {
        std::thread::available_parallelism().map_or(2, usize::from).min(12)
    }
}

/// Walk `spec` under `root` in parallel (see [`run`] for `init` and `visit`); entries' paths are
/// `root` joined with their path from the root either way. When the start folder was pruned by
/// ignore rules, the walk is repeated rooted at the start folder, where only the ignore files from
/// there down apply (and `config.excluded_dirs` are still never entered below it).
/// Also returns what was skipped because an ignore file is not a regular file, one line each.
pub(crate) fn run_spec<S, I, V>(
    root: &Path,
    spec: &WalkSpec,
    config: &FsConfig,
    cancel: &CancellationToken,
    init: I,
    visit: V,
) -> (Vec<S>, Vec<String>)
where
    S: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, DirEntry) -> WalkState + Sync,
{
    let saw_start = Arc::new(AtomicBool::new(false));
    let skipped = Arc::new(Mutex::new(Vec::new()));
    let walk = builder(root, root, spec, config, &saw_start, &skipped);
    let mut states = run(&walk, cancel, &init, &visit);
    let excluded = spec
        .start
        .as_path()
        .components()
        .any(|c| is_excluded(&config.excluded_dirs, c.as_os_str()));
    let pruned = !spec.start.is_root() && !saw_start.load(Ordering::Relaxed);
    if pruned && !spec.include_ignored && !excluded && !cancel.is_cancelled() {
        let base = root.join(spec.start.as_path());
        let here = WalkSpec {
            start: RelPath::default(),
            include_ignored: false,
            hidden: spec.hidden.clone(),
        };
        let walk = builder(&base, &base, &here, config, &saw_start, &skipped);
        states.extend(run(&walk, cancel, &init, &visit));
    }
    let mut skipped = std::mem::take(&mut *lock(&skipped));
    skipped.sort();
    skipped.dedup();
    (states, skipped)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Which of a folder's ignore files the walk reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IgnoreKind {
    /// `.gitignore`
    Git,
    /// `.ignore`
    Ignore,
    /// `.git/info/exclude` (or a worktree's: `.git` is a file naming the git folder, whose
    /// `commondir` names the shared one).
    Exclude,
}

/// The ignore files of folder `dir` that exist but are not regular files (after symlinks), by
/// kind and path: the `ignore` crate would block opening a named pipe, or read a device forever.
/// Only `stat` is used, and the one-line `.git` and `commondir` files read are regular files.
fn irregular_ignore_files(dir: &Path) -> Vec<(IgnoreKind, std::path::PathBuf)> {
    let irregular = |path: &Path| std::fs::metadata(path).is_ok_and(|m| !m.is_file());
    let mut out = Vec::new();
    for (kind, name) in [(IgnoreKind::Git, ".gitignore"), (IgnoreKind::Ignore, ".ignore")] {
        let path = dir.join(name);
        if irregular(&path) {
            out.push((kind, path));
        }
    }
    let dot_git = dir.join(".git");
    let Ok(meta) = std::fs::metadata(&dot_git) else { return out };
    let common = if meta.is_file() {
        // A worktree: `gitdir: PATH`, and PATH/commondir names the shared git folder.
        let first_line = |path: &Path| {
            std::fs::read_to_string(path).ok().and_then(|t| t.lines().next().map(str::to_owned))
        };
        let Some(git_dir) = first_line(&dot_git)
            .and_then(|l| l.strip_prefix("gitdir: ").map(std::path::PathBuf::from))
        else {
            return out;
        };
        let commondir = git_dir.join("commondir");
        if irregular(&commondir) {
            out.push((IgnoreKind::Exclude, commondir));
            return out;
        }
        if !std::fs::metadata(&commondir).is_ok_and(|m| m.is_file()) {
            return out;
        }
        match first_line(&commondir) {
            Some(line) if line.starts_with('.') => git_dir.join(line),
            Some(line) => std::path::PathBuf::from(line),
            None => return out,
        }
    } else {
        dot_git
    };
    let exclude = common.join("info").join("exclude");
    if irregular(&exclude) {
        out.push((IgnoreKind::Exclude, exclude));
    }
    out
}

/// `path` as the model sees it: relative to `root` when under it.
fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned()
}

/// `output` with a last paragraph on what the walk skipped, when it skipped anything.
pub(crate) fn note_skipped(
    mut output: hands_core::ToolOutput,
    skipped: &[String],
) -> hands_core::ToolOutput {
    if !skipped.is_empty() {
        let mut text = String::from(
            "Skipped: ignore files that are not regular files (a named pipe, socket or device \
             would block the search):",
        );
        for line in skipped {
            text.push_str("\n- ");
            text.push_str(line);
        }
        output.content.push(hands_core::Content::Text { text });
    }
    output
}

/// A walker from `from` over `spec` (whose start is relative to `root`): hidden files included,
/// symlinks never followed, ignore files honoured without a git repository (unless
/// `include_ignored`), and `config.excluded_dirs` never entered. `saw_start` is set when
/// `filter_entry` meets the start folder, which it does unless ignore rules pruned it first.
fn builder(
    from: &Path,
    root: &Path,
    spec: &WalkSpec,
    config: &FsConfig,
    saw_start: &Arc<AtomicBool>,
    skipped: &Arc<Mutex<Vec<String>>>,
) -> WalkBuilder {
    let mut builder = WalkBuilder::new(from);
    builder
        .hidden(false)
        .follow_links(false)
        .parents(false)
        .git_global(false)
        .require_git(false)
        .threads(threads(config));
    let check_ignore_files = !spec.include_ignored;
    if spec.include_ignored {
        builder.ignore(false).git_ignore(false).git_exclude(false);
    } else {
        // The walk's own folder is not offered to `filter_entry`: a bad ignore file there turns
        // its kind off for the whole walk.
        for (kind, path) in irregular_ignore_files(from) {
            match kind {
                IgnoreKind::Git => builder.git_ignore(false),
                IgnoreKind::Ignore => builder.ignore(false),
                IgnoreKind::Exclude => builder.git_exclude(false),
            };
            lock(skipped).push(format!(
                "{} is not a regular file: it was not read, and no file of its kind was honoured \
                 in this search",
                shown(&path, root)
            ));
        }
    }
    let excluded: Arc<[String]> = config.excluded_dirs.clone().into();
    let root = root.to_path_buf();
    let start = spec.start.clone();
    let saw_start = Arc::clone(saw_start);
    let skipped = Arc::clone(skipped);
    let hidden = spec.hidden.clone();
    builder.filter_entry(move |entry| {
        if entry.depth() == 0 {
            return true;
        }
        if hidden.as_ref().is_some_and(|h| h.hides_name(entry.file_name())) {
            return false;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if is_dir && is_excluded(&excluded, entry.file_name()) {
            return false;
        }
        if is_dir && check_ignore_files {
            let bad = irregular_ignore_files(entry.path());
            if let Some((_, path)) = bad.first() {
                lock(&skipped).push(format!(
                    "{} is not a regular file: its folder {} was not searched",
                    shown(path, &root),
                    shown(entry.path(), &root)
                ));
                return false;
            }
        }
        if start.is_root() {
            return true;
        }
        let Ok(rel) = entry.path().strip_prefix(&root) else { return false };
        if rel == start.as_path() {
            saw_start.store(true, Ordering::Relaxed);
        }
        rel.starts_with(start.as_path()) || (is_dir && start.as_path().starts_with(rel))
    });
    builder
}

/// True when `name` is one of the always-excluded folder names.
pub(crate) fn is_excluded(excluded: &[String], name: &OsStr) -> bool {
    excluded.iter().any(|x| OsStr::new(x) == name)
}

/// Run `builder` in parallel: each thread gets a state from `init`, `visit` is called for every
/// entry (errors are skipped, as rg does with a warning), and the states come back at the end. The
/// walk stops early when `cancel` fires.
fn run<S, I, V>(builder: &WalkBuilder, cancel: &CancellationToken, init: I, visit: V) -> Vec<S>
where
    S: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, DirEntry) -> WalkState + Sync,
{
    let out = Mutex::new(Vec::new());
    let mut factory = Factory { init: &init, visit: &visit, cancel, out: &out };
    builder.build_parallel().visit(&mut factory);
    out.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Factory<'a, S, I, V> {
    init: &'a I,
    visit: &'a V,
    cancel: &'a CancellationToken,
    out: &'a Mutex<Vec<S>>,
}

impl<'s, S, I, V> ParallelVisitorBuilder<'s> for Factory<'s, S, I, V>
where
    S: Send + 's,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, DirEntry) -> WalkState + Sync,
{
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            state: Some((self.init)()),
            visit: self.visit,
            cancel: self.cancel,
            out: self.out,
        })
    }
}

struct Visitor<'a, S: Send, V> {
    state: Option<S>,
    visit: &'a V,
    cancel: &'a CancellationToken,
    out: &'a Mutex<Vec<S>>,
}

impl<S: Send, V> ParallelVisitor for Visitor<'_, S, V>
where
    V: Fn(&mut S, DirEntry) -> WalkState + Sync,
{
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.cancel.is_cancelled() {
            return WalkState::Quit;
        }
        match (entry, self.state.as_mut()) {
            (Ok(entry), Some(state)) => (self.visit)(state, entry),
            _ => WalkState::Continue,
        }
    }
}

impl<S: Send, V> Drop for Visitor<'_, S, V> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            let mut out = self.out.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            out.push(state);
        }
    }
}

/// The error a walk gives when its call was cancelled (timeout or abort).
pub(crate) fn cancelled(tool: &str) -> ToolError {
    ToolError::model(format!(
        "{tool} was stopped (timeout or abort) before it finished. Narrow the search with `path` \
         or a more specific pattern."
    ))
}

/// `path` relative to `base`, `/`-separated, as the model sees it.
pub(crate) fn relative(path: &Path, base: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    rel.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_that_climb_or_are_absolute_are_refused() {
        for bad in ["../*.rs", "/etc/*", "a/../../x", "..", "src/../../*"] {
            let err = check_pattern("pattern", bad).unwrap_err().to_string();
            assert!(err.contains("absolute or contains `..`"), "{bad}: {err}");
        }
        for good in ["*.rs", "**/*.rs", "src/**/*.{ts,tsx}", "..foo", "a..b/*"] {
            assert!(check_pattern("pattern", good).is_ok(), "{good}");
        }
        assert!(check_pattern("pattern", " ").is_err());
    }

    #[test]
    fn globs_without_slash_match_names_at_any_depth() {
        let g = FileGlob::new("pattern", "*.{ts,tsx}").unwrap();
        assert!(g.is_match(Path::new("a/b/c.tsx")));
        assert!(g.is_match(Path::new("c.ts")));
        assert!(!g.is_match(Path::new("c.rs")));
        let g = FileGlob::new("pattern", "src/*.rs").unwrap();
        assert!(g.is_match(Path::new("src/lib.rs")));
        assert!(!g.is_match(Path::new("src/a/lib.rs")), "`*` must not cross `/`");
        assert!(!g.is_match(Path::new("x/src/lib.rs")));
        let g = FileGlob::new("pattern", "**/*.rs").unwrap();
        assert!(g.is_match(Path::new("lib.rs")));
        assert!(g.is_match(Path::new("a/b/lib.rs")));
    }

    #[test]
    fn invalid_glob_is_a_model_error() {
        let err = FileGlob::new("include", "a[").unwrap_err().to_string();
        assert!(err.contains("not a valid glob"), "{err}");
    }

    #[test]
    fn start_classifies_and_confines() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(tmp.path().join("d/f.txt"), "x").unwrap();
        let ws = Workspace::open(tmp.path()).unwrap();
        assert!(matches!(start(&ws, "path", None).unwrap(), Start::Dir(r) if r.is_root()));
        assert!(matches!(start(&ws, "path", Some("d")).unwrap(), Start::Dir(_)));
        assert!(matches!(start(&ws, "path", Some("d/f.txt")).unwrap(), Start::File(_)));
        assert!(start(&ws, "path", Some("missing")).is_err());
        assert!(start(&ws, "path", Some("../x")).is_err());
    }
}
