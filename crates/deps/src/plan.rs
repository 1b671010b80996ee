//! What add_dependency will run, computed before it asks and again before it runs: the exact
//! argv, the file each program resolves to and whose it is — the system's (found on PATH outside
//! the project) or the repository's (anything beneath the project root: `.venv/bin/python`, a
//! `yarnPath` release, a `node_modules/.bin` manager) — the environment it gets on top of the
//! child environment, and whether install-time code (lifecycle scripts, `.pnpmfile.cjs`, source
//! builds) may run.
//!
//! Programs are looked up on hands' PATH with every relative entry and every entry inside the
//! project left out, and the manager gets that PATH too (its `#!/usr/bin/env node` finds the
//! system's node, not one the repository planted). Install-time code is off unless the user
//! set `[deps] allow_scripts`; a program of the repository runs only when the user allowed it
//! (tool.rs decides, from this plan).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use hands_core::ToolError;
use hands_fs::{RelPath, Workspace};

use crate::manager::{self, Manager};

/// Whose a program is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Found on PATH outside the project.
    System,
    /// Beneath the project root, or named by one of its files.
    Repository,
}

impl Origin {
    /// `system` or `repository`, for the structured result.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Repository => "repository",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Self::System => "the system's",
            Self::Repository => "THE REPOSITORY'S",
        }
    }
}

/// One program the run executes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Program {
    /// What it is to the run: `program`, `interpreter`, `yarnPath`.
    pub role: &'static str,
    /// The path it is run by.
    pub path: PathBuf,
    /// The file that path resolves to, when a symlink makes it another one.
    pub real: Option<PathBuf>,
    pub origin: Origin,
    /// How it was found (`on PATH`, `.venv in the project`).
    pub how: String,
}

/// What one call will run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The folder it runs in.
    pub cwd: PathBuf,
    /// The exact argv; `argv[0]` is an absolute path.
    pub argv: Vec<String>,
    /// Set on top of the child environment.
    pub env: Vec<(String, String)>,
    /// The program, then what it hands over to (its interpreter, a yarnPath release).
    pub programs: Vec<Program>,
    /// Install-time code may run.
    pub scripts: bool,
    /// What install-time code means for this manager, and how it is kept off (or why not).
    pub scripts_note: String,
    /// PATH entries left out (relative, or inside the project).
    pub skipped: Vec<String>,
    /// Anything else the user should know (a corepack shim).
    pub notes: Vec<String>,
}

impl Plan {
    /// The first program of the repository's, if any.
    pub(crate) fn repository_program(&self) -> Option<&Program> {
        self.programs.iter().find(|p| p.origin == Origin::Repository)
    }

    /// The program `argv[0]` names.
    pub(crate) fn program(&self) -> &Program {
        // `build` always puts it first.
        &self.programs[0]
    }

    /// Several lines for the approval and for a refusal: where, the argv, each program with its
    /// origin, install-time code, what was skipped on PATH.
    pub(crate) fn details(&self) -> String {
        let mut out =
            format!("In {}, without a shell:\n  {}\n", self.cwd.display(), shown(&self.argv));
        for program in &self.programs {
            let real =
                program.real.as_ref().map_or_else(String::new, |r| format!(" -> {}", r.display()));
            out.push_str(&format!(
                "{}: {}{real}: {} ({})\n",
                program.role,
                program.path.display(),
                program.origin.words(),
                program.how
            ));
        }
        let state = if self.scripts { "ON" } else { "off" };
        out.push_str(&format!("Install-time code: {state}: {}\n", self.scripts_note));
        if !self.skipped.is_empty() {
            out.push_str(&format!(
                "Left out of PATH (relative or inside the project): {}\n",
                self.skipped.join(", ")
            ));
        }
        for note in &self.notes {
            out.push_str(note);
            out.push('\n');
        }
        out
    }
}

