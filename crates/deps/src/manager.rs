//! Which package manager a project uses, and the command line that adds packages with it.
//!
//! Detection, nearest folder first: a `package.json` names its manager in `packageManager`, else
//! its lock file does (bun, pnpm, yarn, npm, in that order, in the sub-project or a folder above
//! it inside the root: workspaces keep one lock file at the top), else npm; then `Cargo.toml`
//! (cargo); `pyproject.toml` (uv or poetry, by lock file, then by their `[tool.*]` table, then by
//! which is installed); `requirements.txt` (pip in the project's virtual environment). Files are
//! read through the workspace's root handle, so a manifest symlinked out of the root is not read.

use std::path::{Path, PathBuf};

use hands_core::ToolError;
use hands_fs::{RelPath, Workspace};

/// The package ecosystems, each with its own name grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ecosystem {
    /// npm's registry.
    Js,
    /// crates.io.
    Rust,
    /// PyPI.
    Python,
}

/// A package manager add_dependency drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Manager {
    Npm,
    Pnpm,
    Yarn,
    Bun,
    Cargo,
    Uv,
    Poetry,
    Pip,
}

/// Lock files of the JavaScript managers, in the order they decide.
const JS_LOCKS: &[(&str, Manager)] = &[
    ("bun.lock", Manager::Bun),
    ("bun.lockb", Manager::Bun),
    ("pnpm-lock.yaml", Manager::Pnpm),
    ("yarn.lock", Manager::Yarn),
    ("package-lock.json", Manager::Npm),
    ("npm-shrinkwrap.json", Manager::Npm),
];

impl Manager {
    /// Its name, as the user types it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Npm => "npm",
            Self::Pnpm => "pnpm",
            Self::Yarn => "yarn",
            Self::Bun => "bun",
            Self::Cargo => "cargo",
            Self::Uv => "uv",
            Self::Poetry => "poetry",
            Self::Pip => "pip",
        }
    }

    /// Its ecosystem.
    pub(crate) fn ecosystem(self) -> Ecosystem {
        match self {
            Self::Npm | Self::Pnpm | Self::Yarn | Self::Bun => Ecosystem::Js,
            Self::Cargo => Ecosystem::Rust,
            Self::Uv | Self::Poetry | Self::Pip => Ecosystem::Python,
        }
    }

    /// Its lock files' names.
    pub(crate) fn locks(self) -> Vec<&'static str> {
        match self {
            Self::Cargo => vec!["Cargo.lock"],
            Self::Uv => vec!["uv.lock"],
            Self::Poetry => vec!["poetry.lock"],
            Self::Pip => vec![],
            js => JS_LOCKS.iter().filter(|(_, m)| *m == js).map(|(name, _)| *name).collect(),
        }
    }

    /// The command line that adds `specs` (checked), as a dev dependency when `dev`, with the
    /// options `extra` before the specs (`--ignore-scripts`). For pip only what follows
    /// `<python> -m pip install --report <file>` (plan.rs puts that in front).
    pub(crate) fn argv(self, specs: &[String], dev: bool, extra: &[&str]) -> Vec<String> {
        let words: &[&str] = match (self, dev) {
            (Self::Npm, false) => &["npm", "install", "--save", "--no-audit", "--no-fund"],
            (Self::Npm, true) => &["npm", "install", "--save-dev", "--no-audit", "--no-fund"],
            (Self::Pnpm, false) => &["pnpm", "add"],
            (Self::Pnpm, true) => &["pnpm", "add", "--save-dev"],
            (Self::Yarn, false) => &["yarn", "add"],
            (Self::Yarn, true) => &["yarn", "add", "--dev"],
            (Self::Bun, false) => &["bun", "add"],
            (Self::Bun, true) => &["bun", "add", "--dev"],
            (Self::Cargo, false) => &["cargo", "add"],
            (Self::Cargo, true) => &["cargo", "add", "--dev"],
            (Self::Uv, false) => &["uv", "add"],
            (Self::Uv, true) => &["uv", "add", "--dev"],
            (Self::Poetry, false) => &["poetry", "add"],
            (Self::Poetry, true) => &["poetry", "add", "--group", "dev"],
            (Self::Pip, _) => &[],
        };
        let mut argv: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        argv.extend(extra.iter().map(|w| (*w).to_owned()));
        // `--` ends the options, so a spec is never read as one (specs are also checked not to
        // start with `-`, which is all there is for yarn and poetry).
        if !matches!(self, Self::Yarn | Self::Poetry) {
            argv.push("--".to_owned());
        }
        argv.extend(specs.iter().cloned());
        argv
    }

    /// Variables the manager gets on top of the child environment: never interactive, no
    /// update notices, no colour.
    pub(crate) fn env(self) -> Vec<(String, String)> {
        let mut env = vec![("CI", "1"), ("NO_UPDATE_NOTIFIER", "1"), ("FORCE_COLOR", "0")];
        match self {
            Self::Npm | Self::Pnpm | Self::Yarn | Self::Bun => {
                env.extend([("npm_config_update_notifier", "false"), ("npm_config_fund", "false")]);
            }
            Self::Cargo => env.push(("CARGO_TERM_COLOR", "never")),
            Self::Uv => env.push(("UV_NO_PROGRESS", "1")),
            Self::Poetry => env.push(("POETRY_NO_INTERACTION", "1")),
            Self::Pip => {
                env.extend([("PIP_DISABLE_PIP_VERSION_CHECK", "1"), ("PIP_NO_INPUT", "1")]);
            }
        }
        env.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
    }
}

