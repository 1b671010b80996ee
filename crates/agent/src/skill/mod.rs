//! use_skill: load a skill's instructions. A skill is a folder with a `SKILL.md` (front matter with
//! `name` and `description`, then the instructions) under the project's `.hands/skills/` or the
//! user's skills folder ([`user_skills_dir`]).
//!
//! A tool's description is fixed when the registry is built, so [`UseSkill::discover`] lists the
//! skills found then in the description; each call looks again (under the calling session's root),
//! so that a skill added later, or a session on another root, is served what is there now.

mod catalog;
mod front_matter;

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use hands_core::{Annotations, Context, Tool, ToolError, ToolOutput};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use catalog::{Catalog, Origin, PROJECT_SKILLS};

/// Characters of a skill's description shown in use_skill's own description.
const LISTED_DESCRIPTION_CHARS: usize = 1024;

/// Skills listed in use_skill's description.
const MAX_LISTED_SKILLS: usize = 100;

/// The user's skills folder: `$XDG_CONFIG_HOME/hands/skills`, else `~/.config/hands/skills`.
pub fn user_skills_dir() -> Option<PathBuf> {
    hands_dirs::config_dir().map(|dir| dir.join("skills"))
}

/// use_skill's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UseSkillArgs {
    /// The skill's name, as listed in this tool's description.
    pub name: String,
}

/// The use_skill tool.
#[derive(Debug, Clone)]
pub struct UseSkill {
    user_dir: Option<PathBuf>,
    description: String,
    /// Skills were found when it was made.
    found: bool,
}

impl UseSkill {
    /// Find the skills of `root` (when known) and `user_dir` (see [`user_skills_dir`]) now, for the
    /// description; calls look again. Folders that cannot be used are logged as warnings.
    pub fn discover(root: Option<&Path>, user_dir: Option<&Path>) -> Self {
        let catalog = Catalog::discover(root, user_dir);
        for problem in &catalog.problems {
            tracing::warn!(skill = %problem.shown, "skill ignored: {}", problem.reason);
        }
        let mut description = include_str!("use_skill.md").trim_end().to_owned();
        description.push_str("\n\n");
        if catalog.skills.is_empty() {
            description.push_str(
                "No skills were found when hands started (call use_skill with any name to look \
                 again).",
            );
        } else {
            description.push_str(
                "Available skills (found when hands started; call use_skill with any name to get \
                 the current list):\n",
            );
            for skill in catalog.skills.iter().take(MAX_LISTED_SKILLS) {
                let _ = writeln!(description, "- {}: {}", skill.name, one_line(&skill.description));
            }
            if catalog.skills.len() > MAX_LISTED_SKILLS {
                let _ = writeln!(
                    description,
                    "- … and {} more",
                    catalog.skills.len() - MAX_LISTED_SKILLS
                );
            }
        }
        Self {
            user_dir: user_dir.map(Path::to_path_buf),
            description: description.trim_end().to_owned(),
            found: !catalog.skills.is_empty(),
        }
    }

    /// True when skills were found when it was made (the project's or the user's).
    pub fn has_skills(&self) -> bool {
        self.found
    }
}

/// A description on one line, cut to [`LISTED_DESCRIPTION_CHARS`].
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > LISTED_DESCRIPTION_CHARS {
        let mut cut: String = line.chars().take(LISTED_DESCRIPTION_CHARS).collect();
        cut.push('…');
        cut
    } else {
        line
    }
}

impl Tool for UseSkill {
    type Args = UseSkillArgs;

    fn name(&self) -> &'static str {
        "use_skill"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Owned(self.description.clone())
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "name" })
            .family(Family::Session)
    }

    async fn call(&self, ctx: Context, args: UseSkillArgs) -> Result<ToolOutput, ToolError> {
        let root = ctx.root().to_path_buf();
        let user_dir = self.user_dir.clone();
        tokio::task::spawn_blocking(move || {
            let catalog = Catalog::discover(Some(&root), user_dir.as_deref());
            respond(&catalog, args.name.trim(), user_dir.as_deref())
        })
        .await
        .map_err(|err| ToolError::Fatal(format!("use_skill task failed: {err}")))?
    }
}

/// The skill `name` of `catalog`, or what to do instead.
fn respond(
    catalog: &Catalog,
    name: &str,
    user_dir: Option<&Path>,
) -> Result<ToolOutput, ToolError> {
    if let Some(skill) = catalog.find(name).filter(|_| !name.is_empty()) {
        let mut text = format!(
            "Skill `{}` ({}/SKILL.md): {}\n\n{}",
            skill.name,
            skill.shown,
            one_line(&skill.description),
            skill.body.trim_end()
        );
        let (files, more) = skill.files();
        if !files.is_empty() {
            let how = match skill.origin {
                Origin::Project => "read them as `{folder}/<file>` when the instructions \
                                    refer to them"
                    .replace("{folder}", &skill.shown),
                Origin::User => "outside the project, so the file tools cannot open them; read \
                                 them with a command (e.g. `cat`) when the instructions refer to \
                                 them"
                    .to_owned(),
            };
            let _ = write!(text, "\n\nOther files of this skill, in {}/ ({how}):", skill.shown);
            for file in &files {
                let _ = write!(text, "\n- {file}");
            }
            if more > 0 {
                let _ = write!(text, "\n- … and {more} more");
            }
        }
        return Ok(ToolOutput::text(text));
    }
    let available = available(catalog, user_dir);
    if name.is_empty() {
        return Err(ToolError::model(format!("`name` is empty: pass a skill's name. {available}")));
    }
    if let Some(problem) = catalog
        .problems
        .iter()
        .find(|p| !p.folder.is_empty() && p.folder.eq_ignore_ascii_case(name))
    {
        return Err(ToolError::model(format!(
            "The skill `{name}` ({}) cannot be used: {}. Tell the user if they expect it to work, \
             and go on without it. {available}",
            problem.shown, problem.reason
        )));
    }
    let close = close_names(catalog, name);
    let hint = if close.is_empty() {
        String::new()
    } else {
        format!(
            " Did you mean {}?",
            close.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or ")
        )
    };
    Err(ToolError::model(format!("Unknown skill `{name}`.{hint} {available}")))
}

/// The known skills' names, or where skills would go.
fn available(catalog: &Catalog, user_dir: Option<&Path>) -> String {
    if catalog.skills.is_empty() {
        let user = user_dir.map(|d| format!(" or in {}", d.display())).unwrap_or_default();
        return format!(
            "No skills are installed: a skill is a folder with a SKILL.md under {PROJECT_SKILLS}/ \
             in the project{user}."
        );
    }
    let names: Vec<&str> = catalog.skills.iter().map(|s| s.name.as_str()).collect();
    format!("Available skills: {}.", names.join(", "))
}

/// Up to three names like `name`.
fn close_names<'a>(catalog: &'a Catalog, name: &str) -> Vec<&'a str> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(f64, &str)> = catalog
        .skills
        .iter()
        .map(|s| {
            let candidate = s.name.to_lowercase();
            let bonus =
                if candidate.contains(&lower) || lower.contains(&candidate) { 0.2 } else { 0.0 };
            (strsim::jaro_winkler(&lower, &candidate) + bonus, s.name.as_str())
        })
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_joins_and_cuts() {
        assert_eq!(one_line("a\n  b\tc "), "a b c");
        let long = "x".repeat(LISTED_DESCRIPTION_CHARS + 5);
        let cut = one_line(&long);
        assert_eq!(cut.chars().count(), LISTED_DESCRIPTION_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
