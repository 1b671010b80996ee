//! `[store]`: where sessions are kept, and [`open_store`], which opens that store.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cluster::Cluster;
use crate::postgres::{PgCluster, PostgresOptions, PostgresStore};
use crate::redacting::Redacting;
use crate::{MemoryStore, SqliteStore, Store, StoreError};

/// The variable (and stored secret) the PostgreSQL URL is read from by default.
pub const DEFAULT_URL_ENV: &str = "HANDS_STORE_URL";

/// `[store]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// `sqlite` (one file, kept across restarts), `memory` (gone when hands exits) or `postgres`
    /// (a PostgreSQL database that several `hands serve` nodes share).
    pub backend: StoreBackend,
    /// The SQLite file (parent folders are created; a leading `~/` is the home folder);
    /// `:memory:` for an in-memory database. Used by the `sqlite` backend only.
    pub path: PathBuf,
    /// The PostgreSQL URL (`postgresql://USER:PASSWORD@HOST:5432/DB?sslmode=verify-full`).
    /// Better left unset: it is then read from the variable `url_env`, else from `url_file`.
    /// (Not from hands' secret store: its secrets are handed to the projects' processes.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The variable holding the URL (no child process of hands gets it).
    pub url_env: String,
    /// A file holding the URL (e.g. a mounted Kubernetes Secret), read when the variable is
    /// not set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url_file: Option<PathBuf>,
    /// PostgreSQL connections open at once (per node).
    pub pool_size: usize,
    /// Extra CA certificates (PEM) trusted with `sslmode=verify-ca` / `verify-full`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// Milliseconds connecting to PostgreSQL may take.
    pub connect_timeout_ms: u64,
    /// Apply missing migrations when a node starts (else a node refuses a database that is not
    /// current: run `hands store migrate` first).
    pub migrate: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            backend: StoreBackend::Sqlite,
            path: default_path(),
            url: None,
            url_env: DEFAULT_URL_ENV.into(),
            url_file: None,
            pool_size: 16,
            ca_file: None,
            connect_timeout_ms: 10_000,
            migrate: true,
        }
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
    /// [`PostgresStore`].
    Postgres,
}

impl StoreConfig {
    /// The PostgreSQL URL: `url`, else the variable `url_env`, else the first line of
    /// `url_file`. `None` when none is set.
    pub fn postgres_url(&self) -> Option<String> {
        let from_file = || {
            let file = expand_home(self.url_file.as_deref()?);
            let text = std::fs::read_to_string(file).ok()?;
            text.lines().next().map(|l| l.trim().to_owned())
        };
        self.url
            .clone()
            .filter(|url| !url.trim().is_empty())
            .or_else(|| std::env::var(&self.url_env).ok().filter(|url| !url.trim().is_empty()))
            .or_else(from_file)
            .filter(|url| !url.trim().is_empty())
    }

    /// The options of the `postgres` backend for the node `node`.
    pub fn postgres_options(&self, node: &str) -> Result<PostgresOptions, StoreError> {
        let url = self.postgres_url().ok_or_else(|| {
            StoreError::Backend(format!(
                "[store] backend = \"postgres\" needs the database URL: set the variable {}, or \
                 [store] url_file (a file holding it), or [store] url",
                self.url_env
            ))
        })?;
        Ok(PostgresOptions {
            url,
            pool_size: self.pool_size.clamp(1, 1024),
            ca_file: self.ca_file.as_deref().map(expand_home),
            connect_timeout: Duration::from_millis(self.connect_timeout_ms.max(100)),
            migrate: self.migrate,
            node: node.to_owned(),
        })
    }
}

/// `$XDG_DATA_HOME/hands/sessions.db`, else `~/.local/share/hands/sessions.db`, else (no home at
/// all) `.hands/sessions.db` under the current folder.
pub fn default_path() -> PathBuf {
    path_from(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
}

fn path_from(xdg_data_home: Option<OsString>, home: Option<OsString>) -> PathBuf {
    // The XDG spec: a relative (or empty) XDG_DATA_HOME is invalid and is ignored.
    let env = |name: &str| match name {
        "XDG_DATA_HOME" => xdg_data_home.clone(),
        "HOME" => home.clone(),
        _ => None,
    };
    match hands_dirs::data_dir_in(&env) {
        Some(data) => data.join("sessions.db"),
        None => Path::new(".hands").join("sessions.db"),
    }
}

/// This process's name among nodes: the host name and the process id.
pub fn default_node_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "hands".into());
    format!("{host}-{}", std::process::id())
}