/// What detection found.
#[derive(Debug, Clone)]
pub(crate) struct Detected {
    pub manager: Manager,
    /// The manifest, relative to the root.
    pub manifest: RelPath,
    /// Why this manager (`pnpm-lock.yaml`, `packageManager in package.json`).
    pub because: String,
}

/// True when `rel` is a regular file under the root (symlinks inside the root followed).
pub(crate) fn is_file(ws: &Workspace, rel: &RelPath) -> bool {
    ws.dir().metadata(rel.for_open()).is_ok_and(|m| m.is_file())
}

/// The text of `rel`, read through the root handle (`None` when missing or unreadable).
pub(crate) fn read(ws: &Workspace, rel: &RelPath) -> Option<String> {
    ws.dir().read_to_string(rel.for_open()).ok()
}

/// The nearest of `names` in `dir` or a folder above it inside the root, nearest folder first
/// and, within a folder, in the order given.
pub(crate) fn find_up(ws: &Workspace, dir: &RelPath, names: &[&str]) -> Option<RelPath> {
    let mut here = dir.clone();
    loop {
        if let Some(found) = names.iter().map(|n| here.join(n)).find(|p| is_file(ws, p)) {
            return Some(found);
        }
        if here.is_root() {
            return None;
        }
        here = here.parent();
    }
}

/// The manager of the project in folder `dir`.
pub(crate) fn detect(ws: &Workspace, dir: &RelPath) -> Result<Detected, ToolError> {
    let package_json = dir.join("package.json");
    if let Some(text) = is_file(ws, &package_json).then(|| read(ws, &package_json)).flatten() {
        let declared = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| {
            let field = v.get("packageManager")?.as_str()?.to_owned();
            let name = field.split('@').next().unwrap_or_default().to_owned();
            let manager = JS_LOCKS.iter().map(|(_, m)| *m).find(|m| m.name() == name)?;
            Some((manager, field))
        });
        let (manager, because) = match declared {
            Some((manager, field)) => (manager, format!("\"packageManager\": \"{field}\"")),
            None => {
                let names: Vec<&str> = JS_LOCKS.iter().map(|(n, _)| *n).collect();
                match find_up(ws, dir, &names) {
                    Some(lock) => {
                        let name = lock.file_name().map(|n| n.to_string_lossy().into_owned());
                        let name = name.unwrap_or_default();
                        let manager = JS_LOCKS
                            .iter()
                            .find(|(n, _)| *n == name)
                            .map_or(Manager::Npm, |(_, m)| *m);
                        (manager, lock.display())
                    }
                    None => (Manager::Npm, "package.json without a lock file".to_owned()),
                }
            }
        };
        return Ok(Detected { manager, manifest: package_json, because });
    }
    let cargo = dir.join("Cargo.toml");
    if is_file(ws, &cargo) {
        return Ok(Detected {
            manager: Manager::Cargo,
            manifest: cargo,
            because: "Cargo.toml".into(),
        });
    }
    let pyproject = dir.join("pyproject.toml");
    if is_file(ws, &pyproject) {
        let (manager, because) = python_manager(ws, dir, &pyproject)?;
        return Ok(Detected { manager, manifest: pyproject, because });
    }
    let requirements = dir.join("requirements.txt");
    if is_file(ws, &requirements) {
        return Ok(Detected {
            manager: Manager::Pip,
            manifest: requirements,
            because: "requirements.txt".into(),
        });
    }
    Err(ToolError::model(format!(
        "{} has no package.json, Cargo.toml, pyproject.toml or requirements.txt, so there is no \
         package manager to add to. Pass `path` to name the sub-project that has one, or create \
         its manifest first.",
        dir.display()
    )))
}

