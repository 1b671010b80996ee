//! The languages hands knows a server for, which files are theirs, and where each server is
//! found: the user's `[code.servers]` command, else the project's own `node_modules/.bin`, else
//! PATH.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;

use crate::CodeConfig;

/// A language with a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// TypeScript and JavaScript, through `typescript-language-server`.
    TypeScript,
    /// Python, through `pyright-langserver` or `basedpyright-langserver`.
    Python,
    /// Rust, through `rust-analyzer` (only when on PATH).
    Rust,
    /// Go, through `gopls` (only when on PATH).
    Go,
}

impl Language {
    /// Every language, in the order status lists them.
    pub const ALL: [Language; 4] =
        [Language::TypeScript, Language::Python, Language::Rust, Language::Go];

    /// The language of `path`, by its extension.
    pub fn of(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?;
        Some(match ext {
            "ts" | "tsx" | "mts" | "cts" | "js" | "jsx" | "mjs" | "cjs" => Self::TypeScript,
            "py" | "pyi" => Self::Python,
            "rs" => Self::Rust,
            "go" => Self::Go,
            _ => return None,
        })
    }

    /// The key of `[code.servers]` and of results.
    pub fn key(self) -> &'static str {
        match self {
            Self::TypeScript => "typescript",
            Self::Python => "python",
            Self::Rust => "rust",
            Self::Go => "go",
        }
    }

    /// The name people know.
    pub fn title(self) -> &'static str {
        match self {
            Self::TypeScript => "TypeScript",
            Self::Python => "Python",
            Self::Rust => "Rust",
            Self::Go => "Go",
        }
    }

    /// The LSP `languageId` of `path`.
    pub fn language_id(self, path: &Path) -> &'static str {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        match (self, ext) {
            (Self::TypeScript, "tsx") => "typescriptreact",
            (Self::TypeScript, "js" | "mjs" | "cjs") => "javascript",
            (Self::TypeScript, "jsx") => "javascriptreact",
            (Self::TypeScript, _) => "typescript",
            (Self::Python, _) => "python",
            (Self::Rust, _) => "rust",
            (Self::Go, _) => "go",
        }
    }

    /// The candidate programs and their arguments, best first; the project's `node_modules/.bin`
    /// is looked in only for the npm ones.
    fn candidates(self) -> &'static [(&'static str, &'static [&'static str], bool)] {
        match self {
            Self::TypeScript => &[("typescript-language-server", &["--stdio"], true)],
            Self::Python => &[
                ("pyright-langserver", &["--stdio"], true),
                ("basedpyright-langserver", &["--stdio"], true),
            ],
            Self::Rust => &[("rust-analyzer", &[], false)],
            Self::Go => &[("gopls", &["serve"], false)],
        }
    }

    /// The server's command for the project at `root`, or None when none is installed (or, for
    /// rust-analyzer and gopls, when the root has no `Cargo.toml` or `go.mod`: they index a
    /// workspace, and without one they only cost).
    pub fn command(self, config: &CodeConfig, root: &Path) -> Option<Vec<String>> {
        if let Some(argv) = config.servers.get(self.key()).filter(|a| !a.is_empty()) {
            return Some(argv.clone());
        }
        // rust-analyzer runs the project's build scripts and proc macros (and rustup's stand-in
        // follows the project's rust-toolchain.toml to a program of the repository's); gopls
        // follows go.mod's toolchain line: running either is running the repository's code, so
        // only a command the user named in `code.servers` starts them.
        if matches!(self, Self::Rust | Self::Go) {
            return None;
        }
        let manifest = match self {
            Self::Rust => Some("Cargo.toml"),
            Self::Go => Some("go.mod"),
            _ => None,
        };
        if manifest.is_some_and(|m| !root.join(m).is_file()) {
            return None;
        }
        for (program, args, npm) in self.candidates() {
            let local = root.join("node_modules/.bin").join(program);
            let found = if *npm && config.project_servers && is_executable(&local) {
                Some(local)
            } else {
                on_path(program, root)
            };
            if let Some(found) = found {
                let mut argv = vec![found.to_string_lossy().into_owned()];
                argv.extend(args.iter().map(|a| (*a).to_owned()));
                return Some(argv);
            }
        }
        None
    }
}

/// The `initializationOptions` for a server started as `argv` in the project at `root`, or why it
/// must not start. typescript-language-server would load the project's own
/// `node_modules/typescript` (the repository's code) and download type packages with npm
/// outside the egress rule: it is given the TypeScript installed beside it, and no automatic
/// type acquisition; without such a TypeScript it is not started in a project that has its own.
pub fn initialization_options(
    language: Language,
    argv: &[String],
    root: &Path,
) -> Result<serde_json::Value, String> {
    if language != Language::TypeScript {
        return Ok(serde_json::json!({}));
    }
    let mut options = serde_json::json!({"disableAutomaticTypingAcquisition": true});
    match argv.first().and_then(|program| beside(Path::new(program), root)) {
        Some(tsserver) => {
            options["tsserver"] = serde_json::json!({"path": tsserver.to_string_lossy()});
        }
        None if root.join("node_modules/typescript").exists() => {
            return Err(format!(
                "`{}` has no TypeScript of its own beside it, and it would load the project's \
                 node_modules/typescript (the repository's code); install typescript next to \
                 the server or name a server in `code.servers`",
                argv.first().map_or("", String::as_str)
            ));
        }
        None => {}
    }
    Ok(options)
}

