//! The shadow store of one project (taking a checkpoint is in `capture`, restoring in `restore`,
//! retention in `retention`): `objects/` (contents and trees), `checkpoints/<n>.json` (one
//! small record each), `index` (the stat cache), `journal.json` (a restore in progress) and the
//! lock files (see [`crate::lock`]).
//!
//! It lives under the state folder, keyed by the sha256 of the project root, never inside the
//! project, so the user's own `.git` is neither read for writing nor touched.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, IoContext};
use crate::lock::{self, TurnGuard};
use crate::manifest::{Checkpoint, Entry};
use crate::settings::{Retention, Settings};
use crate::snapshot::Config;
use crate::{legacy, objects, tree};

/// The state folder ([`hands_dirs::state_dir`]): `HANDS_STATE_DIR`, else `$XDG_STATE_HOME/hands`,
/// else `~/.local/state/hands`.
pub fn state_dir() -> Result<PathBuf, Error> {
    hands_dirs::state_dir().ok_or(Error::NoStateDir)
}

/// The checkpoint store of one project.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) root: PathBuf,
    pub(crate) dir: PathBuf,
    pub(crate) config: Config,
    pub(crate) retention: Retention,
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Store {
    /// The store of `root` under the state folder, with the default settings; finishes an
    /// interrupted restore first.
    pub fn open_for(root: &Path) -> Result<Self, Error> {
        Self::open_with(root, &Settings::default())
    }

    /// The store of `root` under `settings.state_dir` (else the state folder), taking and
    /// keeping checkpoints as `settings` say; finishes an interrupted restore first.
    pub fn open_with(root: &Path, settings: &Settings) -> Result<Self, Error> {
        let root = root.canonicalize().at(root)?;
        let key = objects::hash(root.as_os_str().as_encoded_bytes());
        let base = match &settings.state_dir {
            Some(dir) => dir.clone(),
            None => state_dir()?,
        };
        let dir = base.join("checkpoints").join(key);
        let mut store = Self::open(&root, &dir, settings.config())?;
        store.retention = settings.retention();
        Ok(store)
    }

    /// The store of `root` kept in `dir`; finishes an interrupted restore first.
    pub fn open(root: &Path, dir: &Path, config: Config) -> Result<Self, Error> {
        // 0700 from the state folder down (it may be the first part of hands to make it): the
        // objects hold the project's files, secrets included.
        hands_dirs::private_dir(dir).at(dir)?;
        for sub in ["objects", "checkpoints"] {
            hands_dirs::private_dir(&dir.join(sub)).at(&dir.join(sub))?;
        }
        let store = Self {
            root: root.to_path_buf(),
            dir: dir.to_path_buf(),
            config,
            retention: Retention::default(),
        };
        store.recover()?;
        Ok(store)
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder of the store.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The retention [`Store::retain`] applies.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    pub(crate) fn objects(&self) -> PathBuf {
        self.dir.join("objects")
    }

    pub(crate) fn store_lock(&self) -> PathBuf {
        self.dir.join("store.lock")
    }

    pub(crate) fn turns_lock(&self) -> PathBuf {
        self.dir.join("turns.lock")
    }

    pub(crate) fn index_path(&self) -> PathBuf {
        self.dir.join("index")
    }

    pub(crate) fn record_path(&self, id: u64) -> PathBuf {
        self.dir.join("checkpoints").join(format!("{id}.json"))
    }

    /// Marks a turn running on the project until the guard is dropped: restores are refused
    /// meanwhile, by this process and every other. Waits while a restore runs.
    pub fn begin_turn(&self) -> Result<TurnGuard, Error> {
        Ok(TurnGuard { _lock: lock::shared(&self.turns_lock())? })
    }

    /// The checkpoint numbers, oldest first.
    pub fn ids(&self) -> Result<Vec<u64>, Error> {
        let dir = self.dir.join("checkpoints");
        let mut ids: Vec<u64> = fs::read_dir(&dir)
            .at(&dir)?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// All checkpoints, oldest first (of every session; filter on `session` for one).
    pub fn list(&self) -> Result<Vec<Checkpoint>, Error> {
        let mut out = Vec::new();
        for id in self.ids()? {
            // A number claimed but not yet written (a snapshot in progress) is not listed.
            if let Ok(cp) = self.load(id) {
                out.push(cp);
            }
        }
        Ok(out)
    }

    /// Checkpoint `id`.
    pub fn load(&self, id: u64) -> Result<Checkpoint, Error> {
        let path = self.record_path(id);
        let bytes = fs::read(&path).map_err(|_| Error::NotFound(id))?;
        match serde_json::from_slice(&bytes) {
            Ok(cp) => Ok(cp),
            Err(source) => match legacy::migrate(&self.objects(), &path, &bytes)? {
                Some(cp) => Ok(cp),
                None if bytes.is_empty() => Err(Error::NotFound(id)),
                None => Err(Error::Corrupt { path, source }),
            },
        }
    }

    /// The checkpoint of the project just before `id` (of any session), if any.
    pub fn previous(&self, id: u64) -> Result<Option<Checkpoint>, Error> {
        Ok(self.ids()?.into_iter().rev().filter(|i| *i < id).find_map(|i| self.load(i).ok()))
    }

    /// Every path of checkpoint `cp`'s tree (folders included), by relative path.
    pub fn entries(&self, cp: &Checkpoint) -> Result<BTreeMap<String, Entry>, Error> {
        let mut out = BTreeMap::new();
        tree::flatten(&self.objects(), &cp.tree, "", &mut out)?;
        Ok(out)
    }

    pub(crate) fn remove(&self, id: u64) -> Result<(), Error> {
        let path = self.record_path(id);
        fs::remove_file(&path).at(&path)
    }

    /// The content of object `oid`.
    pub fn object(&self, oid: &str) -> Result<Vec<u8>, Error> {
        objects::get(&self.objects(), oid)
    }

    /// Stores `bytes` as an object (kept while a checkpoint's `rewound` names it); its id.
    pub fn put_object(&self, bytes: &[u8]) -> Result<String, Error> {
        let oid = objects::hash(bytes);
        objects::put(&self.objects(), &oid, bytes)?;
        Ok(oid)
    }

    /// Bytes on disk used by the store.
    pub fn disk_usage(&self) -> u64 {
        fn walk(p: &Path) -> u64 {
            let Ok(rd) = fs::read_dir(p) else { return 0 };
            rd.filter_map(|e| e.ok())
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => walk(&e.path()),
                    _ => e.metadata().map(|m| m.len()).unwrap_or(0),
                })
                .sum()
        }
        walk(&self.dir)
    }
}
