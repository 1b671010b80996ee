//! The store: one JSON file per scope in a private folder (`global.json`, and
//! `project-<hash of the root>.json` holding its canonical root), read into a cache that is
//! reloaded when the folder's files change (checked on every read: one `readdir` and a `stat` per
//! file, since children's environments ask on every spawn). Writes take a lock file, read the
//! scope's file again, and replace it atomically; then the change hooks run (the binary's
//! reinstalls the redaction engine).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError, RwLock};

use hands_core::env::SecretEnv;
use hands_core::secret::{SecretError, SecretScope, SecretStore, SecretValue, StoredSecret};
use sha2::Digest as _;

use crate::file::{self, ScopeFile};

/// Values shorter than this (in characters) are refused: they cannot be redacted safely.
pub const MIN_VALUE: usize = 8;

type Hook = Box<dyn Fn(&Store) + Send + Sync>;

/// The user's secret store (see the module docs).
pub struct Store {
    dir: PathBuf,
    cache: Mutex<Cache>,
    hooks: RwLock<Vec<Hook>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("dir", &self.dir).finish_non_exhaustive()
    }
}

/// What the folder held when it was last read.
#[derive(Default)]
struct Cache {
    /// `(file name, inode, mtime in ns, size)` of every scope file: a write replaces a file
    /// (new inode), so any change shows.
    signature: Option<Vec<(String, u64, i128, u64)>>,
    global: BTreeMap<String, String>,
    /// Canonical root → its secrets.
    projects: BTreeMap<String, BTreeMap<String, String>>,
    /// Name → recorded host, of the global scope.
    global_hosts: BTreeMap<String, String>,
    /// Canonical root → name → recorded host.
    project_hosts: BTreeMap<String, BTreeMap<String, String>>,
}

/// The folder of the store: `$HANDS_SECRETS_DIR` (for tests and embedders), else `secrets` in
/// hands' state folder (`$HANDS_STATE_DIR`, else `$XDG_STATE_HOME/hands`, else
/// `~/.local/state/hands`); `None` without any of them.
pub fn default_dir() -> Option<PathBuf> {
    hands_dirs::secrets_dir()
}

/// The scope of the project at `root`: its canonical path (as given when it cannot be resolved).
pub fn project_scope(root: &Path) -> SecretScope {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    SecretScope::Project(root.to_string_lossy().into_owned())
}

/// Refuse a name that is not `^[A-Z][A-Z0-9_]{1,63}$`.
pub fn check_name(name: &str) -> Result<(), SecretError> {
    let b = name.as_bytes();
    let ok = (2..=64).contains(&b.len())
        && b[0].is_ascii_uppercase()
        && b.iter().all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_');
    if ok { Ok(()) } else { Err(SecretError::BadName(name.to_string())) }
}

/// Refuse a value that is too short to be redacted safely, or that no environment variable can
/// carry.
pub fn check_value(value: &SecretValue) -> Result<(), SecretError> {
    let value = value.expose();
    if value.contains('\0') {
        return Err(SecretError::Io(
            "the value holds a NUL byte, which no environment variable can carry: store it without"
                .into(),
        ));
    }
    if value.chars().count() < MIN_VALUE {
        return Err(SecretError::TooShort);
    }
    Ok(())
}

/// A masked hint: the first and last 4 characters (fewer for a short value, so that at most half
/// of it shows), e.g. `sk_t…4f2a`.
pub fn hint(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    let n = (chars.len() / 4).min(4);
    let head: String = chars[..n].iter().collect();
    let tail: String = chars[chars.len() - n..].iter().collect();
    format!("{head}…{tail}")
}

impl Store {
    /// The store in [`default_dir`].
    pub fn open() -> Result<Self, SecretError> {
        let dir = default_dir().ok_or_else(|| {
            SecretError::Io(
                "there is no state folder for the secret store: set HOME or XDG_STATE_HOME".into(),
            )
        })?;
        Ok(Self::at(dir))
    }

