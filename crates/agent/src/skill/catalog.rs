//! Finding skills: every folder with a `SKILL.md` under the project's `.hands/skills/` and under
//! the user's skills folder; a project skill wins over a user skill of the same name.
//!
//! Reads are confined by directory handles (cap-std), not by comparing paths: project skills are
//! opened beneath the project root, user skills beneath the user's skills folder. A skill folder (or
//! its SKILL.md, or `.hands/skills` itself) that is a symlink leading outside is refused and
//! reported, never followed; symlinks that stay inside are fine.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::front_matter::{self, FrontMatterError};

/// Where project skills live, relative to the root.
pub(crate) const PROJECT_SKILLS: &str = ".hands/skills";

/// Largest SKILL.md read (instructions, not a data file).
pub(crate) const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// Files listed per skill.
const MAX_LISTED_FILES: usize = 200;

/// Folder depth listed per skill.
const MAX_DEPTH: usize = 8;

/// Where a skill comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `<root>/.hands/skills/`
    Project,
    /// The user's skills folder.
    User,
}

/// One usable skill.
#[derive(Debug)]
pub(crate) struct Skill {
    /// From the front matter (the folder's name when it has none).
    pub name: String,
    /// From the front matter.
    pub description: String,
    /// Project or user.
    pub origin: Origin,
    /// The folder as people see it: `.hands/skills/pdf`, or an absolute path for user skills.
    pub shown: String,
    /// SKILL.md without its front matter.
    pub body: String,
    /// The opened skill folder.
    dir: Dir,
}

/// A folder that looks like a skill but cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// The folder's name (the name a model would call it by).
    pub folder: String,
    /// The folder as people see it.
    pub shown: String,
    /// Why it is refused.
    pub reason: String,
}

/// The skills found, by name, and the folders refused.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// Sorted by name; names are unique.
    pub skills: Vec<Skill>,
    /// In the order found.
    pub problems: Vec<Problem>,
}

impl Catalog {
    /// Look in `<root>/.hands/skills` and `user_dir`.
    pub fn discover(root: Option<&Path>, user_dir: Option<&Path>) -> Self {
        let mut catalog = Self::default();
        if let Some(root) = root {
            match Dir::open_ambient_dir(root, ambient_authority()) {
                Ok(dir) => {
                    catalog.scan(&dir, Path::new(PROJECT_SKILLS), Origin::Project, PROJECT_SKILLS)
                }
                Err(err) => catalog.problems.push(Problem {
                    folder: String::new(),
                    shown: root.display().to_string(),
                    reason: format!("the project root cannot be opened: {err}"),
                }),
            }
        }
        if let Some(user_dir) = user_dir {
            // The user's own folder may itself be a symlink (to a dotfiles checkout): it is opened
            // as the user configured it, and everything inside is confined to it.
            match Dir::open_ambient_dir(user_dir, ambient_authority()) {
                Ok(dir) => catalog.scan(
                    &dir,
                    Path::new("."),
                    Origin::User,
                    &user_dir.display().to_string(),
                ),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => catalog.problems.push(Problem {
                    folder: String::new(),
                    shown: user_dir.display().to_string(),
                    reason: format!("the user skills folder cannot be opened: {err}"),
                }),
            }
        }
        catalog.skills.sort_by(|a, b| a.name.cmp(&b.name));
        catalog
    }

    /// The skill called `name`: exactly, else the one whose name differs only in case.
    pub fn find(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name).or_else(|| {
            let mut close = self.skills.iter().filter(|s| s.name.eq_ignore_ascii_case(name));
            match (close.next(), close.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        })
    }

    /// Every skill folder under `prefix` of `base`.
    fn scan(&mut self, base: &Dir, prefix: &Path, origin: Origin, shown_prefix: &str) {
        let entries = match base.read_dir(prefix) {
            Ok(entries) => entries,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return,
            Err(err) => {
                self.problems.push(Problem {
                    folder: String::new(),
                    shown: shown_prefix.to_owned(),
                    reason: refusal(&err, origin, "the skills folder"),
                });
                return;
            }
        };
        let mut folders: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|name| !name.starts_with('.'))
            .collect();
        folders.sort();
        for folder in folders {
            let shown = format!("{shown_prefix}/{folder}");
            match load(base, &prefix.join(&folder), &folder, origin, &shown) {
                Ok(None) => {}
                Ok(Some(skill)) => {
                    if let Some(taken) = self.skills.iter().find(|s| s.name == skill.name) {
                        // The project was scanned first, so a project skill keeps its name; two
                        // folders of one origin with one name are a mistake worth reporting.
                        if taken.origin == origin {
                            self.problems.push(Problem {
                                folder,
                                reason: format!(
                                    "its name `{}` is already used by {}",
                                    skill.name, taken.shown
                                ),
                                shown,
                            });
                        }
                        continue;
                    }
                    self.skills.push(skill);
                }
                Err(reason) => self.problems.push(Problem { folder, shown, reason }),
            }
        }
    }
}

