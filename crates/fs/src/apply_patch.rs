//! apply_patch: add, delete, update and move files with one V4A patch (patch_format.rs), all or
//! nothing.
//!
//! Flow: parse the patch; plan every section against the disk, writing nothing — each path
//! resolved in the Workspace and checked as edit_file checks it (atomic::check_writable), updated
//! files loaded as text (edit_file's `load`), their hunks placed (patch_match.rs), a file changed
//! since the session read it held to unique matches (stale.rs), placeholders resolved as edit_file
//! resolves them; then commit the steps in order through atomic writes, undoing the steps already
//! done when one fails, so that the files are either all changed or all as they were.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;

use cap_std::fs::PermissionsExt as _;

use hands_core::approval::Review;
use hands_core::{Annotations, CancellationToken, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::diff::unified_diff;
use crate::edit_file::{load, split_bom};
use crate::escape::escape_name;
use crate::ledger::{Seen, content_hash};
use crate::patch_format::{self, Hunk, Line, Op};
use crate::patch_match::{self, HunkMatch, Level};
use crate::read_file::human_size;
use crate::stale::{self, Changed};
use crate::{FsConfig, Ledger, RelPath, Workspace, atomic, placeholders};

/// Arguments of apply_patch.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchArgs {
    /// The whole patch, `*** Begin Patch` to `*** End Patch`.
    pub input: String,
}

/// The structured result of apply_patch: everything its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PatchResult {
    /// One entry per file section, in the patch's order.
    pub files: Vec<FileResult>,
    /// Lines added over all files.
    pub lines_added: usize,
    /// Lines removed over all files.
    pub lines_removed: usize,
}

/// What one file section did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FileResult {
    /// `added`, `updated`, `deleted` or `moved` (updated and moved to `moved_to`).
    pub action: String,
    /// Path relative to the project root (for a move: where it was).
    pub path: String,
    /// Where a moved file is now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
    /// Where each hunk went and how loosely it had to be matched.
    pub hunks: Vec<HunkMatch>,
    /// Lines added to this file.
    pub lines_added: usize,
    /// Lines removed from this file.
    pub lines_removed: usize,
    /// The file had changed on disk since this session read it; every hunk still matched its
    /// current content at one place, so the patch was applied to it.
    pub changed_since_read: bool,
}

/// The apply_patch tool.
#[derive(Debug, Clone)]
pub struct ApplyPatch {
    config: FsConfig,
}

impl ApplyPatch {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for ApplyPatch {
    type Args = ApplyPatchArgs;

    fn name(&self) -> &'static str {
        "apply_patch"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("apply_patch.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: true, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Nothing)
            .family(Family::Files)
            .timeout_ms(30_000)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<PatchResult>())
    }

    /// The unified diff of every file the patch changes; a patch that would fail is refused
    /// before anybody is asked.
    async fn review(&self, ctx: &Context, args: &Self::Args) -> Result<Review, ToolError> {
        let (ctx, config, args) = (ctx.clone(), self.config.clone(), args.clone());
        tokio::task::spawn_blocking(move || review(&ctx, &config, &args))
            .await
            .map_err(|err| ToolError::Fatal(format!("apply_patch review task failed: {err}")))?
            .map(Review::details)
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let config = self.config.clone();
        let ctx_after = ctx.clone();
        let output = tokio::task::spawn_blocking(move || {
            // After a yes, the patch must still do what was shown (a file may have changed).
            if let Some(approved) = ctx.approved() {
                let now = review(&ctx, &config, &args)?;
                let now = hands_core::redact::text(&now);
                if approved.details.as_deref() != Some(&*now) {
                    return Err(ToolError::model(format!(
                        "A file of the patch changed while the user was asked, so it would not \
                         apply as approved; nothing was written. Read the files again and send \
                         the patch anew. It would now do:\n{now}"
                    )));
                }
            }
            run(&ctx, &config, &args, &|_| Ok(()))
        })
        .await
        .map_err(|err| ToolError::Fatal(format!("apply_patch task failed: {err}")))??;
        Ok(crate::changed::announce(&ctx_after, output).await)
    }
}

