//! Which folders may be a session's root. A root is where tools read and write (and what a
//! sandbox binds read-write), so `/`, the home folder and any folder that holds hands' own state,
//! configuration or data are refused: a session there could rewrite hands' configuration, read
//! other sessions' transcripts or, in a sandbox, write any file of the user. A command started in
//! the home folder or at `/` is told which projects below the home folder to pass instead.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Folders hands keeps its own files in, as the environment names them: the state folder
/// (`$HANDS_STATE_DIR`, `$XDG_STATE_HOME/hands`, `~/.local/state/hands`), the configuration
/// (`$XDG_CONFIG_HOME/hands`, `~/.config/hands`) and the data (`$XDG_DATA_HOME/hands`,
/// `~/.local/share/hands`, where the session store lives by default).
pub fn hands_dirs() -> Vec<PathBuf> {
    hands_dirs::all()
}

/// Projects a refusal of the home folder or `/` suggests at most.
pub const MAX_SUGGESTIONS: usize = 5;

/// How deep below the home folder suggestions are looked for (`~/app`, `~/src/app`).
pub const SCAN_DEPTH: usize = 2;

/// Folder entries read at most while looking, so that a huge home folder stays quick.
pub const MAX_SCANNED: usize = 2_000;

/// What makes a folder a project, for the suggestions.
pub const PROJECT_MARKERS: &[&str] =
    &[".git", "package.json", "Cargo.toml", "pyproject.toml", "go.mod"];

/// The advice of a refusal when no project is suggested.
const PLAIN_ADVICE: &str = "pick the project's own folder (e.g. --root ~/src/app) instead";

/// Why a folder cannot be a root.
enum Refusal {
    FileSystemRoot,
    Home,
    Holds(PathBuf),
}

impl Refusal {
    fn what(&self) -> String {
        match self {
            Self::FileSystemRoot => "the file system root".into(),
            Self::Home => "the home folder".into(),
            Self::Holds(dir) => format!("or holds hands' own folder {}", dir.display()),
        }
    }
}

/// `Err` with a message saying what to do when `root` is `/`, the home folder, or a folder that
/// holds (is or contains) one of [`hands_dirs`] or of `also` (e.g. a configured store's folder).
/// Paths are compared canonical (symlinks resolved); a protected folder that does not exist yet
/// is compared through its nearest existing ancestor.
pub fn check_root(root: &Path, also: &[PathBuf]) -> Result<(), String> {
    match refusal(root, also) {
        None => Ok(()),
        Some(why) => Err(refused(root, &why, PLAIN_ADVICE)),
    }
}

/// [`check_root`] for a command started on `root` (`hands serve`, `run`, `chat`, `mcp`; `root` is
/// the current folder without `--root`): refusing the home folder or `/`, the message lists the
/// projects found below the home folder ([`projects_below`]) as `--root` lines to pass instead.
pub fn check_start_root(root: &Path, also: &[PathBuf]) -> Result<(), String> {
    let Some(why) = refusal(root, also) else { return Ok(()) };
    let home = home();
    let found = match (&why, &home) {
        (Refusal::FileSystemRoot | Refusal::Home, Some(home)) => projects_below(home, also),
        _ => Vec::new(),
    };
    let Some(home) = home.filter(|_| !found.is_empty()) else {
        return Err(refused(root, &why, PLAIN_ADVICE));
    };
    let lines: Vec<String> =
        found.iter().map(|project| format!("  --root {}", shown(project, &home))).collect();
    let advice = format!(
        "pick the project's own folder instead, e.g. one of these (most recently changed \
         first):\n{}",
        lines.join("\n")
    );
    Err(refused(root, &why, &advice))
}

fn refused(root: &Path, why: &Refusal, advice: &str) -> String {
    format!(
        "the root {} cannot be a session root: it is {}; a session may read and write everything \
         under its root, so {advice}",
        root.display(),
        why.what()
    )
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

fn refusal(root: &Path, also: &[PathBuf]) -> Option<Refusal> {
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    if canonical.parent().is_none() {
        return Some(Refusal::FileSystemRoot);
    }
    if let Some(home) = home()
        && resolve(&home) == canonical
    {
        return Some(Refusal::Home);
    }
    hands_dirs()
        .iter()
        .chain(also)
        .find(|dir| resolve(dir).starts_with(&canonical))
        .map(|dir| Refusal::Holds(dir.clone()))
}

/// Up to [`MAX_SUGGESTIONS`] project folders below `home` (one of [`PROJECT_MARKERS`] in them),
/// most recently modified first (the folder or a marker, whichever changed last), that
/// [`check_root`] accepts. At most [`SCAN_DEPTH`] levels down and [`MAX_SCANNED`] entries read;
/// hidden folders, symlinks and the insides of a project are passed over.
pub fn projects_below(home: &Path, also: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    let mut budget = MAX_SCANNED;
    let mut level = vec![home.to_path_buf()];
    'scan: for _ in 0..SCAN_DEPTH {
        let mut next = Vec::new();
        for dir in level {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries {
                if budget == 0 {
                    break 'scan;
                }
                budget -= 1;
                let Ok(entry) = entry else { continue };
                // `file_type` is the entry's own: a symlink is not followed.
                let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
                if !is_dir || entry.file_name().as_encoded_bytes().starts_with(b".") {
                    continue;
                }
                let path = entry.path();
                match changed(&path) {
                    Some(time) => found.push((time, path)),
                    None => next.push(path),
                }
            }
        }
        level = next;
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    found
        .into_iter()
        .map(|(_, path)| path)
        .filter(|path| check_root(path, also).is_ok())
        .take(MAX_SUGGESTIONS)
        .collect()
}

/// When `dir` is a project: when it or one of its markers last changed.
fn changed(dir: &Path) -> Option<SystemTime> {
    let time = |path: &Path| {
        std::fs::symlink_metadata(path).map(|meta| meta.modified().unwrap_or(UNIX_EPOCH))
    };
    let marker = PROJECT_MARKERS.iter().filter_map(|m| time(&dir.join(m)).ok()).max()?;
    Some(time(dir).map_or(marker, |own| own.max(marker)))
}

/// `project` as a user types it: `~/src/app`, quoted for the shell when it needs to be.
fn shown(project: &Path, home: &Path) -> String {
    let Ok(relative) = project.strip_prefix(home) else {
        return project.display().to_string();
    };
    let text = relative.to_string_lossy();
    if text.chars().any(char::is_control) {
        // A name with a line break would forge a suggestion of its own (`app\n  --root ~`):
        // shown escaped, as no shell would take it anyway.
        return format!("~/{}", hands_core::visible::line(&text));
    }
    if text.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-/+@,:%".contains(&b)) {
        format!("~/{text}")
    } else {
        format!("~/'{}'", text.replace('\'', r"'\''"))
    }
}

