//! Progress reports while a call waits on a process (bash's command, spawn_process's readiness):
//! the seconds waited and the bytes of output so far, for clients that reset their timeout on
//! progress.

use std::time::{Duration, Instant};

use hands_core::Context;

use crate::supervisor::Proc;

/// How often a long call reports progress while it waits.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// While `proc` runs, report progress every [`PROGRESS_EVERY`] when somebody listens: the seconds
/// waited (always growing, so clients that reset their timeout on progress keep waiting) and the
/// bytes of output so far. Never returns; select it against the real wait.
pub(crate) async fn report_progress(ctx: &Context, proc: &Proc, doing: &str) {
    if !ctx.wants_progress() {
        return std::future::pending().await;
    }
    let started = Instant::now();
    let output = proc.subscribe();
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let waited = started.elapsed().as_secs_f64();
        let bytes = *output.borrow();
        ctx.progress(
            waited,
            None,
            Some(format!("{doing}: {waited:.1} s, {bytes} bytes of output")),
        );
    }
}
