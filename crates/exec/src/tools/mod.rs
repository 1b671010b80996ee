//! The process tools, each a small type over the shared machinery of the crate (supervisor,
//! launch, notes, background): bash, spawn_process, and list_processes / process_output /
//! stop_process, and the terminal sessions' terminal_start / terminal_send / terminal_read.

pub mod bash;
pub mod processes;
pub mod spawn_process;
pub mod terminal;