/// One file section worked out: what is there now and what will be.
struct Planned {
    op: Kind,
    path: RelPath,
    /// The file's bytes now (none for an added file).
    before: Option<Vec<u8>>,
    /// Its mode now, to restore a deleted or moved file with.
    mode: Option<u32>,
    /// The new bytes (none for a deleted file).
    after: Option<Vec<u8>>,
    /// Body before and after without the BOM, for the diff.
    old_text: String,
    new_text: String,
    hunks: Vec<HunkMatch>,
    added: usize,
    removed: usize,
    changed_since_read: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Add,
    Delete,
    Update,
    Move(RelPath),
}

fn review(ctx: &Context, config: &FsConfig, args: &ApplyPatchArgs) -> Result<String, ToolError> {
    let ws = Workspace::of(ctx)?;
    let planned = plan(ctx, &ws, config, &args.input)?;
    let mut out = String::new();
    for p in &planned {
        let shown = p.path.display();
        match &p.op {
            Kind::Add => out.push_str(&format!("add {}\n", escape_name(&shown))),
            Kind::Delete => out.push_str(&format!("delete {}\n", escape_name(&shown))),
            Kind::Update => {}
            Kind::Move(to) => out.push_str(&format!(
                "move {} to {}\n",
                escape_name(&shown),
                escape_name(&to.display())
            )),
        }
        let target = match &p.op {
            Kind::Move(to) => to,
            _ => &p.path,
        };
        out.push_str(&unified_diff(target, &p.old_text, &p.new_text));
    }
    Ok(out)
}

/// Apply the patch; `fail` is asked before every step of the commit (tests inject a failure).
fn run(
    ctx: &Context,
    config: &FsConfig,
    args: &ApplyPatchArgs,
    fail: &dyn Fn(usize) -> io::Result<()>,
) -> Result<ToolOutput, ToolError> {
    let ws = Workspace::of(ctx)?;
    let planned = plan(ctx, &ws, config, &args.input)?;
    commit(&ws, &planned, ctx.cancel_token(), fail)?;
    let ledger = ctx.session().extension::<Ledger>();
    for p in &planned {
        let target = match &p.op {
            Kind::Move(to) => {
                ledger.forget(&p.path);
                to
            }
            Kind::Delete => {
                ledger.forget(&p.path);
                continue;
            }
            _ => &p.path,
        };
        if let (Some(bytes), Ok(meta)) = (&p.after, ws.dir().symlink_metadata(target.for_open())) {
            ledger.record_content(target, Seen::new(&meta, Some(content_hash(bytes))), bytes);
        }
    }
    let result = result_of(&planned);
    Ok(ToolOutput::text(text_of(&result)).with_structured(crate::write_file::structured(&result)?))
}

fn result_of(planned: &[Planned]) -> PatchResult {
    let files: Vec<FileResult> = planned
        .iter()
        .map(|p| FileResult {
            action: match p.op {
                Kind::Add => "added",
                Kind::Delete => "deleted",
                Kind::Update => "updated",
                Kind::Move(_) => "moved",
            }
            .to_owned(),
            path: p.path.display(),
            moved_to: match &p.op {
                Kind::Move(to) => Some(to.display()),
                _ => None,
            },
            hunks: p.hunks.clone(),
            lines_added: p.added,
            lines_removed: p.removed,
            changed_since_read: p.changed_since_read,
        })
        .collect();
    let lines_added = files.iter().map(|f| f.lines_added).sum();
    let lines_removed = files.iter().map(|f| f.lines_removed).sum();
    PatchResult { files, lines_added, lines_removed }
}

