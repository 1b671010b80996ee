//! edit_file: replace an exact string in a text file, once (or everywhere with `replace_all`); or
//! several such replacements (`edits`), applied in order, all or nothing.
//!
//! Flow: refuse protected targets (atomic::check_writable), read the file (text and UTF-8 only), strip
//! a BOM, find old_string — exactly, then, in a CRLF file, with its line breaks as CRLF — and demand
//! one match (or ≥1 with replace_all). No match: report the closest region (`closest`: whitespace-
//! insensitive, then fuzzy within a budget) and change nothing. A file changed on disk since the
//! session read it (stale.rs) is judged by content: each old_string must still match exactly once.
//! Then re-add the BOM, write atomically, record the ledger, and return a short unified diff.

use std::borrow::Cow;
use std::io::{self, Read};

use hands_core::approval::Review;
use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::detect::{self, Kind};
use crate::diff::unified_diff;
use crate::ledger::{Seen, content_hash};
use crate::near_miss::no_match;
use crate::read_file::human_size;
use crate::stale::{self, Changed};
use crate::{FsConfig, Ledger, RelPath, Workspace, atomic, placeholders};

/// Arguments of edit_file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// Relative to the project root.
    pub path: String,
    /// Exact text to replace (not with `edits`).
    #[serde(default)]
    pub old_string: Option<String>,
    /// Replacement text.
    #[serde(default)]
    pub new_string: Option<String>,
    /// Replace every occurrence.
    #[serde(default)]
    pub replace_all: bool,
    /// Several replacements, applied in order, all or nothing.
    #[serde(default)]
    pub edits: Option<Vec<Edit>>,
}

/// One replacement of a multi-edit.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// Exact text to replace.
    pub old_string: String,
    /// Replacement text.
    pub new_string: String,
    /// Replace every occurrence.
    #[serde(default)]
    pub replace_all: bool,
}

/// The structured result of edit_file: everything its text says, the diff included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EditResult {
    /// Path relative to the project root.
    pub path: String,
    /// Occurrences replaced (over all edits).
    pub replacements: usize,
    /// Edits applied (1 for the single old_string form).
    pub edits: usize,
    /// True when the file had changed on disk since this session read it; every old_string still
    /// matched the current content exactly once, so the edit was applied to it.
    pub changed_since_read: bool,
    /// The change as a unified diff (a few lines of context around each hunk).
    pub diff: String,
}

/// The edit_file tool.
#[derive(Debug, Clone)]
pub struct EditFile {
    config: FsConfig,
}

impl EditFile {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for EditFile {
    type Args = EditFileArgs;

    fn name(&self) -> &'static str {
        "edit_file"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("edit_file.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: true, idempotent: false, open_world: false }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .alias("edit")
            .label(Label::Key { key: "path" })
            .family(Family::Files)
            .timeout_ms(30_000)
            .guideline("Prefer edit_file for changes to existing files; write_file for new files.")
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<EditResult>())
    }

    /// The diff the edit would make; an edit that would fail (no match, a stale read, a path
    /// outside the project) is refused before anybody is asked.
    async fn review(&self, ctx: &Context, args: &Self::Args) -> Result<Review, ToolError> {
        let (ctx, config, args) = (ctx.clone(), self.config.clone(), args.clone());
        tokio::task::spawn_blocking(move || approval_diff(&ctx, &config, &args))
            .await
            .map_err(|err| ToolError::Fatal(format!("edit_file review task failed: {err}")))?
            .map(Review::details)
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let config = self.config.clone();
        let inner = ctx.clone();
        let output = tokio::task::spawn_blocking(move || {
            unchanged_since_approval(&inner, &config, &args)?;
            edit(&inner, &config, &args)
        })
        .await
        .map_err(|err| ToolError::Fatal(format!("edit_file task failed: {err}")))??;
        Ok(crate::changed::announce(&ctx, output).await)
    }
}

/// After a yes, the edit must still be the one shown: a file changed while the question waited
/// (an autosave, a formatter, another program) would make the same arguments change other lines.
fn unchanged_since_approval(
    ctx: &Context,
    config: &FsConfig,
    args: &EditFileArgs,
) -> Result<(), ToolError> {
    let Some(approved) = ctx.approved() else { return Ok(()) };
    let now = approval_diff(ctx, config, args)?;
    let now = hands_core::redact::text(&now);
    if approved.details.as_deref() == Some(&*now) {
        return Ok(());
    }
    Err(ToolError::model(format!(
        "{} changed while the user was asked, so this edit would not be the one approved; \
         nothing was written. Read the file again and send the edit anew. The edit would now \
         be:\n{now}",
        args.path
    )))
}

