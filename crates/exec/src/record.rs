//! Persistent records of background processes, so that a hands that starts after one that crashed
//! (SIGKILL, OOM, power loss of the terminal) stops what the dead one left running.
//!
//! A record names the owner (hands pid + its `/proc` start time), the process (pid, pgid, start
//! time) and the markers its descendants carry. A record is acted on only when its owner is gone;
//! the recorded pid is signalled only when its current start time equals the recorded one, so a
//! reused pid is never killed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::kill;
use crate::procfs::{self, Target};

/// One background process, as written under the state folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Pid of the hands that started it.
    pub owner_pid: i32,
    /// `/proc` start time of that hands.
    pub owner_start: u64,
    /// The owner marker its descendants carry (`HANDS_OWNER`).
    pub owner: String,
    /// Pid of the process (also its process group and session).
    pub pid: i32,
    /// Its process group.
    pub pgid: i32,
    /// Its `/proc` start time.
    pub start: u64,
    /// The command line.
    pub command: String,
    /// The session id (`HANDS_SESSION`).
    pub session: String,
    /// The process marker (`HANDS_PROCESS`).
    pub marker: String,
}

/// The folder of process records: `$HANDS_STATE_DIR/processes`, else
/// `$XDG_STATE_HOME/hands/processes`, else `~/.local/state/hands/processes`.
pub fn records_dir() -> Option<PathBuf> {
    hands_dirs::state_dir().map(|dir| dir.join("processes"))
}

impl Record {
    /// The file name of this record in the records folder.
    pub fn file_name(&self) -> String {
        format!("{}-{}.json", self.owner_pid, self.pid)
    }

    /// Write it (atomically: temp file, rename) under `dir`; returns its path. The folders
    /// hands creates are 0700 and the record 0600: it names the user's commands.
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        use std::io::Write as _;
        hands_dirs::create_private_dir_all(dir)?;
        let path = dir.join(self.file_name());
        let tmp = dir.join(format!(".{}.tmp", self.file_name()));
        // A temp file left by a crash is replaced, so the new one is created with our mode.
        match std::fs::remove_file(&tmp) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err),
            _ => {}
        }
        let bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        let mut file = hands_dirs::create_private_file(&tmp)?;
        file.write_all(&bytes)?;
        drop(file);
        std::fs::rename(&tmp, &path)?;
        Ok(path)
    }

    fn owner_alive(&self) -> bool {
        procfs::start_time(self.owner_pid) == Some(self.owner_start)
    }
}

/// What [`reap_leftovers`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LeftoverReport {
    /// Records read.
    pub records: usize,
    /// Records left in place because their hands is still running.
    pub owner_alive: usize,
    /// Records whose recorded pid now names another process (reused): that pid was not touched.
    pub reused_pids: usize,
    /// Processes signalled (the recorded ones and everything carrying their session's marker).
    pub stopped: usize,
    /// Marked processes still alive afterwards (should be 0).
    pub survivors: usize,
    /// Records deleted.
    pub removed: usize,
    /// Files that could not be read as records (left in place).
    pub unreadable: usize,
}

/// Stop what hands instances that are gone left running, as recorded under `dir`, and delete their
/// records. Blocking (up to about a second per leftover); a starting hands calls it once.
pub fn reap_leftovers(dir: &Path) -> LeftoverReport {
    let mut report = LeftoverReport::default();
    let Ok(entries) = std::fs::read_dir(dir) else { return report };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let record = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok());
        let Some(record) = record else {
            report.unreadable += 1;
            continue;
        };
        report.records += 1;
        if record.owner_alive() {
            report.owner_alive += 1;
            continue;
        }
        let same = procfs::start_time(record.pid) == Some(record.start);
        if !same && procfs::start_time(record.pid).is_some() {
            report.reused_pids += 1;
        }
        let target = Target {
            owner: record.owner.clone(),
            session: Some(record.session.clone()),
            process: None,
            // The group is only ours when the recorded pid is still the recorded process.
            group: same.then_some(record.pgid),
            orphans_since: None,
        };
        let stop = kill::stop(&target, Duration::from_millis(500), false);
        report.stopped += stop.terminated.max(stop.killed);
        report.survivors += stop.survivors;
        if stop.survivors == 0 && std::fs::remove_file(&path).is_ok() {
            report.removed += 1;
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_names_its_file_by_owner_and_pid() {
        let dir = tempfile::tempdir().unwrap();
        let record = Record {
            owner_pid: 10,
            owner_start: 20,
            owner: "10.20".into(),
            pid: 30,
            pgid: 30,
            start: 40,
            command: "sleep 1".into(),
            session: "s".into(),
            marker: "s/p1".into(),
        };
        let path = record.write(dir.path()).unwrap();
        assert_eq!(path.file_name().unwrap(), "10-30.json");
        let back: Record = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(back, record);
    }

    #[test]
    fn records_of_a_live_owner_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let me = procfs::own_pid();
        let record = Record {
            owner_pid: me,
            owner_start: procfs::start_time(me).unwrap(),
            owner: procfs::owner_marker(),
            pid: me,
            pgid: me,
            start: procfs::start_time(me).unwrap(),
            command: "hands".into(),
            session: "s".into(),
            marker: "s/p1".into(),
        };
        record.write(dir.path()).unwrap();
        let report = reap_leftovers(dir.path());
        assert_eq!((report.records, report.owner_alive, report.removed), (1, 1, 0));
        assert!(dir.path().join(record.file_name()).exists());
    }
}
