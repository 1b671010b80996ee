//! An OSV-format advisory database on disk (`[security] osv_db`): a folder of OSV JSON files, one
//! file (an advisory or an array), or a zip of them (OSV's per-ecosystem `all.zip`). Only the
//! advisories of ecosystems hands reads are kept, indexed by package. A locked version is
//! affected when the advisory lists it, or when a SEMVER or ECOSYSTEM range's events
//! (introduced, fixed, last_affected, limit) put it inside.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use crate::finding::Severity;
use crate::lockfiles::{Ecosystem, Locked};
use crate::version::Version;

/// The most bytes one advisory file may have, and a zip may inflate to in all.
const MAX_FILE: u64 = 16 * 1024 * 1024;
const MAX_INFLATED: u64 = 4 * 1024 * 1024 * 1024;

/// An advisory, as far as matching needs it.
#[derive(Debug, Clone, Deserialize)]
pub struct Advisory {
    /// Its id (`GHSA-…`, `RUSTSEC-…`, `PYSEC-…`).
    pub id: String,
    /// Its one-line summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// Other ids (CVEs).
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    affected: Vec<Affected>,
    #[serde(default)]
    database_specific: Option<serde_json::Value>,
    #[serde(default)]
    withdrawn: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct Affected {
    #[serde(default)]
    package: Option<Package>,
    #[serde(default)]
    versions: Vec<String>,
    #[serde(default)]
    ranges: Vec<Range>,
}

#[derive(Debug, Clone, Deserialize)]
struct Package {
    ecosystem: String,
    name: String,
}

#[derive(Debug, Clone, Deserialize)]
struct Range {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    events: Vec<Event>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Event {
    introduced: Option<String>,
    fixed: Option<String>,
    last_affected: Option<String>,
    limit: Option<String>,
}

/// A match: the advisory and the first fixed version after the locked one, if known.
#[derive(Debug, Clone)]
pub struct Hit<'a> {
    /// The advisory.
    pub advisory: &'a Advisory,
    /// The version that fixes it.
    pub fixed: Option<String>,
}

/// The database, by package.
#[derive(Debug, Default)]
pub struct Database {
    by_package: HashMap<(Ecosystem, String), Vec<Advisory>>,
    /// Advisories kept.
    pub advisories: usize,
}

impl Database {
    /// Load the database at `path`.
    pub fn load(path: &Path) -> Result<Self, String> {
        let mut db = Self::default();
        let shown = path.display();
        let meta = std::fs::metadata(path)
            .map_err(|err| format!("the OSV database {shown} does not open: {err}"))?;
        if meta.is_dir() {
            let walk = ignore::WalkBuilder::new(path).standard_filters(false).build();
            for entry in walk.flatten() {
                let p = entry.path();
                if p.extension().is_some_and(|e| e == "json") && p.is_file() {
                    let bytes = read_capped(p)?;
                    db.add_json(&bytes);
                }
            }
        } else if path.extension().is_some_and(|e| e == "zip") {
            let file = std::fs::File::open(path).map_err(|err| format!("{shown}: {err}"))?;
            let mut zip =
                zip::ZipArchive::new(file).map_err(|err| format!("{shown} is not a zip: {err}"))?;
            let mut budget = MAX_INFLATED;
            for i in 0..zip.len() {
                let mut entry = zip.by_index(i).map_err(|err| format!("{shown}: {err}"))?;
                if !entry.name_raw().ends_with(b".json") {
                    continue;
                }
                let mut bytes = Vec::new();
                entry
                    .by_ref()
                    .take(MAX_FILE.min(budget))
                    .read_to_end(&mut bytes)
                    .map_err(|err| format!("{shown}: {err}"))?;
                budget = budget.saturating_sub(bytes.len() as u64);
                db.add_json(&bytes);
            }
        } else {
            let bytes = read_capped(path)?;
            db.add_json(&bytes);
        }
        Ok(db)
    }

    fn add_json(&mut self, bytes: &[u8]) {
        let advisories: Vec<Advisory> = match serde_json::from_slice::<serde_json::Value>(bytes) {
            Ok(serde_json::Value::Array(items)) => {
                items.into_iter().filter_map(|v| serde_json::from_value(v).ok()).collect()
            }
            Ok(value) => serde_json::from_value(value).into_iter().collect(),
            Err(_) => Vec::new(),
        };
        for advisory in advisories {
            if advisory.withdrawn.is_some() {
                continue;
            }
            let mut keys: Vec<(Ecosystem, String)> = advisory
                .affected
                .iter()
                .filter_map(|a| a.package.as_ref())
                .filter_map(|p| {
                    let eco = Ecosystem::from_osv(p.ecosystem.split(':').next().unwrap_or(""))?;
                    Some((eco, eco.normalize(&p.name)))
                })
                .collect();
            keys.sort();
            keys.dedup();
            if keys.is_empty() {
                continue;
            }
            self.advisories += 1;
            for key in keys {
                self.by_package.entry(key).or_default().push(advisory.clone());
            }
        }
    }