    /// The store in `dir` (created, 0700, on the first write).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into(), cache: Mutex::default(), hooks: RwLock::default() }
    }

    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Run `hook` after every change: a `put`/`delete` through this store, or a change by another
    /// process seen by a read.
    pub fn on_change(&self, hook: impl Fn(&Store) + Send + Sync + 'static) {
        self.hooks.write().unwrap_or_else(PoisonError::into_inner).push(Box::new(hook));
    }

    fn changed(&self) {
        for hook in self.hooks.read().unwrap_or_else(PoisonError::into_inner).iter() {
            hook(self);
        }
    }

    /// Reload the cache when the folder changed; true when it did (the hooks have then run).
    pub fn refresh(&self) -> bool {
        let signature = self.signature();
        let changed = {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if cache.signature.as_ref() == Some(&signature) {
                false
            } else {
                let first = cache.signature.is_none();
                self.load(&mut cache, signature);
                !first
            }
        };
        if changed {
            self.changed();
        }
        changed
    }

    fn signature(&self) -> Vec<(String, u64, i128, u64)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut signature: Vec<_> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                if name.starts_with('.') || !name.ends_with(".json") {
                    return None;
                }
                let meta = entry.metadata().ok()?;
                let mtime =
                    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
                Some((name, meta.ino(), mtime, meta.size()))
            })
            .collect();
        signature.sort();
        signature
    }

    fn load(&self, cache: &mut Cache, signature: Vec<(String, u64, i128, u64)>) {
        cache.global.clear();
        cache.projects.clear();
        cache.global_hosts.clear();
        cache.project_hosts.clear();
        for (name, ..) in &signature {
            let path = self.dir.join(name);
            match file::read(&path) {
                Ok(Some(ScopeFile { root: None, secrets, hosts })) if name == GLOBAL => {
                    cache.global = secrets;
                    cache.global_hosts = hosts;
                }
                Ok(Some(ScopeFile { root: Some(root), secrets, hosts })) => {
                    cache.project_hosts.entry(root.clone()).or_default().extend(hosts);
                    cache.projects.entry(root).or_default().extend(secrets);
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::error!(path = %path.display(), %err, "cannot read a secret store file")
                }
            }
        }
        cache.signature = Some(signature);
    }

    fn with_cache<T>(&self, f: impl FnOnce(&Cache) -> T) -> T {
        self.refresh();
        f(&self.cache.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn path_of(&self, scope: &SecretScope) -> PathBuf {
        match scope {
            SecretScope::Global => self.dir.join(GLOBAL),
            SecretScope::Project(root) => {
                let digest = sha2::Sha256::digest(root.as_bytes());
                let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
                self.dir.join(format!("project-{hex}.json"))
            }
        }
    }

    /// Change `scope`'s file under the store's lock; then the hooks run.
    fn update<T>(
        &self,
        scope: &SecretScope,
        change: impl FnOnce(&mut BTreeMap<String, String>) -> T,
    ) -> Result<T, SecretError> {
        self.update_file(scope, |file| {
            let result = change(&mut file.secrets);
            // A host stays recorded only with its secret.
            let secrets = &file.secrets;
            file.hosts.retain(|name, _| secrets.contains_key(name));
            result
        })
    }

    /// Change `scope`'s whole file under the store's lock; then the hooks run.
    fn update_file<T>(
        &self,
        scope: &SecretScope,
        change: impl FnOnce(&mut ScopeFile) -> T,
    ) -> Result<T, SecretError> {
        let io = |e: std::io::Error| SecretError::Io(format!("{}: {e}", self.dir.display()));
        file::private_dir(&self.dir).map_err(io)?;
        let lock = hands_dirs::private_options().open(self.dir.join(".lock")).map_err(io)?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| io(e.into()))?;
        let path = self.path_of(scope);
        let root = match scope {
            SecretScope::Global => None,
            SecretScope::Project(root) => Some(root.clone()),
        };
        let mut contents = file::read(&path).map_err(io)?.unwrap_or_default();
        contents.root = root;
        let result = change(&mut contents);
        file::write(&path, &contents).map_err(io)?;
        drop(lock);
        // Our own change is seen now, whatever the clock's granularity.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner).signature = None;
        self.refresh();
        self.changed();
        Ok(result)
    }

    /// Store `value` as `name` in `scope`, replacing an earlier value.
    pub fn put_in(
        &self,
        scope: &SecretScope,
        name: &str,
        value: &SecretValue,
    ) -> Result<StoredSecret, SecretError> {
        check_name(name)?;
        check_value(value)?;
        self.update(scope, |secrets| {
            secrets.insert(name.to_string(), value.expose().to_string());
        })?;
        Ok(StoredSecret { name: name.into(), scope: scope.clone(), hint: hint(value.expose()) })
    }

    /// Record `host` as the only host a connector may send `name` of `scope` to (`None` forgets
    /// it). The secret must be stored in that scope already.
    pub fn set_host_in(
        &self,
        scope: &SecretScope,
        name: &str,
        host: Option<&str>,
    ) -> Result<(), SecretError> {
        check_name(name)?;
        let host = host.map(check_host).transpose()?;
        self.update_file(scope, |file| {
            if !file.secrets.contains_key(name) {
                return Err(SecretError::Io(format!(
                    "there is no secret {name} in this scope to record a host for: store it first"
                )));
            }
            match host {
                Some(host) => file.hosts.insert(name.to_owned(), host),
                None => file.hosts.remove(name),
            };
            Ok(())
        })?
    }

    /// The host recorded with `name` as granted to the project at `root` (the project's own
    /// secret's, else the global one's).
    pub fn host_of(&self, root: &Path, name: &str) -> Option<String> {
        let SecretScope::Project(key) = project_scope(root) else { return None };
        self.with_cache(|cache| {
            if cache.projects.get(&key).is_some_and(|own| own.contains_key(name)) {
                return cache.project_hosts.get(&key).and_then(|h| h.get(name)).cloned();
            }
            if cache.global.contains_key(name) {
                return cache.global_hosts.get(name).cloned();
            }
            None
        })
    }

    /// Delete `name` from `scope`; true when it was there.
    pub fn delete_in(&self, scope: &SecretScope, name: &str) -> Result<bool, SecretError> {
        check_name(name)?;
        self.update(scope, |secrets| secrets.remove(name).is_some())
    }

    /// Every stored secret of every scope (global first, then projects by root).
    pub fn list_all(&self) -> Vec<StoredSecret> {
        self.with_cache(|cache| {
            let global = cache.global.iter().map(|(name, value)| StoredSecret {
                name: name.clone(),
                scope: SecretScope::Global,
                hint: hint(value),
            });
            let projects = cache.projects.iter().flat_map(|(root, secrets)| {
                secrets.iter().map(|(name, value)| StoredSecret {
                    name: name.clone(),
                    scope: SecretScope::Project(root.clone()),
                    hint: hint(value),
                })
            });
            global.chain(projects).collect()
        })
    }

    /// `(NAME, value)` of every stored secret of every scope: what redaction hides.
    pub fn values(&self) -> Vec<(String, String)> {
        self.with_cache(|cache| {
            cache
                .global
                .iter()
                .chain(cache.projects.values().flatten())
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect()
        })
    }

    /// The secrets granted to `root` with their scope: the project's, then the global ones it
    /// does not override.
    fn granted_scoped(&self, root: &Path) -> Vec<(String, String, SecretScope)> {
        let scope = project_scope(root);
        let SecretScope::Project(key) = &scope else { return Vec::new() };
        self.with_cache(|cache| {
            let own = cache.projects.get(key);
            let mut out: Vec<_> = own
                .into_iter()
                .flatten()
                .map(|(n, v)| (n.clone(), v.clone(), scope.clone()))
                .collect();
            for (n, v) in &cache.global {
                if own.is_none_or(|own| !own.contains_key(n)) {
                    out.push((n.clone(), v.clone(), SecretScope::Global));
                }
            }
            out
        })
    }
}