/// The skill in folder `path` of `base`: `Ok(None)` when it is no skill (a file, a folder without
/// SKILL.md), `Err(why)` when it looks like one but cannot be used.
fn load(
    base: &Dir,
    path: &Path,
    folder: &str,
    origin: Origin,
    shown: &str,
) -> Result<Option<Skill>, String> {
    let dir = match base.open_dir(path) {
        Ok(dir) => dir,
        Err(err)
            if matches!(err.kind(), io::ErrorKind::NotADirectory | io::ErrorKind::NotFound) =>
        {
            return Ok(None);
        }
        Err(err) => return Err(refusal(&err, origin, "the skill folder")),
    };
    // Only a regular file, opened without waiting: a named pipe must not hang the catalog.
    let mut file = match crate::prompt::open_regular(&dir, Path::new("SKILL.md")) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) if err.kind() == io::ErrorKind::InvalidInput => {
            return Err(format!("its SKILL.md is skipped: {err}"));
        }
        Err(err) => return Err(refusal(&err, origin, "its SKILL.md")),
    };
    let size = file.metadata().map_err(|err| format!("its SKILL.md cannot be read: {err}"))?.len();
    if size > MAX_SKILL_BYTES {
        return Err(format!(
            "its SKILL.md has {size} bytes, over the {MAX_SKILL_BYTES} a skill may have"
        ));
    }
    let mut bytes = Vec::new();
    file.by_ref()
        .take(MAX_SKILL_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("its SKILL.md cannot be read: {err}"))?;
    let text = String::from_utf8_lossy(&bytes);
    let parsed = front_matter::parse(&text).map_err(|err| match err {
        FrontMatterError::Missing => format!(
            "its SKILL.md has no front matter: it must start with a `---` line, then \
             `name: {folder}` and `description: what it does and when to use it`, then `---`"
        ),
        FrontMatterError::Unclosed => {
            "its SKILL.md's front matter has no closing `---` line".to_owned()
        }
    })?;
    let field = |key: &str| parsed.fields.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
    let Some(description) = field("description") else {
        return Err(
            "its SKILL.md's front matter has no `description` (what the skill does and when to \
             use it)"
                .to_owned(),
        );
    };
    Ok(Some(Skill {
        name: field("name").unwrap_or(folder).to_owned(),
        description: description.to_owned(),
        origin,
        shown: shown.to_owned(),
        body: parsed.body.to_owned(),
        dir,
    }))
}

/// Why `what` could not be opened.
fn refusal(err: &io::Error, origin: Origin, what: &str) -> String {
    let escapes = err.raw_os_error() == Some(18)
        || err.raw_os_error() == Some(40)
        || err.to_string().contains("outside of the filesystem");
    // An absolute symlink cannot be resolved beneath a directory handle, so it counts too.
    let place = match origin {
        Origin::Project => "the project",
        Origin::User => "the user skills folder",
    };
    if escapes {
        format!(
            "{what} is a symlink that leads outside {place} (or an absolute one), so it is refused"
        )
    } else {
        format!("{what} cannot be opened: {err}")
    }
}

impl Skill {
    /// The skill's other files (not SKILL.md), relative to its folder, sorted; and how many more
    /// there were past the listing limit. Symlinked folders are listed, not entered.
    pub fn files(&self) -> (Vec<String>, usize) {
        let mut files = Vec::new();
        let mut more = 0;
        walk(&self.dir, &PathBuf::new(), 0, &mut files, &mut more);
        files.sort();
        (files, more)
    }
}

fn walk(dir: &Dir, at: &Path, depth: usize, files: &mut Vec<String>, more: &mut usize) {
    let Ok(entries) = dir.read_dir(if at.as_os_str().is_empty() { Path::new(".") } else { at })
    else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let Ok(name) = entry.file_name().into_string() else { continue };
        if name.starts_with('.') || name == "node_modules" || name == "__pycache__" {
            continue;
        }
        let path = at.join(&name);
        if depth == 0 && name == "SKILL.md" {
            continue;
        }
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && depth + 1 < MAX_DEPTH {
            walk(dir, &path, depth + 1, files, more);
        } else if files.len() < MAX_LISTED_FILES {
            let mut shown = path.to_string_lossy().into_owned();
            if is_dir {
                shown.push('/');
            }
            files.push(shown);
        } else {
            *more += 1;
        }
    }
}
