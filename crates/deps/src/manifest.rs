//! What a project declares and what its lock file pins, read before and after the manager runs,
//! so that the result says what changed from the files themselves rather than from the
//! manager's output.
//!
//! Declared: package.json's `dependencies`/`devDependencies`; Cargo.toml's `[dependencies]` and
//! `[dev-dependencies]`; pyproject.toml's `[project] dependencies` and dev groups (uv's
//! `[dependency-groups] dev` and `[tool.uv] dev-dependencies`, poetry's tables);
//! requirements.txt's lines. Locked: package-lock.json, pnpm-lock.yaml, bun.lock and yarn.lock
//! (by line, for the names asked), Cargo.lock, uv.lock, poetry.lock; the installed
//! `node_modules/NAME/package.json` when a JavaScript lock file does not say.

use std::collections::BTreeMap;

use hands_fs::{RelPath, Workspace};

use crate::manager::{Ecosystem, Manager, find_up, read};
use crate::spec::normalize_python;

/// A declared dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Declared {
    /// The requirement as written (`^1.2.0`, `>=2.31`, `{ version = "0.2.0", path = "../x" }`).
    pub requirement: String,
    /// Declared as a dev dependency.
    pub dev: bool,
}

/// A project's dependencies at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct State {
    /// By name.
    pub declared: BTreeMap<String, Declared>,
    /// Resolved versions of the declared names (and of the names asked), by name.
    pub locked: BTreeMap<String, String>,
    /// The lock file read, relative to the root.
    pub lock: Option<RelPath>,
}

/// Read the state of the project whose manifest is `manifest`, resolving `extra` names too.
pub(crate) fn read_state(
    ws: &Workspace,
    manager: Manager,
    manifest: &RelPath,
    extra: &[String],
) -> State {
    let dir = manifest.parent();
    let text = read(ws, manifest).unwrap_or_default();
    let declared = match manager.ecosystem() {
        Ecosystem::Js => declared_js(&text),
        Ecosystem::Rust => declared_cargo(&text),
        Ecosystem::Python if manager == Manager::Pip => declared_requirements(&text),
        Ecosystem::Python => declared_pyproject(&text),
    };
    let lock = find_up(ws, &dir, &manager.locks());
    let lock_text = lock.as_ref().and_then(|l| read(ws, l)).unwrap_or_default();
    let mut names: Vec<String> = declared.keys().cloned().collect();
    names.extend(extra.iter().cloned());
    names.sort();
    names.dedup();
    let importer = lock.as_ref().map_or_else(String::new, |l| relative(&l.parent(), &dir));
    let mut locked = BTreeMap::new();
    for name in &names {
        let version = match manager {
            Manager::Npm => npm_lock(&lock_text, &importer, name),
            Manager::Pnpm => pnpm_lock(&lock_text, &importer, name),
            Manager::Bun => bun_lock(&lock_text, name),
            Manager::Yarn => yarn_lock(&lock_text, name),
            Manager::Cargo | Manager::Uv | Manager::Poetry => toml_lock(&lock_text, name),
            Manager::Pip => None,
        };
        let version = version.or_else(|| match manager.ecosystem() {
            Ecosystem::Js => installed_js(ws, &dir, name),
            _ => None,
        });
        if let Some(version) = version {
            locked.insert(name.clone(), version);
        }
    }
    State { declared, locked, lock }
}

/// `dir` relative to `base` (an ancestor), `.` when they are the same.
fn relative(base: &RelPath, dir: &RelPath) -> String {
    match dir.as_path().strip_prefix(base.as_path()) {
        Ok(rest) if !rest.as_os_str().is_empty() => rest.to_string_lossy().into_owned(),
        _ => ".".to_owned(),
    }
}

fn declared_js(text: &str) -> BTreeMap<String, Declared> {
    let json: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let mut out = BTreeMap::new();
    for (field, dev) in [("dependencies", false), ("devDependencies", true)] {
        if let Some(deps) = json.get(field).and_then(|d| d.as_object()) {
            for (name, requirement) in deps {
                let requirement = requirement.as_str().unwrap_or_default().to_owned();
                out.insert(name.clone(), Declared { requirement, dev });
            }
        }
    }
    out
}

/// A TOML dependency entry as one line: a string as it is, a table inline.
fn toml_requirement(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn declared_cargo(text: &str) -> BTreeMap<String, Declared> {
    let table: toml::Table = text.parse().unwrap_or_default();
    let mut out = BTreeMap::new();
    for (field, dev) in [("dependencies", false), ("dev-dependencies", true)] {
        if let Some(deps) = table.get(field).and_then(toml::Value::as_table) {
            for (name, value) in deps {
                out.insert(name.clone(), Declared { requirement: toml_requirement(value), dev });
            }
        }
    }
    out
}

/// The name of a PEP 508 requirement line and the rest of it.
fn pep508(line: &str) -> Option<(String, String)> {
    let line = line.trim();
    let end = line.find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))?;
    if end == 0 {
        return None;
    }
    Some((normalize_python(&line[..end]), line[end..].trim().to_owned()))
}

