//! Rebuild and reload on file changes, for build-based and static previews.
//!
//! Flow: every `watch_interval_ms` the watched files are fingerprinted (path, size, modification
//! time) by a walk that honours `.gitignore` and never enters `node_modules`, `.git`, `dist`,
//! `.hands` or the build's output folder; on a change, the watcher waits until the files have been
//! quiet for `watch_debounce_ms` (an editor's save, a `git checkout`, are one change), then calls
//! the preview's rebuild. Polling rather than inotify: a recursive inotify watch of a web project
//! would also register every folder under `node_modules` (thousands, against a per-user limit),
//! and polling works the same on bind mounts and in sandboxes; a walk of a source tree takes
//! milliseconds.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use globset::{Glob, GlobSet, GlobSetBuilder};
use tokio_util::sync::CancellationToken;

use crate::PreviewConfig;
use crate::detect::Plan;
use crate::preview::WeakPreview;

/// Folders never watched.
const SKIPPED: &[&str] = &["node_modules", ".git", "dist", ".hands", ".bricks"];
/// Files fingerprinted at most (a runaway tree is not walked forever).
const MAX_FILES: usize = 100_000;

/// What is watched.
#[derive(Debug, Clone)]
pub struct Watched {
    root: PathBuf,
    globs: Option<GlobSet>,
    output: Option<PathBuf>,
}

impl Watched {
    /// The files of `root` that `config.watch` selects (all when empty), minus `plan`'s output.
    pub fn new(root: &Path, config: &PreviewConfig, plan: &Plan) -> Self {
        let globs = (!config.watch.is_empty()).then(|| {
            let mut builder = GlobSetBuilder::new();
            for pattern in &config.watch {
                match Glob::new(pattern) {
                    Ok(glob) => {
                        builder.add(glob);
                    }
                    Err(err) => tracing::warn!(%err, pattern, "ignored preview.watch glob"),
                }
            }
            builder.build().unwrap_or_else(|_| GlobSet::empty())
        });
        let output = plan.output_dir().filter(|d| d.as_os_str() != ".").map(Path::to_path_buf);
        Self { root: root.to_path_buf(), globs, output }
    }

    /// A hash of every watched file's path, size and modification time.
    pub fn fingerprint(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        let output = self.output.as_ref().map(|o| self.root.join(o));
        let walk = ignore::WalkBuilder::new(&self.root)
            .hidden(true)
            .require_git(false)
            .filter_entry(move |entry| {
                let name = entry.file_name().to_string_lossy();
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                !(is_dir
                    && (SKIPPED.contains(&name.as_ref())
                        || output.as_deref().is_some_and(|o| entry.path() == o)))
            })
            .build();
        let mut files: Vec<(PathBuf, u64, u128)> = Vec::new();
        for entry in walk.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&self.root) else { continue };
            if let Some(globs) = &self.globs
                && !globs.is_match(rel)
            {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            files.push((rel.to_path_buf(), meta.len(), modified));
            if files.len() >= MAX_FILES {
                break;
            }
        }
        files.sort();
        files.hash(&mut hasher);
        hasher.finish()
    }
}

/// Start watching `watched` for `preview` until `stop` fires; `baseline` is the fingerprint taken
/// before the build that the preview shows (so that a change made during the build is seen).
pub fn spawn(
    preview: WeakPreview,
    watched: Watched,
    baseline: u64,
    config: &PreviewConfig,
    stop: CancellationToken,
) {
    let interval = Duration::from_millis(config.watch_interval_ms.max(50));
    let debounce = Duration::from_millis(config.watch_debounce_ms);
    tokio::spawn(async move {
        let mut last = baseline;
        loop {
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = stop.cancelled() => return,
            }
            let Some(mut now) = fingerprint(&watched).await else { return };
            if now == last {
                continue;
            }
            // Quiet for `debounce` before rebuilding.
            loop {
                tokio::select! {
                    () = tokio::time::sleep(debounce) => {}
                    () = stop.cancelled() => return,
                }
                let Some(settled) = fingerprint(&watched).await else { return };
                if settled == now {
                    break;
                }
                now = settled;
            }
            last = now;
            let Some(preview) = preview.upgrade() else { return };
            tracing::debug!("preview: files changed, rebuilding");
            preview.rebuild(&stop).await;
        }
    });
}

/// The fingerprint of `watched`, computed on the blocking pool.
pub async fn fingerprint(watched: &Watched) -> Option<u64> {
    let watched = watched.clone();
    tokio::task::spawn_blocking(move || watched.fingerprint()).await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::{ProjectKind, Server};

    fn plan() -> Plan {
        Plan {
            kind: ProjectKind::Configured,
            typecheck: None,
            build: Some("make".into()),
            server: Server::Static("out".into()),
            port: 0,
            url: String::new(),
            needs: Vec::new(),
        }
    }

    #[test]
    fn sources_change_the_fingerprint_but_outputs_and_dependencies_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["src", "out", "node_modules/x", ".hands"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("src/a.ts"), "1").unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        let watched = Watched::new(root, &PreviewConfig::default(), &plan());
        let first = watched.fingerprint();
        std::fs::write(root.join("out/bundle.js"), "built").unwrap();
        std::fs::write(root.join("node_modules/x/i.js"), "dep").unwrap();
        std::fs::write(root.join(".hands/devtools.json"), "{}").unwrap();
        std::fs::write(root.join("debug.log"), "ignored").unwrap();
        assert_eq!(watched.fingerprint(), first, "outputs, deps, .hands and ignored files");
        std::fs::write(root.join("src/a.ts"), "22").unwrap();
        assert_ne!(watched.fingerprint(), first);
        let only_css = PreviewConfig { watch: vec!["**/*.css".into()], ..PreviewConfig::default() };
        let watched = Watched::new(root, &only_css, &plan());
        let before = watched.fingerprint();
        std::fs::write(root.join("src/a.ts"), "333").unwrap();
        assert_eq!(watched.fingerprint(), before, "not matched by preview.watch");
        std::fs::write(root.join("src/a.css"), "b {}").unwrap();
        assert_ne!(watched.fingerprint(), before);
    }
}