pub(crate) const BOM: &str = "\u{FEFF}";

/// An edit worked out but not written: the file's body before and after, and its BOM.
struct Planned {
    path: RelPath,
    bom: &'static str,
    body: String,
    new_body: String,
    replacements: usize,
    edits: usize,
    changed_since_read: bool,
}

/// What the approval of an edit shows: its diff (nothing when the edit cannot be made; the call
/// then fails with the reason before anything is written).
pub(crate) fn approval_diff(
    ctx: &Context,
    config: &FsConfig,
    args: &EditFileArgs,
) -> Result<String, ToolError> {
    let ws = Workspace::of(ctx)?;
    let planned = plan(ctx, &ws, config, args)?;
    Ok(unified_diff(&planned.path, &planned.body, &planned.new_body))
}

fn edit(ctx: &Context, config: &FsConfig, args: &EditFileArgs) -> Result<ToolOutput, ToolError> {
    let ws = Workspace::of(ctx)?;
    let planned = plan(ctx, &ws, config, args)?;
    let Planned { path, bom, body, new_body, replacements, edits, changed_since_read } = planned;
    let result = format!("{bom}{new_body}");
    let meta = atomic::write(&ws, &path, result.as_bytes(), ctx.cancel_token())
        .map_err(|err| atomic::write_error(&ws, "edit_file", &path, &err))?;
    ctx.session().extension::<Ledger>().record_content(
        &path,
        Seen::new(&meta, Some(content_hash(result.as_bytes()))),
        result.as_bytes(),
    );
    let diff = unified_diff(&path, &body, &new_body);
    let applied = if edits == 1 { String::new() } else { format!("{edits} edits, ") };
    let note = if changed_since_read {
        format!(
            " {} had changed on disk since this session read it; every old_string still matched \
             the current content exactly once, so the edit was applied to it.",
            path.display()
        )
    } else {
        String::new()
    };
    Ok(ToolOutput::text(format!(
        "Edited {} ({applied}{replacements} replacement{}).{note}\n\n{diff}",
        path.display(),
        if replacements == 1 { "" } else { "s" }
    ))
    .with_structured(crate::write_file::structured(&EditResult {
        path: path.display(),
        replacements,
        edits,
        changed_since_read,
        diff,
    })?))
}

/// Check an edit and work out the new content, writing nothing.
fn plan(
    ctx: &Context,
    ws: &Workspace,
    config: &FsConfig,
    args: &EditFileArgs,
) -> Result<Planned, ToolError> {
    let edits = edits_of(args)?;
    let path = ws.resolve("path", &args.path)?;
    atomic::check_writable(ws, &path, config, "edit")?;
    let (text, meta) = load(ws, &path, config, "edit_file")?;
    let changed = stale::changed_since_read(ctx, config, &path, &meta, text.as_bytes());
    let (bom, body) = split_bom(&text);
    let before = changed.as_ref().and_then(Changed::before_text);
    let mut current = body.to_owned();
    let mut replacements = 0;
    for (index, edit) in edits.iter().enumerate() {
        let which = Which { index, of: edits.len() };
        let step = Step { ctx, ws, path: &path, which, changed: changed.as_ref(), body };
        let (new_body, count) = step.apply(edit, &current, before.as_deref())?;
        current = new_body;
        replacements += count;
    }
    let result = format!("{bom}{current}");
    if result.len() > config.write_max_bytes {
        return Err(ToolError::model(format!(
            "The edited {} would be {}, over the {} edit_file writes; nothing was changed.",
            path.display(),
            human_size(result.len() as u64),
            human_size(config.write_max_bytes as u64)
        )));
    }
    Ok(Planned {
        bom,
        body: body.to_owned(),
        new_body: current,
        replacements,
        edits: edits.len(),
        changed_since_read: changed.is_some(),
        path,
    })
}

