//! The packages a project has locked, read from its lock files: package-lock.json (v1–v3),
//! pnpm-lock.yaml (v5–v9), yarn.lock (classic and berry), Cargo.lock, poetry.lock, uv.lock and
//! pinned requirements*.txt. YAML and yarn's format are read line by line (only the package
//! keys and versions matter); JSON and TOML with their parsers.

use std::collections::BTreeSet;
use std::path::Path;

/// An OSV ecosystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ecosystem {
    /// npm.
    Npm,
    /// crates.io.
    Crates,
    /// PyPI.
    PyPi,
}

impl Ecosystem {
    /// From its OSV name.
    pub fn from_osv(name: &str) -> Option<Self> {
        match name {
            "npm" => Some(Self::Npm),
            "crates.io" => Some(Self::Crates),
            "PyPI" => Some(Self::PyPi),
            _ => None,
        }
    }

    /// A package name as the ecosystem compares it (PyPI: lowercase, runs of `-_.` as `-`).
    pub fn normalize(self, name: &str) -> String {
        match self {
            Self::PyPi => {
                let mut out = String::with_capacity(name.len());
                for c in name.trim().chars() {
                    if matches!(c, '-' | '_' | '.') {
                        if !out.ends_with('-') {
                            out.push('-');
                        }
                    } else {
                        out.push(c.to_ascii_lowercase());
                    }
                }
                out
            }
            _ => name.trim().to_owned(),
        }
    }
}

/// One locked package.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Locked {
    /// Its ecosystem.
    pub ecosystem: Ecosystem,
    /// Its name, normalized.
    pub name: String,
    /// Its exact version.
    pub version: String,
    /// The lock file it is in, relative to the project root.
    pub file: String,
}

/// Lock file names this reads.
pub fn is_lock_file(name: &str) -> bool {
    matches!(
        name,
        "package-lock.json"
            | "npm-shrinkwrap.json"
            | "pnpm-lock.yaml"
            | "yarn.lock"
            | "Cargo.lock"
            | "poetry.lock"
            | "uv.lock"
    ) || (name.starts_with("requirements") && name.ends_with(".txt"))
}

/// The packages in lock file `path` (shown as `rel`), and how many lines of a requirements
/// file were not pinned; an error says why the file does not read.
pub fn read(path: &Path, rel: &str) -> Result<(Vec<Locked>, usize), String> {
    let text =
        std::fs::read_to_string(path).map_err(|err| format!("{rel} does not read: {err}"))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut unpinned = 0;
    let found: BTreeSet<(Ecosystem, String, String)> = match name.as_str() {
        "package-lock.json" | "npm-shrinkwrap.json" => {
            npm_lock(&text).map_err(|e| format!("{rel}: {e}"))?
        }
        "pnpm-lock.yaml" => pnpm_lock(&text),
        "yarn.lock" => yarn_lock(&text),
        "Cargo.lock" => {
            toml_packages(&text, Ecosystem::Crates, true).map_err(|e| format!("{rel}: {e}"))?
        }
        "poetry.lock" | "uv.lock" => {
            toml_packages(&text, Ecosystem::PyPi, false).map_err(|e| format!("{rel}: {e}"))?
        }
        _ => {
            let (found, n) = requirements(&text);
            unpinned = n;
            found
        }
    };
    let packages = found
        .into_iter()
        .map(|(ecosystem, name, version)| Locked {
            name: ecosystem.normalize(&name),
            ecosystem,
            version,
            file: rel.to_owned(),
        })
        .collect();
    Ok((packages, unpinned))
}

type Found = BTreeSet<(Ecosystem, String, String)>;

fn npm_lock(text: &str) -> Result<Found, String> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|err| format!("not JSON ({err})"))?;
    let mut out = Found::new();
    if let Some(packages) = json.get("packages").and_then(|p| p.as_object()) {
        for (key, entry) in packages {
            let Some(at) = key.rfind("node_modules/") else { continue };
            let name = entry
                .get("name")
                .and_then(|n| n.as_str())
                .unwrap_or(&key[at + "node_modules/".len()..]);
            if entry.get("link").and_then(|l| l.as_bool()) == Some(true) {
                continue;
            }
            if let Some(version) = entry.get("version").and_then(|v| v.as_str()) {
                out.insert((Ecosystem::Npm, name.to_owned(), version.to_owned()));
            }
        }
    } else if let Some(deps) = json.get("dependencies") {
        npm_v1(deps, &mut out, 0);
    }
    Ok(out)
}

