//! The system prompt: who the agent is, the project root, the mode, and the project's own
//! instruction files.
//!
//! The instruction files (`AGENTS.md`, `CLAUDE.md`, `.hands/instructions.md`, in that order) are
//! read through a directory handle on the project root (cap-std), so a symlink cannot make the
//! prompt include a file from outside the project, and each is capped at [`INSTRUCTIONS_MAX_BYTES`]
//! (the rest is cut with a note). Missing or unreadable files are skipped, and so is anything
//! that is not a regular file (with a warning): the open does not wait, so a named pipe at
//! `AGENTS.md` cannot hang hands.

use std::io::Read;
use std::path::{Path, PathBuf};

use hands_core::{Family, Mode, ToolSpec};

/// The instruction files looked for, relative to the root, in the order they are included.
pub const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md", ".hands/instructions.md"];

/// Bytes of one instruction file included at most.
pub const INSTRUCTIONS_MAX_BYTES: usize = 64 * 1024;

/// One instruction file found in the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instructions {
    /// Its path relative to the root.
    pub path: String,
    /// Its text (cut at [`INSTRUCTIONS_MAX_BYTES`], with a note).
    pub text: String,
}

/// Read the project's instruction files (blocking; see [`load_instructions`]).
pub fn read_instructions(root: &Path) -> Vec<Instructions> {
    let Ok(dir) = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority()) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for path in INSTRUCTION_FILES {
        let file = match open_regular(&dir, Path::new(path)) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::InvalidInput => {
                tracing::warn!(file = %path, "instruction file skipped: {err}");
                continue;
            }
            Err(_) => continue,
        };
        let mut bytes = Vec::new();
        if file.take(INSTRUCTIONS_MAX_BYTES as u64 + 1).read_to_end(&mut bytes).is_err() {
            continue;
        }
        let cut = bytes.len() > INSTRUCTIONS_MAX_BYTES;
        bytes.truncate(INSTRUCTIONS_MAX_BYTES);
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if cut {
            text.push_str(&format!(
                "\n[… {path} is longer than {} KiB; the rest was not included — read the file \
                 itself if you need it]",
                INSTRUCTIONS_MAX_BYTES / 1024
            ));
        }
        if !text.trim().is_empty() {
            found.push(Instructions { path: (*path).to_owned(), text });
        }
    }
    found
}

/// Open `path` beneath `dir` for reading, only when it is a regular file: the open does not wait
/// (`O_NONBLOCK`, which a regular file ignores), so a named pipe is refused at once instead of
/// blocking until somebody writes to it; a pipe, socket, device or folder gives `InvalidInput`.
pub(crate) fn open_regular(
    dir: &cap_std::fs::Dir,
    path: &Path,
) -> std::io::Result<cap_std::fs::File> {
    use cap_std::fs::OpenOptionsExt as _;
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true).custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    let file = dir.open_with(path, &options)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file (a named pipe, socket, device or folder)",
        ))
    }
}

/// [`read_instructions`] on the blocking pool.
pub async fn load_instructions(root: PathBuf) -> Vec<Instructions> {
    tokio::task::spawn_blocking(move || read_instructions(&root)).await.unwrap_or_default()
}

/// What the system prompt is made of; [`SystemPrompt::render`] gives the text for a mode (the
/// mode can change within a turn, so the loop renders it before each model call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    /// The project root.
    pub root: PathBuf,
    /// The project's instruction files.
    pub instructions: Vec<Instructions>,
}

impl SystemPrompt {
    /// The prompt for `root`, with its instruction files read now.
    pub async fn load(root: &Path) -> Self {
        Self { root: root.to_owned(), instructions: load_instructions(root.to_owned()).await }
    }

    /// The prompt text in `mode`, with `tools` the tools offered now: their guidelines
    /// ([`Policy::guideline`](hands_core::Policy::guideline)) and which of them only read.
    pub fn render(&self, mode: Mode, tools: &[ToolSpec]) -> String {
        let mut out = String::with_capacity(2048);
        out.push_str(
            "You are hands, a coding agent. You work in one project on the user's machine through \
             the tools you are given: read and search files, edit them, run commands. Work until the \
             user's request is done, then answer briefly with what you did and what is left.\n\n\
             Guidelines:\n\
             - Read the relevant code before you change it; make the smallest change that does the \
             job and keep the project's style.\n",
        );
        for line in tools.iter().filter_map(|tool| tool.policy.guideline) {
            out.push_str("- ");
            out.push_str(line);
            out.push('\n');
        }
        let readers: Vec<&str> = tools
            .iter()
            .filter(|tool| {
                tool.annotations.read_only
                    && matches!(tool.policy.family, Family::Files | Family::Search)
            })
            .map(|tool| tool.name.as_str())
            .collect();
        if !readers.is_empty() {
            out.push_str(&format!(
                "- Calls that only read ({}) may be made together in one step; they run in \
                 parallel.\n",
                readers.join(", ")
            ));
        }
        out.push_str(
            "- Tool results may end with [notice] lines (a background process finished): take them \
             into account.\n",
        );
        out.push_str(&format!(
            "\nThe project root is {}. Every path is relative to it; nothing outside it can be read or \
             written.\n",
            self.root.display()
        ));
        match mode {
            Mode::Build => out.push_str(
                "\nMode: build. Every tool is available. For a large or unclear task you may call \
                 enter_plan_mode first, research, and present a plan.\n",
            ),
            Mode::Plan => out.push_str(
                "\nMode: plan. Only read-only tools are available: research the task, do not try to \
                 change anything, then call exit_plan_mode with a concrete plan (steps, files to \
                 change, how to check the result). The build tools come back once the plan is \
                 accepted.\n",
            ),
        }
        if !self.instructions.is_empty() {
            out.push_str(
                "\nThe project's instructions follow. Follow them unless the user says otherwise.\n",
            );
            for file in &self.instructions {
                out.push_str(&format!("\n<instructions file=\"{}\">\n", file.path));
                out.push_str(&file.text);
                if !file.text.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str("</instructions>\n");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_root_mode_and_instruction_files_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "use tabs\n").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "run make test\n").unwrap();
        std::fs::create_dir(dir.path().join(".hands")).unwrap();
        std::fs::write(dir.path().join(".hands/instructions.md"), "be brief").unwrap();
        let prompt = SystemPrompt {
            root: dir.path().to_owned(),
            instructions: read_instructions(dir.path()),
        };
        let build = prompt.render(Mode::Build, &[]);
        assert!(build.contains(&dir.path().display().to_string()));
        assert!(build.contains("Mode: build"));
        let agents = build.find("run make test").unwrap();
        let claude = build.find("use tabs").unwrap();
        let hands = build.find("be brief").unwrap();
        assert!(agents < claude && claude < hands);
        assert!(prompt.render(Mode::Plan, &[]).contains("Mode: plan"));
    }

    #[test]
    fn large_files_are_cut_and_symlinks_out_of_the_root_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "top secret").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), dir.path().join("CLAUDE.md"))
            .unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "a".repeat(INSTRUCTIONS_MAX_BYTES + 10))
            .unwrap();
        let found = read_instructions(dir.path());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "AGENTS.md");
        assert!(found[0].text.contains("the rest was not included"));
        assert!(found[0].text.len() < INSTRUCTIONS_MAX_BYTES + 200);
    }

    #[test]
    fn no_files_no_section() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_instructions(dir.path()).is_empty());
        assert!(read_instructions(&dir.path().join("missing")).is_empty());
    }
}
