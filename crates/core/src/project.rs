//! What kind of project the root is, as far as choosing tools goes: a few `stat`s of well-known
//! files at the root (no walk, no read but two small files' key names), cheap enough to repeat
//! after every call that may change the project. Integration tools are offered only where the
//! project has their context ([`Conditions`](crate::Conditions)`.project`): a five-line script
//! gets no payment, database or page-cloning tools in every request.

use std::path::Path;

/// The project's kind, by the files at its root.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProjectFacts {
    /// A JavaScript/TypeScript project: `package.json`, a lock file of npm, pnpm, yarn or bun,
    /// or a `tsconfig.json`/`jsconfig.json`.
    pub node: bool,
    /// A web app: a package, `index.html`, or a Vite/Next/Astro/SvelteKit/Nuxt/Remix config.
    pub web: bool,
    /// A Python project: `pyproject.toml`, `requirements*.txt`, `setup.py`, `setup.cfg`,
    /// `Pipfile`, `uv.lock` or `poetry.lock`.
    pub python: bool,
    /// A Rust crate or workspace: `Cargo.toml`.
    pub rust: bool,
    /// A Go module: `go.mod`.
    pub go: bool,
    /// A database the project is linked to or set up for: `.hands/project.toml` naming one,
    /// a `supabase/` folder, a Prisma schema, a Drizzle config, or `DATABASE_URL` /
    /// `SUPABASE_URL` named in `.env.example`.
    pub database: bool,
    /// Documents to read: a PDF, office or OpenDocument file at the root or one folder down.
    pub documents: bool,
    /// Skills of the project: a `.hands/skills/` folder with something in it.
    pub skills: bool,
}

/// Files any of which make a package (and so a web project).
const NODE: &[&str] = &[
    "package.json",
    "package-lock.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "bun.lock",
    "bun.lockb",
    "tsconfig.json",
    "jsconfig.json",
];
/// Files any of which make a web app without a package.
const WEB: &[&str] = &[
    "index.html",
    "vite.config.ts",
    "vite.config.js",
    "vite.config.mjs",
    "next.config.js",
    "next.config.mjs",
    "next.config.ts",
    "astro.config.mjs",
    "astro.config.ts",
    "svelte.config.js",
    "nuxt.config.ts",
    "remix.config.js",
];
const PYTHON: &[&str] = &[
    "pyproject.toml",
    "requirements.txt",
    "requirements-dev.txt",
    "setup.py",
    "setup.cfg",
    "Pipfile",
    "uv.lock",
    "poetry.lock",
];
const DATABASE: &[&str] = &[
    "supabase/config.toml",
    "supabase/migrations",
    "prisma/schema.prisma",
    "drizzle.config.ts",
    "drizzle.config.js",
];
/// Names in `.env.example` that say the project talks to a database.
const DATABASE_NAMES: &[&str] = &["DATABASE_URL", "SUPABASE_URL", "SUPABASE_DB_URL"];
/// The most of a small file read for names (a bigger one is not a project's marker file).
const READ_AT_MOST: u64 = 64 * 1024;
/// Sub-projects count too (a monorepo's `web/package.json`, `api/pyproject.toml`): the root's
/// folders are looked into, at most this many, for `package.json`, `index.html`,
/// `pyproject.toml`, `requirements.txt`, `Cargo.toml` and `go.mod`.
const SUBFOLDERS: usize = 64;
/// Extensions of the documents a project may hold for reading.
const DOCUMENTS: &[&str] = &["pdf", "docx", "doc", "pptx", "xlsx", "xls", "ods", "odt", "odp"];
/// Names read of each folder when looking for documents, at most.
const NAMES_PER_FOLDER: usize = 256;
/// Folders never looked into for a sub-project.
const NOT_SUBPROJECTS: &[&str] =
    &["node_modules", "target", "dist", "build", "vendor", "venv", "__pycache__"];

impl ProjectFacts {
    /// The facts of the project at `root` (all false when it cannot be read).
    pub fn probe(root: &Path) -> Self {
        let any = |names: &[&str]| names.iter().any(|n| root.join(n).symlink_metadata().is_ok());
        let node = any(NODE);
        let linked = small_text(&root.join(".hands/project.toml")).is_some_and(|text| {
            text.lines().any(|l| matches!(l.trim(), "[supabase]" | "[database]"))
        });
        let named = small_text(&root.join(".env.example")).is_some_and(|text| {
            text.lines().any(|line| {
                let line = line.trim_start();
                let line = line.strip_prefix("export ").unwrap_or(line);
                DATABASE_NAMES.iter().any(|name| {
                    line.strip_prefix(name).is_some_and(|rest| rest.trim_start().starts_with('='))
                })
            })
        });
        let mut facts = Self {
            node,
            web: node || any(WEB),
            python: any(PYTHON),
            rust: root.join("Cargo.toml").is_file(),
            go: root.join("go.mod").is_file(),
            database: linked || named || any(DATABASE),
            documents: holds_documents(root),
            skills: std::fs::read_dir(root.join(".hands/skills"))
                .is_ok_and(|mut entries| entries.next().is_some()),
        };
        for sub in subprojects(root) {
            let has = |name: &str| sub.join(name).symlink_metadata().is_ok();
            facts.node |= has("package.json");
            facts.web |= has("package.json") || has("index.html");
            facts.python |= has("pyproject.toml") || has("requirements.txt");
            facts.rust |= has("Cargo.toml");
            facts.go |= has("go.mod");
            facts.documents = facts.documents || holds_documents(&sub);
        }
        facts
    }

