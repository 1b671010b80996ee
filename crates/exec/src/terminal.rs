//! Pseudo-terminals for terminal sessions: opening one, writing keystrokes into it without ever
//! blocking on a program that does not read, and the screen a person would see, rendered by the
//! `vt100` terminal emulator from the same (redacted) bytes the output buffer and log get.
//!
//! The pty comes from rustix (`openpt`, `grantpt`, `unlockpt`, `ptsname`); the child opens the
//! slave side by path after `setsid` (spawn.rs), so the terminal is its controlling terminal and
//! Ctrl-C typed into it reaches its foreground process group only. The master is non-blocking:
//! the drain thread waits in `poll` when there is nothing to read, and a write to a program that
//! stopped reading gives up at its deadline instead of hanging the call.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::fs::OFlags;
use rustix::termios::Winsize;

/// Columns and rows of a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

impl Size {
    /// The size every terminal gets unless the call asks for another: wide enough for most
    /// programs' output, short enough to read.
    pub const DEFAULT: Size = Size { cols: 120, rows: 40 };

    fn winsize(self) -> Winsize {
        Winsize { ws_row: self.rows, ws_col: self.cols, ws_xpixel: 0, ws_ypixel: 0 }
    }
}

/// A pty before its child starts: the master, the slave's path, and the slave held open by
/// hands until the child has opened it (so the master never reads end-of-file in between).
pub(crate) struct Pty {
    pub(crate) master: OwnedFd,
    pub(crate) slave_path: CString,
    pub(crate) slave: OwnedFd,
}

impl Pty {
    /// A new pty of `size`, its master non-blocking and close-on-exec.
    pub(crate) fn open(size: Size) -> std::io::Result<Self> {
        use rustix::pty::OpenptFlags;
        let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY)?;
        rustix::io::fcntl_setfd(&master, rustix::io::FdFlags::CLOEXEC)?;
        rustix::pty::grantpt(&master)?;
        rustix::pty::unlockpt(&master)?;
        let slave_path = rustix::pty::ptsname(&master, Vec::new())?;
        rustix::termios::tcsetwinsize(&master, size.winsize())?;
        let slave = rustix::fs::open(
            slave_path.as_c_str(),
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        let flags = rustix::fs::fcntl_getfl(&master)?;
        rustix::fs::fcntl_setfl(&master, flags | OFlags::NONBLOCK)?;
        Ok(Self { master, slave_path, slave })
    }
}

/// The terminal side of a supervised process: its master for writing and resizing, and its
/// screen.
#[derive(Debug)]
pub struct Terminal {
    master: Arc<OwnedFd>,
    screen: Arc<Screen>,
}

/// Why input could not be written in full.
#[derive(Debug)]
pub enum WriteError {
    /// The program has not read its input for the whole deadline: `sent` bytes went in.
    NotReading {
        /// Bytes written before the deadline.
        sent: usize,
    },
    /// The terminal is gone (the program and everything holding it ended).
    Closed,
}

impl Terminal {
    pub(crate) fn new(master: OwnedFd, screen: Arc<Screen>) -> Self {
        Self { master: Arc::new(master), screen }
    }

    /// Write `bytes` as typed keys, waiting at most `deadline` for the program to read them.
    pub async fn write(&self, bytes: Vec<u8>, deadline: Duration) -> Result<usize, WriteError> {
        let master = Arc::clone(&self.master);
        tokio::task::spawn_blocking(move || write_all(&master, &bytes, deadline))
            .await
            .unwrap_or(Err(WriteError::Closed))
    }

    /// Change the terminal's size: the program gets SIGWINCH, the screen follows.
    pub fn resize(&self, size: Size) -> std::io::Result<()> {
        rustix::termios::tcsetwinsize(self.master.as_fd(), size.winsize())?;
        self.screen.resize(size);
        Ok(())
    }

    /// What the screen shows now.
    pub fn screen(&self) -> ScreenView {
        self.screen.view()
    }

    /// True when the program asked for application cursor keys (arrows send `ESC O A`).
    pub fn application_cursor(&self) -> bool {
        self.screen.lock().screen().application_cursor()
    }
}

fn write_all(master: &OwnedFd, mut bytes: &[u8], deadline: Duration) -> Result<usize, WriteError> {
    let start = Instant::now();
    let total = bytes.len();
    while !bytes.is_empty() {
        match rustix::io::write(master, bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => {
                let left = deadline.saturating_sub(start.elapsed());
                if left.is_zero() {
                    return Err(WriteError::NotReading { sent: total - bytes.len() });
                }
                let timeout = rustix::event::Timespec::try_from(left).ok();
                let mut fds = [PollFd::new(master, PollFlags::OUT)];
                let _ = rustix::event::poll(&mut fds, timeout.as_ref());
            }
            Err(_) => return Err(WriteError::Closed),
        }
    }
    Ok(total)
}

/// Wait until `fd` is readable (or hung up), for the drain thread of a non-blocking master.
pub(crate) fn wait_readable(fd: &OwnedFd) {
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    let _ = rustix::event::poll(&mut fds, None);
}

