//! The secrets and bundle checks' walk: every file the project does not ignore (sources) and
//! every file of its build output (ignored or not, since that is what the browser downloads),
//! scanned in parallel (the `ignore` crate's walker, one thread per core) with hands-secrets'
//! engine: the project's stored values in all their forms, and the key-shape rules. A
//! Supabase `service_role` JWT is found by decoding its payload. Only names and places are
//! kept, never a value.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use hands_core::CancellationToken;
use hands_secrets::Engine;

use crate::finding::{Check, Finding, Severity};
use crate::jwt;

/// Build output folders, relative to a project (or an app) folder.
pub const BUILD_DIRS: &[&str] = &[
    "dist",
    "build",
    "out",
    ".next/static",
    ".output/public",
    ".svelte-kit/output/client",
    ".vercel/output/static",
    "storybook-static",
];

/// Folders never walked: dependencies and version control.
const SKIP: &[&str] = &["node_modules", ".git", ".hands", "target", ".venv", "venv", "__pycache__"];

/// Files larger than this are not scanned (bundles are far smaller).
const MAX_FILE: u64 = 32 * 1024 * 1024;
/// Findings kept per file: a file full of keys is one problem, shown by its first few.
const PER_FILE: usize = 20;

/// What a walk saw.
#[derive(Debug, Default)]
pub struct Walked {
    /// Files scanned.
    pub files: u64,
    /// Bytes scanned.
    pub bytes: u64,
    /// Files left out (binary or too large).
    pub skipped: u64,
    /// What was found.
    pub findings: Vec<Finding>,
}

/// Where a file is: in the sources, or in the build output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A source file (or any non-ignored file).
    Source,
    /// A file the build wrote for the browser.
    Build,
}

/// The build output folders that exist under `root` (relative paths).
pub fn build_dirs(root: &Path) -> Vec<String> {
    BUILD_DIRS.iter().filter(|d| root.join(d).is_dir()).map(|d| (*d).to_owned()).collect()
}