fn text_of(result: &PatchResult) -> String {
    let n = result.files.len();
    let mut text = format!(
        "Applied the patch: {n} file{} changed, +{} -{}.\n",
        if n == 1 { "" } else { "s" },
        result.lines_added,
        result.lines_removed
    );
    for f in &result.files {
        let letter = match f.action.as_str() {
            "added" => "A",
            "deleted" => "D",
            "moved" => "R",
            _ => "M",
        };
        let name = match &f.moved_to {
            Some(to) => format!("{} -> {}", escape_name(&f.path), escape_name(to)),
            None => escape_name(&f.path).into_owned(),
        };
        text.push_str(&format!("{letter} {name} (+{} -{})", f.lines_added, f.lines_removed));
        let hunks: Vec<String> = f
            .hunks
            .iter()
            .enumerate()
            .map(|(i, h)| format!("hunk {} at line {} {}", i + 1, h.line, h.level.as_str()))
            .collect();
        if !hunks.is_empty() {
            text.push_str(&format!(": {}", hunks.join(", ")));
        }
        text.push('\n');
        if f.changed_since_read {
            text.push_str(&format!(
                "  {} had changed on disk since this session read it; every hunk still matched \
                 its current content at one place, so the patch was applied to it.\n",
                escape_name(&f.path)
            ));
        }
    }
    if result.files.iter().any(|f| f.hunks.iter().any(|h| h.level != Level::Exact)) {
        text.push_str(
            "Some hunks matched only loosely (see above): their context lines were kept as the \
             file has them.\n",
        );
    }
    text
}

/// Parse and plan the whole patch, writing nothing.
fn plan(
    ctx: &Context,
    ws: &Workspace,
    config: &FsConfig,
    input: &str,
) -> Result<Vec<Planned>, ToolError> {
    let patch = patch_format::parse(input).map_err(|err| {
        ToolError::model(format!(
            "The patch does not parse: line {}: {}. Nothing was changed. Send the whole patch \
             again, from `*** Begin Patch` to `*** End Patch`.",
            err.line, err.message
        ))
    })?;
    let mut touched: HashSet<RelPath> = HashSet::new();
    let mut planned = Vec::with_capacity(patch.ops.len());
    let of = patch.ops.len();
    for (index, op) in patch.ops.iter().enumerate() {
        let section = Section { ctx, ws, config, index, of };
        let p = section.plan(op).map_err(|err| section.context(err))?;
        for path in [Some(&p.path), if let Kind::Move(to) = &p.op { Some(to) } else { None }]
            .into_iter()
            .flatten()
        {
            if !touched.insert(path.clone()) {
                return Err(ToolError::model(format!(
                    "The patch has more than one section for {}; nothing was changed. Put all \
                     changes to a file in one `*** Update File:` section.",
                    path.display()
                )));
            }
        }
        planned.push(p);
    }
    Ok(planned)
}

/// One section of the patch being planned.
struct Section<'a> {
    ctx: &'a Context,
    ws: &'a Workspace,
    config: &'a FsConfig,
    index: usize,
    of: usize,
}