/// The emulated screen, fed by the drain thread.
pub(crate) struct Screen(Mutex<vt100::Parser>);

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Screen")
    }
}

impl Screen {
    pub(crate) fn new(size: Size) -> Self {
        // No scrollback: the full output is in the buffer and the log; the screen is what a
        // person sees now.
        Self(Mutex::new(vt100::Parser::new(size.rows, size.cols, 0)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, vt100::Parser> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn process(&self, bytes: &[u8]) {
        self.lock().process(bytes);
    }

    fn resize(&self, size: Size) {
        self.lock().screen_mut().set_size(size.rows, size.cols);
    }

    fn view(&self) -> ScreenView {
        let parser = self.lock();
        let screen = parser.screen();
        let (rows, cols) = screen.size();
        let (row, col) = screen.cursor_position();
        let lines: Vec<String> = screen.rows(0, cols).collect();
        ScreenView {
            lines,
            cursor: (row, col),
            size: Size { cols, rows },
            alternate: screen.alternate_screen(),
        }
    }
}

/// A screen as text: one string per row (trailing blanks trimmed), the cursor, the size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenView {
    /// The rows, top to bottom.
    pub lines: Vec<String>,
    /// Cursor row and column, from 0.
    pub cursor: (u16, u16),
    /// The terminal's size.
    pub size: Size,
    /// True when a full-screen program has switched to the alternate screen (vi, less, top).
    pub alternate: bool,
}

impl ScreenView {
    /// The rows as text, trailing empty rows dropped.
    pub fn text(&self) -> String {
        let mut lines: Vec<&str> = self.lines.iter().map(|l| l.trim_end()).collect();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        lines.join("\n")
    }
}

/// The bytes a named key sends (`Enter`, `Ctrl-C`, `Up`, …; case-insensitive), or `None` for a
/// name that is no key. Arrows follow the program's cursor-key mode.
pub fn key(name: &str, application_cursor: bool) -> Option<Vec<u8>> {
    let lower = name.trim().to_ascii_lowercase().replace(['_', ' ', '+'], "-");
    let arrow = |c: u8| {
        if application_cursor { vec![0x1b, b'O', c] } else { vec![0x1b, b'[', c] }
    };
    let bytes = match lower.as_str() {
        "enter" | "return" => vec![b'\r'],
        "tab" => vec![b'\t'],
        "shift-tab" | "backtab" => b"\x1b[Z".to_vec(),
        "esc" | "escape" => vec![0x1b],
        "backspace" => vec![0x7f],
        "space" => vec![b' '],
        "delete" | "del" => b"\x1b[3~".to_vec(),
        "up" => arrow(b'A'),
        "down" => arrow(b'B'),
        "right" => arrow(b'C'),
        "left" => arrow(b'D'),
        "home" => b"\x1b[H".to_vec(),
        "end" => b"\x1b[F".to_vec(),
        "pageup" | "page-up" | "pgup" => b"\x1b[5~".to_vec(),
        "pagedown" | "page-down" | "pgdn" => b"\x1b[6~".to_vec(),
        other => {
            let letter = other.strip_prefix("ctrl-").or_else(|| other.strip_prefix("c-"))?;
            match letter.as_bytes() {
                [c @ b'a'..=b'z'] => vec![c - b'a' + 1],
                [b'['] => vec![0x1b],
                [b'\\'] => vec![0x1c],
                [b']'] => vec![0x1d],
                [b'@'] | [b' '] => vec![0],
                _ => return None,
            }
        }
    };
    Some(bytes)
}

/// The names [`key`] knows, for error messages.
pub const KEY_NAMES: &str = "Enter, Tab, Shift-Tab, Esc, Backspace, Space, Delete, Up, Down, \
                             Left, Right, Home, End, PageUp, PageDown, Ctrl-A … Ctrl-Z";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_send_what_a_terminal_sends() {
        assert_eq!(key("Enter", false), Some(b"\r".to_vec()));
        assert_eq!(key("ctrl-c", false), Some(vec![3]));
        assert_eq!(key("Ctrl+D", false), Some(vec![4]));
        assert_eq!(key("Up", false), Some(b"\x1b[A".to_vec()));
        assert_eq!(key("Up", true), Some(b"\x1bOA".to_vec()));
        assert_eq!(key("Esc", false), Some(vec![0x1b]));
        assert_eq!(key("Ctrl-1", false), None);
        assert_eq!(key("Hyper", false), None);
    }

    #[test]
    fn the_screen_renders_what_a_person_sees() {
        let screen = Screen::new(Size { cols: 20, rows: 4 });
        screen.process(b"hello\r\nworld\x1b[1;1HJ");
        let view = screen.view();
        assert_eq!(view.text(), "Jello\nworld");
        assert_eq!(view.cursor, (0, 1));
        assert!(!view.alternate);
        screen.process(b"\x1b[?1049h\x1b[2J\x1b[Hfull screen");
        let view = screen.view();
        assert!(view.alternate);
        assert_eq!(view.text(), "full screen");
    }
}
