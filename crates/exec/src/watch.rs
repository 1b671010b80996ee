//! The two watchers of a supervised process: the drain thread that reads its output pipe into the
//! head+tail buffer (and log) as fast as it is written, and the exit watcher that observes the main
//! process's exit through a pidfd without a thread; plus the orphan reaper woken by SIGCHLD and
//! the script file that carries a command too long for one exec argument.

use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use hands_core::CancellationToken;
use hands_core::redact::Scrubber;
use rustix::process::{Pid, WaitId, WaitIdOptions, WaitIdStatus};

use crate::procfs::{self, Target};
use crate::reap;
use crate::shared::{Exit, Shared, remove_record};

/// A long command written to a temp file, removed when the drain ends.
#[derive(Debug)]
pub(crate) struct Script(pub(crate) PathBuf);

impl Script {
    pub(crate) fn write(command: &str) -> std::io::Result<Self> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!("hands-cmd-{}-{n}.sh", procfs::own_pid()));
        let mut file =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        file.write_all(command.as_bytes())?;
        Ok(Self(path))
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Read the pipe until every writer is gone, on a thread of its own so that a fast writer never
/// waits for the async runtime. Output passes through a redaction [`Scrubber`] before it reaches
/// the buffer or the log: a secret split across two writes is caught (the bytes that could start
/// one are held back until the next read), and what is held is flushed when the pipe closes.
pub(crate) fn spawn_drain(
    shared: Arc<Shared>,
    pipe: OwnedFd,
    script: Option<Script>,
) -> std::io::Result<()> {
    std::thread::Builder::new().name("hands-drain".into()).spawn(move || {
        let mut buf = vec![0u8; 256 * 1024];
        let mut scrubber = Scrubber::new();
        let mut clean = Vec::with_capacity(buf.len());
        loop {
            match rustix::io::read(&pipe, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    clean.clear();
                    scrubber.push(&buf[..n], &mut clean);
                    deliver(&shared, &clean);
                }
                Err(rustix::io::Errno::INTR) => {}
                // A terminal's master is non-blocking (its writers must never hang).
                Err(rustix::io::Errno::AGAIN) => crate::terminal::wait_readable(&pipe),
                // EIO from a terminal's master: every holder of its slave side is gone.
                Err(_) => break,
            }
        }
        clean.clear();
        scrubber.finish(&mut clean);
        deliver(&shared, &clean);
        drop(script);
        shared.drained.send_replace(true);
        shared.progress.send_modify(|_| {});
    })?;
    Ok(())
}

/// Append redacted output to the buffer and the log, and tell the readers.
fn deliver(shared: &Shared, chunk: &[u8]) {
    if chunk.is_empty() {
        return;
    }
    let total = {
        let mut out = shared.output.lock().unwrap_or_else(PoisonError::into_inner);
        out.push(chunk);
        out.total()
    };
    if let Some(log) = shared.log.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
        log.write(chunk);
    }
    if let Some(screen) = &shared.screen {
        screen.process(chunk);
    }
    shared.progress.send_replace(total);
}

/// Observe the exit of the main process without a thread: a pidfd becomes readable when the
/// process exits. The status is read with `WNOWAIT`; the zombie is reaped once the output is
/// drained (or by `stop`), so that the group id stays ours while anything may signal it.
pub(crate) async fn watch_exit(shared: Arc<Shared>, pid: i32, marked: Target) {
    let exit = match observe_exit(pid).await {
        Some(exit) => exit,
        None => return,
    };
    {
        let mut life = shared.life();
        life.exit.get_or_insert(exit);
    }
    shared.exited.send_replace(true);
    shared.progress.send_modify(|_| {});
    let mut drained = shared.drained.subscribe();
    let _ = drained.wait_for(|d| *d).await;
    let shared2 = Arc::clone(&shared);
    let _ = tokio::task::spawn_blocking(move || {
        let mut life = shared2.life();
        if life.stopping || life.reaped {
            return;
        }
        shared2.reap_main(pid, &mut life);
        drop(life);
        // A descendant that closed its output may live on: then the record stays for `stop` (or
        // for the next hands, should this one crash). Only background processes have records.
        let has_record = shared2.record.lock().unwrap_or_else(PoisonError::into_inner).is_some();
        if has_record && procfs::find(&marked).is_empty() {
            remove_record(&shared2);
        }
    })
    .await;
}

/// The exit status of `pid` (not reaped), through a pidfd, or a blocking waitid as a fallback.
pub(crate) async fn observe_exit(pid: i32) -> Option<Exit> {
    let raw = Pid::from_raw(pid)?;
    let peek = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
    let to_exit = |status: WaitIdStatus| Exit {
        code: status.exit_status(),
        signal: status.terminating_signal(),
    };
    match rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::NONBLOCK) {
        Ok(fd) => {
            // Deprecated because a borrowed raw fd could be closed under the reactor; ours is an
            // OwnedFd that the AsyncFd owns until it is dropped, which is the sound case (the
            // replacement, `register_with_interest`, is `unsafe` and this crate denies unsafe).
            #[allow(deprecated)]
            let afd =
                tokio::io::unix::AsyncFd::with_interest(fd, tokio::io::Interest::READABLE).ok()?;
            loop {
                let mut guard = afd.readable().await.ok()?;
                match rustix::process::waitid(
                    WaitId::PidFd(afd.get_ref().as_fd()),
                    peek | WaitIdOptions::NOHANG,
                ) {
                    Ok(Some(status)) => return Some(to_exit(status)),
                    Ok(None) => guard.clear_ready(),
                    // ECHILD: `stop` reaped it first and recorded the status.
                    Err(_) => return None,
                }
            }
        }
        Err(_) => tokio::task::spawn_blocking(move || {
            rustix::process::waitid(WaitId::Pid(raw), peek).ok().flatten().map(to_exit)
        })
        .await
        .ok()
        .flatten(),
    }
}

/// Reap orphans whenever a child dies, until the session closes.
pub(crate) async fn reap_on_sigchld(closed: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut sigchld) = signal(SignalKind::child()) else { return };
    loop {
        tokio::select! {
            got = sigchld.recv() => if got.is_none() { return },
            () = closed.cancelled() => return,
        }
        // Let a burst of deaths settle into one scan.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let _ = tokio::task::spawn_blocking(reap::request_reap).await;
    }
}