/// A requirement line's name and requirement, when the whole line is a name.
fn pep508_line(line: &str) -> Option<(String, String)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with(['#', '-']) {
        return None;
    }
    pep508(line).or_else(|| Some((normalize_python(line), String::new())))
}

fn declared_requirements(text: &str) -> BTreeMap<String, Declared> {
    let line = |l: &str| l.split(" #").next().unwrap_or_default().to_owned();
    text.lines()
        .filter_map(|l| pep508_line(&line(l)))
        .map(|(name, requirement)| (name, Declared { requirement, dev: false }))
        .collect()
}

fn declared_pyproject(text: &str) -> BTreeMap<String, Declared> {
    let table: toml::Table = text.parse().unwrap_or_default();
    let get = |path: &[&str]| -> Option<toml::Value> {
        let mut value = toml::Value::Table(table.clone());
        for key in path {
            value = value.get(key)?.clone();
        }
        Some(value)
    };
    let mut out = BTreeMap::new();
    let mut strings = |value: Option<toml::Value>, dev: bool| {
        for item in value.as_ref().and_then(toml::Value::as_array).into_iter().flatten() {
            if let Some((name, requirement)) = item.as_str().and_then(pep508_line) {
                out.insert(name, Declared { requirement, dev });
            }
        }
    };
    strings(get(&["project", "dependencies"]), false);
    strings(get(&["dependency-groups", "dev"]), true);
    strings(get(&["tool", "uv", "dev-dependencies"]), true);
    let poetry = [
        (&["tool", "poetry", "dependencies"][..], false),
        (&["tool", "poetry", "dev-dependencies"][..], true),
        (&["tool", "poetry", "group", "dev", "dependencies"][..], true),
    ];
    for (path, dev) in poetry {
        if let Some(deps) = get(path).as_ref().and_then(toml::Value::as_table) {
            for (name, value) in deps.iter().filter(|(n, _)| n.as_str() != "python") {
                let requirement = toml_requirement(value);
                out.insert(normalize_python(name), Declared { requirement, dev });
            }
        }
    }
    out
}

fn npm_lock(text: &str, importer: &str, name: &str) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let packages = json.get("packages")?;
    let nested = format!("{importer}/node_modules/{name}");
    [format!("node_modules/{name}"), nested]
        .iter()
        .find_map(|key| packages.get(key)?.get("version")?.as_str().map(str::to_owned))
}

/// pnpm-lock.yaml (v6 to v9): `importers:` → `  <importer>:` → `    dependencies:` →
/// `      <name>:` → `        version: <v>` (a peer suffix `(…)` dropped).
fn pnpm_lock(text: &str, importer: &str, name: &str) -> Option<String> {
    let unquote = |s: &str| s.trim().trim_end_matches(':').trim_matches(['\'', '"']).to_owned();
    let mut in_importers = false;
    let mut in_importer = false;
    let mut in_name = false;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        match indent {
            0 => {
                in_importers = trimmed == "importers:";
                in_importer = false;
                in_name = false;
            }
            2 if in_importers => {
                in_importer = unquote(trimmed) == importer;
                in_name = false;
            }
            6 if in_importer => in_name = unquote(trimmed) == name,
            8 if in_name => {
                if let Some(version) = trimmed.strip_prefix("version:") {
                    let version = unquote(version);
                    return Some(version.split('(').next().unwrap_or_default().to_owned());
                }
            }
            _ => {}
        }
    }
    None
}

/// bun.lock: `"<name>": ["<name>@<version>", …` in `packages`.
fn bun_lock(text: &str, name: &str) -> Option<String> {
    let key = format!("\"{name}\": [\"{name}@");
    let line = text.lines().find(|l| l.trim_start().starts_with(&key))?;
    let rest = &line.trim_start()[key.len()..];
    rest.split('"').next().map(str::to_owned)
}

/// yarn.lock (classic and berry): an entry line naming `<name>@…`, then its `version`.
fn yarn_lock(text: &str, name: &str) -> Option<String> {
    let mut in_entry = false;
    for line in text.lines() {
        if !line.starts_with(' ') && !line.trim().is_empty() {
            in_entry = line.trim_end_matches(':').split(", ").any(|entry| {
                let entry = entry.trim_matches('"');
                entry.strip_prefix(name).is_some_and(|rest| rest.starts_with('@'))
            });
        } else if in_entry {
            let trimmed = line.trim();
            if let Some(version) =
                trimmed.strip_prefix("version ").or_else(|| trimmed.strip_prefix("version: "))
            {
                return Some(version.trim_matches('"').to_owned());
            }
        }
    }
    None
}