fn npm_v1(deps: &serde_json::Value, out: &mut Found, depth: usize) {
    let Some(deps) = deps.as_object() else { return };
    if depth > 64 {
        return;
    }
    for (name, entry) in deps {
        if let Some(version) = entry.get("version").and_then(|v| v.as_str())
            && !version.contains(':')
        {
            out.insert((Ecosystem::Npm, name.clone(), version.to_owned()));
        }
        if let Some(nested) = entry.get("dependencies") {
            npm_v1(nested, out, depth + 1);
        }
    }
}

/// `name@version` (the `@` of a scope is not the separator), peer suffixes `(…)` and `_…` cut.
fn split_at_version(spec: &str) -> Option<(String, String)> {
    let spec = spec.split('(').next().unwrap_or(spec);
    let at = spec[1..].rfind('@')? + 1;
    let (name, version) = (&spec[..at], &spec[at + 1..]);
    let version = version.split('_').next().unwrap_or(version);
    (!name.is_empty() && version.starts_with(|c: char| c.is_ascii_digit()))
        .then(|| (name.to_owned(), version.to_owned()))
}

fn pnpm_lock(text: &str) -> Found {
    let mut out = Found::new();
    let mut in_packages = false;
    for line in text.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            in_packages = line.starts_with("packages:") || line.starts_with("snapshots:");
            continue;
        }
        if !in_packages || !line.starts_with("  ") || line.starts_with("   ") {
            continue;
        }
        let key = line.trim().trim_end_matches(':').trim_matches(|c| c == '\'' || c == '"');
        let key = key.strip_prefix('/').unwrap_or(key);
        if let Some((name, version)) = split_at_version(key) {
            out.insert((Ecosystem::Npm, name, version));
        } else if let Some((name, version)) = key.rsplit_once('/') {
            // v5: `/name/1.2.3`.
            let version = version.split('_').next().unwrap_or(version);
            if version.starts_with(|c: char| c.is_ascii_digit()) {
                out.insert((Ecosystem::Npm, name.to_owned(), version.to_owned()));
            }
        }
    }
    out
}

fn yarn_lock(text: &str) -> Found {
    let mut out = Found::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if !line.starts_with(' ') {
            let first = line.trim_end_matches(':').split(", ").next().unwrap_or("");
            let first = first.trim_matches('"');
            current = first
                .get(1..)
                .and_then(|rest| rest.find('@'))
                .map(|at| first[..at + 1].to_owned())
                .filter(|name| !name.starts_with("__"));
            continue;
        }
        let trimmed = line.trim();
        let version = trimmed
            .strip_prefix("version ")
            .or_else(|| trimmed.strip_prefix("version: "))
            .map(|v| v.trim().trim_matches('"'));
        if let (Some(name), Some(version)) = (&current, version)
            && version.starts_with(|c: char| c.is_ascii_digit())
        {
            out.insert((Ecosystem::Npm, name.clone(), version.to_owned()));
        }
    }
    out
}

fn toml_packages(text: &str, ecosystem: Ecosystem, registry_only: bool) -> Result<Found, String> {
    let doc: toml::Table = text.parse().map_err(|err| format!("not TOML ({err})"))?;
    let mut out = Found::new();
    for package in doc.get("package").and_then(|p| p.as_array()).into_iter().flatten() {
        let (Some(name), Some(version)) = (
            package.get("name").and_then(|n| n.as_str()),
            package.get("version").and_then(|v| v.as_str()),
        ) else {
            continue;
        };
        let source = package.get("source");
        let from_registry = source
            .and_then(|s| s.as_str())
            .is_some_and(|s| s.starts_with("registry+") || s.starts_with("sparse+"))
            || source.and_then(|s| s.get("registry")).is_some();
        if registry_only && !from_registry {
            continue;
        }
        out.insert((ecosystem, name.to_owned(), version.to_owned()));
    }
    Ok(out)
}