/// uv or poetry for a `pyproject.toml`.
fn python_manager(
    ws: &Workspace,
    dir: &RelPath,
    pyproject: &RelPath,
) -> Result<(Manager, String), ToolError> {
    if let Some(lock) = find_up(ws, dir, &["uv.lock", "poetry.lock"]) {
        let manager = if lock.file_name().is_some_and(|n| n == "uv.lock") {
            Manager::Uv
        } else {
            Manager::Poetry
        };
        return Ok((manager, lock.display()));
    }
    let table: toml::Table = read(ws, pyproject).and_then(|t| t.parse().ok()).unwrap_or_default();
    let tool = table.get("tool").and_then(toml::Value::as_table);
    if tool.is_some_and(|t| t.contains_key("poetry")) {
        return Ok((Manager::Poetry, "[tool.poetry] in pyproject.toml".into()));
    }
    if tool.is_some_and(|t| t.contains_key("uv")) {
        return Ok((Manager::Uv, "[tool.uv] in pyproject.toml".into()));
    }
    for manager in [Manager::Uv, Manager::Poetry] {
        if on_path(manager.name()).is_some() {
            return Ok((manager, format!("pyproject.toml, and {} is installed", manager.name())));
        }
    }
    Err(ToolError::model(
        "This project has a pyproject.toml but neither uv nor poetry is installed (nor a lock file \
         of either). Ask the user to install uv, or add the package to pyproject.toml by hand.",
    ))
}

/// Where `program` is on PATH, if it is.
pub(crate) fn on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| {
        std::fs::metadata(candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// pip's interpreter for the project at `cwd`, and how it was found: its `.venv` or `venv`, else
/// the active virtual environment. pip is never run on the system's Python.
pub(crate) fn pip_python(cwd: &Path) -> Result<(PathBuf, String), ToolError> {
    let candidates = [
        (cwd.join(".venv/bin/python"), "the virtual environment .venv in the project"),
        (cwd.join("venv/bin/python"), "the virtual environment venv in the project"),
    ];
    let active = std::env::var_os("VIRTUAL_ENV")
        .map(|v| (PathBuf::from(v).join("bin/python"), "the active virtual environment"));
    let found = candidates.into_iter().chain(active).find(|(p, _)| p.exists());
    found.map(|(p, how)| (p, how.to_owned())).ok_or_else(|| {
        ToolError::model(
            "This project uses requirements.txt but has no virtual environment (.venv or venv), \
             and pip is never run on the system's Python. Create one (`python3 -m venv .venv` \
             with bash) and call add_dependency again.",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        let tmp = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = tmp.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let ws = Workspace::open(tmp.path()).unwrap();
        (tmp, ws)
    }

    fn detected(files: &[(&str, &str)], dir: &str) -> Manager {
        let (_tmp, ws) = ws_with(files);
        let dir = ws.resolve("path", dir).unwrap();
        detect(&ws, &dir).unwrap().manager
    }

    #[test]
    fn package_manager_field_then_lock_files_then_npm() {
        let pkg = r#"{"packageManager": "pnpm@9.1.0"}"#;
        assert_eq!(detected(&[("package.json", pkg), ("yarn.lock", "")], "."), Manager::Pnpm);
        assert_eq!(detected(&[("package.json", "{}"), ("bun.lock", "")], "."), Manager::Bun);
        let both = [("package.json", "{}"), ("pnpm-lock.yaml", ""), ("package-lock.json", "")];
        assert_eq!(detected(&both, "."), Manager::Pnpm);
        assert_eq!(detected(&[("package.json", "{}"), ("yarn.lock", "")], "."), Manager::Yarn);
        assert_eq!(detected(&[("package.json", "{}")], "."), Manager::Npm);
        let workspace = [("pnpm-lock.yaml", ""), ("apps/web/package.json", "{}")];
        assert_eq!(detected(&workspace, "apps/web"), Manager::Pnpm);
    }

    #[test]
    fn cargo_python_and_nothing() {
        assert_eq!(detected(&[("Cargo.toml", "")], "."), Manager::Cargo);
        assert_eq!(detected(&[("pyproject.toml", ""), ("uv.lock", "")], "."), Manager::Uv);
        let poetry = [("pyproject.toml", "[tool.poetry]\nname = \"x\"\n")];
        assert_eq!(detected(&poetry, "."), Manager::Poetry);
        assert_eq!(detected(&[("requirements.txt", "")], "."), Manager::Pip);
        let (_tmp, ws) = ws_with(&[("README.md", "")]);
        let err = detect(&ws, &RelPath::default()).unwrap_err().to_string();
        assert!(err.contains("Pass `path`"), "{err}");
    }

    #[test]
    fn argv_ends_options_before_the_specs() {
        let specs = vec!["left-pad@^1".to_owned()];
        assert_eq!(
            Manager::Npm.argv(&specs, true, &["--ignore-scripts"]),
            [
                "npm",
                "install",
                "--save-dev",
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--",
                "left-pad@^1"
            ]
        );
        assert_eq!(Manager::Bun.argv(&specs, false, &[]), ["bun", "add", "--", "left-pad@^1"]);
        assert_eq!(Manager::Yarn.argv(&specs, false, &[]), ["yarn", "add", "left-pad@^1"]);
        assert_eq!(
            Manager::Pip.argv(&["six==1.16".to_owned()], false, &["--only-binary", ":all:"]),
            ["--only-binary", ":all:", "--", "six==1.16"]
        );
    }
}
