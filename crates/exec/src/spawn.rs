//! Starting a child: `<shell> -c <command>` (or `<shell> <script>`) in its own session and process
//! group, stdin on /dev/null, stdout and stderr on one pipe, the TOOLS.md environment plus the
//! hands markers.
//!
//! This is the one module of the crate that allows unsafe code: std offers no safe way to run
//! `setsid` between fork and exec, and `CommandExt::pre_exec` is unsafe because the closure runs in
//! the forked child, where only async-signal-safe calls are allowed. Ours makes exactly one such
//! call, `setsid(2)` through rustix (a raw syscall: no allocation, no locks).
#![allow(unsafe_code)]

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// What to exec.
pub(crate) enum Program<'a> {
    /// `<shell> -c <command>`
    Inline(&'a str),
    /// `<shell> <script file>`, for commands too long for one exec argument.
    Script(&'a Path),
}

/// A started child and the read end of its output pipe.
pub(crate) struct Started {
    pub child: Child,
    pub output: OwnedFd,
}

/// Start the child. The markers are `(name, value)` pairs added to the environment.
pub(crate) fn start(
    shell: &str,
    program: Program<'_>,
    cwd: &Path,
    markers: &[(&str, String)],
) -> std::io::Result<Started> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // A large pipe lets a fast writer run ahead of the drain thread; failure only costs speed.
    let _ = rustix::pipe::fcntl_setpipe_size(&read, 1 << 20);
    let stderr = write.try_clone()?;
    let mut cmd = Command::new(shell);
    match program {
        Program::Inline(command) => cmd.arg("-c").arg(command),
        Program::Script(path) => cmd.arg(path),
    };
    cmd.current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write))
        .stderr(Stdio::from(stderr))
        .env("NO_COLOR", "1")
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("TERM", "dumb");
    for (name, value) in markers {
        cmd.env(name, value);
    }
    // SAFETY: the closure runs in the child between fork and exec and only calls setsid(2), which
    // is async-signal-safe; it touches no memory of the parent and allocates nothing.
    unsafe {
        cmd.pre_exec(|| rustix::process::setsid().map(|_| ()).map_err(std::io::Error::from));
    }
    let child = cmd.spawn()?;
    // `cmd` (and with it the parent's copies of the pipe's write end) is dropped here, so the pipe
    // reaches EOF once the child and its descendants are gone.
    drop(cmd);
    Ok(Started { child, output: read })
}
