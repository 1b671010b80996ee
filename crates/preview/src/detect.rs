//! What the preview runs: the configured commands, or what the project looks like. A Vite project
//! (vite in package.json or a vite config) gets its dev server on a chosen port with
//! `--strictPort`; a Bun project with a `compile.ts` is typechecked (`bun typecheck`, when the
//! package has that script), compiled with `bun compile.ts` and its `dist` served by the built-in
//! static server; a folder with an `index.html` is served as it is. Configured keys override what
//! detection found, one by one.

use std::path::{Path, PathBuf};

use crate::PreviewConfig;

/// What kind of project the preview found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProjectKind {
    /// A Vite project: the Vite dev server.
    Vite,
    /// A Bun project with `compile.ts`.
    Bun,
    /// A static site: `index.html` served by the built-in server.
    Static,
    /// Commands from `[preview]`.
    Configured,
}

impl ProjectKind {
    /// The word used in results.
    pub fn word(self) -> &'static str {
        match self {
            Self::Vite => "vite",
            Self::Bun => "bun",
            Self::Static => "static",
            Self::Configured => "configured",
        }
    }
}

/// What serves the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Server {
    /// A shell command run as a supervised daemon; `{port}` is replaced by the port.
    Command(String),
    /// The built-in static server over this folder (relative to the root).
    Static(PathBuf),
}

/// The preview of one project: what to run, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// What detection found (or `Configured`).
    pub kind: ProjectKind,
    /// Typecheck command.
    pub typecheck: Option<String>,
    /// Build command.
    pub build: Option<String>,
    /// What serves the app.
    pub server: Server,
    /// The port (0: a free one).
    pub port: u16,
    /// The page to open, with `{port}`.
    pub url: String,
    /// Programs that must exist before anything runs: (program, what to do when it is missing).
    pub needs: Vec<(String, String)>,
}

impl Plan {
    /// True when file changes should rebuild (or just reload) the page: there is a build step or
    /// the built-in static server serves files that nothing else reloads.
    pub fn watches(&self) -> bool {
        self.build.is_some() || self.typecheck.is_some() || matches!(self.server, Server::Static(_))
    }

    /// Folders the watcher never looks into besides the usual ones (the build output).
    pub fn output_dir(&self) -> Option<&Path> {
        match &self.server {
            Server::Static(dir) if self.build.is_some() => Some(dir.as_path()),
            _ => None,
        }
    }
}

/// True when the project has a preview: configured, or detected.
pub fn has_preview(root: &Path, config: &PreviewConfig) -> bool {
    config.is_configured() || detected(root).is_some()
}

/// The plan for `root`, or the message that says what to configure.
pub fn plan(root: &Path, config: &PreviewConfig) -> Result<Plan, String> {
    let base = match detected(root) {
        Some(plan) => plan,
        None if config.is_configured() => Plan {
            kind: ProjectKind::Configured,
            typecheck: None,
            build: None,
            server: Server::Static(PathBuf::from(".")),
            port: 0,
            url: String::new(),
            needs: Vec::new(),
        },
        None => return Err(no_preview_message(root)),
    };
    Ok(apply(base, config))
}

/// Configured keys override the detected plan, one by one.
fn apply(mut plan: Plan, config: &PreviewConfig) -> Plan {
    let set = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
    if config.is_configured() {
        plan.kind = ProjectKind::Configured;
    }
    if let Some(typecheck) = set(&config.typecheck) {
        plan.typecheck = Some(typecheck);
    }
    if let Some(build) = set(&config.build) {
        plan.build = Some(build);
        // A build of our own replaces what detection wanted to check for its build.
        plan.needs.clear();
        if let Server::Static(dir) = &plan.server
            && dir.as_os_str() == "."
            && config.serve.trim().is_empty()
        {
            plan.server = Server::Static(PathBuf::from("dist"));
        }
    }
    if let Some(serve) = set(&config.serve) {
        plan.server = Server::Command(serve);
        plan.needs.clear();
    }
    if let (Some(dir), Server::Static(_)) = (set(&config.static_dir), &plan.server) {
        plan.server = Server::Static(PathBuf::from(dir));
    }
    if config.port != 0 {
        plan.port = config.port;
    }
    plan.url = set(&config.url).unwrap_or_else(|| "http://127.0.0.1:{port}/".to_owned());
    plan
}

