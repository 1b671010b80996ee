//! The preview tools: preview_open, preview_status, preview_close, read_runtime_errors and
//! preview_screenshot. Each is a small type over the shared [`Settings`]; the work is done by the
//! session's [`crate::Preview`].

mod preview_close;
mod preview_open;
mod preview_screenshot;
mod preview_status;
mod read_runtime_errors;
mod shared;

pub use preview_close::PreviewClose;
pub use preview_open::PreviewOpen;
pub use preview_screenshot::{PreviewScreenshot, ScreenshotArgs};
pub use preview_status::PreviewStatusTool;
pub use read_runtime_errors::{ReadRuntimeErrors, RuntimeErrorsArgs, RuntimeErrorsResult};
pub use shared::NoArgs;
pub(crate) use shared::Shared;
