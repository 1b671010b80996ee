//! Code intelligence for hands: the language servers of a session, the new type errors after
//! every write on the writing tool's own result, and read-only navigation.
//!
//! [`register`] offers two tools — `diagnostics` (the current errors of a file, a folder or the
//! project) and `code_navigation` (definition, references, hover, document and workspace
//! symbols) — and a middleware that, before the first mutating call of a session, sets up the
//! session's [`Code`]: it registers itself as the session's change watcher
//! ([`hands_core::ChangeWatcher`]), so that the file tools, which know nothing of this crate,
//! hand it the paths they wrote and put what it says on their result. Servers start when a file
//! of their language is first touched: `typescript-language-server` (TypeScript, JavaScript),
//! `pyright-langserver` or `basedpyright-langserver` (Python), `rust-analyzer` and `gopls` —
//! from `[code.servers]`, the project's `node_modules/.bin`, or PATH. They are processes of the
//! session's supervisor (hands-exec), bounded by `ulimit -v` (`[code] memory_mb`), and stopped
//! with the session.
//!
//! ```no_run
//! use hands_core::{CoreConfig, Registry, Session, ToolCall};
//! # async fn demo() {
//! let builder = hands_fs::register(Registry::builder(CoreConfig::default()), &Default::default());
//! let registry = hands_code::register(builder, &Default::default(), &Default::default()).build();
//! let session = Session::new("s1", "/path/to/app");
//! let call = ToolCall::new("c1", "diagnostics", serde_json::json!({"path": "src"}));
//! let errors = registry.dispatch(&session, call).await;
//! session.close().await; // stops the servers
//! # }
//! ```

mod code;
mod config;
mod language;
mod query;
mod report;
mod rpc;
mod server;
mod tools;
mod uri;
mod watch;

use std::sync::Arc;

use hands_core::middleware::{Middleware, Next, Place, Request};
use hands_core::{ChainError, RegistryBuilder, ToolOutput};
use hands_exec::ExecConfig;

pub use code::{Code, Settings};
pub use config::CodeConfig;
pub use language::Language;
pub use query::Hit;
pub use report::{MAX_SHOWN, Problem};
pub use tools::diagnostics::{
    Diagnostics, DiagnosticsArgs, DiagnosticsResult, ServerFound, ServerState,
};
pub use tools::navigate::{Action, CodeNavigation, NavigateArgs, NavigateResult};

/// The names of the code tools.
pub const TOOLS: &[&str] = &["diagnostics", "code_navigation"];

/// Register the code tools and the middleware that watches a session's writes.
pub fn register(
    builder: RegistryBuilder,
    config: &CodeConfig,
    exec: &ExecConfig,
) -> RegistryBuilder {
    let settings = Arc::new(Settings { code: config.clone(), exec: exec.clone() });
    // Offered in a project of a language a server covers (a package or web app, Python, Rust,
    // Go), not in every plain folder's requests.
    let covered =
        |c: &hands_core::Conditions| c.project(|p| p.node || p.web || p.python || p.rust || p.go);
    let builder = builder
        .tool_if(covered, Diagnostics::new(Arc::clone(&settings)))
        .tool_if(covered, CodeNavigation::new(Arc::clone(&settings)));
    if !config.enabled {
        return builder;
    }
    builder.layer(Place::Outermost, Install { settings })
}

/// Sets up a session's [`Code`] (and so its change watcher) before its first mutating call.
struct Install {
    settings: Arc<Settings>,
}

impl Middleware for Install {
    async fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> Result<ToolOutput, ChainError> {
        watch::code_of(req.ctx.session(), &self.settings);
        next.run(req).await
    }

    /// Not for a one-shot `hands call`: its server would start cold for each call and the
    /// write would wait out the budget for nothing.
    fn applies(&self, req: &Request<'_>) -> bool {
        let session = req.ctx.session();
        req.policy().mutates && !session.is_one_shot() && Code::existing(session).is_none()
    }
}
