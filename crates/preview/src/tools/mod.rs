//! The preview tools: preview_open, preview_status, preview_close, read_runtime_errors,
//! preview_screenshot, and the ones that use the app: preview_snapshot, preview_act,
//! preview_network and preview_console. Each is a small type over the shared [`Settings`]; the work is done by the
//! session's [`crate::Preview`].

mod preview_act;
mod preview_close;
mod preview_console;
mod preview_evaluate;
mod preview_network;
mod preview_open;
mod preview_screenshot;
mod preview_snapshot;
mod preview_status;
mod read_runtime_errors;
mod shared;

pub use preview_act::{ActArgs, PreviewAct};
pub use preview_close::PreviewClose;
pub use preview_console::{ConsoleArgs, PreviewConsole};
pub use preview_evaluate::{EvaluateArgs, PreviewEvaluate};
pub use preview_network::{NetworkArgs, PreviewNetwork};
pub use preview_open::PreviewOpen;
pub use preview_screenshot::{PreviewScreenshot, ScreenshotArgs};
pub use preview_snapshot::{PreviewSnapshot, SnapshotArgs};
pub use preview_status::PreviewStatusTool;
pub use read_runtime_errors::{ReadRuntimeErrors, RuntimeErrorsArgs, RuntimeErrorsResult};
pub use shared::NoArgs;
pub(crate) use shared::Shared;