/// Open the store `[store]` describes, with every write redacted ([`Redacting`]). The
/// `postgres` backend connects at its first call.
pub fn open_store(cfg: &StoreConfig) -> Result<Arc<dyn Store>, StoreError> {
    Ok(open(cfg, &default_node_id())?.store)
}

/// What [`open`] gives: the store, and for a shared database the coordination between nodes.
pub struct Opened {
    /// The store, writes redacted.
    pub store: Arc<dyn Store>,
    /// `Some` for the `postgres` backend.
    pub cluster: Option<Arc<dyn Cluster>>,
    /// `Some` for the `postgres` backend (migrations and checks).
    pub postgres: Option<Arc<PostgresStore>>,
}

/// Open the store `[store]` describes for the node `node` (its name in the database).
pub fn open(cfg: &StoreConfig, node: &str) -> Result<Opened, StoreError> {
    let (backend, cluster, postgres): (Arc<dyn Store>, Option<Arc<dyn Cluster>>, _) = match cfg
        .backend
    {
        StoreBackend::Memory => (Arc::new(MemoryStore::new()), None, None),
        StoreBackend::Sqlite => (Arc::new(SqliteStore::open(expand_home(&cfg.path))?), None, None),
        StoreBackend::Postgres => {
            let pg = Arc::new(PostgresStore::new(&cfg.postgres_options(node)?)?);
            let cluster: Arc<dyn Cluster> = Arc::new(PgCluster::new(Arc::clone(&pg)));
            (pg.clone(), Some(cluster), Some(pg))
        }
    };
    Ok(Opened { store: Arc::new(Redacting(backend)), cluster, postgres })
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

        let cfg: StoreConfig =
            toml::from_str("backend = \"postgres\"\npool_size = 4\nurl_env = \"DB_URL\"").unwrap();
        assert_eq!(
            (cfg.backend, cfg.pool_size, cfg.url_env.as_str()),
            (StoreBackend::Postgres, 4, "DB_URL")
        );

        let err = toml::from_str::<StoreConfig>("paht = \"x.db\"").unwrap_err().to_string();
        assert!(err.contains("paht"), "{err}");
        let err = toml::from_str::<StoreConfig>("backend = \"mysql\"").unwrap_err().to_string();
        assert!(err.contains("mysql"), "{err}");
    }

    #[test]
    fn postgres_without_a_url_says_where_to_put_it() {
        let cfg = StoreConfig {
            backend: StoreBackend::Postgres,
            url_env: "HANDS_TEST_NO_SUCH_URL_VARIABLE".into(),
            ..StoreConfig::default()
        };
        let err = open_store(&cfg).err().unwrap().to_string();
        assert!(
            err.contains("HANDS_TEST_NO_SUCH_URL_VARIABLE") && err.contains("url_file"),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("url");
        std::fs::write(&file, "postgresql://u:p@db/x\n").unwrap();
        let cfg = StoreConfig { url_file: Some(file), ..cfg };
        assert_eq!(cfg.postgres_url().as_deref(), Some("postgresql://u:p@db/x"));
    }

    #[tokio::test]
    async fn open_store_opens_each_backend() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/folder/sessions.db");
        let configs = [
            StoreConfig {
                backend: StoreBackend::Sqlite,
                path: path.clone(),
                ..StoreConfig::default()
            },
            StoreConfig {
                backend: StoreBackend::Sqlite,
                path: ":memory:".into(),
                ..StoreConfig::default()
            },
            StoreConfig {
                backend: StoreBackend::Memory,
                path: path.clone(),
                ..StoreConfig::default()
            },
        ];
        for cfg in configs {
            let store = open_store(&cfg).unwrap();
            assert!(store.list_sessions().await.unwrap().is_empty(), "{cfg:?}");
        }
        assert!(path.is_file(), "the sqlite backend created its file and folders");
    }
}