/// Scan `dirs` (relative to `root`) in `place`: sources honour the ignore files and leave the
/// build folders out; build folders are walked whole.
pub fn walk(
    root: &Path,
    place: Place,
    dirs: &[String],
    engine: &Engine,
    service_role: Option<&str>,
    cancel: &CancellationToken,
) -> Walked {
    let paths: Vec<PathBuf> = match place {
        Place::Source => vec![root.to_path_buf()],
        Place::Build => dirs.iter().map(|d| root.join(d)).collect(),
    };
    let Some((first, rest)) = paths.split_first() else { return Walked::default() };
    let mut builder = ignore::WalkBuilder::new(first);
    for path in rest {
        builder.add(path);
    }
    let sources = place == Place::Source;
    let build: Vec<PathBuf> = BUILD_DIRS.iter().map(|d| root.join(d)).collect();
    builder
        .hidden(false)
        .git_ignore(sources)
        .git_global(sources)
        .git_exclude(sources)
        .ignore(sources)
        .parents(sources)
        .require_git(false)
        .threads(std::thread::available_parallelism().map_or(2, |n| n.get()).min(8))
        .filter_entry(move |entry| {
            let name = entry.file_name().to_string_lossy();
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !(is_dir
                && (SKIP.contains(&name.as_ref())
                    || (sources && build.iter().any(|b| b == entry.path()))))
        });
    let files = AtomicU64::new(0);
    let bytes = AtomicU64::new(0);
    let skipped = AtomicU64::new(0);
    let findings = Mutex::new(Vec::new());
    builder.build_parallel().run(|| {
        Box::new(|entry| {
            if cancel.is_cancelled() {
                return ignore::WalkState::Quit;
            }
            let Ok(entry) = entry else { return ignore::WalkState::Continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            let path = entry.path();
            let size = entry.metadata().map_or(0, |m| m.len());
            if size > MAX_FILE {
                skipped.fetch_add(1, Ordering::Relaxed);
                return ignore::WalkState::Continue;
            }
            let Ok(content) = std::fs::read(path) else { return ignore::WalkState::Continue };
            if content[..content.len().min(8192)].contains(&0) {
                skipped.fetch_add(1, Ordering::Relaxed);
                return ignore::WalkState::Continue;
            }
            files.fetch_add(1, Ordering::Relaxed);
            bytes.fetch_add(content.len() as u64, Ordering::Relaxed);
            let rel = path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned();
            let found = scan(&content, &rel, place, engine, service_role);
            if !found.is_empty()
                && let Ok(mut all) = findings.lock()
            {
                all.extend(found);
            }
            ignore::WalkState::Continue
        })
    });
    Walked {
        files: files.into_inner(),
        bytes: bytes.into_inner(),
        skipped: skipped.into_inner(),
        findings: findings.into_inner().unwrap_or_default(),
    }
}

/// The findings in one file's `content` (at `rel`).
pub fn scan(
    content: &[u8],
    rel: &str,
    place: Place,
    engine: &Engine,
    service_role: Option<&str>,
) -> Vec<Finding> {
    let mut lines = LineCounter::default();
    let mut out = Vec::new();
    let (severity, check) = match place {
        Place::Source => (Severity::High, Check::Secrets),
        Place::Build => (Severity::Critical, Check::Bundle),
    };
    for hit in engine.find_all(content) {
        if out.len() >= PER_FILE {
            break;
        }
        let line = lines.line_at(content, hit.start);
        let location = format!("{rel}:{line}");
        let is_service_role = service_role == Some(hit.name.as_str());
        let (rule, message) = match (hit.stored, place) {
            (true, Place::Build) => (
                if is_service_role { "service_role_key" } else { "stored_secret" },
                format!(
                    "the value of the stored secret {} is in the build output, which every \
                     visitor downloads: rotate it now, and read it on a server only",
                    hit.name
                ),
            ),
            (true, Place::Source) => (
                if is_service_role { "service_role_key" } else { "stored_secret" },
                format!(
                    "the value of the stored secret {} is written in this file: anyone with the \
                     repository has it. Read it from the environment instead (and rotate it if \
                     this file was ever shared)",
                    hit.name
                ),
            ),
            (false, Place::Build) => (
                hit.name.as_str(),
                format!(
                    "a {} is in the build output, which every visitor downloads: rotate it, and \
                     keep it on a server",
                    rule_label(&hit.name)
                ),
            ),
            (false, Place::Source) => (
                hit.name.as_str(),
                format!(
                    "a {} is written in this file: move it to an environment variable or the \
                     secret store, and rotate it if this file was ever shared",
                    rule_label(&hit.name)
                ),
            ),
        };
        out.push(Finding { severity, check, rule: rule.to_owned(), location, message });
    }
    for start in jwt::service_role_tokens(content) {
        if out.len() >= PER_FILE {
            break;
        }
        let location = format!("{rel}:{}", lines.line_at(content, start));
        if out.iter().any(|f| f.location == location && f.rule == "service_role_key") {
            continue;
        }
        out.push(Finding {
            severity,
            check,
            rule: "service_role_key".into(),
            location,
            message: format!(
                "a Supabase service_role key (it bypasses row-level security) is {}: use the \
                 anon key in client code and keep the service_role key on a server",
                match place {
                    Place::Build => "in the build output, which every visitor downloads",
                    Place::Source => "written in this file",
                }
            ),
        });
    }
    out
}

/// A rule's name in words.
pub fn rule_label(rule: &str) -> &str {
    match rule {
        "stripe_key" => "Stripe secret key",
        "anthropic_key" => "Anthropic API key",
        "openai_key" => "OpenAI API key",
        "github_token" => "GitHub token",
        "aws_access_key" => "AWS access key",
        "private_key" => "PEM private key",
        other => other,
    }
}

/// Line numbers of ascending offsets, counted once.
#[derive(Default)]
struct LineCounter {
    at: usize,
    line: usize,
}

impl LineCounter {
    fn line_at(&mut self, content: &[u8], offset: usize) -> usize {
        if offset < self.at {
            self.at = 0;
            self.line = 0;
        }
        self.line += memchr::memchr_iter(b'\n', &content[self.at..offset]).count();
        self.at = offset;
        self.line + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_by_line_without_their_value() {
        let engine = Engine::new([("DB_PASS", "CANARY-stored-value-123")]).unwrap();
        let key = format!("sk_live_{}", "a1B2".repeat(6));
        let text = format!("one\ntwo {key}\nthree CANARY-stored-value-123\n");
        let found = scan(text.as_bytes(), "src/a.js", Place::Source, &engine, None);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            (found[0].rule.as_str(), found[0].location.as_str()),
            ("stripe_key", "src/a.js:2")
        );
        assert_eq!(
            (found[1].rule.as_str(), found[1].location.as_str()),
            ("stored_secret", "src/a.js:3")
        );
        assert!(found.iter().all(|f| f.severity == Severity::High));
        let shown = format!("{found:?}");
        assert!(!shown.contains(&key) && !shown.contains("CANARY-stored"), "{shown}");
        let built = scan(text.as_bytes(), "dist/a.js", Place::Build, &engine, None);
        assert!(built.iter().all(|f| f.severity == Severity::Critical && f.check == Check::Bundle));
    }
}
