//! The reference_project tool: resolve the project by name, get (or open) the calling session's
//! shadow session over its root with the secret files hidden, and run the op's file tool there
//! with the call's cancellation token. The file tool's text (and images) come back under a
//! first line naming the project; its structured result is dropped (this tool declares none).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

use hands_core::{Annotations, Content, Context, Family, Label, Policy, Session};
use hands_core::{Tool, ToolError, ToolOutput};
use hands_fs::{FsConfig, Glob, Grep, Hidden, ListFiles, ReadFile, SECRET_FILES, Workspace};

use crate::args::{Op, ReferenceProjectArgs};

/// Name globs of the credential files hidden besides [`SECRET_FILES`] (issue 26, item 9): package
/// registries' tokens (`.npmrc`, `.yarnrc*`, `.pypirc`), Cloudflare's `.dev.vars`, cloud and
/// container logins (`.aws/`, `.docker/`, `.kube/`), `.netrc`, git's stored passwords, SSH keys
/// and their folder, key stores, Terraform state.
pub const CREDENTIAL_FILES: &[&str] = &[
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".dev.vars",
    ".dev.vars.*",
    ".aws",
    ".docker",
    ".kube",
    "kubeconfig",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".pgpass",
    ".htpasswd",
    "credentials",
    "credentials.toml",
    ".terraformrc",
    "*.tfstate",
    "*.tfstate.*",
    ".ssh",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.ppk",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
];

/// The hidden names of a reference project's view: [`SECRET_FILES`] and [`CREDENTIAL_FILES`].
fn hidden() -> Hidden {
    let patterns: Vec<&str> = SECRET_FILES.iter().chain(CREDENTIAL_FILES).copied().collect();
    // Constant patterns that compile (a test proves it); the narrower set is the fallback.
    Hidden::new(&patterns).unwrap_or_else(|_| Hidden::secret_files())
}

/// True when `head` (a file's first bytes) is a private key: a PEM `… PRIVATE KEY` block, an
/// OpenSSH key in its binary form, or a PuTTY key, whatever the file is called.
pub fn holds_private_key(head: &[u8]) -> bool {
    let text = head.trim_ascii_start();
    if text.starts_with(b"openssh-key-v1\0") || text.starts_with(b"PuTTY-User-Key-File-") {
        return true;
    }
    let Some(rest) = text.strip_prefix(b"-----BEGIN ") else { return false };
    let line = rest.split(|&b| b == b'\n').next().unwrap_or(rest);
    line.trim_ascii_end().ends_with(b"PRIVATE KEY-----")
}

/// True when the file at `rel` in `ws` (confined) is a private key by its content.
fn is_key_file(ws: &Workspace, rel: &str) -> bool {
    use std::io::Read as _;
    let Ok(path) = ws.resolve("path", rel) else { return false };
    let Ok((file, meta)) = ws.open_read_with_metadata(&path) else { return false };
    if !meta.is_file() {
        return false;
    }
    let mut head = Vec::with_capacity(4096);
    if file.take(4096).read_to_end(&mut head).is_err() {
        return false;
    }
    holds_private_key(&head)
}

fn key_refusal(path: &str) -> String {
    format!(
        "{path} is hidden here: it holds a private key. Files named {}, and private keys whatever \
         their name, are never read, listed or searched in a reference project. Read another file.",
        SECRET_FILES.iter().chain(CREDENTIAL_FILES).copied().collect::<Vec<_>>().join(", ")
    )
}

