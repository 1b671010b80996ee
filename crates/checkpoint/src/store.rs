//! The shadow store of one project: `objects/`, `checkpoints/<n>.json`, `index.json`, `journal.json`.
//!
//! It lives under the state folder, keyed by the sha256 of the project root, never inside the
//! project, so the user's own `.git` is neither read for writing nor touched.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, IoContext};
use crate::manifest::Checkpoint;
use crate::snapshot::{self, Config, Index};

/// The state folder: `HANDS_STATE_DIR`, else `$XDG_STATE_HOME/hands`, else `~/.local/state/hands`.
pub fn state_dir() -> Result<PathBuf, Error> {
    if let Some(d) = std::env::var_os("HANDS_STATE_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("hands"));
    }
    let home = std::env::var_os("HOME").filter(|d| !d.is_empty()).ok_or(Error::NoStateDir)?;
    Ok(PathBuf::from(home).join(".local/state/hands"))
}

/// The checkpoint store of one project.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) root: PathBuf,
    pub(crate) dir: PathBuf,
    pub(crate) config: Config,
}

impl Store {
    /// The store of `root` under the state folder; finishes an interrupted restore first.
    pub fn open_for(root: &Path) -> Result<Self, Error> {
        let root = root.canonicalize().at(root)?;
        let key = crate::objects::hash(root.as_os_str().as_encoded_bytes());
        let dir = state_dir()?.join("checkpoints").join(key);
        Self::open(&root, &dir, Config::default())
    }

    /// The store of `root` kept in `dir`; finishes an interrupted restore first.
    pub fn open(root: &Path, dir: &Path, config: Config) -> Result<Self, Error> {
        for sub in ["objects", "checkpoints"] {
            fs::create_dir_all(dir.join(sub)).at(&dir.join(sub))?;
        }
        let store = Self { root: root.to_path_buf(), dir: dir.to_path_buf(), config };
        store.recover()?;
        Ok(store)
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn objects(&self) -> PathBuf {
        self.dir.join("objects")
    }

    fn manifest_path(&self, id: u64) -> PathBuf {
        self.dir.join("checkpoints").join(format!("{id}.json"))
    }

    /// Snapshots the working tree as checkpoint of `session`'s `turn`.
    pub fn snapshot(&self, session: &str, turn: u64, label: &str) -> Result<Checkpoint, Error> {
        let index = self.load_index();
        let (entries, new_index, _) =
            snapshot::walk(&self.root, &self.config, &self.objects(), &index)?;
        let mut cp = Checkpoint {
            id: 0,
            session: session.to_string(),
            turn,
            label: label.to_string(),
            created: SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
            entries: entries.into_iter().collect(),
        };
        let body_path = self.dir.join("index.json");
        write_atomic(&body_path, &serde_json::to_vec(&new_index).unwrap_or_default())?;
        // Numbers are claimed with create_new, so two sessions snapshotting at once never share one.
        let mut id = self.ids()?.last().copied().unwrap_or(0) + 1;
        loop {
            let path = self.manifest_path(id);
            match fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => id += 1,
                Err(e) => return Err(Error::Io { path, source: e }),
            }
        }
        cp.id = id;
        write_atomic(&self.manifest_path(id), &serde_json::to_vec(&cp).unwrap_or_default())?;
        Ok(cp)
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
        let path = self.manifest_path(id);
        let bytes = fs::read(&path).map_err(|_| Error::NotFound(id))?;
        serde_json::from_slice(&bytes).map_err(|source| Error::Corrupt { path, source })
    }

    pub(crate) fn remove(&self, id: u64) -> Result<(), Error> {
        let path = self.manifest_path(id);
        fs::remove_file(&path).at(&path)
    }

    /// The content of object `oid`.
    pub fn object(&self, oid: &str) -> Result<Vec<u8>, Error> {
        crate::objects::get(&self.objects(), oid)
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

    fn load_index(&self) -> Index {
        fs::read(self.dir.join("index.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }
}

/// Writes `bytes` to `path` through a temporary file, fsync and rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("f");
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut f = fs::File::create(&tmp).at(&tmp)?;
    f.write_all(bytes).at(&tmp)?;
    f.sync_all().at(&tmp)?;
    fs::rename(&tmp, path).at(path)
}
