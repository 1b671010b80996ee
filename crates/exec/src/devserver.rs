//! Recognising a foreground dev-server command (`npm run dev`, `vite`, `next dev`, …), which bash
//! short-circuits into a managed daemon instead of blocking until its timeout.

/// True when `command` is a dev server that would run in the foreground forever.
pub fn is_dev_server(command: &str) -> bool {
    let _ = command;
    false
}