impl Section<'_> {
    /// `err` with the section it is about (when the patch has several) and the promise that
    /// nothing was changed.
    fn context(&self, err: ToolError) -> ToolError {
        match err {
            ToolError::RespondToModel(text) => ToolError::model(format!(
                "apply_patch changed nothing. Section {} of {}: {text}",
                self.index + 1,
                self.of
            )),
            other => other,
        }
    }

    fn resolve(&self, path: &str) -> Result<RelPath, ToolError> {
        let rel = self.ws.resolve("path", path)?;
        atomic::check_writable(self.ws, &rel, self.config, "change")?;
        Ok(rel)
    }

    fn plan(&self, op: &Op) -> Result<Planned, ToolError> {
        match op {
            Op::Add { path, lines } => self.add(path, lines),
            Op::Delete { path } => self.delete(path),
            Op::Update { path, move_to, hunks } => self.update(path, move_to.as_deref(), hunks),
        }
    }

    fn add(&self, path: &str, lines: &[String]) -> Result<Planned, ToolError> {
        let rel = self.resolve(path)?;
        self.must_not_exist(&rel, "Add File")?;
        let mut text = String::new();
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        let text = placeholders::resolve(self.ws.root(), &rel, "input", &text, false)?.into_owned();
        self.check_size(&rel, text.len())?;
        Ok(Planned {
            op: Kind::Add,
            before: None,
            mode: None,
            after: Some(text.clone().into_bytes()),
            old_text: String::new(),
            new_text: text,
            hunks: Vec::new(),
            added: lines.len(),
            removed: 0,
            changed_since_read: false,
            path: rel,
        })
    }

    fn delete(&self, path: &str) -> Result<Planned, ToolError> {
        let rel = self.resolve(path)?;
        let shown = rel.display();
        let (mut file, meta) = self.ws.open_read_with_metadata(&rel).map_err(|err| {
            if err.kind() == io::ErrorKind::NotFound {
                ToolError::model(format!("{shown} does not exist, so it cannot be deleted."))
            } else {
                self.ws.io_error("deleted", &rel, &err)
            }
        })?;
        if meta.is_dir() {
            return Err(ToolError::model(format!(
                "{shown} is a directory; `*** Delete File:` deletes files."
            )));
        }
        if meta.len() > self.config.write_max_bytes as u64 {
            return Err(ToolError::model(format!(
                "{shown} is {}, over the {} apply_patch handles; delete it with a command through \
                 bash.",
                human_size(meta.len()),
                human_size(self.config.write_max_bytes as u64)
            )));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|err| self.ws.io_error("read", &rel, &err))?;
        if let Some(changed) = stale::changed_since_read(self.ctx, self.config, &rel, &meta, &bytes)
        {
            let now = String::from_utf8_lossy(&bytes);
            return Err(ToolError::model(format!(
                "{shown} changed on disk since this session read it, so it is not deleted unseen. \
                 The lines that changed since the read:\n{}Read it again and send the patch again \
                 if it should still go.",
                stale::changed_lines(&rel, &changed, split_bom(&now).1)
            )));
        }
        let old_text = String::from_utf8(bytes.clone())
            .map(|t| split_bom(&t).1.to_owned())
            .unwrap_or_else(|_| format!("[{} of non-text content]\n", human_size(meta.len())));
        let removed = old_text.lines().count();
        Ok(Planned {
            op: Kind::Delete,
            before: Some(bytes),
            mode: Some(meta.permissions().mode()),
            after: None,
            old_text,
            new_text: String::new(),
            hunks: Vec::new(),
            added: 0,
            removed,
            changed_since_read: false,
            path: rel,
        })
    }

    fn update(
        &self,
        path: &str,
        move_to: Option<&str>,
        hunks: &[Hunk],
    ) -> Result<Planned, ToolError> {
        let rel = self.resolve(path)?;
        let dest = match move_to {
            Some(to) => {
                let to = self.resolve(to)?;
                if to != rel {
                    self.must_not_exist(&to, "Move to")?;
                    self.keep_env_values(&rel, &to)?;
                }
                Some(to).filter(|to| to != &rel)
            }
            None => None,
        };
        let (text, meta) = load(self.ws, &rel, self.config, "apply_patch")?;
        let changed =
            stale::changed_since_read(self.ctx, self.config, &rel, &meta, text.as_bytes());
        let (bom, body) = split_bom(&text);
        // Placeholders: found text may hold one anywhere; added text gets values only where the
        // file lands.
        let target = dest.as_ref().unwrap_or(&rel);
        let hunks = self.resolve_hunks(&rel, target, hunks)?;
        let applied = patch_match::apply(body, &hunks, changed.is_some())
            .map_err(|miss| self.miss(&rel, body, &hunks, &miss, changed.as_ref()))?;
        let after = format!("{bom}{}", applied.new_body);
        self.check_size(target, after.len())?;
        Ok(Planned {
            op: dest.map_or(Kind::Update, Kind::Move),
            before: Some(text.clone().into_bytes()),
            mode: Some(meta.permissions().mode()),
            after: Some(after.into_bytes()),
            old_text: body.to_owned(),
            new_text: applied.new_body,
            hunks: applied.hunks,
            added: applied.added,
            removed: applied.removed,
            changed_since_read: changed.is_some(),
            path: rel,
        })
    }

    /// The hunks with placeholders resolved: in found lines anywhere, in added lines only for a
    /// file where a value may be written.
    fn resolve_hunks(
        &self,
        found_in: &RelPath,
        lands_in: &RelPath,
        hunks: &[Hunk],
    ) -> Result<Vec<Hunk>, ToolError> {
        let root = self.ws.root();
        let found =
            |t: &str| placeholders::resolve(root, found_in, "input", t, true).map(Cow::into_owned);
        let added =
            |t: &str| placeholders::resolve(root, lands_in, "input", t, false).map(Cow::into_owned);
        hunks
            .iter()
            .map(|h| {
                let lines = h
                    .lines
                    .iter()
                    .map(|l| {
                        Ok(match l {
                            Line::Context(t) => Line::Context(found(t)?),
                            Line::Remove(t) => Line::Remove(found(t)?),
                            Line::Add(t) => Line::Add(added(t)?),
                        })
                    })
                    .collect::<Result<Vec<_>, ToolError>>()?;
                let anchors = h.anchors.iter().map(|a| found(a)).collect::<Result<_, _>>()?;
                Ok(Hunk { anchors, lines, eof: h.eof, at: h.at })
            })
            .collect()
    }

    /// The refusal of a hunk that could not be placed.
    fn miss(
        &self,
        path: &RelPath,
        body: &str,
        hunks: &[Hunk],
        miss: &patch_match::Miss,
        changed: Option<&Changed>,
    ) -> ToolError {
        let shown = escape_name(&path.display()).into_owned();
        let cancel: &CancellationToken = self.ctx.cancel_token();
        let mut text = patch_match::describe(miss, &shown, hunks.len(), body, hunks, cancel);
        if let Some(changed) = changed {
            text.push_str(&format!(
                "\n{shown} changed on disk since this session read it (a formatter, an editor or \
                 another process). The lines that changed since the read:\n{}",
                stale::changed_lines(path, changed, body)
            ));
        }
        ToolError::model(text)
    }

    fn must_not_exist(&self, path: &RelPath, section: &str) -> Result<(), ToolError> {
        match self.ws.dir().symlink_metadata(path.for_open()) {
            Ok(_) => Err(ToolError::model(format!(
                "{} already exists, so `*** {section}:` cannot create it. Change it with \
                 `*** Update File:`, or delete it first.",
                path.display()
            ))),
            Err(err)
                if matches!(err.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) =>
            {
                Ok(())
            }
            Err(err) => Err(self.ws.io_error("written", path, &err)),
        }
    }

    /// A move out of an env file that keeps its values on this machine into a file that does not
    /// would carry the values along: refused.
    fn keep_env_values(&self, from: &RelPath, to: &RelPath) -> Result<(), ToolError> {
        let root = self.ws.root();
        match (placeholders::refusal(root, from), placeholders::refusal(root, to)) {
            (None, Some(why)) => Err(ToolError::model(format!(
                "{} is an env file that stays on this machine; moving it to {} would take its \
                 values where they do not belong ({why}). Move it with a command through bash \
                 if you mean it.",
                from.display(),
                to.display()
            ))),
            _ => Ok(()),
        }
    }

    fn check_size(&self, path: &RelPath, len: usize) -> Result<(), ToolError> {
        if len > self.config.write_max_bytes {
            return Err(ToolError::model(format!(
                "The new {} would be {}, over the {} apply_patch writes.",
                path.display(),
                human_size(len as u64),
                human_size(self.config.write_max_bytes as u64)
            )));
        }
        Ok(())
    }
}

