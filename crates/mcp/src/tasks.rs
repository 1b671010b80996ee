//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for calls that may outlast a
//! client's request timeout ([`hands_core::CallPolicy::outlasts`]: a daemon waiting to be ready,
//! a preview build, a clone, a sub-agent, a long bash). For a client that declares the extension
//! such a call answers at once with a task; the call runs on in rmcp's [`TaskManager`], which
//! answers `tasks/get`. A question the call asks the user (an approval, ask_user) becomes the
//! task's `input_required` state and its answer comes with `tasks/update`; `tasks/cancel` cancels
//! the call itself (its processes are stopped), and the task ends `cancelled`. On a node of
//! several, the id a client gets starts with the node's id ([`crate::node`]): any node sends
//! `tasks/*` for it here.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hands_core::{CallOptions, CancellationToken, DispatchError, PreparedCall, Registry, Session};
use rmcp::ErrorData;
use rmcp::model::{CreateTaskResult, ElicitRequest, InputRequest};
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};

use crate::rounds::{Running, Step};

/// How often a client should poll `tasks/get`.
const POLL_INTERVAL_MS: u64 = 500;

/// Run `prepared` in `session` as a task of `tasks`; the answer to the `tools/call`.
pub(crate) fn start(
    tasks: &TaskManager,
    registry: Arc<Registry>,
    session: Session,
    prepared: PreparedCall,
    trace: Option<hands_core::telemetry::TraceParent>,
) -> CreateTaskResult {
    let options =
        TaskOptions::new().with_poll_interval_ms(POLL_INTERVAL_MS).with_status_message("running");
    let task = tasks.spawn(options, move |ctx| {
        Box::pin(async move {
            let cancel = CancellationToken::new();
            let options = CallOptions { progress: None, cancel: Some(cancel.clone()) };
            let mut running = Running::start(
                hands_core::telemetry::with_remote_parent(trace, async move {
                    registry.run(&session, prepared, options).await
                }),
                cancel,
            );
            // tasks/cancel stops the call, not only the waiting.
            let stop = CancellationToken::new();
            let watcher = {
                let (ctx, stop) = (ctx.clone(), stop.clone());
                tokio::spawn(async move {
                    ctx.cancelled().await;
                    stop.cancel();
                })
            };
            let result = loop {
                match running.drive(&stop).await {
                    Step::Done(result) => break result,
                    Step::Asks(next, ask) => {
                        static NEXT: AtomicU64 = AtomicU64::new(1);
                        let key = format!("hands-{}", NEXT.fetch_add(1, Ordering::Relaxed));
                        let request = InputRequest::Elicitation(ElicitRequest::new(ask.params()));
                        // A cancel while it waits drops the question: the call is told no.
                        if let Ok(answer) = ctx.request_input(key, request).await {
                            ask.answer(answer);
                        }
                        running = next;
                    }
                }
            };
            watcher.abort();
            if stop.is_cancelled() {
                return Err(TaskExit::Cancelled);
            }
            match result {
                Ok(output) => Ok(crate::output::to_call_tool_result(output.notices_as_text())),
                Err(DispatchError::Fatal(message)) => {
                    Err(TaskExit::Error(ErrorData::internal_error(message, None)))
                }
            }
        })
    });
    CreateTaskResult::new(task)
}
