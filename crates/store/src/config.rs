//! `[store]`: where sessions are kept, and [`open_store`], which opens that store.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::redacting::Redacting;
use crate::{MemoryStore, SqliteStore, Store, StoreError};

/// `[store]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// `sqlite` (one file, kept across restarts) or `memory` (gone when hands exits).
    pub backend: StoreBackend,
    /// The SQLite file (parent folders are created; a leading `~/` is the home folder);
    /// `:memory:` for an in-memory database. Ignored by the `memory` backend.
    pub path: PathBuf,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self { backend: StoreBackend::Sqlite, path: default_path() }
    }
}

/// `[store] backend`
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreBackend {
    /// [`SqliteStore`].
    Sqlite,
    /// [`MemoryStore`].
    Memory,
}

/// `$XDG_DATA_HOME/hands/sessions.db`, else `~/.local/share/hands/sessions.db`, else (no home at
/// all) `.hands/sessions.db` under the current folder.
pub fn default_path() -> PathBuf {
    path_from(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
}

fn path_from(xdg_data_home: Option<OsString>, home: Option<OsString>) -> PathBuf {
    // The XDG spec: a relative (or empty) XDG_DATA_HOME is invalid and is ignored.
    let data = xdg_data_home.map(PathBuf::from).filter(|p| p.is_absolute()).or_else(|| {
        let home = home.map(PathBuf::from).filter(|p| !p.as_os_str().is_empty())?;
        Some(home.join(".local/share"))
    });
    match data {
        Some(data) => data.join("hands").join("sessions.db"),
        None => Path::new(".hands").join("sessions.db"),
    }
}

/// Open the store `[store]` describes, with every write redacted ([`Redacting`]).
pub fn open_store(cfg: &StoreConfig) -> Result<Arc<dyn Store>, StoreError> {
    let backend: Arc<dyn Store> = match cfg.backend {
        StoreBackend::Memory => Arc::new(MemoryStore::new()),
        StoreBackend::Sqlite => Arc::new(SqliteStore::open(expand_home(&cfg.path))?),
    };
    Ok(Arc::new(Redacting(backend)))
}

/// `~/x` → `$HOME/x`; anything else (and `~/x` without a home) unchanged.
fn expand_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) if !home.is_empty() => PathBuf::from(home).join(rest),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_path_follows_xdg_then_home() {
        let p = |xdg: Option<&str>, home: Option<&str>| {
            path_from(xdg.map(OsString::from), home.map(OsString::from))
        };
        assert_eq!(p(Some("/data"), Some("/home/u")), Path::new("/data/hands/sessions.db"));
        assert_eq!(p(None, Some("/home/u")), Path::new("/home/u/.local/share/hands/sessions.db"));
        // Empty or relative XDG_DATA_HOME is ignored, as the spec says.
        assert_eq!(
            p(Some(""), Some("/home/u")),
            Path::new("/home/u/.local/share/hands/sessions.db")
        );
        assert_eq!(p(Some("rel"), Some("/h")), Path::new("/h/.local/share/hands/sessions.db"));
        assert_eq!(p(None, None), Path::new(".hands/sessions.db"));
    }

    #[test]
    fn a_leading_tilde_is_the_home_folder() {
        let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else { return };
        let home = PathBuf::from(home);
        assert_eq!(expand_home(Path::new("~/s/x.db")), home.join("s/x.db"));
        assert_eq!(expand_home(Path::new("~")), home);
        for unchanged in ["/abs/x.db", "rel/x.db", "~user/x.db", "a/~/x.db", ":memory:"] {
            assert_eq!(expand_home(Path::new(unchanged)), Path::new(unchanged));
        }
    }

    #[test]
    fn the_section_parses_with_defaults_and_refuses_unknown_keys() {
        let cfg: StoreConfig = toml::from_str("").unwrap();
        assert_eq!(cfg, StoreConfig::default());
        assert_eq!(cfg.backend, StoreBackend::Sqlite);
        assert!(cfg.path.ends_with("hands/sessions.db"), "{}", cfg.path.display());

        let cfg: StoreConfig = toml::from_str("backend = \"memory\"\npath = \":memory:\"").unwrap();
        assert_eq!(cfg.backend, StoreBackend::Memory);
        assert_eq!(cfg.path, Path::new(":memory:"));

        let err = toml::from_str::<StoreConfig>("paht = \"x.db\"").unwrap_err().to_string();
        assert!(err.contains("paht"), "{err}");
        let err = toml::from_str::<StoreConfig>("backend = \"postgres\"").unwrap_err().to_string();
        assert!(err.contains("postgres"), "{err}");
    }

    #[tokio::test]
    async fn open_store_opens_each_backend() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/folder/sessions.db");
        let configs = [
            StoreConfig { backend: StoreBackend::Sqlite, path: path.clone() },
            StoreConfig { backend: StoreBackend::Sqlite, path: ":memory:".into() },
            StoreConfig { backend: StoreBackend::Memory, path: path.clone() },
        ];
        for cfg in configs {
            let store = open_store(&cfg).unwrap();
            assert!(store.list_sessions().await.unwrap().is_empty(), "{cfg:?}");
        }
        assert!(path.is_file(), "the sqlite backend created its file and folders");
    }
}