const GLOBAL: &str = "global.json";

/// Where a connector may send a secret, as recorded with it (issue 26: the scheme and the port
/// count, not only the host): `HOST` or `HOST:PORT` is https (port 443 unless given);
/// `http://HOST[:PORT]` allows plain http, only when the user writes it so; `https://` may be
/// written too. Kept in one form — `host`, `host:port` (https), `http://host[:port]` — with the
/// host lower-cased and a scheme's default port left out, so that two spellings of one origin
/// compare equal. A DNS name or an address (IPv6 in brackets); no user, path or wildcard.
pub fn check_host(host: &str) -> Result<String, SecretError> {
    let bad = |host: &str| {
        SecretError::Io(format!(
            "`{host}` is not a host: give a bare name like api.example.com (https, port 443), \
             api.example.com:8443, or http://127.0.0.1:8080 to allow plain http (no user, path \
             or query)"
        ))
    };
    let given = host.trim();
    let lower = given.to_ascii_lowercase();
    let (http, rest) = match (lower.strip_prefix("http://"), lower.strip_prefix("https://")) {
        (Some(rest), _) => (true, rest),
        (None, Some(rest)) => (false, rest),
        (None, None) => (false, lower.as_str()),
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (name, port) = if rest.starts_with('[') {
        match rest.split_once(']') {
            Some((inner, "")) => (format!("{inner}]"), None),
            Some((inner, tail)) => match tail.strip_prefix(':') {
                Some(port) => (format!("{inner}]"), Some(port)),
                None => return Err(bad(given)),
            },
            None => return Err(bad(given)),
        }
    } else {
        match rest.split_once(':') {
            Some((name, port)) => (name.to_owned(), Some(port)),
            None => (rest.to_owned(), None),
        }
    };
    let name = name.trim_end_matches('.').to_owned();
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|c| c.is_ascii_digit()) => {
            match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err(bad(given)),
                Ok(n) => Some(n),
            }
        }
        Some(_) => return Err(bad(given)),
    };
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b':' | b'[' | b']'))
        && !name.starts_with('.')
        && (name.starts_with('[') || !name.contains(':'))
        && (!name.starts_with('[')
            || name.len() > 2 && !name[1..name.len() - 1].contains(['[', ']']));
    if !ok {
        return Err(bad(given));
    }
    let default = if http { 80 } else { 443 };
    let port = port.filter(|p| *p != default).map(|p| format!(":{p}")).unwrap_or_default();
    Ok(if http { format!("http://{name}{port}") } else { format!("{name}{port}") })
}

