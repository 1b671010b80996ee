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

pub mod bash;
mod config;
pub mod daemon;
pub mod devserver;
mod kill;
mod output;
mod processes;
mod procfs;
mod ready;
mod reap;
mod record;
mod spawn;
mod spawn_process;
pub mod supervisor;
mod watch;

pub use bash::Bash;
pub use config::{BashConfig, EnvConfig, ExecConfig, ProcessConfig};
pub use processes::{ListProcesses, ProcessOutput, StopProcess};
pub use reap::zombie_children;
pub use record::{LeftoverReport, Record, reap_leftovers, records_dir};
pub use spawn_process::SpawnProcess;
pub use supervisor::{Kind, Proc, Snapshot, SpawnSpec, Status, StopReport, Supervisor};

use hands_core::RegistryBuilder;

/// Register the process tools (the background ones only when `background_processes` is on).
pub fn register(builder: RegistryBuilder, config: &ExecConfig) -> RegistryBuilder {
    let mut builder = builder.tool(Bash::new(config.clone()));
    if config.background_processes {
        builder = builder
            .tool(SpawnProcess::new(config.clone()))
            .tool(ListProcesses::new(config.clone()))
            .tool(ProcessOutput::new(config.clone()))
            .tool(StopProcess::new(config.clone()));
    }
    builder
}
