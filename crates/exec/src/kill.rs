//! Stopping everything that belongs to a target: SIGTERM (and SIGCONT, so stopped processes can
//! act on it) to the group and to every marked descendant, a grace period, then rounds of freeze
//! (SIGSTOP, so a fork loop cannot outrun us) and SIGKILL until no marked process remains.
//!
//! Synchronous and blocking (it reads `/proc` and sleeps): async callers run it in
//! `spawn_blocking`; `reap_leftovers` calls it directly.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, kill_process_group, pidfd_open, pidfd_send_signal};

use crate::procfs::{self, ProcInfo, Target};
use crate::reap;

/// Most escalation rounds before giving up (each is a scan, a freeze and a kill).
const MAX_ROUNDS: usize = 50;
/// How often the grace period checks whether everything is gone.
const POLL: Duration = Duration::from_millis(40);

/// What a stop did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StopReport {
    /// Processes that got SIGTERM.
    pub terminated: usize,
    /// Processes still alive after the grace period that got SIGKILL.
    pub killed: usize,
    /// Marked processes still alive after everything (should be 0).
    pub survivors: usize,
}

/// Signal one scanned process, through a pidfd, and only if the pid still names the process that
/// was scanned (same start time): a pid freed since the scan may already be reused, even as the
/// thread id of one of our own threads, which `kill` would turn into a signal to hands itself.
/// A pidfd cannot be opened on a thread that is not a process leader.
fn send(p: &ProcInfo, sig: Signal) {
    if p.pid == procfs::own_pid() {
        return;
    }
    let Some(pid) = Pid::from_raw(p.pid).filter(|_| p.pid > 0) else { return };
    let Ok(fd) = pidfd_open(pid, PidfdFlags::empty()) else { return };
    if procfs::start_time(p.pid) == Some(p.start) {
        let _ = pidfd_send_signal(&fd, sig);
    }
}

fn send_group(group: Option<i32>, sig: Signal) {
    let own_group = rustix::process::getpgrp().as_raw_nonzero().get();
    // Only positive ids name a group (rustix asserts it); never our own group.
    if let Some(pid) = group.filter(|&g| g > 0 && g != own_group).and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, sig);
    }
}

/// SIGTERM to process group `group` (never our own).
pub(crate) fn term_group(group: i32) {
    send_group(Some(group), Signal::TERM);
}

/// Stop everything `target` finds. `group` in the target must only be set while the group leader
/// is not reaped yet (so its pgid cannot have been reused). `group_termed`: the group already got
/// its SIGTERM. Each process gets one SIGTERM: members of the group through the group, the others
/// (marked descendants that left it) one by one.
pub(crate) fn stop(target: &Target, grace: Duration, group_termed: bool) -> StopReport {
    let mut report = StopReport::default();
    let first = procfs::find(target);
    if !group_termed {
        send_group(target.group, Signal::TERM);
    }
    send_group(target.group, Signal::CONT);
    for p in first.iter().filter(|p| target.group != Some(p.pgrp)) {
        send(p, Signal::TERM);
        send(p, Signal::CONT);
    }
    report.terminated = first.len();
    if first.is_empty() {
        return report;
    }
    let deadline = Instant::now() + grace;
    let mut live = first;
    while !live.is_empty() && Instant::now() < deadline {
        std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
        reap::request_reap();
        // Concurrent stops share a scan that is at most one poll old.
        let since = Instant::now().checked_sub(POLL).unwrap_or_else(Instant::now);
        live = procfs::find_since(target, since);
    }
    report.killed = kill_rounds(target, live).len();
    reap::request_reap();
    report.survivors = procfs::find(target).len();
    report
}

/// Freeze and kill until nothing is found (bounded); the pids that got SIGKILL.
fn kill_rounds(target: &Target, mut live: Vec<ProcInfo>) -> HashSet<i32> {
    let mut killed = HashSet::new();
    for _ in 0..MAX_ROUNDS {
        if live.is_empty() {
            break;
        }
        // Freeze first: a fork loop that is stopped cannot make new processes between our scan and
        // our kill. A group signal reaches every member atomically with respect to fork.
        send_group(target.group, Signal::STOP);
        for p in &live {
            send(p, Signal::STOP);
        }
        let mut all = live;
        for p in procfs::find(target) {
            if !all.iter().any(|a| a.pid == p.pid) {
                send(&p, Signal::STOP);
                all.push(p);
            }
        }
        send_group(target.group, Signal::KILL);
        for p in &all {
            send(p, Signal::KILL);
            killed.insert(p.pid);
        }
        std::thread::sleep(Duration::from_millis(10));
        reap::request_reap();
        live = procfs::find(target);
    }
    killed
}
