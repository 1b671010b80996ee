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
use hands_fs::{FsConfig, Glob, Grep, Hidden, ListFiles, ReadFile};

use crate::args::{Op, ReferenceProjectArgs};

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
                Hidden::secret_files().install(&view);
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
        let output = match args.op {
            Op::Read => ReadFile::new(fs).call(inner, args.for_op()?).await,
            Op::List => ListFiles::new(fs).call(inner, args.for_op()?).await,
            Op::Glob => Glob::new(fs).call(inner, args.for_op()?).await,
            Op::Grep => Grep::new(fs).call(inner, args.for_op()?).await,
        };
        let from = format!("reference project `{}` ({}):", args.project, args.op.name());
        match output {
            Ok(mut output) => {
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