/// `argv` as one line a person can read and paste: words with anything but `[A-Za-z0-9_./:=@^~+-]`
/// single-quoted.
fn shown(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars().all(|c| c.is_ascii_alphanumeric() || "_./:=@^~+-,".contains(c));
            if plain { a.clone() } else { format!("'{}'", a.replace('\'', "'\\''")) }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the plan is built from.
pub(crate) struct Inputs<'a> {
    pub ws: &'a Workspace,
    /// The (sub-)project's folder, relative to the root.
    pub dir: &'a RelPath,
    pub manager: Manager,
    /// The checked specs.
    pub specs: &'a [String],
    pub dev: bool,
    /// `[deps] allow_scripts`.
    pub allow_scripts: bool,
    /// pip's report file.
    pub report: PathBuf,
    /// hands' PATH.
    pub path: Option<OsString>,
    /// Why this manager (for the message when it is not installed).
    pub because: &'a str,
}

/// The plan for `inputs`, or why nothing can run (the manager is not installed, no venv).
pub(crate) fn build(inputs: &Inputs<'_>) -> Result<Plan, ToolError> {
    let ws = inputs.ws;
    let manager = inputs.manager;
    let root = ws.root().canonicalize().unwrap_or_else(|_| ws.root().to_path_buf());
    let cwd = if inputs.dir.is_root() { root.clone() } else { root.join(inputs.dir.as_path()) };
    let (dirs, skipped) = search_dirs(&root, inputs.path.as_deref());
    let mut programs = Vec::new();
    let mut notes = Vec::new();
    let mut env = manager.env();
    let clean_path = std::env::join_paths(&dirs)
        .map_err(|err| ToolError::Fatal(format!("add_dependency: PATH: {err}")))?;
    env.push(("PATH".into(), clean_path.to_string_lossy().into_owned()));
    let python = match manager {
        Manager::Pip => {
            let (python, how) = manager::pip_python(&cwd)?;
            let real = real_if_other(&python);
            let origin = if beneath(&root, &python) { Origin::Repository } else { Origin::System };
            programs.push(Program { role: "program", path: python.clone(), real, origin, how });
            Some(python)
        }
        _ => {
            let Some(found) = find(manager.name(), &dirs) else {
                return Err(ToolError::model(format!(
                    "This is a {} project ({}), but `{}` is not installed (not on PATH outside \
                     the project{}). Ask the user to install it.",
                    manager.name(),
                    inputs.because,
                    manager.name(),
                    if skipped.is_empty() {
                        String::new()
                    } else {
                        format!("; left out: {}", skipped.join(", "))
                    }
                )));
            };
            let real = real_if_other(&found);
            let origin = if real.as_deref().is_some_and(|r| beneath(&root, r)) {
                Origin::Repository
            } else {
                Origin::System
            };
            let file = real.clone().unwrap_or_else(|| found.clone());
            if file.components().any(|c| c.as_os_str() == "corepack") {
                notes.push(format!(
                    "{} is corepack's shim: it runs the {} release package.json's \
                     \"packageManager\" names, downloaded if it is not cached.",
                    found.display(),
                    manager.name()
                ));
            }
            programs.push(Program {
                role: "program",
                path: found,
                real,
                origin,
                how: "found on PATH".into(),
            });
            if let Some(interpreter) = interpreter(&file, &dirs, &root) {
                programs.push(interpreter);
            }
            None
        }
    };
    let mut scripts = inputs.allow_scripts;
    let scripts_note;
    let off = !inputs.allow_scripts;
    let mut extra: Vec<&str> = Vec::new();
    match manager {
        Manager::Npm => {
            scripts_note = if off {
                extra.push("--ignore-scripts");
                env.push(("npm_config_ignore_scripts".into(), "true".into()));
                "no lifecycle script runs, the project's or a package's (--ignore-scripts); \
                 the user allows them with [deps] allow_scripts = true"
            } else {
                "lifecycle scripts run: the project's and every installed package's \
                 (preinstall, install, postinstall, prepare) ([deps] allow_scripts = true)"
            }
            .into();
        }
        Manager::Pnpm => {
            // pnpm would otherwise fetch and run the pnpm release "packageManager" names, from
            // the registry the project's .npmrc names.
            env.push(("npm_config_manage_package_manager_versions".into(), "false".into()));
            scripts_note = if off {
                extra.extend(["--ignore-scripts", "--ignore-pnpmfile"]);
                env.push(("npm_config_ignore_scripts".into(), "true".into()));
                "no lifecycle script runs and the project's .pnpmfile.cjs is not loaded \
                 (--ignore-scripts --ignore-pnpmfile); the user allows them with [deps] \
                 allow_scripts = true"
            } else {
                "lifecycle scripts run and .pnpmfile.cjs is loaded ([deps] allow_scripts = true)"
            }
            .into();
        }
        Manager::Yarn => {
            scripts_note = if off {
                env.extend([
                    ("YARN_IGNORE_SCRIPTS".into(), "true".into()),
                    ("YARN_ENABLE_SCRIPTS".into(), "false".into()),
                    ("npm_config_ignore_scripts".into(), "true".into()),
                ]);
                "no lifecycle script runs (YARN_IGNORE_SCRIPTS, YARN_ENABLE_SCRIPTS=false); the \
                 user allows them with [deps] allow_scripts = true"
            } else {
                "lifecycle scripts run ([deps] allow_scripts = true)"
            }
            .into();
            match yarn_path(ws, inputs.dir, &root) {
                Some(release) => programs.push(release),
                // A yarnPath in a folder above the project is not followed either.
                None => env.push(("YARN_IGNORE_PATH".into(), "1".into())),
            }
        }
        Manager::Bun => {
            scripts_note = if off {
                extra.push("--ignore-scripts");
                "no lifecycle script runs, not even of trustedDependencies (--ignore-scripts); \
                 the user allows them with [deps] allow_scripts = true"
            } else {
                "lifecycle scripts run: the project's and those of its trustedDependencies \
                 ([deps] allow_scripts = true)"
            }
            .into();
        }
        Manager::Pip => {
            scripts_note = if off {
                extra.extend(["--only-binary", ":all:"]);
                env.push(("PIP_ONLY_BINARY".into(), ":all:".into()));
                "wheels only: no source distribution is built, so no package's setup.py runs \
                 (--only-binary :all:); the user allows builds with [deps] allow_scripts = true"
            } else {
                "source distributions are built when a package has no wheel: their setup.py \
                 or build backend runs ([deps] allow_scripts = true)"
            }
            .into();
        }
        Manager::Cargo => {
            scripts = false;
            scripts_note = "cargo add builds nothing: no build.rs runs".into();
        }
        Manager::Uv | Manager::Poetry => {
            scripts = true;
            scripts_note = format!(
                "{} builds a package that has no wheel, and may build the project itself: that \
                 build code runs, and hands cannot switch it off for {}",
                manager.name(),
                manager.name()
            );
        }
    }
    let mut argv = manager.argv(inputs.specs, inputs.dev, &extra);
    match (&python, argv.first_mut()) {
        (Some(python), _) => {
            let mut pip = vec![python.display().to_string()];
            pip.extend(["-m", "pip", "install", "--report"].map(str::to_owned));
            pip.push(inputs.report.display().to_string());
            pip.extend(argv);
            argv = pip;
        }
        (None, Some(first)) => *first = programs[0].path.display().to_string(),
        (None, None) => {}
    }
    Ok(Plan { cwd, argv, env, programs, scripts, scripts_note, skipped, notes })
}

