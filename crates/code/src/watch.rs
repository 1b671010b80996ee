//! Diagnostics after every change: the session's [`ChangeWatcher`]. The written files of each
//! language go to its server (didOpen, then didChange), and the watcher waits, within
//! `[code] diagnostics_wait_ms`, for their diagnostics; the errors that are new since the last
//! report become one notice on the writing tool's result. What the servers say after the budget
//! (a server still starting) is queued on the session and rides on the next result.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hands_core::{BoxFuture, ChangeWatcher, Notice, NoticeKind, Session};

use crate::code::{Code, Settings};
use crate::language::Language;
use crate::report;

/// How long the work behind a write may go on after its budget, pushing what it finds later.
const LATE: Duration = Duration::from_secs(60);

/// How long, after the changed files' diagnostics, the other open files may take to come in.
const SETTLE: Duration = Duration::from_millis(500);

/// The session's code intelligence, created on first use with its change watcher.
pub fn code_of(session: &Session, settings: &Arc<Settings>) -> Arc<Code> {
    let (code, created) = Code::get_or_create(session, settings);
    if created {
        session.add_change_watcher(Arc::new(Watcher { code: Arc::clone(&code) }));
    }
    code
}

/// The watcher of one session.
pub struct Watcher {
    code: Arc<Code>,
}

impl ChangeWatcher for Watcher {
    fn changed(&self, session: &Session, paths: &[PathBuf]) -> BoxFuture<'static, Vec<Notice>> {
        let code = Arc::clone(&self.code);
        let covered: Vec<PathBuf> =
            paths.iter().filter(|p| Language::of(p).is_some()).cloned().collect();
        let session = session.clone();
        Box::pin(async move {
            if covered.is_empty() || !code.settings.code.enabled {
                return Vec::new();
            }
            let budget = Duration::from_millis(code.settings.code.diagnostics_wait_ms);
            let mut work = tokio::spawn(async move { check(&code, &covered).await });
            match tokio::time::timeout(budget, &mut work).await {
                Ok(Ok(notices)) => notices,
                Ok(Err(_)) => Vec::new(),
                Err(_) => {
                    let queue = session.clone();
                    tokio::spawn(async move {
                        if let Ok(Ok(notices)) = tokio::time::timeout(LATE, work).await {
                            for notice in notices {
                                queue.push_notice(notice);
                            }
                        }
                    });
                    vec![Notice::new(
                        NoticeKind::Diagnostics,
                        format!(
                            "diagnostics: the language server did not answer within {} ms; \
                             new errors will come with a later result (or call diagnostics)",
                            budget.as_millis()
                        ),
                    )]
                }
            }
        })
    }
}

/// Sync each changed file with its server and report the new errors, there and in the other
/// files the servers re-checked.
async fn check(code: &Code, paths: &[PathBuf]) -> Vec<Notice> {
    let mut by_language: BTreeMap<Language, Vec<PathBuf>> = BTreeMap::new();
    for path in paths {
        if let Some(language) = Language::of(path) {
            by_language.entry(language).or_default().push(path.clone());
        }
    }
    let deadline = tokio::time::Instant::now() + LATE;
    let mut notices = Vec::new();
    for (language, files) in by_language {
        let acquired = code.server(language).await;
        notices.extend(acquired.news.into_iter().map(|n| Notice::new(NoticeKind::Diagnostics, n)));
        let Ok(server) = acquired.server else { continue };
        let others: Vec<(PathBuf, u64)> = server
            .open_docs()
            .await
            .into_iter()
            .filter(|p| !files.contains(p))
            .map(|p| {
                let generation = server.diagnostics.generation(&p);
                (p, generation)
            })
            .collect();
        let mut waits = Vec::new();
        for path in &files {
            match tokio::fs::read_to_string(path).await {
                Ok(text) => {
                    if let Ok(Some(generation)) = server.sync(path, text).await {
                        waits.push((path.clone(), generation));
                    }
                }
                Err(_) => {
                    server.forget(path).await;
                    code.remember(path, Vec::new());
                }
            }
        }
        for (path, generation) in &waits {
            server.diagnostics.wait_settled(path, *generation, deadline, &server.proc).await;
        }
        // The other open files are re-checked right after (a caller of a changed function):
        // a short settle for them, cut short when all are in.
        if !waits.is_empty() {
            let settle = (tokio::time::Instant::now() + SETTLE).min(deadline);
            for (path, generation) in &others {
                server.diagnostics.wait_past(path, *generation, settle, &server.proc).await;
            }
        }
        let changed: HashSet<&PathBuf> = waits.iter().map(|(p, _)| p).collect();
        let mut lines = Vec::new();
        let (mut new_total, mut extra_total) = (0, 0);
        for (path, _) in server.diagnostics.all() {
            let (now, dropped) = code.problems(&server, &path, code.settings.code.warnings);
            let count = now.len();
            let before = code.remember(&path, now.clone());
            let before = match before {
                Some(before) => before,
                // A file first seen now: its errors count as news only if this call wrote it.
                None if changed.contains(&path) => Vec::new(),
                None => continue,
            };
            let new = report::new_since(&before, &now);
            let fixed = before.len().saturating_sub(count - new.len());
            let rel = report::relative(&code.root, &path);
            if !new.is_empty() {
                new_total += new.len();
                extra_total += if changed.contains(&path) { dropped } else { 0 };
                lines.extend(new);
            } else if fixed > 0 {
                let remain =
                    if count == 0 { "no errors now".to_owned() } else { format!("{count} remain") };
                notices.push(Notice::new(
                    NoticeKind::Diagnostics,
                    format!("{rel}: {fixed} error{} fixed, {remain}", plural(fixed)),
                ));
            }
        }
        if !lines.is_empty() {
            let head = format!(
                "{} new {} from the {} language server:",
                new_total + extra_total,
                if new_total + extra_total == 1 { "error" } else { "errors" },
                language.title()
            );
            let body = report::lines(&lines, extra_total);
            notices.push(Notice::new(NoticeKind::Diagnostics, format!("{head}\n{body}")));
        }
    }
    notices
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
