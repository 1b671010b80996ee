//! list_files: a tree of a folder with sizes, read through the root's directory handle.
//!
//! Flow: resolve and open the folder through the handle, then read it depth first (folders first,
//! then files, each by name) down to `depth` (at most 64), with an explicit stack, not recursion. Symlinks are shown with their target and never
//! followed; node_modules, .git and dist are shown as one collapsed line; past the entry cap the
//! rest is only counted.

use std::borrow::Cow;
use std::ffi::OsString;

use cap_std::fs::Dir;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::walk::is_excluded;
use crate::{FsConfig, Workspace};

/// Arguments of list_files.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFilesArgs {
    /// Folder (default: the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// Levels to list (default 2, at most 64).
    #[serde(default)]
    pub depth: Option<usize>,
}

/// The list_files tool.
#[derive(Debug, Clone)]
pub struct ListFiles {
    config: FsConfig,
}

impl ListFiles {
    /// With `config`.
    pub fn new(config: FsConfig) -> Self {
        Self { config }
    }
}

impl Tool for ListFiles {
    type Args = ListFilesArgs;

    fn name(&self) -> &'static str {
        "list_files"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("list_files.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "path" })
            .family(Family::Files)
            .timeout_ms(30_000)
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let config = self.config.clone();
        let task = tokio::task::spawn_blocking(move || run(&ctx, &config, &args));
        task.await.map_err(|e| ToolError::Fatal(format!("list_files task failed: {e}")))?
    }
}

/// Levels listed at most, whatever `depth` asks: each level holds one folder handle open.
const MAX_DEPTH: usize = 64;

/// Entries counted at most in a collapsed folder.
const COUNT_CAP: usize = 10_000;

struct Tree<'a> {
    config: &'a FsConfig,
    hidden: Option<&'a crate::Hidden>,
    ctx: &'a Context,
    lines: Vec<String>,
    omitted: usize,
}

#[derive(Debug)]
enum Kind {
    Dir,
    File(u64),
    Link(String),
}

struct Entry {
    name: OsString,
    kind: Kind,
}

fn run(ctx: &Context, config: &FsConfig, args: &ListFilesArgs) -> Result<ToolOutput, ToolError> {
    let ws = Workspace::of(ctx)?;
    let rel = ws.resolve("path", args.path.as_deref().unwrap_or("."))?;
    let meta = ws.dir().metadata(rel.for_open()).map_err(|e| ws.io_error("listed", &rel, &e))?;
    if !meta.is_dir() {
        return Err(ToolError::model(format!(
            "{} is a file ({}), not a folder. Use read_file to read it.",
            rel.display(),
            human_size(meta.len())
        )));
    }
    let dir = ws.dir().open_dir(rel.for_open()).map_err(|e| ws.io_error("listed", &rel, &e))?;
    let asked = args.depth.unwrap_or(config.list_depth).max(1);
    let depth = asked.min(MAX_DEPTH);
    let hidden = ws.hidden().map(|h| h.as_ref());
    let mut tree = Tree { config, hidden, ctx, lines: Vec::new(), omitted: 0 };
    tree.lines.push(format!("{}/", crate::escape::escape_name(&rel.display())));
    tree.walk(dir, depth).map_err(|e| ws.io_error("listed", &rel, &e))?;
    if ctx.is_cancelled() {
        return Err(crate::walk::cancelled("list_files"));
    }
    let mut text = tree.lines.join("\n");
    if tree.lines.len() == 1 {
        text.push_str("\n  (empty)");
    }
    if tree.omitted > 0 {
        text.push_str(&format!(
            "\n… {} more entries not shown (limit {}). List a subfolder with `path`, lower \
             `depth`, or use glob.",
            tree.omitted, config.list_max_entries
        ));
    }
    if asked > depth {
        text.push_str(&format!(
            "\n(depth is capped at {MAX_DEPTH}; list a deeper folder with `path` to go further.)"
        ));
    }
    Ok(ToolOutput::text(text))
}

/// One folder being listed: its handle, the entries not yet shown, and its level.
struct Frame {
    dir: Dir,
    entries: std::vec::IntoIter<Entry>,
    level: usize,
}

