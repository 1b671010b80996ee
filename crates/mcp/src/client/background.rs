//! A small tokio runtime owned by the MCP client side. rmcp spawns its service loops and child
//! watchers on the runtime that connects; the binary's commands each make (and drop) their own
//! short runtimes, so connections live here instead and callers await them from any runtime.

use std::future::Future;
use std::sync::Arc;

use tokio::runtime::{Handle, Runtime};

/// The runtime; shut down in the background when the last handle goes.
pub(crate) struct Background {
    runtime: Option<Runtime>,
    handle: Handle,
}

impl Background {
    /// A two-thread runtime named `hands-mcp`.
    pub(crate) fn start() -> std::io::Result<Arc<Self>> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hands-mcp")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Arc::new(Self { runtime: Some(runtime), handle }))
    }

    /// Run `work` here and await it from wherever the caller is. Dropping the returned future
    /// aborts `work` (so that rmcp sends `notifications/cancelled` for a request in flight).
    pub(crate) async fn run<F>(&self, work: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        AbortOnDrop(self.handle.spawn(work)).await
    }

    /// Run `work` here in the background (watchers that live as long as the runtime).
    pub(crate) fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.handle.spawn(work);
    }

    /// Run `work` here and block this thread until it is done (usable inside or outside another
    /// runtime: it never calls `block_on`).
    pub(crate) fn block<F>(&self, work: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            let _ = tx.send(work.await);
        });
        rx.recv().ok()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Future for AbortOnDrop<T> {
    type Output = Option<T>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx).map(Result::ok)
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
