//! What a bwrap sandbox must not see of the host: every folder hands keeps its own files in
//! (state, data, configuration, cache, the secret store — [`hands_dirs::all`] — and those the
//! settings moved elsewhere), and in their place what the inner hands needs: a copy of the
//! user's configuration without the host's sections. So the sandbox gets no stored secret, no
//! session, no token and no checkpoint: the inner hands' secret store is an empty folder.

use std::hash::{Hash as _, Hasher as _};
use std::path::PathBuf;

use super::proxy::Hidden;

/// What the host adds to [`hands_dirs::all`], from its settings.
#[derive(Debug, Clone, Default)]
pub struct HostFiles {
    /// More folders of hands' own (a configured checkpoint folder, the session database's
    /// folder).
    pub folders: Vec<PathBuf>,
    /// Files of hands' own in a folder that is not hands' (a session database in the home
    /// folder, with its `-wal`, `-shm`, `-journal`).
    pub files: Vec<PathBuf>,
    /// The user's configuration as the inner hands is to read it (the host's own sections and
    /// every credential-like key removed); `None`: it reads none.
    pub user_config: Option<String>,
}

/// The folders and files to hide and what to bind instead. hands' folders are created first
/// (0700) when missing, so that one made later (the first `hands secrets set`) is hidden too.
pub(crate) fn hidden(host: &HostFiles) -> Hidden {
    let mut folders: Vec<PathBuf> = Vec::new();
    for folder in hands_dirs::all().iter().chain(&host.folders) {
        if let Err(err) = hands_dirs::create_private_dir_all(folder) {
            tracing::debug!(folder = %folder.display(), %err, "cannot make a folder to hide");
        }
        match std::fs::canonicalize(folder) {
            Ok(path) if path.parent().is_some() && path.is_dir() && !folders.contains(&path) => {
                folders.push(path);
            }
            _ => {}
        }
    }
    let files = host
        .files
        .iter()
        .filter_map(|file| std::fs::canonicalize(file).ok())
        .filter(|file| file.is_file() && !folders.iter().any(|f| file.starts_with(f)))
        .collect();
    let binds = inner_config(host.user_config.as_deref(), &folders).into_iter().collect();
    Hidden { folders, files, binds }
}

/// The inner hands' configuration file, written (0600) into the host's state folder and bound
/// where the inner hands looks for the user's file (inside a hidden folder, so that the mount
/// point can be made).
fn inner_config(text: Option<&str>, folders: &[PathBuf]) -> Option<(PathBuf, PathBuf)> {
    let text = text?;
    let config = std::fs::canonicalize(hands_dirs::config_dir()?).ok()?;
    if !folders.contains(&config) {
        return None;
    }
    let dir = hands_dirs::state_dir()?.join("sandbox");
    let mut hasher = std::hash::DefaultHasher::new();
    text.hash(&mut hasher);
    let path = dir.join(format!("config-{:016x}.toml", hasher.finish()));
    let written = hands_dirs::private_dir(&dir).and_then(|()| {
        if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
            return Ok(());
        }
        hands_dirs::write_private(&path, text.as_bytes())
    });
    match written {
        Ok(()) => Some((path, config.join("config.toml"))),
        Err(err) => {
            tracing::warn!(path = %path.display(), %err, "the sandbox's hands gets no user configuration");
            None
        }
    }
}