impl Tree<'_> {
    /// List `dir` (the level-1 folder) down to `depth`, depth first, with an explicit stack of
    /// open folders instead of recursion: a tree thousands of folders deep cannot overflow the
    /// thread's stack, and `depth` (at most [`MAX_DEPTH`]) bounds the handles held open.
    fn walk(&mut self, dir: Dir, depth: usize) -> std::io::Result<()> {
        let entries = read_entries(&dir)?.into_iter();
        let mut stack = vec![Frame { dir, entries, level: 1 }];
        while let Some(frame) = stack.last_mut() {
            if self.ctx.is_cancelled() {
                return Ok(());
            }
            let Some(entry) = frame.entries.next() else {
                stack.pop();
                continue;
            };
            let level = frame.level;
            // A hidden name is not shown, nor a symlink whose target names one.
            if let Some(hidden) = self.hidden {
                let target = match &entry.kind {
                    Kind::Link(target) => hidden.hides(std::path::Path::new(target)),
                    _ => false,
                };
                if target || hidden.hides_name(&entry.name) {
                    continue;
                }
            }
            if let Some(sub) = self.show(&frame.dir, &entry, level, depth) {
                stack.push(sub);
            }
        }
        Ok(())
    }

    /// Add the line of `entry` (in `dir`, at `level`), and return the folder to enter next, if any.
    fn show(&mut self, dir: &Dir, entry: &Entry, level: usize, depth: usize) -> Option<Frame> {
        let indent = "  ".repeat(level);
        let lossy = entry.name.to_string_lossy();
        // A name with a newline must not forge lines of the listing.
        let name = crate::escape::escape_name(&lossy);
        match &entry.kind {
            Kind::Dir if is_excluded(&self.config.excluded_dirs, &entry.name) => {
                self.emit(|| {
                    let count = dir.read_dir(&entry.name).map_or_else(
                        |_| "…".to_owned(),
                        |it| match it.take(COUNT_CAP + 1).count() {
                            n if n > COUNT_CAP => format!("{COUNT_CAP}+ entries"),
                            n => format!("{n} entries"),
                        },
                    );
                    format!("{indent}{name}/  (collapsed: {count})")
                });
                None
            }
            Kind::Dir if level >= depth => {
                self.emit(|| {
                    let count = dir
                        .open_dir(&entry.name)
                        .ok()
                        .and_then(|d| d.entries().ok())
                        .map(|it| it.take(COUNT_CAP + 1).count());
                    let note = match count {
                        Some(0) => "  (empty)".to_owned(),
                        Some(n) if n > COUNT_CAP => format!("  ({COUNT_CAP}+ entries)"),
                        Some(n) => format!("  ({n} entries)"),
                        None => String::new(),
                    };
                    format!("{indent}{name}/{note}")
                });
                None
            }
            Kind::Dir => {
                self.emit(|| format!("{indent}{name}/"));
                // An unreadable subfolder is noted, not fatal for the listing.
                let sub = match dir.open_dir(&entry.name) {
                    Ok(sub) => sub,
                    Err(err) => {
                        self.lines.push(format!("{indent}  (cannot open: {err})"));
                        return None;
                    }
                };
                match read_entries(&sub) {
                    Ok(entries) => {
                        Some(Frame { dir: sub, entries: entries.into_iter(), level: level + 1 })
                    }
                    Err(err) => {
                        self.lines.push(format!("{indent}  (cannot read: {err})"));
                        None
                    }
                }
            }
            Kind::File(size) => {
                self.emit(|| format!("{indent}{name}  {}", human_size(*size)));
                None
            }
            Kind::Link(target) => {
                self.emit(|| format!("{indent}{name} -> {target}"));
                None
            }
        }
    }

    /// Show a line while under the entry cap, else only count it.
    fn emit(&mut self, line: impl FnOnce() -> String) {
        if self.lines.len() <= self.config.list_max_entries {
            self.lines.push(line());
        } else {
            self.omitted += 1;
        }
    }
}

/// The entries of `dir`: folders first, then the rest, each sorted by name.
fn read_entries(dir: &Dir) -> std::io::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for entry in dir.entries()? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Ok(file_type) = entry.file_type() else { continue };
        let kind = if file_type.is_symlink() {
            let target = dir.read_link_contents(&name).map_or_else(
                |_| "?".to_owned(),
                |t| crate::escape::escape_name(&t.to_string_lossy()).into_owned(),
            );
            Kind::Link(target)
        } else if file_type.is_dir() {
            Kind::Dir
        } else {
            Kind::File(entry.metadata().map_or(0, |m| m.len()))
        };
        entries.push(Entry { name, kind });
    }
    entries.sort_by(|a, b| {
        let a_dir = matches!(a.kind, Kind::Dir);
        let b_dir = matches!(b.kind, Kind::Dir);
        b_dir.cmp(&a_dir).then_with(|| a.name.cmp(&b.name))
    });
    Ok(entries)
}

/// `1234` → `1.2 KB`.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    #[allow(clippy::cast_precision_loss)] // sizes are shown to one decimal
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_human_readable() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KB");
        assert_eq!(human_size(5 * 1024 * 1024), "5.0 MB");
    }

    #[test]
    fn folders_come_first_then_names() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "x").unwrap();
        std::fs::create_dir(tmp.path().join("z")).unwrap();
        std::fs::create_dir(tmp.path().join("b")).unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let names: Vec<String> = read_entries(&dir)
            .unwrap()
            .into_iter()
            .map(|e| e.name.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["b", "z", "a.txt"]);
    }
}