/// Cargo.lock, uv.lock, poetry.lock: the `version` of the last `[[package]]` named `name`.
fn toml_lock(text: &str, name: &str) -> Option<String> {
    let table: toml::Table = text.parse().ok()?;
    let packages = table.get("package")?.as_array()?;
    let wanted = normalize_python(name);
    packages
        .iter()
        .filter(|p| {
            p.get("name")
                .and_then(toml::Value::as_str)
                .is_some_and(|n| n == name || normalize_python(n) == wanted)
        })
        .filter_map(|p| p.get("version")?.as_str().map(str::to_owned))
        .next_back()
}

/// The version in `node_modules/<name>/package.json`, in `dir` or a folder above it.
fn installed_js(ws: &Workspace, dir: &RelPath, name: &str) -> Option<String> {
    let file = find_up(ws, dir, &[&format!("node_modules/{name}/package.json")])?;
    let json: serde_json::Value = serde_json::from_str(&read(ws, &file)?).ok()?;
    json.get("version")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_files_give_versions() {
        let pnpm = "lockfileVersion: '9.0'\n\nimporters:\n\n  .:\n    dependencies:\n      \
                    hands-left:\n        specifier: ^1.2.0\n        version: 1.2.0\n      \
                    '@s/p':\n        specifier: ^2\n        version: 2.0.1(react@18.0.0)\n\n\
                    packages:\n\n  hands-left@1.2.0:\n    resolution: {}\n";
        assert_eq!(pnpm_lock(pnpm, ".", "hands-left").as_deref(), Some("1.2.0"));
        assert_eq!(pnpm_lock(pnpm, ".", "@s/p").as_deref(), Some("2.0.1"));
        assert_eq!(pnpm_lock(pnpm, "apps/web", "hands-left"), None);
        let bun = "{\n  \"packages\": {\n    \"hands-left\": [\"hands-left@1.2.0\", \"\", {}],\n    \
                   \"@s/p\": [\"@s/p@2.0.0\", \"\"],\n  }\n}\n";
        assert_eq!(bun_lock(bun, "hands-left").as_deref(), Some("1.2.0"));
        assert_eq!(bun_lock(bun, "@s/p").as_deref(), Some("2.0.0"));
        let yarn = "\"left-pad@^1.3.0\", left-pad@^1.1:\n  version \"1.3.0\"\n\nleft-padder@1:\n  \
                    version \"9.0.0\"\n";
        assert_eq!(yarn_lock(yarn, "left-pad").as_deref(), Some("1.3.0"));
        let npm = r#"{"packages": {"": {}, "node_modules/hands-left": {"version": "1.2.0"}}}"#;
        assert_eq!(npm_lock(npm, ".", "hands-left").as_deref(), Some("1.2.0"));
        let cargo = "[[package]]\nname = \"helper\"\nversion = \"0.2.0\"\n";
        assert_eq!(toml_lock(cargo, "helper").as_deref(), Some("0.2.0"));
        let uv = "[[package]]\nname = \"zope-interface\"\nversion = \"6.0\"\n";
        assert_eq!(toml_lock(uv, "zope.interface").as_deref(), Some("6.0"));
    }

    #[test]
    fn manifests_give_declared_dependencies() {
        let js = declared_js(r#"{"dependencies": {"a": "^1"}, "devDependencies": {"b": "2"}}"#);
        assert_eq!(js["a"], Declared { requirement: "^1".into(), dev: false });
        assert!(js["b"].dev);
        let cargo = declared_cargo(
            "[dependencies]\nserde = \"1\"\n[dev-dependencies]\nx = { path = \"../x\" }\n",
        );
        assert_eq!(cargo["serde"].requirement, "1");
        assert!(cargo["x"].dev && cargo["x"].requirement.contains("path"));
        let req = declared_requirements("# c\nRequests==2.31.0\n-r other.txt\nsix\n");
        assert_eq!(req["requests"].requirement, "==2.31.0");
        assert_eq!(req["six"].requirement, "");
        let py = declared_pyproject(
            "[project]\ndependencies = [\"httpx>=0.27\"]\n[dependency-groups]\ndev = [\"pytest\"]\n",
        );
        assert_eq!(py["httpx"].requirement, ">=0.27");
        assert!(py["pytest"].dev);
    }
}
