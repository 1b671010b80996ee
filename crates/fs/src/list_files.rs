//! list_files: a tree of a folder with sizes, read through the root's directory handle.
//!
//! Flow: resolve and open the folder through the handle, then read it level by level (folders
//! first, then files, each by name) down to `depth`. Symlinks are shown with their target and never
//! followed; node_modules, .git and dist are shown as one collapsed line; past the entry cap the
//! rest is only counted.

use std::borrow::Cow;
use std::ffi::OsString;

use cap_std::fs::Dir;

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::walk::is_excluded;
use crate::{FsConfig, RelPath, Workspace};

/// Arguments of list_files.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFilesArgs {
    /// Folder to list, relative to the project root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// How many levels deep to list (default 2).
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

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let config = self.config.clone();
        let task = tokio::task::spawn_blocking(move || run(&ctx, &config, &args));
        task.await.map_err(|e| ToolError::Fatal(format!("list_files task failed: {e}")))?
    }
}

/// Entries counted at most in a collapsed folder.
const COUNT_CAP: usize = 10_000;

struct Tree<'a> {
    config: &'a FsConfig,
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
    let ws = Workspace::for_root(ctx.root())?;
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
    let depth = args.depth.unwrap_or(config.list_depth).max(1);
    let mut tree = Tree { config, ctx, lines: Vec::new(), omitted: 0 };
    tree.lines.push(format!("{}/", rel.display()));
    tree.walk(&dir, &rel, depth, 1).map_err(|e| ws.io_error("listed", &rel, &e))?;
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
    Ok(ToolOutput::text(text))
}

impl Tree<'_> {
    fn walk(
        &mut self,
        dir: &Dir,
        rel: &RelPath,
        depth: usize,
        level: usize,
    ) -> std::io::Result<()> {
        if self.ctx.is_cancelled() {
            return Ok(());
        }
        let entries = read_entries(dir)?;
        let indent = "  ".repeat(level);
        for entry in entries {
            let name = entry.name.to_string_lossy();
            let shown = self.lines.len() <= self.config.list_max_entries;
            match &entry.kind {
                Kind::Dir if is_excluded(&self.config.excluded_dirs, &entry.name) => {
                    if shown {
                        let count = dir.read_dir(&entry.name).map_or_else(
                            |_| "…".to_owned(),
                            |it| match it.take(COUNT_CAP + 1).count() {
                                n if n > COUNT_CAP => format!("{COUNT_CAP}+ entries"),
                                n => format!("{n} entries"),
                            },
                        );
                        self.lines.push(format!("{indent}{name}/  (collapsed: {count})"));
                    } else {
                        self.omitted += 1;
                    }
                }
                Kind::Dir => {
                    let sub = dir.open_dir(&entry.name);
                    if level >= depth {
                        if shown {
                            let count = sub
                                .as_ref()
                                .ok()
                                .and_then(|d| d.entries().ok())
                                .map(|it| it.take(COUNT_CAP + 1).count());
                            let note = match count {
                                Some(0) => "  (empty)".to_owned(),
                                Some(n) if n > COUNT_CAP => format!("  ({COUNT_CAP}+ entries)"),
                                Some(n) => format!("  ({n} entries)"),
                                None => String::new(),
                            };
                            self.lines.push(format!("{indent}{name}/{note}"));
                        } else {
                            self.omitted += 1;
                        }
                        continue;
                    }
                    if shown {
                        self.lines.push(format!("{indent}{name}/"));
                    } else {
                        self.omitted += 1;
                    }
                    match sub {
                        Ok(sub) => {
                            // An unreadable subfolder is noted, not fatal for the listing.
                            if let Err(err) =
                                self.walk(&sub, &rel.join(&entry.name), depth, level + 1)
                            {
                                self.lines.push(format!("{indent}  (cannot read: {err})"));
                            }
                        }
                        Err(err) => self.lines.push(format!("{indent}  (cannot open: {err})")),
                    }
                }
                Kind::File(size) => {
                    if shown {
                        self.lines.push(format!("{indent}{name}  {}", human_size(*size)));
                    } else {
                        self.omitted += 1;
                    }
                }
                Kind::Link(target) => {
                    if shown {
                        self.lines.push(format!("{indent}{name} -> {target}"));
                    } else {
                        self.omitted += 1;
                    }
                }
            }
        }
        Ok(())
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
            let target = dir
                .read_link_contents(&name)
                .map_or_else(|_| "?".to_owned(), |t| t.to_string_lossy().into_owned());
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
