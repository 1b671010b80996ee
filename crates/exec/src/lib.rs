//! The process tools of hands: `bash`, and `spawn_process` with `list_processes`,
//! `process_output` and `stop_process`, over a per-session [`Supervisor`].
//!
//! The promise: every process hands starts is accounted for, bounded, and gone when it should be.
//! Each child runs in its own session and process group with stdin closed and a marker in its
//! environment (`HANDS_SESSION`, `HANDS_PROCESS`), so that descendants that escape the group
//! (setsid, double fork, nohup) are still found under `/proc`; hands is a child subreaper, so
//! orphans are re-parented to it and reaped; output is drained continuously into a bounded
//! head+tail buffer with an exact count of what was dropped; and a record of every background
//! process lets the next hands stop the leftovers of one that crashed.

mod background;
mod config;
pub mod daemon;
pub mod devserver;
mod kill;
mod launch;
mod notes;
mod output;
mod procfs;
mod progress;
mod ready;
mod reap;
mod record;
mod shared;
mod spawn;
pub mod supervisor;
pub mod terminal;
pub mod tools;
mod tracked;
mod watch;

pub use background::ExecProcesses;
pub use config::{BashConfig, EnvConfig, ExecConfig, ProcessConfig};
pub use kill::StopReport;
pub use reap::zombie_children;
pub use record::{LeftoverReport, Record, reap_leftovers, records_dir};
pub use shared::Exit;
pub use supervisor::{Argv, Kind, Proc, Snapshot, SpawnSpec, Status, Supervisor};
pub use tools::bash::{self, Bash};
pub use tools::processes::{ListProcesses, ProcessOutput, StopProcess};
pub use tools::spawn_process::SpawnProcess;
pub use tools::terminal::{TerminalRead, TerminalResult, TerminalSend, TerminalStart};

use std::sync::Arc;

use hands_core::{ProcessService, RegistryBuilder};

/// Register the process tools (the background ones and the terminals only when
/// `background_processes` is on, with
/// the [`ProcessService`] front ends list and stop them through).
pub fn register(builder: RegistryBuilder, config: &ExecConfig) -> RegistryBuilder {
    let mut builder = builder.tool(Bash::new(config.clone()));
    if config.background_processes {
        builder = builder
            .service::<Arc<dyn ProcessService>>(ExecProcesses::service(config.clone()))
            .tool(SpawnProcess::new(config.clone()))
            .tool(ListProcesses::new(config.clone()))
            .tool(ProcessOutput::new(config.clone()))
            .tool(StopProcess::new(config.clone()))
            .tool(TerminalStart::new(config.clone()))
            .tool(TerminalSend::new(config.clone()))
            .tool(TerminalRead::new(config.clone()));
    }
    builder
}