/// The edits a call asks for: its `edits`, or its one old_string/new_string (with replace_all),
/// each checked to be a real change.
fn edits_of(args: &EditFileArgs) -> Result<Vec<Edit>, ToolError> {
    let edits = match (&args.edits, &args.old_string, &args.new_string) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(ToolError::model(
                "Give either `old_string` and `new_string` or `edits`, not both. Put every \
                 replacement in `edits` to make several.",
            ));
        }
        (Some(edits), None, None) if edits.is_empty() => {
            return Err(ToolError::model(
                "`edits` is empty; give at least one {old_string, new_string}.",
            ));
        }
        (Some(edits), None, None) => edits.clone(),
        (None, Some(old), Some(new)) => {
            vec![Edit {
                old_string: old.clone(),
                new_string: new.clone(),
                replace_all: args.replace_all,
            }]
        }
        (None, _, _) => {
            return Err(ToolError::model(
                "Give `old_string` (the exact text to replace) and `new_string` (its replacement), \
                 or `edits` with several of them.",
            ));
        }
    };
    for (index, edit) in edits.iter().enumerate() {
        let which = Which { index, of: edits.len() };
        if edit.old_string.is_empty() {
            return Err(ToolError::model(format!(
                "{}`old_string` is empty. To create a file or replace all of it, use write_file; to \
                 insert text, put a nearby line in old_string and repeat it with your addition in \
                 new_string.",
                which.prefix()
            )));
        }
        if edit.old_string == edit.new_string {
            return Err(ToolError::model(format!(
                "{}`old_string` and `new_string` are the same, so the edit would change nothing. Put \
                 the new text in new_string.",
                which.prefix()
            )));
        }
    }
    Ok(edits)
}

/// Which edit of a call an error is about: nothing to say for a call with one.
#[derive(Debug, Clone, Copy)]
struct Which {
    index: usize,
    of: usize,
}

impl Which {
    fn prefix(self) -> String {
        if self.of == 1 {
            String::new()
        } else {
            format!("Edit {} of {} (`edits[{}]`): ", self.index + 1, self.of, self.index)
        }
    }

    fn field(self, name: &str) -> String {
        if self.of == 1 { name.to_owned() } else { format!("edits[{}].{name}", self.index) }
    }

    /// After the first edit, line numbers are those of the text the earlier edits left.
    fn after_earlier(self) -> &'static str {
        if self.index == 0 {
            ""
        } else {
            " (line numbers are of the text as the earlier edits of this call left it)"
        }
    }
}

/// One edit of a call, applied to the text the earlier ones left.
struct Step<'a> {
    ctx: &'a Context,
    ws: &'a Workspace,
    path: &'a RelPath,
    which: Which,
    changed: Option<&'a Changed>,
    /// The file's body as it is on disk (for a changed file's refusal).
    body: &'a str,
}

impl Step<'_> {
    /// `current` with `edit` applied, and the occurrences replaced. `before` is the body as the
    /// session read it, when the file changed since and the ledger kept it.
    fn apply(
        &self,
        edit: &Edit,
        current: &str,
        before: Option<&str>,
    ) -> Result<(String, usize), ToolError> {
        let (root, path, which) = (self.ws.root(), self.path, self.which);
        // old_string only finds text: a placeholder there may stand for a key hard-coded in any
        // file (to replace it with an environment read); new text gets values only in a `.env*`.
        let old =
            placeholders::resolve(root, path, &which.field("old_string"), &edit.old_string, true)?;
        let new =
            placeholders::resolve(root, path, &which.field("new_string"), &edit.new_string, false)?;
        let found = find(current, &old, &new);
        let count = found.as_ref().map_or(0, |f| f.at.len());
        if let Some(changed) = self.changed {
            let as_read = before.and_then(|b| find(b, &old, &new)).map_or(0, |f| f.at.len());
            let fine = count == 1 || (edit.replace_all && count > 0 && count == as_read);
            if !fine {
                return Err(self.changed_refusal(changed, count));
            }
        }
        let Some(found) = found else {
            return Err(prefixed(
                which,
                no_match(path, current, &old, self.ctx.cancel_token()),
                which.after_earlier(),
            ));
        };
        if count > 1 && !edit.replace_all {
            return Err(several(path, current, &found.at, which));
        }
        let chosen = if edit.replace_all { &found.at[..] } else { &found.at[..1] };
        Ok((splice(current, chosen, found.old.len(), &found.new), chosen.len()))
    }

    /// The refusal of an edit to a file that changed since the read, whose old_string does not
    /// match the current content exactly once.
    fn changed_refusal(&self, changed: &Changed, count: usize) -> ToolError {
        let found = match count {
            0 => "does not occur in it any more".to_owned(),
            1 => "occurs there once, but not as often as in what was read (replace_all)".to_owned(),
            n => format!("occurs there {n} times"),
        };
        ToolError::model(format!(
            "{}{shown} changed on disk since this session read it (a formatter, an editor or another \
             process), and old_string {found}; nothing was changed. The lines that changed since \
             the read:\n{}Read the file again with read_file and redo the edit on its current \
             content.",
            self.which.prefix(),
            stale::changed_lines(self.path, changed, self.body),
            shown = self.path.display(),
        ))
    }
}

