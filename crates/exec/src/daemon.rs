//! Starting (or reusing) a daemon and waiting until it is ready: by `ready_pattern`, by a URL it
//! prints, or by a port it listens on; shared by spawn_process and bash's dev-server short-circuit.

use hands_core::{Context, ToolError, ToolOutput};

use crate::ExecConfig;

/// Start `command` as a daemon, or reuse the session's running daemon with the same command; wait
/// until it is ready and answer with its id, pid, URL/port and first output.
pub async fn start_or_reuse(
    ctx: &Context,
    config: &ExecConfig,
    command: &str,
) -> Result<ToolOutput, ToolError> {
    let _ = (ctx, config, command);
    Err(ToolError::model("daemons are not implemented yet"))
}
