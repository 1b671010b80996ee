//! Which folders may be a session's root. A root is where tools read and write (and what a
//! sandbox binds read-write), so `/`, the home folder and any folder that holds hands' own state,
//! configuration or data are refused: a session there could rewrite hands' configuration, read
//! other sessions' transcripts or, in a sandbox, write any file of the user.

use std::path::{Path, PathBuf};

/// Folders hands keeps its own files in, as the environment names them: the state folder
/// (`$HANDS_STATE_DIR`, `$XDG_STATE_HOME/hands`, `~/.local/state/hands`), the configuration
/// (`$XDG_CONFIG_HOME/hands`, `~/.config/hands`) and the data (`$XDG_DATA_HOME/hands`,
/// `~/.local/share/hands`, where the session store lives by default).
pub fn hands_dirs() -> Vec<PathBuf> {
    hands_dirs::all()
}

/// `Err` with a message saying what to do when `root` is `/`, the home folder, or a folder that
/// holds (is or contains) one of [`hands_dirs`] or of `also` (e.g. a configured store's folder).
/// Paths are compared canonical (symlinks resolved); a protected folder that does not exist yet
/// is compared through its nearest existing ancestor.
pub fn check_root(root: &Path, also: &[PathBuf]) -> Result<(), String> {
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let refuse = |what: String| {
        Err(format!(
            "the root {} cannot be a session root: it is {what}; a session may read and write \
             everything under its root, so pick the project's own folder (e.g. --root \
             ~/src/app) instead",
            root.display()
        ))
    };
    if canonical.parent().is_none() {
        return refuse("the file system root".into());
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
        && resolve(&home) == canonical
    {
        return refuse("the home folder".into());
    }
    for dir in hands_dirs().iter().chain(also) {
        if resolve(dir).starts_with(&canonical) {
            return refuse(format!("or holds hands' own folder {}", dir.display()));
        }
    }
    Ok(())
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
}