/// `err` (a model-facing error) with the edit it is about in front, and `suffix` at the end.
fn prefixed(which: Which, err: ToolError, suffix: &str) -> ToolError {
    match err {
        ToolError::RespondToModel(text) => {
            ToolError::model(format!("{}{text}{suffix}", which.prefix()))
        }
        other => other,
    }
}

/// The refusal of an old_string that occurs several times without replace_all.
fn several(path: &RelPath, body: &str, at: &[usize], which: Which) -> ToolError {
    let count = at.len();
    let lines = match_lines(body, at);
    let shown: Vec<String> = lines.iter().take(50).map(u64::to_string).collect();
    let more =
        if lines.len() > 50 { format!(" and {} more", lines.len() - 50) } else { String::new() };
    ToolError::model(format!(
        "{}`old_string` occurs {count} times in {} (lines {}{more}){}; nothing was changed. Add \
         surrounding lines to old_string so that it matches exactly one place, or set replace_all \
         to true to change every occurrence.",
        which.prefix(),
        path.display(),
        shown.join(", "),
        which.after_earlier()
    ))
}

/// The BOM (if any) and the text after it.
pub(crate) fn split_bom(text: &str) -> (&'static str, &str) {
    match text.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", text),
    }
}

/// The file's text and metadata, refusing what an edit would corrupt (binaries, invalid UTF-8)
/// or is too big. `tool` (edit_file or apply_patch) is named in the messages.
pub(crate) fn load(
    ws: &Workspace,
    path: &RelPath,
    config: &FsConfig,
    tool: &str,
) -> Result<(String, cap_std::fs::Metadata), ToolError> {
    let shown = path.display();
    let create = if tool == "apply_patch" {
        "To create it, use an `*** Add File:` section with its complete content."
    } else {
        "To create it, use write_file with its complete content."
    };
    let mut file = ws.open_read(path).map_err(|err| match err.kind() {
        io::ErrorKind::NotFound => ToolError::model(format!("{shown} does not exist. {create}")),
        _ => ws.io_error("edited", path, &err),
    })?;
    let meta = file.metadata().map_err(|err| ws.io_error("edited", path, &err))?;
    if meta.is_dir() {
        return Err(ToolError::model(format!("{shown} is a directory; {tool} edits files.")));
    }
    if meta.len() > config.write_max_bytes as u64 {
        return Err(ToolError::model(format!(
            "{shown} is {}, over the {} {tool} handles. Change it with a command through bash.",
            human_size(meta.len()),
            human_size(config.write_max_bytes as u64)
        )));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|err| ws.io_error("edited", path, &err))?;
    if let Kind::Binary(kind) | Kind::Image(kind) = detect::sniff(&bytes) {
        return Err(ToolError::model(format!(
            "{shown} is a binary file ({kind}, {}); {tool} only edits text, and a text edit would \
             corrupt it.",
            human_size(meta.len())
        )));
    }
    let text = String::from_utf8(bytes).map_err(|err| {
        ToolError::model(format!(
            "{shown} is not valid UTF-8 (invalid bytes at byte {}); {tool} refuses it because \
             rewriting it as text would corrupt those bytes. Change it with a command through bash.",
            err.utf8_error().valid_up_to()
        ))
    })?;
    Ok((text, meta))
}

/// Where old_string matches `body`, as the strings that matched.
struct Found<'a> {
    old: Cow<'a, str>,
    new: Cow<'a, str>,
    /// Byte offsets of the (non-overlapping) matches.
    at: Vec<usize>,
}

/// old_string and new_string as they match `body`: exactly as given, else (in a file with CRLF)
/// with their line breaks as CRLF, else with CRLF turned into LF. In a file that is CRLF throughout,
/// new_string's line breaks always become CRLF. A match that would split a CRLF
/// pair (an LF-only `old_string` starting with `\n` inside a CRLF file) does not count, so the
/// CRLF form is tried instead and every line ending stays whole.
fn find<'a>(body: &str, old: &'a str, new: &'a str) -> Option<Found<'a>> {
    let lf = |s: &str| s.replace("\r\n", "\n");
    let crlf = |s: &str| lf(s).replace('\n', "\r\n");
    // In a file whose every line ends in CRLF, new text gets CRLF too, whatever old_string holds.
    let all_crlf =
        body.contains("\r\n") && body.matches('\n').count() == body.matches("\r\n").count();
    let exact_new =
        if all_crlf && new.contains('\n') { Cow::Owned(crlf(new)) } else { Cow::Borrowed(new) };
    let mut tries = vec![(Cow::Borrowed(old), exact_new)];
    if body.contains("\r\n") && old.contains('\n') {
        tries.push((Cow::Owned(crlf(old)), Cow::Owned(crlf(new))));
    }
    if old.contains("\r\n") {
        tries.push((Cow::Owned(lf(old)), Cow::Owned(lf(new))));
    }
    tries.into_iter().find_map(|(old, new)| {
        let at = positions(body, &old);
        (!at.is_empty()).then_some(Found { old, new, at })
    })
}