/// What detection finds in `root`, first match wins: Vite, Bun with `compile.ts`, static site.
pub fn detected(root: &Path) -> Option<Plan> {
    // Only a regular file (`stat` never blocks): a named pipe would hang the read.
    let package_json = root.join("package.json");
    let package = std::fs::metadata(&package_json)
        .is_ok_and(|m| m.is_file())
        .then(|| std::fs::read_to_string(&package_json).ok())
        .flatten()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok());
    let depends_on = |name: &str| {
        package.as_ref().is_some_and(|p| {
            ["dependencies", "devDependencies"].iter().any(|k| p[k].get(name).is_some())
        })
    };
    let vite_config = ["js", "ts", "mjs", "mts", "cjs", "cts"]
        .iter()
        .any(|ext| root.join(format!("vite.config.{ext}")).is_file());
    if depends_on("vite") || vite_config {
        return Some(Plan {
            kind: ProjectKind::Vite,
            typecheck: None,
            build: None,
            server: Server::Command("vite --port {port} --strictPort --host 127.0.0.1".into()),
            port: 0,
            url: String::new(),
            needs: vec![(
                "vite".into(),
                "Vite is not installed in this project: run `npm install` (with bash) first."
                    .into(),
            )],
        });
    }
    if root.join("compile.ts").is_file() {
        let has_typecheck_script =
            package.as_ref().is_some_and(|p| p["scripts"].get("typecheck").is_some());
        return Some(Plan {
            kind: ProjectKind::Bun,
            typecheck: has_typecheck_script.then(|| "bun typecheck".to_owned()),
            build: Some("bun compile.ts".into()),
            server: Server::Static(PathBuf::from("dist")),
            port: 0,
            url: String::new(),
            needs: vec![(
                "bun".into(),
                "Bun is not installed: install it (for example `npm install -D bun`, which puts it \
                 in node_modules/.bin) or configure [preview] build and serve commands."
                    .into(),
            )],
        });
    }
    if root.join("index.html").is_file() {
        return Some(Plan {
            kind: ProjectKind::Static,
            typecheck: None,
            build: None,
            server: Server::Static(PathBuf::from(".")),
            port: 0,
            url: String::new(),
            needs: Vec::new(),
        });
    }
    None
}

/// The error of a project without a preview: what was looked for and what to configure.
pub fn no_preview_message(root: &Path) -> String {
    format!(
        "This project has no preview: {} is not a Vite project (no `vite` in package.json, no \
         vite.config.*), not a Bun project with a compile.ts, and has no index.html at its root, \
         and no [preview] command is configured. Either create the app first, or say how to serve \
         it in .hands/config.toml, for example:\n\n[preview]\nbuild = \"npm run build\"        # \
         optional\nserve = \"npm run dev -- --port {{port}} --strictPort\"\n\nor `static_dir = \
         \"public\"` with `build` to serve a built folder with the built-in server.",
        root.display()
    )
}

/// Replace `{port}` in `template`.
pub fn with_port(template: &str, port: u16) -> String {
    template.replace("{port}", &port.to_string())
}

