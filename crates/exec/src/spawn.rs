//! Starting a child: `<shell> -c <command>` (or `<shell> <script>`, or a program's argv without a
//! shell) in its own session and process group, stdin on /dev/null, stdout and stderr on one pipe, hands' environment without its
//! credentials, the non-interactive environment and the hands markers.
//!
//! This is the one module of the crate that allows unsafe code. std offers no way to start a child
//! in a new session (`setsid`) except `CommandExt::pre_exec`, which makes std fork the whole
//! process instead of using `posix_spawn` — measured, that costs about half a millisecond per bash
//! call. glibc's `posix_spawnp` (a `CLONE_VFORK` child) has `POSIX_SPAWN_SETSID`, so we call it
//! through `libc`: the unsafe part is FFI with pointers to NUL-terminated strings that outlive the
//! call and spawn objects that are initialised before use and destroyed on every path.
#![allow(unsafe_code)]

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What to exec.
pub(crate) enum Program<'a> {
    /// `<shell> -c <command>`
    Inline(&'a str),
    /// `<shell> <script file>`, for commands too long for one exec argument.
    Script(&'a Path),
    /// A program and its arguments, no shell: `argv[0]` is looked up on PATH.
    Argv(&'a [String]),
}

/// What a child gets on top of the filtered environment.
pub(crate) struct ChildVars<'a> {
    /// The project whose granted secrets the child gets.
    pub project: &'a Path,
    /// hands' markers.
    pub markers: &'a [(&'a str, String)],
    /// Variables the caller sets (`CI=1`); they win over everything but the markers.
    pub extra: &'a [(String, String)],
}

/// Where the child's stdin, stdout and stderr go.
pub(crate) enum Io<'a> {
    /// stdin on /dev/null, stdout and stderr on one new pipe whose read end [`Started`] holds.
    Pipe,
    /// All three on the terminal whose slave side this path names, opened by the child after it
    /// became a session leader, so that the terminal becomes its controlling terminal.
    Terminal(&'a std::ffi::CStr),
}

/// A started child and the read end of its output pipe (none for a terminal: its master is the
/// caller's).
pub(crate) struct Started {
    pub pid: u32,
    pub output: Option<OwnedFd>,
}

/// The environment every command gets on top of hands' own: no colours, no pager, a dumb terminal
/// (docs/tools.md).
const ENV: &[(&str, &str)] =
    &[("NO_COLOR", "1"), ("PAGER", "cat"), ("GIT_PAGER", "cat"), ("TERM", "dumb")];

/// What a command in a terminal gets instead: a terminal that draws, and still no pager (an agent
/// reads output through the tools; `less` by name still works).
const TERMINAL_ENV: &[(&str, &str)] =
    &[("PAGER", "cat"), ("GIT_PAGER", "cat"), ("TERM", "xterm-256color")];

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))
}

/// `NAME=value` for every variable of hands' environment that children of the project at `root`
/// may see ([`hands_core::env::ChildEnv::vars_for`]: no credentials, no stored secret but those
/// granted to that project) and that is not overridden, then the overrides.
fn environment(vars: &ChildVars<'_>, terminal: bool) -> io::Result<Vec<CString>> {
    let mut overrides: Vec<(OsString, OsString)> = Vec::new();
    let base = if terminal { TERMINAL_ENV } else { ENV };
    let pairs = base.iter().map(|(k, v)| (*k, *v));
    let pairs = pairs.chain(vars.extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let pairs = pairs.chain(vars.markers.iter().map(|(k, v)| (*k, v.as_str())));
    for (k, v) in pairs {
        overrides.retain(|(o, _)| o.as_os_str() != OsStr::new(k));
        overrides.push((OsString::from(k), OsString::from(v)));
    }
    let mut env = Vec::new();
    let pair = |k: &OsStr, v: &OsStr| {
        let mut bytes = k.as_bytes().to_vec();
        bytes.push(b'=');
        bytes.extend_from_slice(v.as_bytes());
        c_string(&bytes)
    };
    for (k, v) in hands_core::env::ChildEnv::vars_for(vars.project) {
        // hands' own NO_COLOR does not reach a terminal, which draws colours.
        if terminal && k == "NO_COLOR" {
            continue;
        }
        if !overrides.iter().any(|(o, _)| *o == k) {
            env.push(pair(&k, &v)?);
        }
    }
    for (k, v) in &overrides {
        env.push(pair(k, v)?);
    }
    Ok(env)
}

/// Fail with the error number a posix_spawn function returned.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(rc)) }
}