/// What undoes one step of the commit.
enum Undo {
    /// Remove a file the commit created, and the folders it created for it (deepest first).
    Remove(RelPath, Vec<RelPath>),
    /// Put back a file's old bytes and mode.
    Restore(RelPath, Vec<u8>, Option<u32>),
}

/// Write every planned change in order; when a step fails, undo the steps done, newest first.
fn commit(
    ws: &Workspace,
    planned: &[Planned],
    cancel: &CancellationToken,
    fail: &dyn Fn(usize) -> io::Result<()>,
) -> Result<(), ToolError> {
    let mut undo: Vec<Undo> = Vec::new();
    let mut step = 0;
    for p in planned {
        if let Err((path, err)) = commit_one(ws, p, cancel, fail, &mut step, &mut undo) {
            let failed = rollback(ws, undo);
            let cause = atomic::write_error(ws, "apply_patch", &path, &err);
            let restored = if failed.is_empty() {
                "every file the patch had already changed was put back as it was, so nothing was \
                 changed"
                    .to_owned()
            } else {
                format!(
                    "these could not be put back as they were and need a look: {}",
                    failed.join(", ")
                )
            };
            return Err(ToolError::model(format!(
                "apply_patch failed while writing {}: {cause} {restored}.",
                path.display()
            )));
        }
    }
    Ok(())
}

