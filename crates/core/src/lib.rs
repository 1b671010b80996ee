//! The tool runtime core of hands.
//!
//! A [`Tool`] is a small type with typed arguments; its [`ToolSpec`] (name, description, derived JSON
//! schema, annotations, [`Policy`]) is data. The [`Registry`] holds the tools of its
//! [`ToolSource`]s (a live list: tools come and go while sessions run), filters them by [`Mode`]
//! by each tool's policy, and runs every call through the middleware chain (see [`middleware`])
//! into the current [`Sandbox`].
//!
//! ```
//! use hands_core::{Registry, Session, ToolCall};
//! # async fn demo(registry: Registry) {
//! let session = Session::one_shot("/tmp/project");
//! let call = ToolCall::new("call-1", "read_file", serde_json::json!({"path": "README.md"}));
//! let output = registry.dispatch(&session, call).await;
//! # }
//! ```

mod annotations;
pub mod approval;
pub mod args;
pub mod ask;
mod call;
pub mod config;
mod context;
pub mod document;
pub mod env;
mod error;
mod future;
pub mod middleware;
mod notice;
mod output;
mod policy;
mod prepared;
pub mod preview;
pub mod process;
mod project;
pub mod redact;
mod registry;
mod sandbox;
mod schema;
pub mod secret;
mod services;
mod session;
mod snapshot;
mod source;
pub mod telemetry;
mod tool;
pub mod visible;

pub use annotations::Annotations;
pub use call::ToolCall;
pub use config::CoreConfig;
pub use context::{Context, Progress, ProgressSink};
pub use error::{ChainError, DispatchError, ToolError};
pub use future::BoxFuture;
pub use notice::{Notice, NoticeKind};
pub use output::{Content, ToolOutput};
pub use policy::{Family, Label, Modes, Policy};
pub use prepared::{CallPolicy, Prepared};
pub use preview::PreviewService;
pub use process::ProcessService;
pub use project::ProjectFacts;
pub use registry::{CallOptions, Offer, PreparedCall, Refresher, Registry, RegistryBuilder};
pub use sandbox::{LocalProvider, Sandbox, SandboxProvider};
pub use schema::{output_schema_for, schema_for};
pub use session::{ChangeWatcher, Mode, Session};
pub use snapshot::RegistryError;
pub use source::{Changes, Condition, Conditions, ConditionsReader, Refresh, ToolSource};
pub use tool::{DynTool, Tool, ToolSpec, erase};

/// Re-exported so that tool crates and front ends use the same token type.
pub use tokio_util::sync::CancellationToken;