/// `typescript/lib/tsserver.js` in a `node_modules` folder that holds `program`'s real file (or
/// one above it), outside the project at `root`.
fn beside(program: &Path, root: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(program).ok()?;
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    real.ancestors()
        .skip(1)
        .take(8)
        .filter(|dir| !dir.starts_with(&root))
        .map(|dir| {
            if dir.file_name().is_some_and(|n| n == "node_modules") {
                dir.join("typescript/lib/tsserver.js")
            } else {
                dir.join("node_modules/typescript/lib/tsserver.js")
            }
        })
        .find(|candidate| candidate.is_file())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `program` in a PATH folder that is absolute and outside the project: a PATH holding `.` or
/// `./node_modules/.bin` must not turn a planted file of the repository into its server.
fn on_path(program: &str, root: &Path) -> Option<PathBuf> {
    on_path_in(&std::env::var_os("PATH")?, program, root)
}

/// [`on_path`] with `path` as PATH.
fn on_path_in(path: &std::ffi::OsStr, program: &str, root: &Path) -> Option<PathBuf> {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .filter(|dir| {
            !std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()).starts_with(&root)
        })
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PATH entry inside the project (or a relative one) never supplies a server.
    #[test]
    fn path_entries_inside_the_project_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        let planted = bin.join("hands-test-planted-server");
        std::fs::write(&planted, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
        let old = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![bin.clone(), PathBuf::from("node_modules/.bin")];
        dirs.extend(std::env::split_paths(&old));
        let joined = std::env::join_paths(dirs).unwrap();
        assert_eq!(on_path_in(&joined, "hands-test-planted-server", dir.path()), None);
        let outside = tempfile::tempdir().unwrap();
        let theirs = outside.path().join("hands-test-planted-server");
        std::fs::write(&theirs, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o755)).unwrap();
        let joined = std::env::join_paths([bin, outside.path().to_path_buf()]).unwrap();
        let found = on_path_in(&joined, "hands-test-planted-server", dir.path());
        assert_eq!(found, Some(theirs));
    }

    /// Red-team round 3: the project's own node_modules/typescript ran inside the user's
    /// server, and its type acquisition ran npm outside the egress rule.
    #[test]
    fn typescript_gets_the_servers_own_typescript_and_no_type_acquisition() {
        let install = tempfile::tempdir().unwrap();
        let bin = install.path().join("node_modules/.bin");
        let cli = install.path().join("node_modules/typescript-language-server/lib/cli.mjs");
        let tsserver = install.path().join("node_modules/typescript/lib/tsserver.js");
        for file in [&cli, &tsserver] {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, "").unwrap();
        }
        std::fs::create_dir_all(&bin).unwrap();
        let program = bin.join("typescript-language-server");
        std::os::unix::fs::symlink(&cli, &program).unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join("node_modules/typescript/lib")).unwrap();
        let argv = vec![program.to_string_lossy().into_owned(), "--stdio".into()];
        let options = initialization_options(Language::TypeScript, &argv, project.path()).unwrap();
        assert_eq!(options["disableAutomaticTypingAcquisition"], true);
        let real = std::fs::canonicalize(&tsserver).unwrap();
        assert_eq!(options["tsserver"]["path"], real.to_string_lossy().as_ref());
        // A server with no TypeScript beside it is not started where the project has its own.
        let lonely = tempfile::tempdir().unwrap();
        let alone = lonely.path().join("typescript-language-server");
        std::fs::write(&alone, "").unwrap();
        let argv = vec![alone.to_string_lossy().into_owned()];
        let err = initialization_options(Language::TypeScript, &argv, project.path()).unwrap_err();
        assert!(err.contains("node_modules/typescript"), "{err}");
        let plain = tempfile::tempdir().unwrap();
        let options = initialization_options(Language::TypeScript, &argv, plain.path()).unwrap();
        assert_eq!(options["disableAutomaticTypingAcquisition"], true);
        assert!(options.get("tsserver").is_none());
        assert_eq!(
            initialization_options(Language::Python, &argv, project.path()).unwrap(),
            serde_json::json!({})
        );
    }

    #[test]
    fn files_belong_to_languages_by_extension() {
        assert_eq!(Language::of(Path::new("src/a.tsx")), Some(Language::TypeScript));
        assert_eq!(Language::of(Path::new("a.py")), Some(Language::Python));
        assert_eq!(Language::of(Path::new("README.md")), None);
        assert_eq!(Language::TypeScript.language_id(Path::new("a.jsx")), "javascriptreact");
    }

    #[test]
    fn the_users_command_wins_and_the_project_bin_only_when_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = CodeConfig::default();
        config.servers.insert("go".into(), vec!["/opt/gopls".into()]);
        assert_eq!(Language::Go.command(&config, dir.path()), Some(vec!["/opt/gopls".into()]));
        let bin = dir.path().join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        let server = bin.join("typescript-language-server");
        std::fs::write(&server, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Off by default: the repository's program is not its server.
        let off = Language::TypeScript.command(&config, dir.path());
        assert!(
            off.as_ref().is_none_or(|a| !a[0].starts_with(&*dir.path().to_string_lossy())),
            "{off:?}"
        );
        let on = CodeConfig { project_servers: true, ..config.clone() };
        let argv = Language::TypeScript.command(&on, dir.path()).unwrap();
        assert_eq!(argv, vec![server.to_string_lossy().into_owned(), "--stdio".into()]);
        // rust-analyzer only as the user's command, whatever PATH holds.
        std::fs::write(dir.path().join("Cargo.toml"), "[package]\n").unwrap();
        assert_eq!(Language::Rust.command(&CodeConfig::default(), dir.path()), None);
    }
}