    /// The advisories that affect `package`.
    pub fn matches(&self, package: &Locked) -> Vec<Hit<'_>> {
        let key = (package.ecosystem, package.name.clone());
        let Some(advisories) = self.by_package.get(&key) else { return Vec::new() };
        let Some(version) = Version::parse(package.ecosystem, &package.version) else {
            return Vec::new();
        };
        let mut hits = Vec::new();
        for advisory in advisories {
            for affected in &advisory.affected {
                let Some(p) = &affected.package else { continue };
                if Ecosystem::from_osv(p.ecosystem.split(':').next().unwrap_or(""))
                    != Some(package.ecosystem)
                    || package.ecosystem.normalize(&p.name) != package.name
                {
                    continue;
                }
                if affected.versions.iter().any(|v| v == &package.version) {
                    hits.push(Hit { advisory, fixed: None });
                    break;
                }
                if let Some(fixed) = affected
                    .ranges
                    .iter()
                    .filter(|r| r.kind == "SEMVER" || r.kind == "ECOSYSTEM")
                    .find_map(|r| in_range(package.ecosystem, &version, &r.events))
                {
                    hits.push(Hit { advisory, fixed });
                    break;
                }
            }
        }
        hits
    }
}

impl Advisory {
    /// Its severity: the database's own word when it gives one (GitHub's `CRITICAL`, `HIGH`,
    /// `MODERATE`, `LOW`), else medium.
    pub fn severity(&self) -> Severity {
        let word = self
            .database_specific
            .as_ref()
            .and_then(|d| d.get("severity"))
            .and_then(|s| s.as_str())
            .unwrap_or("")
            .to_ascii_uppercase();
        match word.as_str() {
            "CRITICAL" => Severity::Critical,
            "HIGH" => Severity::High,
            "LOW" => Severity::Low,
            _ => Severity::Medium,
        }
    }
}

/// `Some(fixed version, if any)` when `version` is inside the range `events` describe.
fn in_range(eco: Ecosystem, version: &Version, events: &[Event]) -> Option<Option<String>> {
    let parse = |s: &str| if s == "0" { None } else { Version::parse(eco, s) };
    let mut affected = false;
    let mut fixed = None;
    for event in events {
        if let Some(intro) = &event.introduced {
            match parse(intro) {
                None if intro == "0" => affected = true,
                Some(v) if version.cmp_to(&v).is_ge() => affected = true,
                _ => {}
            }
        } else if let Some(f) = &event.fixed {
            if let Some(v) = parse(f) {
                if version.cmp_to(&v).is_ge() {
                    affected = false;
                } else if affected && fixed.is_none() {
                    fixed = Some(f.clone());
                }
            }
        } else if let Some(last) = &event.last_affected {
            if parse(last).is_some_and(|v| version.cmp_to(&v).is_gt()) {
                affected = false;
            }
        } else if let Some(limit) = &event.limit
            && parse(limit).is_some_and(|v| version.cmp_to(&v).is_ge())
        {
            affected = false;
        }
    }
    affected.then_some(fixed)
}

fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|err| format!("{}: {err}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("{}: {err}", path.display()))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LODASH: &str = r#"{"id":"GHSA-35jh-r3h4-6jhm","summary":"Command Injection in lodash","aliases":["CVE-2021-23337"],
      "affected":[{"package":{"ecosystem":"npm","name":"lodash"},
        "ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"4.17.21"}]}]}],
      "database_specific":{"severity":"HIGH"}}"#;

    fn locked(eco: Ecosystem, name: &str, version: &str) -> Locked {
        Locked { ecosystem: eco, name: name.into(), version: version.into(), file: "x".into() }
    }

    #[test]
    fn ranges_and_lists_match_locked_versions() {
        let mut db = Database::default();
        db.add_json(LODASH.as_bytes());
        db.add_json(br#"[{"id":"PYSEC-1","affected":[{"package":{"ecosystem":"PyPI","name":"Requests"},"versions":["2.19.0"]}]},
            {"id":"RUSTSEC-1","affected":[{"package":{"ecosystem":"crates.io","name":"smallvec"},
              "ranges":[{"type":"SEMVER","events":[{"introduced":"1.0.0"},{"last_affected":"1.6.0"}]}]}]}]"#);
        assert_eq!(db.advisories, 3);
        let hit = db.matches(&locked(Ecosystem::Npm, "lodash", "4.17.20"));
        assert_eq!(
            (hit[0].advisory.id.as_str(), hit[0].fixed.as_deref()),
            ("GHSA-35jh-r3h4-6jhm", Some("4.17.21"))
        );
        assert_eq!(hit[0].advisory.severity(), Severity::High);
        assert!(db.matches(&locked(Ecosystem::Npm, "lodash", "4.17.21")).is_empty());
        assert_eq!(db.matches(&locked(Ecosystem::PyPi, "requests", "2.19.0")).len(), 1);
        assert_eq!(db.matches(&locked(Ecosystem::Crates, "smallvec", "1.6.0")).len(), 1);
        assert!(db.matches(&locked(Ecosystem::Crates, "smallvec", "1.6.1")).is_empty());
        assert!(db.matches(&locked(Ecosystem::Crates, "smallvec", "0.9.0")).is_empty());
    }
}