impl SecretStore for Store {
    fn put(
        &self,
        root: &Path,
        name: &str,
        value: &SecretValue,
    ) -> Result<StoredSecret, SecretError> {
        self.put_in(&project_scope(root), name, value)
    }

    fn get(&self, root: &Path, name: &str) -> Option<SecretValue> {
        self.granted_scoped(root)
            .into_iter()
            .find(|(n, ..)| n == name)
            .map(|(_, value, _)| SecretValue::new(value))
    }

    fn list(&self, root: &Path) -> Vec<StoredSecret> {
        self.granted_scoped(root)
            .into_iter()
            .map(|(name, value, scope)| StoredSecret { hint: hint(&value), name, scope })
            .collect()
    }

    fn delete(&self, root: &Path, name: &str) -> Result<bool, SecretError> {
        self.delete_in(&project_scope(root), name)
    }

    fn host(&self, root: &Path, name: &str) -> Option<String> {
        self.host_of(root, name)
    }

    fn set_host(&self, root: &Path, name: &str, host: Option<&str>) -> Result<(), SecretError> {
        let scope = project_scope(root);
        let own = match &scope {
            SecretScope::Project(key) => {
                self.with_cache(|c| c.projects.get(key).is_some_and(|s| s.contains_key(name)))
            }
            SecretScope::Global => false,
        };
        let scope = if own { scope } else { SecretScope::Global };
        self.set_host_in(&scope, name, host)
    }
}

impl SecretEnv for Store {
    fn names(&self) -> Vec<String> {
        self.with_cache(|cache| {
            let mut names: Vec<String> = cache
                .global
                .keys()
                .chain(cache.projects.values().flat_map(BTreeMap::keys))
                .cloned()
                .collect();
            names.sort();
            names.dedup();
            names
        })
    }

    fn granted(&self, root: &Path) -> Vec<(String, String)> {
        self.granted_scoped(root).into_iter().map(|(n, v, _)| (n, v)).collect()
    }
}
