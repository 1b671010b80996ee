//! After a package was added: is a dev server of the session running, and does it pick the
//! package up by itself? Found through the process service the exec crate installs (the session's
//! processes, listed without calling a tool): a running daemon whose command is a dev server, or
//! the preview's server.
//!
//! Vite (and what is built on it: Astro, Nuxt, SvelteKit, Remix, React Router) re-optimises its
//! dependencies when the code first imports a new package and reloads the page, and Next.js
//! resolves packages as pages compile: both pick the package up. Any other server keeps what it
//! loaded at start and needs a restart, which the result offers (naming the process tools).

use std::time::Duration;

use hands_core::Session;
use hands_core::process::{ProcessKind, ProcessService, ProcessStatus};
use hands_fs::{RelPath, Workspace};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::manager::{Ecosystem, read};

/// A running dev server, and what the added packages mean for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DevServer {
    /// Its process id (for process_output and stop_process).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its command line.
    pub command: String,
    /// True when it picks the new packages up by itself (Vite, Next.js).
    pub picks_up: bool,
    /// True when it must be restarted to load them.
    pub needs_restart: bool,
    /// What it does or what to do, in words.
    pub note: String,
}

/// Words of a command (or of the package script it runs) that mean a Vite-based server.
const VITE: &[&str] = &["vite", "astro", "nuxt", "nuxi", "svelte-kit", "remix", "react-router"];

/// Vite's lines when it re-optimised.
const REOPTIMISED: &[&str] = &["new dependencies optimized", "optimized dependencies changed"];

/// The dev servers running in `session`, judged for packages of `ecosystem` added to the project
/// in `dir`.
pub(crate) async fn check(
    service: &dyn ProcessService,
    session: &Session,
    ws: &Workspace,
    dir: &RelPath,
    ecosystem: Ecosystem,
) -> Vec<DevServer> {
    let list = service.list(session).await;
    let servers: Vec<_> = list
        .processes
        .into_iter()
        .filter(|p| p.status == ProcessStatus::Running && p.kind == ProcessKind::Daemon)
        .filter(|p| {
            p.name.starts_with("preview server") || hands_exec::devserver::is_dev_server(&p.command)
        })
        .collect();
    if servers.is_empty() {
        return Vec::new();
    }
    // A moment for a watching server to notice the new files.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let tools = service.tools();
    let mut out = Vec::new();
    for row in servers {
        let runs = script_text(ws, dir, &row.command).unwrap_or_else(|| row.command.clone());
        let lower = runs.to_ascii_lowercase();
        let vite =
            VITE.iter().any(|w| words(&lower).any(|x| x == *w || x.ends_with(&format!("/{w}"))));
        let next = words(&lower).any(|x| x == "next" || x.ends_with("/next"));
        let picks_up = ecosystem == Ecosystem::Js && (vite || next);
        let tail =
            service.output(session, &row.id, 40).await.unwrap_or_default().to_ascii_lowercase();
        let note = if picks_up && vite {
            let done = REOPTIMISED.iter().any(|m| tail.contains(m));
            format!(
                "Vite picks the new packages up: it re-optimises its dependencies when the code \
                 first imports them and reloads the page{}; no restart needed.",
                if done { " (it has re-optimised already)" } else { "" }
            )
        } else if picks_up {
            "Next.js resolves new packages as it compiles the pages that import them; no \
             restart needed."
                .to_owned()
        } else if row.name.starts_with("preview server") {
            "The preview's server does not load new packages by itself: offer the user to \
             restart the preview (close and open it again)."
                .to_owned()
        } else {
            format!(
                "This server does not load new packages by itself: offer the user to restart it \
                 ({} id={}, then start `{}` again with the same tool that started it).",
                tools.stop, row.id, row.command
            )
        };
        out.push(DevServer {
            id: row.id,
            name: row.name,
            command: row.command,
            picks_up,
            needs_restart: !picks_up,
            note,
        });
    }
    out
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || c == '&' || c == ';' || c == '|')
        .filter(|w| !w.is_empty())
}

/// The text of the package.json script a `npm run dev`-like command runs, if it runs one.
fn script_text(ws: &Workspace, dir: &RelPath, command: &str) -> Option<String> {
    let mut parts = command.split_whitespace();
    let manager = parts.next()?;
    if !["npm", "pnpm", "yarn", "bun"].contains(&manager) {
        return None;
    }
    let mut script = parts.next()?;
    if script == "run" || script == "run-script" {
        script = parts.next()?;
    }
    let json: serde_json::Value =
        serde_json::from_str(&read(ws, &dir.join("package.json"))?).ok()?;
    json.get("scripts")?.get(script)?.as_str().map(str::to_owned)
}