/// `program` found in `root/node_modules/.bin` or PATH, or under its own path.
pub fn find_program(root: &Path, program: &str) -> Option<PathBuf> {
    let direct = Path::new(program);
    if program.contains('/') {
        let path = if direct.is_absolute() { direct.to_path_buf() } else { root.join(direct) };
        return is_executable(&path).then_some(path);
    }
    let local = root.join("node_modules").join(".bin");
    std::iter::once(local)
        .chain(std::env::var_os("PATH").iter().flat_map(std::env::split_paths))
        .map(|dir| dir.join(program))
        .find(|path| is_executable(path))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn a_vite_project_gets_its_dev_server_on_a_strict_port() {
        let dir = project(&[("package.json", r#"{"devDependencies": {"vite": "7.3.8"}}"#)]);
        let plan = plan(dir.path(), &PreviewConfig::default()).unwrap();
        assert_eq!(plan.kind, ProjectKind::Vite);
        let Server::Command(serve) = &plan.server else { panic!("{plan:?}") };
        assert!(serve.contains("--strictPort") && serve.contains("{port}"), "{serve}");
        assert_eq!(plan.url, "http://127.0.0.1:{port}/");
        assert!(!plan.watches(), "Vite reloads by itself");
        let dir = project(&[("vite.config.ts", "export default {}")]);
        assert_eq!(detected(dir.path()).unwrap().kind, ProjectKind::Vite);
    }

    #[test]
    fn a_bun_project_with_compile_ts_is_typechecked_compiled_and_served() {
        let dir = project(&[
            ("compile.ts", "await Bun.build({})"),
            ("package.json", r#"{"scripts": {"typecheck": "tsc --noEmit"}}"#),
        ]);
        let plan = plan(dir.path(), &PreviewConfig::default()).unwrap();
        assert_eq!(plan.kind, ProjectKind::Bun);
        assert_eq!(plan.typecheck.as_deref(), Some("bun typecheck"));
        assert_eq!(plan.build.as_deref(), Some("bun compile.ts"));
        assert_eq!(plan.server, Server::Static("dist".into()));
        assert!(plan.watches());
        let dir = project(&[("compile.ts", "")]);
        assert_eq!(detected(dir.path()).unwrap().typecheck, None, "no typecheck script");
    }

    #[test]
    fn a_static_site_is_served_by_the_built_in_server() {
        let dir = project(&[("index.html", "<h1>hi</h1>")]);
        let plan = plan(dir.path(), &PreviewConfig::default()).unwrap();
        assert_eq!((plan.kind, plan.server), (ProjectKind::Static, Server::Static(".".into())));
    }

    #[test]
    fn no_preview_says_what_to_configure() {
        let dir = project(&[("README.md", "# nothing to see")]);
        assert!(!has_preview(dir.path(), &PreviewConfig::default()));
        let err = plan(dir.path(), &PreviewConfig::default()).unwrap_err();
        assert!(err.contains("[preview]") && err.contains("serve = "), "{err}");
        assert!(err.contains("index.html") && err.contains("compile.ts"), "{err}");
    }

    #[test]
    fn configured_keys_override_detection() {
        let dir = project(&[("package.json", r#"{"dependencies": {"vite": "7"}}"#)]);
        let config = PreviewConfig {
            typecheck: "tsc --noEmit".into(),
            build: "vite build".into(),
            serve: "vite preview --port {port} --strictPort".into(),
            port: 4321,
            ..PreviewConfig::default()
        };
        let plan = plan(dir.path(), &config).unwrap();
        assert_eq!(plan.kind, ProjectKind::Configured);
        assert_eq!(plan.typecheck.as_deref(), Some("tsc --noEmit"));
        assert_eq!(plan.server, Server::Command("vite preview --port {port} --strictPort".into()));
        assert_eq!(plan.port, 4321);
        assert!(plan.needs.is_empty());
        // A build alone is served from dist by the built-in server.
        let empty = project(&[]);
        let config = PreviewConfig { build: "make".into(), ..PreviewConfig::default() };
        assert!(has_preview(empty.path(), &config));
        let plan = super::plan(empty.path(), &config).unwrap();
        assert_eq!(plan.server, Server::Static("dist".into()));
        assert_eq!(plan.output_dir(), Some(Path::new("dist")));
    }

    #[test]
    fn ports_are_put_into_templates() {
        assert_eq!(with_port("http://127.0.0.1:{port}/", 5173), "http://127.0.0.1:5173/");
    }
}