/// Byte offsets of the non-overlapping matches of `needle` that do not split a CRLF pair.
fn positions(body: &str, needle: &str) -> Vec<usize> {
    body.match_indices(needle)
        .map(|(at, _)| at)
        .filter(|&at| {
            let splits_start = needle.starts_with('\n') && body[..at].ends_with('\r');
            let splits_end = needle.ends_with('\r') && body[at + needle.len()..].starts_with('\n');
            !(splits_start || splits_end)
        })
        .collect()
}

/// `body` with the matches at `at` (each `len` bytes long) replaced by `new`.
fn splice(body: &str, at: &[usize], len: usize, new: &str) -> String {
    let mut out = String::with_capacity(body.len() + at.len() * new.len());
    let mut pos = 0;
    for &start in at {
        out.push_str(&body[pos..start]);
        out.push_str(new);
        pos = start + len;
    }
    out.push_str(&body[pos..]);
    out
}

/// The 1-based line of each match offset.
fn match_lines(body: &str, at: &[usize]) -> Vec<u64> {
    let mut lines = Vec::new();
    let (mut line, mut pos) = (1u64, 0usize);
    for &start in at {
        line += body[pos..start].bytes().filter(|&b| b == b'\n').count() as u64;
        pos = start;
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(body: &str, old: &str, new: &str) -> (String, String, Vec<usize>) {
        let f = find(body, old, new).unwrap();
        (f.old.into_owned(), f.new.into_owned(), f.at)
    }

    #[test]
    fn find_tries_exact_then_crlf() {
        assert_eq!(
            found("a\r\nb\r\nc", "a\nb", "x\ny"),
            ("a\r\nb".into(), "x\r\ny".into(), vec![0])
        );
        assert_eq!(found("a\nb\na\nb", "a\nb", "z").2, vec![0, 4]);
        let (o, n, _) = found("a\nb", "a\r\nb", "c\r\nd");
        assert_eq!((o.as_str(), n.as_str()), ("a\nb", "c\nd"));
        assert!(find("abc", "x", "y").is_none());
    }

    #[test]
    fn an_lf_match_never_splits_a_crlf_pair() {
        // "\nfoo" would match inside "\r\nfoo" and leave a lone \r; the CRLF form is used instead.
        let body = "x\r\nfoo\r\n";
        let f = find(body, "\nfoo", "\nbar").unwrap();
        assert_eq!((f.old.as_ref(), f.new.as_ref(), f.at.clone()), ("\r\nfoo", "\r\nbar", vec![1]));
        assert_eq!(splice(body, &f.at, f.old.len(), &f.new), "x\r\nbar\r\n");
        // In an LF region of a mixed file the exact match still counts.
        let mixed = "x\nfoo\r\n";
        assert_eq!(found(mixed, "\nfoo", "\nbar").2, vec![1]);
    }

    #[test]
    fn match_lines_are_one_based() {
        let body = "x\ny x\n\nx";
        assert_eq!(match_lines(body, &positions(body, "x")), vec![1, 2, 4]);
        let body = "x\nx x";
        assert_eq!(match_lines(body, &positions(body, "x")), vec![1, 2, 2]);
    }

    #[test]
    fn diff_is_capped() {
        let path =
            Workspace::open(std::path::Path::new("/")).unwrap().resolve("path", "f").unwrap();
        let old: String = (0..1000).map(|i| format!("{i}\n")).collect();
        let new: String = (0..1000).map(|i| format!("x{i}\n")).collect();
        let diff = unified_diff(&path, &old, &new);
        assert!(diff.starts_with("--- a/f\n+++ b/f\n"));
        assert!(diff.ends_with("more lines]"), "{}", &diff[diff.len() - 100..]);
        assert_eq!(diff.lines().count(), crate::diff::DIFF_MAX_LINES + 1);
    }
}