/// The paths a glob or grep result names (its structured content).
fn result_paths(structured: &serde_json::Value) -> Vec<String> {
    let mut paths = Vec::new();
    let mut take = |v: &serde_json::Value| {
        if let Some(p) = v.as_str() {
            paths.push(p.to_owned());
        } else if let Some(p) = v.get("path").and_then(|p| p.as_str()) {
            paths.push(p.to_owned());
        }
    };
    for field in ["paths", "files", "matches", "counts"] {
        if let Some(items) = structured.get(field).and_then(|v| v.as_array()) {
            items.iter().for_each(&mut take);
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// `output` without the lines that name one of `keys` (`path`, `path:…`, `path-…`).
fn drop_lines(output: &mut ToolOutput, keys: &[String]) {
    let names = |line: &str| {
        keys.iter().any(|k| {
            line.strip_prefix(k.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '-', ' ', '\t']))
        })
    };
    for content in &mut output.content {
        if let Content::Text { text } = content {
            let kept: Vec<&str> =
                text.split_inclusive('\n').filter(|l| !names(l.trim_end())).collect();
            *text = kept.concat();
        }
    }
}

/// The user's reference projects: name → root.
pub type ReferenceProjects = BTreeMap<String, PathBuf>;

/// The reference_project tool.
#[derive(Debug, Clone)]
pub struct ReferenceProject {
    projects: ReferenceProjects,
    fs: FsConfig,
}

impl ReferenceProject {
    /// Over `projects`, with the file tools' limits of `fs`.
    pub fn new(projects: ReferenceProjects, fs: FsConfig) -> Self {
        Self { projects, fs }
    }

    fn known(&self) -> String {
        self.projects.keys().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
    }
}

/// A calling session's shadow sessions, one per reference project it has used.
#[derive(Default)]
struct Views(Mutex<HashMap<String, Session>>);

impl Views {
    /// The shadow session over `root` for `name`, opened on first use with the secret files
    /// hidden (before any file tool touches it).
    fn of(&self, session: &Session, name: &str, root: &PathBuf) -> Session {
        let mut views = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        views
            .entry(name.to_owned())
            .or_insert_with(|| {
                let view = Session::new(format!("{}/reference/{name}", session.id()), root);
                hidden().install(&view);
                view
            })
            .clone()
    }
}

impl Tool for ReferenceProject {
    type Args = ReferenceProjectArgs;

    fn name(&self) -> &'static str {
        "reference_project"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Owned(format!(
            "{}\nReference projects: {}.\n",
            include_str!("reference_project.md").trim_end(),
            self.known()
        ))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::FirstOf { keys: &["path", "pattern", "project"] })
            .family(Family::Project)
            .timeout_ms(60_000)
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let Some(root) = self.projects.get(&args.project) else {
            return Err(ToolError::model(format!(
                "There is no reference project named `{}`. The reference projects are: {}.",
                args.project,
                self.known()
            )));
        };
        if !root.is_dir() {
            return Err(ToolError::model(format!(
                "The reference project `{}` is configured at {}, which is not a folder. Ask the \
                 user to fix `[reference_projects]` in their configuration.",
                args.project,
                root.display()
            )));
        }
        let view = ctx.session().extension::<Views>().of(ctx.session(), &args.project, root);
        let inner = Context::new(&view, ctx.call_id().to_owned(), ctx.turn().map(str::to_owned))
            .with_cancel(ctx.cancel_token().clone());
        let fs = self.fs.clone();
        let from = format!("reference project `{}` ({}):", args.project, args.op.name());
        // Private keys are found by content too: a read of one is refused, and glob's and grep's
        // results lose every line naming one.
        let ws = Workspace::for_root(root)?.with_hidden(Some(std::sync::Arc::new(hidden())));
        if args.op == Op::Read
            && let Some(path) = &args.path
            && is_key_file(&ws, path)
        {
            return Err(ToolError::model(format!("In {from} {}", key_refusal(path))));
        }
        let output = match args.op {
            Op::Read => ReadFile::new(fs).call(inner, args.for_op()?).await,
            Op::List => ListFiles::new(fs).call(inner, args.for_op()?).await,
            Op::Glob => Glob::new(fs).call(inner, args.for_op()?).await,
            Op::Grep => Grep::new(fs).call(inner, args.for_op()?).await,
        };
        match output {
            Ok(mut output) => {
                if let Some(structured) = &output.structured {
                    let keys: Vec<String> = result_paths(structured)
                        .into_iter()
                        .filter(|p| is_key_file(&ws, p))
                        .collect();
                    if !keys.is_empty() {
                        drop_lines(&mut output, &keys);
                    }
                }
                output.structured = None;
                output.content.insert(0, Content::Text { text: from });
                Ok(output)
            }
            Err(ToolError::RespondToModel(message)) => {
                Err(ToolError::model(format!("In {from} {message}")))
            }
            Err(other) => Err(other),
        }
    }
}
