//! The terminal as the secrets tool's asker: `hands run` and `hands chat` answer a
//! `secret_requested` event with a prompt whose typing is not shown (echo is turned off on the
//! controlling terminal while the line is read, and back on however the prompt ends). An empty
//! line, the end of the input or Ctrl-C (which aborts the turn) declines. The value goes from the
//! line to the host and nowhere else: it is not echoed, printed or logged.

use std::os::fd::AsFd;

use rustix::termios::{LocalModes, OptionalActions, Termios, tcgetattr, tcsetattr};

use crate::approve::Lines;

/// Echo turned off on the controlling terminal until dropped.
struct Hidden {
    tty: std::fs::File,
    saved: Termios,
}

impl Hidden {
    /// Turn echo off on `/dev/tty`; `None` where there is no terminal (the input is a pipe, and
    /// nothing is echoed anyway).
    fn start() -> Option<Self> {
        let tty = std::fs::File::options().read(true).write(true).open("/dev/tty").ok()?;
        let saved = tcgetattr(tty.as_fd()).ok()?;
        let mut hidden = saved.clone();
        hidden.local_modes.remove(LocalModes::ECHO);
        // The line end is still shown, so that the next output starts on a line of its own.
        hidden.local_modes.insert(LocalModes::ECHONL);
        tcsetattr(tty.as_fd(), OptionalActions::Now, &hidden).ok()?;
        Some(Self { tty, saved })
    }
}

impl Drop for Hidden {
    fn drop(&mut self) {
        let _ = tcsetattr(self.tty.as_fd(), OptionalActions::Now, &self.saved);
    }
}

/// The prompt for secret `name`.
fn prompt(name: &str, description: &str) -> String {
    format!(
        "hands: the agent asks for a secret, {name}: {description}\nhands: it is stored for this \
         project and given to its processes as ${name}; the agent never sees it.\nhands: type or \
         paste {name} (hidden; an empty line declines): "
    )
}

/// Ask `lines`' person for secret `name`; the value, or `None` when they declined.
pub async fn ask_secret(lines: &Lines, name: &str, description: &str) -> Option<String> {
    lines.discard_typed_ahead();
    let hidden = Hidden::start();
    lines.show(&prompt(name, description));
    let line = lines.next().await;
    drop(hidden);
    line.filter(|value| !value.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_names_the_secret_and_says_it_is_hidden() {
        let text = prompt("API_KEY", "the key from the dashboard");
        assert!(text.contains("API_KEY: the key from the dashboard"), "{text}");
        assert!(text.ends_with("(hidden; an empty line declines): "), "{text}");
    }
}