fn requirements(text: &str) -> (Found, usize) {
    let mut out = Found::new();
    let mut unpinned = 0;
    for line in text.lines() {
        let line = line.split(" #").next().unwrap_or(line).trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('-') {
            continue;
        }
        let spec = line.split(';').next().unwrap_or(line).trim();
        match spec.split_once("==") {
            Some((name, version)) if !version.contains(['*', ',']) => {
                let name = name.split('[').next().unwrap_or(name).trim();
                out.insert((Ecosystem::PyPi, name.to_owned(), version.trim().to_owned()));
            }
            _ => unpinned += 1,
        }
    }
    (out, unpinned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(found: &Found) -> Vec<String> {
        found.iter().map(|(_, n, v)| format!("{n}@{v}")).collect()
    }

    #[test]
    fn npm_pnpm_and_yarn_locks() {
        let v3 = r#"{"lockfileVersion":3,"packages":{"":{"name":"app"},
            "node_modules/lodash":{"version":"4.17.20"},
            "node_modules/@scope/pkg":{"version":"1.0.0"},
            "node_modules/a/node_modules/lodash":{"version":"3.10.1"}}}"#;
        assert_eq!(
            names(&npm_lock(v3).unwrap()),
            ["@scope/pkg@1.0.0", "lodash@3.10.1", "lodash@4.17.20"]
        );
        let v1 = r#"{"lockfileVersion":1,"dependencies":{"minimist":{"version":"0.0.8","dependencies":{"x":{"version":"1.0.0"}}}}}"#;
        assert_eq!(names(&npm_lock(v1).unwrap()), ["minimist@0.0.8", "x@1.0.0"]);
        let pnpm = "lockfileVersion: '9.0'\n\npackages:\n\n  '@babel/core@7.24.0':\n    resolution: {integrity: x}\n\n  lodash@4.17.20:\n    resolution: {}\n\nsnapshots:\n\n  react-dom@18.2.0(react@18.2.0):\n    dependencies: {}\n";
        assert_eq!(
            names(&pnpm_lock(pnpm)),
            ["@babel/core@7.24.0", "lodash@4.17.20", "react-dom@18.2.0"]
        );
        assert_eq!(
            names(&pnpm_lock("packages:\n  /left-pad/1.3.0:\n    x: 1\n")),
            ["left-pad@1.3.0"]
        );
        let yarn = "# yarn\n\n\"@types/node@^20\", \"@types/node@^20.1\":\n  version \"20.11.5\"\n\nlodash@^4.17.0:\n  version \"4.17.20\"\n\n\"left-pad@npm:^1.3.0\":\n  version: 1.3.0\n";
        assert_eq!(
            names(&yarn_lock(yarn)),
            ["@types/node@20.11.5", "left-pad@1.3.0", "lodash@4.17.20"]
        );
    }

    #[test]
    fn cargo_poetry_and_requirements() {
        let cargo = "[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n\n[[package]]\nname = \"smallvec\"\nversion = \"1.6.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n";
        assert_eq!(
            names(&toml_packages(cargo, Ecosystem::Crates, true).unwrap()),
            ["smallvec@1.6.0"]
        );
        let poetry = "[[package]]\nname = \"Django\"\nversion = \"3.2.0\"\n";
        assert_eq!(
            names(&toml_packages(poetry, Ecosystem::PyPi, false).unwrap()),
            ["Django@3.2.0"]
        );
        let (found, unpinned) = requirements(
            "# deps\nrequests[socks]==2.19.0 ; python_version > '3'\nflask>=2\n-r other.txt\n",
        );
        assert_eq!((names(&found), unpinned), (vec!["requests@2.19.0".to_owned()], 1));
        assert_eq!(Ecosystem::PyPi.normalize("Zope.Interface__x"), "zope-interface-x");
    }
}
