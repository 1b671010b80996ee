//! The preview of hands: build and serve the web app, load it in headless Chromium, and tell the
//! agent what it throws.
//!
//! [`register`] offers nine tools while the project has a preview (configured under `[preview]`, or
//! detected: Vite, Bun with `compile.ts`, a static `index.html`; a project that gains one
//! mid-session gets them on the next call): `preview_open`,
//! `preview_status`, `preview_close`, `read_runtime_errors`, `preview_screenshot`, and the tools
//! that use the app like a person: `preview_snapshot` (the page as an outline with refs, within a
//! budget, deltas after the first), `preview_act` (click, type, fill … with what each caused),
//! `preview_network` and `preview_console`. The page reaches only its own origin directly; other
//! requests go through a loopback proxy that applies the egress guard's rule. The server
//! and the browser are supervised processes of the session (hands-exec's `Supervisor`: their own
//! process groups, markers, stopped with the session); the browser is driven over the Chrome
//! DevTools Protocol by a small client of our own ([`cdp`]), whose events feed the session's
//! [`Collector`]. When the agent already runs the project's dev server (spawn_process, bash's
//! dev-server start), the preview attaches to that process instead of starting a second server,
//! leaves it running at close, and follows the dev server — the agent's or its own — when it
//! restarts, reloading the page without another preview_open. New errors are announced on other tools' results through a session notice
//! source. Front ends read a session's preview (its state, a screenshot, the errors, without
//! moving the model's read cursor) through the [`PreviewReader`] that [`register`] installs as
//! the registry's `PreviewService`.
//!
//! ```no_run
//! use hands_core::{CoreConfig, Registry, Session, ToolCall};
//! # async fn demo() {
//! let root = std::path::Path::new("/path/to/app");
//! let builder = Registry::builder(CoreConfig::default());
//! let registry =
//!     hands_preview::register(builder, &Default::default(), &Default::default(), root).build();
//! let session = Session::new("s1", root);
//! let open = ToolCall::new("c1", "preview_open", serde_json::json!({}));
//! let status = registry.dispatch(&session, open).await;
//! session.close().await; // stops the browser and the server
//! # }
//! ```

mod act;
mod actions;
mod approval;
mod attach;
mod baseline;
pub mod cdp;
pub mod collector;
mod config;
mod confine;
mod console;
pub mod detect;
mod devtools;
pub mod discovery;
mod egress;
mod events;
mod follow;
mod input;
mod launch;
mod lifecycle;
mod network;
mod outline;
mod preview;
mod service;
mod snapshot;
pub mod source;
pub mod sourcemap;
mod static_server;
mod steps;
mod tools;
mod watch;

use std::path::Path;
use std::sync::Arc;

use hands_core::{PreviewService, RegistryBuilder};
use hands_exec::ExecConfig;

pub use approval::approval_detail;
pub use collector::{Collector, Entry, ErrorKind, RuntimeError};
pub use config::{BRICKS_DISCOVERY_FILE, Compat, DEFAULT_DISCOVERY_FILE, PreviewConfig};
pub use confine::{Confinement, find_browser};
pub use launch::{
    Browser, BrowserOptions, CHROMIUM_FLAGS, Launch, LaunchError, start_browser, start_browser_with,
};
pub use lifecycle::Opened;
pub use preview::{CloseReport, Preview, PreviewStatus, Settings, Stage};
pub use service::{PreviewReader, Screenshot};
pub use static_server::StaticServer;
pub use tools::{
    ActArgs, ConsoleArgs, EvaluateArgs, NetworkArgs, PreviewAct, PreviewClose, PreviewConsole,
    PreviewEvaluate, PreviewNetwork, PreviewOpen, PreviewScreenshot, PreviewSnapshot,
    PreviewStatusTool, ReadRuntimeErrors, RuntimeErrorsArgs, RuntimeErrorsResult, ScreenshotArgs,
    SnapshotArgs,
};

/// The names of the preview tools.
pub const TOOLS: &[&str] = &[
    "preview_open",
    "preview_status",
    "preview_close",
    "read_runtime_errors",
    "preview_screenshot",
    "preview_snapshot",
    "preview_act",
    "preview_network",
    "preview_console",
    "preview_evaluate",
];

/// Register the preview tools as a live source: offered while the project at `root` has a
/// preview (configured or detected), looked for again after every mutating call and, at most once
/// a second, when the tools are listed (see [`source::PreviewSource`]); and the
/// [`PreviewService`] front ends read a session's preview through ([`PreviewReader`]).
///
/// The page may reach what the default `[net]` rule allows; [`register_with_net`] applies the
/// user's.
pub fn register(
    builder: RegistryBuilder,
    config: &PreviewConfig,
    exec: &ExecConfig,
    root: &Path,
) -> RegistryBuilder {
    register_with_net(builder, config, exec, &hands_net::NetConfig::default(), root)
}

/// [`register`], with the user's `[net]` settings as the rule of the page's requests outside its
/// origin (`allow_hosts` lets the page reach a named local service, as it lets web_fetch).
pub fn register_with_net(
    builder: RegistryBuilder,
    config: &PreviewConfig,
    exec: &ExecConfig,
    net: &hands_net::NetConfig,
    root: &Path,
) -> RegistryBuilder {
    builder.source(Arc::new(source::PreviewSource::new(root, config, exec, net))).service::<Arc<
        dyn PreviewService,
    >>(
        PreviewReader::service(config),
    )
}