/// The PATH entries programs are looked up in: absolute, and outside the project. The others,
/// as written, are returned second.
fn search_dirs(root: &Path, path: Option<&std::ffi::OsStr>) -> (Vec<PathBuf>, Vec<String>) {
    let mut kept = Vec::new();
    let mut skipped = Vec::new();
    for dir in path.map(std::env::split_paths).into_iter().flatten() {
        let inside = dir.is_relative()
            || dir.as_os_str().is_empty()
            || beneath(root, &dir)
            || dir.canonicalize().is_ok_and(|real| beneath(root, &real));
        if inside {
            let shown = if dir.as_os_str().is_empty() {
                "(empty)".into()
            } else {
                dir.display().to_string()
            };
            if !skipped.contains(&shown) {
                skipped.push(shown);
            }
        } else {
            kept.push(dir);
        }
    }
    (kept, skipped)
}

/// True when `path` is `root` or beneath it.
fn beneath(root: &Path, path: &Path) -> bool {
    path.starts_with(root)
}

/// `program` in the first of `dirs` that has it as an executable file.
fn find(program: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    dirs.iter().map(|dir| dir.join(program)).find(|candidate| {
        std::fs::metadata(candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// What `path`'s symlinks resolve to, when that is another file.
fn real_if_other(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok().filter(|real| real != path)
}

/// The interpreter a script's `#!` line names (`/usr/bin/env node`: node on `dirs`).
fn interpreter(file: &Path, dirs: &[PathBuf], root: &Path) -> Option<Program> {
    use std::io::Read as _;
    let mut head = [0_u8; 256];
    let n = std::fs::File::open(file).and_then(|mut f| f.read(&mut head)).ok()?;
    let head = String::from_utf8_lossy(&head[..n]);
    let line = head.strip_prefix("#!")?.lines().next()?.trim();
    let mut words = line.split_whitespace();
    let first = words.next()?;
    let (path, how) = if Path::new(first).file_name().is_some_and(|n| n == "env") {
        let name = words.find(|w| !w.starts_with('-'))?;
        (find(name, dirs)?, format!("the #! line's `{line}`, on PATH"))
    } else {
        (PathBuf::from(first), "its #! line".to_owned())
    };
    let real = real_if_other(&path);
    let inside = beneath(root, &path) || real.as_deref().is_some_and(|r| beneath(root, r));
    let origin = if inside { Origin::Repository } else { Origin::System };
    Some(Program { role: "interpreter", path, real, origin, how })
}

/// The yarn release a `.yarnrc.yml` (`yarnPath:`) or `.yarnrc` (`yarn-path`) in `dir` or a
/// folder above it inside the root names; yarn runs it instead of itself.
fn yarn_path(ws: &Workspace, dir: &RelPath, root: &Path) -> Option<Program> {
    let mut here = dir.clone();
    loop {
        for (file, key) in [(".yarnrc.yml", "yarnPath"), (".yarnrc", "yarn-path")] {
            let rc = here.join(file);
            let Some(text) = manager::is_file(ws, &rc).then(|| manager::read(ws, &rc)).flatten()
            else {
                continue;
            };
            let value = text.lines().find_map(|line| {
                let rest = line.trim_start().strip_prefix(key)?;
                let rest = rest.strip_prefix(':').unwrap_or(rest).trim();
                let rest = rest.trim_matches(|c| c == '"' || c == '\'');
                (!rest.is_empty()).then(|| rest.to_owned())
            });
            if let Some(value) = value {
                let path = root.join(here.as_path()).join(value);
                let real = real_if_other(&path);
                return Some(Program {
                    role: "yarnPath",
                    path,
                    real,
                    // Named by the repository's file, wherever it points.
                    origin: Origin::Repository,
                    how: format!("`{key}` in {}: yarn hands over to it", rc.display()),
                });
            }
        }
        if here.is_root() {
            return None;
        }
        here = here.parent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_project_path_entries_are_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("node_modules/.bin")).unwrap();
        let inside = root.join("node_modules/.bin");
        let path = std::env::join_paths([
            PathBuf::from("node_modules/.bin"),
            inside.clone(),
            PathBuf::from("/usr/bin"),
        ])
        .unwrap();
        let (kept, skipped) = search_dirs(&root, Some(&path));
        assert_eq!(kept, [PathBuf::from("/usr/bin")]);
        assert_eq!(skipped, ["node_modules/.bin".to_owned(), inside.display().to_string()]);
    }

    #[test]
    fn argv_is_shown_quoted() {
        let argv =
            ["/usr/bin/npm", "install", "--", "a b", "it's", "left-pad@^1"].map(String::from);
        assert_eq!(shown(&argv), "/usr/bin/npm install -- 'a b' 'it'\\''s' left-pad@^1");
    }
}