/// `path` canonical, its missing tail kept as written.
fn resolve(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut tail = Vec::new();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(existing) {
            return tail.iter().rev().fold(canonical, |acc: PathBuf, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_system_root_is_refused() {
        let err = check_root(Path::new("/"), &[]).unwrap_err();
        assert!(err.contains("file system root"), "{err}");
    }

    #[test]
    fn a_folder_holding_a_protected_one_is_refused_and_a_sibling_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("data/hands/sessions");
        let project = tmp.path().join("src/app");
        std::fs::create_dir_all(&project).unwrap();
        let also = [store.clone()];
        assert!(check_root(tmp.path(), &also).is_err(), "an ancestor of a missing folder");
        std::fs::create_dir_all(&store).unwrap();
        assert!(check_root(&tmp.path().join("data"), &also).is_err());
        assert!(check_root(&store, &also).is_err(), "the folder itself");
        assert!(check_root(&project, &also).is_ok(), "a project beside it is fine");
    }

    /// Sets when `path` last changed to `secs` seconds after the epoch.
    fn at(path: &Path, secs: u64) {
        let file = std::fs::File::open(path).unwrap();
        file.set_modified(UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
    }

    /// `home/rel` made with `marker` in it (a folder for `.git`), both changed at `secs`.
    fn project(home: &Path, rel: &str, marker: &str, secs: u64) -> PathBuf {
        let dir = home.join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        if marker == ".git" {
            std::fs::create_dir(dir.join(marker)).unwrap();
        } else {
            std::fs::write(dir.join(marker), "").unwrap();
        }
        at(&dir.join(marker), secs);
        at(&dir, secs);
        dir
    }

    #[test]
    fn projects_below_home_are_found_newest_first_bounded_and_without_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let app = project(&home, "src/app", ".git", 5_000);
        let site = project(&home, "site", "package.json", 9_000);
        let tool = project(&home, "work/tool", "Cargo.toml", 7_000);
        let lib = project(&home, "work/lib", "pyproject.toml", 6_000);
        let svc = project(&home, "svc", "go.mod", 8_000);
        // Not projects, or not to be suggested.
        std::fs::create_dir_all(home.join("notes")).unwrap();
        project(&home, ".hidden/proj", "Cargo.toml", 9_900);
        project(&home, "a/b/deep", "go.mod", 9_900);
        project(&home, "site/packages/inner", "package.json", 9_900);
        at(&site, 9_000);
        let outside = project(tmp.path(), "outside/proj", ".git", 9_900);
        std::os::unix::fs::symlink(&outside, home.join("link")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), home.join("linked")).unwrap();
        // A marker that changed later than its folder counts.
        at(&home.join("src/app/.git"), 9_500);

        let found = projects_below(&home, &[]);
        assert_eq!(found, [app.clone(), site.clone(), svc.clone(), tool.clone(), lib.clone()]);
        let shown: Vec<String> = found.iter().map(|p| shown(p, &home)).collect();
        assert_eq!(shown, ["~/src/app", "~/site", "~/svc", "~/work/tool", "~/work/lib"]);

        // Five at most: the oldest is left out.
        project(&home, "new", "go.mod", 9_800);
        let found = projects_below(&home, &[]);
        assert_eq!(found.len(), MAX_SUGGESTIONS);
        assert_eq!(found[0], home.join("new"));
        assert!(!found.contains(&lib), "{found:?}");
        // A folder `check_root` refuses is not suggested.
        let found = projects_below(&home, &[site.join("data")]);
        assert!(!found.contains(&site), "{found:?}");
        assert_eq!(projects_below(&tmp.path().join("none"), &[]), Vec::<PathBuf>::new());
    }

    #[test]
    fn a_suggestion_is_quoted_when_the_shell_needs_it() {
        let home = Path::new("/home/u");
        assert_eq!(shown(&home.join("src/my app"), home), "~/'src/my app'");
        assert_eq!(shown(&home.join("it's"), home), r"~/'it'\''s'");
        assert_eq!(shown(Path::new("/elsewhere/x"), home), "/elsewhere/x");
        // Red-team round 4: a folder named with a line break added a forged `--root ~` line.
        let forged = shown(&home.join("src/app\n  --root ~ # FORGED"), home);
        assert_eq!(forged, r"~/src/app\n  --root ~ # FORGED");
        assert!(!forged.contains('\n'));
    }
}