type StepError = (RelPath, io::Error);

fn commit_one(
    ws: &Workspace,
    p: &Planned,
    cancel: &CancellationToken,
    fail: &dyn Fn(usize) -> io::Result<()>,
    step: &mut usize,
    undo: &mut Vec<Undo>,
) -> Result<(), StepError> {
    let mut next = |path: &RelPath| {
        let n = *step;
        *step += 1;
        fail(n).map_err(|err| (path.clone(), err))
    };
    fn at(path: &RelPath) -> impl FnOnce(io::Error) -> StepError + '_ {
        move |err| (path.clone(), err)
    }
    match &p.op {
        Kind::Add => {
            next(&p.path)?;
            create(ws, &p.path, p.after.as_deref().unwrap_or_default(), cancel, undo)
                .map_err(at(&p.path))
        }
        Kind::Update => {
            next(&p.path)?;
            atomic::write(ws, &p.path, p.after.as_deref().unwrap_or_default(), cancel)
                .map_err(at(&p.path))?;
            undo.push(Undo::Restore(p.path.clone(), p.before.clone().unwrap_or_default(), None));
            Ok(())
        }
        Kind::Move(to) => {
            next(to)?;
            create(ws, to, p.after.as_deref().unwrap_or_default(), cancel, undo).map_err(at(to))?;
            if let Some(mode) = p.mode {
                set_mode(ws, to, mode).map_err(at(to))?;
            }
            next(&p.path)?;
            remove(ws, &p.path).map_err(at(&p.path))?;
            undo.push(Undo::Restore(p.path.clone(), p.before.clone().unwrap_or_default(), p.mode));
            Ok(())
        }
        Kind::Delete => {
            next(&p.path)?;
            remove(ws, &p.path).map_err(at(&p.path))?;
            undo.push(Undo::Restore(p.path.clone(), p.before.clone().unwrap_or_default(), p.mode));
            Ok(())
        }
    }
}

/// Create `path` with `bytes`, noting how to undo it (the file and any folders made for it).
fn create(
    ws: &Workspace,
    path: &RelPath,
    bytes: &[u8],
    cancel: &CancellationToken,
    undo: &mut Vec<Undo>,
) -> io::Result<()> {
    let mut made = Vec::new();
    let mut dir = path.parent();
    while !dir.is_root() && ws.dir().symlink_metadata(dir.for_open()).is_err() {
        made.push(dir.clone());
        dir = dir.parent();
    }
    match atomic::write(ws, path, bytes, cancel) {
        Ok(_) => {
            undo.push(Undo::Remove(path.clone(), made));
            Ok(())
        }
        Err(err) => {
            for dir in &made {
                let _ = ws.dir().remove_dir(dir.for_open());
            }
            Err(err)
        }
    }
}