/// Start the child in `cwd` with `vars` added to its environment.
pub(crate) fn start(
    shell: &str,
    program: Program<'_>,
    cwd: &Path,
    vars: &ChildVars<'_>,
    stdio: Io<'_>,
) -> io::Result<Started> {
    let pipe = match stdio {
        Io::Pipe => {
            let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
            // A large pipe lets a fast writer run ahead of the drain thread; failure only costs
            // speed.
            let _ = rustix::pipe::fcntl_setpipe_size(&read, 1 << 20);
            Some((read, write))
        }
        Io::Terminal(_) => None,
    };

    let shell_c = c_string(shell.as_bytes())?;
    let args: Vec<CString> = match program {
        Program::Inline(command) => {
            vec![shell_c.clone(), c"-c".to_owned(), c_string(command.as_bytes())?]
        }
        Program::Script(path) => vec![shell_c.clone(), c_string(path.as_os_str().as_bytes())?],
        Program::Argv(argv) => {
            argv.iter().map(|a| c_string(a.as_bytes())).collect::<io::Result<_>>()?
        }
    };
    let Some(file_c) = args.first().cloned() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty argv"));
    };
    let env = environment(vars, matches!(stdio, Io::Terminal(_)))?;
    let cwd_c = c_string(cwd.as_os_str().as_bytes())?;
    let mut argv: Vec<*mut libc::c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    let mut envp: Vec<*mut libc::c_char> = env.iter().map(|e| e.as_ptr().cast_mut()).collect();
    envp.push(std::ptr::null_mut());

    let mut pid: libc::pid_t = 0;
    // SAFETY: every pointer handed to libc points into `args`, `file_c`, `env`, `cwd_c`, `argv` and `envp`,
    // which live until the end of this function; `actions` and `attr` are initialised by their
    // `_init` functions before any other use and destroyed exactly once below, whatever happens
    // in between; `sigset_t`s are plain data initialised by `sigemptyset`.
    unsafe {
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        check(libc::posix_spawn_file_actions_init(&mut actions))?;
        if let Err(err) = check(libc::posix_spawnattr_init(&mut attr)) {
            libc::posix_spawn_file_actions_destroy(&mut actions);
            return Err(err);
        }
        let result = (|| {
            match (&stdio, &pipe) {
                (Io::Terminal(slave), _) => {
                    // glibc runs `setsid` before the file actions: the session leader opening a
                    // terminal without O_NOCTTY makes it its controlling terminal.
                    check(libc::posix_spawn_file_actions_addopen(
                        &mut actions,
                        0,
                        slave.as_ptr(),
                        libc::O_RDWR,
                        0,
                    ))?;
                    check(libc::posix_spawn_file_actions_adddup2(&mut actions, 0, 1))?;
                    check(libc::posix_spawn_file_actions_adddup2(&mut actions, 0, 2))?;
                }
                (Io::Pipe, Some((_, write))) => {
                    check(libc::posix_spawn_file_actions_addopen(
                        &mut actions,
                        0,
                        c"/dev/null".as_ptr(),
                        libc::O_RDONLY,
                        0,
                    ))?;
                    check(libc::posix_spawn_file_actions_adddup2(
                        &mut actions,
                        write.as_raw_fd(),
                        1,
                    ))?;
                    check(libc::posix_spawn_file_actions_adddup2(
                        &mut actions,
                        write.as_raw_fd(),
                        2,
                    ))?;
                }
                (Io::Pipe, None) => return Err(io::Error::other("no output pipe")),
            }
            check(libc::posix_spawn_file_actions_addchdir_np(&mut actions, cwd_c.as_ptr()))?;
            // Rust ignores SIGPIPE; an ignored disposition survives exec, so put it back to the
            // default (`yes | head` must end by SIGPIPE). No signal is blocked in the child.
            let mut defaults: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut defaults);
            libc::sigaddset(&mut defaults, libc::SIGPIPE);
            check(libc::posix_spawnattr_setsigdefault(&mut attr, &defaults))?;
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut mask);
            check(libc::posix_spawnattr_setsigmask(&mut attr, &mask))?;
            let flags = libc::c_int::from(libc::POSIX_SPAWN_SETSID)
                | libc::POSIX_SPAWN_SETSIGDEF
                | libc::POSIX_SPAWN_SETSIGMASK;
            // The flags are small constants (0x80 | 0x04 | 0x08): they fit in a c_short.
            check(libc::posix_spawnattr_setflags(&mut attr, flags as libc::c_short))?;
            check(libc::posix_spawnp(
                &mut pid,
                file_c.as_ptr(),
                &actions,
                &attr,
                argv.as_ptr(),
                envp.as_ptr(),
            ))
        })();
        libc::posix_spawnattr_destroy(&mut attr);
        libc::posix_spawn_file_actions_destroy(&mut actions);
        result?;
    }
    // Our copy of the write end goes now, so the pipe reaches EOF once the child and its
    // descendants are gone.
    let output = pipe.map(|(read, write)| {
        drop(write);
        read
    });
    let pid =
        u32::try_from(pid).map_err(|_| io::Error::other("posix_spawn gave a negative pid"))?;
    Ok(Started { pid, output })
}