    /// The project has a package manifest of a language hands can add dependencies in.
    pub fn has_manifest(&self) -> bool {
        self.node || self.python || self.rust || self.go
    }
}

/// The root's folders that may hold a sub-project: not hidden, not a dependency or build folder,
/// not a symlink; the first [`SUBFOLDERS`] the directory lists.
fn subprojects(root: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    entries
        .take(SUBFOLDERS * 4)
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !name.starts_with('.') && !NOT_SUBPROJECTS.contains(&name.as_ref())
        })
        .take(SUBFOLDERS)
        .map(|e| e.path())
        .collect()
}

/// True when the first names of folder `dir` include a document.
fn holds_documents(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.take(NAMES_PER_FOLDER).filter_map(Result::ok).any(|entry| {
        Path::new(&entry.file_name())
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| DOCUMENTS.contains(&e.to_ascii_lowercase().as_str()))
    })
}

/// A regular file's text, if it is small (never through a named pipe: only a regular file,
/// checked without following a symlink, is opened).
fn small_text(path: &Path) -> Option<String> {
    let meta = path.symlink_metadata().ok()?;
    if !meta.is_file() || meta.len() > READ_AT_MOST {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(files: &[(&str, &str)]) -> ProjectFacts {
        let tmp = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = tmp.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        ProjectFacts::probe(tmp.path())
    }

    #[test]
    fn a_plain_script_is_nothing_in_particular() {
        let plain = facts(&[("main.py", "print('hi')\n"), ("README.md", "# x\n")]);
        assert_eq!(plain, ProjectFacts::default());
        assert!(!plain.has_manifest());
        assert_eq!(ProjectFacts::probe(Path::new("/nonexistent/root")), ProjectFacts::default());
    }

    #[test]
    fn each_marker_file_says_its_kind() {
        assert!(facts(&[("package.json", "{}")]).node);
        assert!(facts(&[("package.json", "{}")]).web);
        let site = facts(&[("index.html", "<h1>x</h1>")]);
        assert!(site.web && !site.node && !site.has_manifest());
        assert!(facts(&[("pyproject.toml", "")]).python);
        assert!(facts(&[("requirements.txt", "")]).has_manifest());
        assert!(facts(&[("Cargo.toml", "")]).rust);
        assert!(facts(&[("go.mod", "")]).go);
    }

    #[test]
    fn a_sub_project_counts_but_dependencies_do_not() {
        let mono = facts(&[("web/package.json", "{}"), ("api/pyproject.toml", "")]);
        assert!(mono.node && mono.web && mono.python && !mono.rust);
        assert!(facts(&[("ws/Cargo.toml", "")]).rust);
        assert_eq!(facts(&[("node_modules/x/package.json", "{}")]), ProjectFacts::default());
        assert_eq!(facts(&[("node_modules/package.json", "{}")]), ProjectFacts::default());
        assert_eq!(facts(&[(".cache/package.json", "{}")]), ProjectFacts::default());
        assert_eq!(facts(&[("a/b/package.json", "{}")]), ProjectFacts::default(), "one level");
    }

    #[test]
    fn documents_and_skills() {
        assert!(facts(&[("spec.PDF", "")]).documents);
        assert!(facts(&[("docs/plan.docx", "")]).documents);
        assert!(!facts(&[("docs/a/deep.pdf", "")]).documents, "one folder down at most");
        assert!(!facts(&[("notes.txt", "")]).documents);
        assert!(facts(&[(".hands/skills/release/SKILL.md", "")]).skills);
        assert!(!facts(&[(".hands/config.toml", "")]).skills);
    }

    #[test]
    fn a_database_by_link_folder_or_variable_name() {
        assert!(facts(&[(".hands/project.toml", "[supabase]\nref = \"x\"\n")]).database);
        assert!(!facts(&[(".hands/project.toml", "[stripe]\n")]).database);
        assert!(facts(&[("supabase/config.toml", "")]).database);
        assert!(facts(&[("prisma/schema.prisma", "")]).database);
        assert!(facts(&[(".env.example", "# db\nexport DATABASE_URL=\n")]).database);
        assert!(!facts(&[(".env.example", "DATABASE_URL_DOCS=see wiki\nSTRIPE_KEY=\n")]).database);
    }
}