fn remove(ws: &Workspace, path: &RelPath) -> io::Result<()> {
    let dir = atomic::parent_dir(ws, path)?;
    dir.remove_file(path.file_name().unwrap_or_default())
}

fn set_mode(ws: &Workspace, path: &RelPath, mode: u32) -> io::Result<()> {
    let dir = atomic::parent_dir(ws, path)?;
    let name = path.file_name().unwrap_or_default();
    dir.set_permissions(
        name,
        cap_std::fs::Permissions::from_std(std::fs::Permissions::from_mode(mode)),
    )
}

/// Undo `steps`, newest first; the paths that could not be put back.
fn rollback(ws: &Workspace, steps: Vec<Undo>) -> Vec<String> {
    // Putting the old content back must not be stopped by the call's cancellation.
    let never = CancellationToken::new();
    let mut failed = Vec::new();
    for step in steps.into_iter().rev() {
        let (path, result) = match step {
            Undo::Remove(path, made) => {
                let result = remove(ws, &path);
                for dir in &made {
                    let _ = ws.dir().remove_dir(dir.for_open());
                }
                (path, result)
            }
            Undo::Restore(path, bytes, mode) => {
                let result = atomic::write(ws, &path, &bytes, &never)
                    .map(drop)
                    .and_then(|()| mode.map_or(Ok(()), |mode| set_mode(ws, &path, mode)));
                (path, result)
            }
        };
        if let Err(err) = result {
            failed.push(format!("{} ({err})", path.display()));
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure while writing the third file undoes the first two: an update put back, an added
    /// file (and the folder made for it) removed; a deleted file comes back with its mode.
    #[test]
    fn a_failed_write_puts_back_what_was_written() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(root.join("one.txt"), "one\n").unwrap();
        std::fs::write(root.join("gone.sh"), "echo\n").unwrap();
        std::fs::set_permissions(root.join("gone.sh"), std::fs::Permissions::from_mode(0o751))
            .unwrap();
        std::fs::write(root.join("three.txt"), "three\n").unwrap();
        let session = hands_core::Session::new("s", root);
        let ctx = Context::new(&session, "c1", None);
        let patch = "*** Begin Patch\n*** Update File: one.txt\n-one\n+ONE\n*** Add File: new/dir/two.txt\n+two\n*** Delete File: gone.sh\n*** Update File: three.txt\n-three\n+THREE\n*** End Patch\n";
        let args = ApplyPatchArgs { input: patch.into() };
        let fail = |step: usize| {
            if step == 3 { Err(io::Error::other("disk full (injected)")) } else { Ok(()) }
        };
        let err = run(&ctx, &FsConfig::default(), &args, &fail).unwrap_err().to_string();
        assert!(err.contains("while writing three.txt") && err.contains("disk full"), "{err}");
        assert!(err.contains("nothing was changed"), "{err}");
        assert_eq!(std::fs::read_to_string(root.join("one.txt")).unwrap(), "one\n");
        assert!(!root.join("new").exists(), "the added file and its folders are gone");
        assert_eq!(std::fs::read_to_string(root.join("gone.sh")).unwrap(), "echo\n");
        let mode = std::fs::metadata(root.join("gone.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o751);
        assert_eq!(std::fs::read_to_string(root.join("three.txt")).unwrap(), "three\n");
        // Without the failure, the same patch applies whole.
        let out = run(&ctx, &FsConfig::default(), &args, &|_| Ok(())).unwrap();
        assert!(out.joined_text().starts_with("Applied the patch: 4 files changed"));
        assert_eq!(std::fs::read_to_string(root.join("three.txt")).unwrap(), "THREE\n");
        assert!(!root.join("gone.sh").exists());
    }
}
