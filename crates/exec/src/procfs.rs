//! What `/proc` says about processes: state, parent, group, session and start time from
//! `/proc/<pid>/stat`, and the hands markers from `/proc/<pid>/environ`.
//!
//! One [`scan`] reads every process once; callers pick the ones they own from it. Only processes of
//! our own uid are considered for markers, and hands' own pid is never part of a result.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// Environment variable naming the hands instance (`<pid>.<start time>`) that started a process.
pub(crate) const OWNER_VAR: &str = "HANDS_OWNER";
/// Environment variable naming the session.
pub(crate) const SESSION_VAR: &str = "HANDS_SESSION";
/// Environment variable naming the process (`<session id>/<proc id>`).
pub(crate) const PROCESS_VAR: &str = "HANDS_PROCESS";

/// One process as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcInfo {
    pub pid: i32,
    /// The state letter (`R`, `S`, `Z`, `T`, …).
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub sid: i32,
    /// Start time in clock ticks since boot: with the pid, it names a process uniquely.
    pub start: u64,
}

impl ProcInfo {
    /// A zombie or a dead task: nothing left to signal.
    pub fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parse the content of `/proc/<pid>/stat`. The command name may contain spaces and parentheses,
/// so fields are counted from the last `)`.
pub(crate) fn parse_stat(pid: i32, text: &str) -> Option<ProcInfo> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) session(6) … starttime(22).
    Some(ProcInfo {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        sid: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// `/proc/<pid>/stat` of one process, or None when it is gone.
pub(crate) fn stat(pid: i32) -> Option<ProcInfo> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// The start time of `pid`, or None when there is no such process.
pub(crate) fn start_time(pid: i32) -> Option<u64> {
    stat(pid).map(|info| info.start)
}

/// Our own pid.
pub(crate) fn own_pid() -> i32 {
    rustix::process::getpid().as_raw_nonzero().get()
}

/// The marker value of this hands instance: `<pid>.<start time>`.
pub(crate) fn owner_marker() -> String {
    static OWNER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OWNER
        .get_or_init(|| {
            let pid = own_pid();
            format!("{pid}.{}", start_time(pid).unwrap_or(0))
        })
        .clone()
}

/// Every process now, with its stat (processes that vanish while we read are skipped).
pub(crate) fn all() -> Vec<ProcInfo> {
    let Ok(dir) = fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|entry| {
        let entry = entry.ok()?;
        let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
        stat(pid)
    })
    .collect()
}

/// Pids of `pid`'s children, from `/proc/<pid>/task/*/children` (no scan of all of /proc).
/// `None` when the kernel does not offer those files.
pub(crate) fn children(pid: i32) -> Option<Vec<i32>> {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut kids = Vec::new();
    let mut any = false;
    for task in tasks.flatten() {
        let Ok(text) = fs::read_to_string(task.path().join("children")) else { continue };
        any = true;
        kids.extend(text.split_whitespace().filter_map(|k| k.parse::<i32>().ok()));
    }
    any.then_some(kids)
}

/// Every live descendant of hands, walking the children files down from our own pid. hands is a
/// child subreaper, so every process a supervised child left behind — even one that escaped its
/// group or cleared its environment — is in this tree while hands lives. `None` when the children
/// files are missing (then callers fall back to a full scan).
pub(crate) fn descendants_of_me() -> Option<Vec<ProcInfo>> {
    let mut queue = children(own_pid())?;
    let mut found = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while let Some(pid) = queue.pop() {
        if !seen.insert(pid) {
            continue;
        }
        let Some(info) = stat(pid) else { continue };
        if let Some(kids) = children(pid) {
            queue.extend(kids);
        }
        if !info.is_dead() {
            found.push(info);
        }
    }
    Some(found)
}

/// True when something of `target` besides `except` may still be alive: a quick check of hands'
/// own process tree (a full scan only when the kernel has no children files).
pub(crate) fn any_left(target: &Target, except: i32) -> bool {
    let Some(tree) = descendants_of_me() else {
        return find(target).iter().any(|p| p.pid != except);
    };
    let own = stat(own_pid());
    tree.iter().filter(|p| p.pid != except).any(|p| {
        target.group.is_some_and(|g| p.pgrp == g || p.sid == g)
            || match markers(p.pid) {
                Some(m) => {
                    target.marks(&m)
                        || own.as_ref().is_some_and(|own| target.claims_orphan(p, Some(&m), own))
                }
                None => own.as_ref().is_some_and(|own| target.claims_orphan(p, None, own)),
            }
        // A descendant of a marked process that cleared its environment is still in the
        // group or under a marked parent; the full stop finds it, so one hit is enough here.
    })
}

/// The hands markers in a process's environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Markers {
    pub owner: Option<String>,
    pub session: Option<String>,
    pub process: Option<String>,
}

impl Markers {
    /// No hands marker at all (cleared, or never set).
    pub fn is_unmarked(&self) -> bool {
        self.owner.is_none() && self.session.is_none() && self.process.is_none()
    }
}

/// The markers of `pid`, when it belongs to our uid and its environment can be read. A zombie's
/// environment is empty, so zombies never carry markers.
pub(crate) fn markers(pid: i32) -> Option<Markers> {
    if pid == own_pid() {
        return None;
    }
    let meta = fs::metadata(format!("/proc/{pid}")).ok()?;
    if meta.uid() != rustix::process::getuid().as_raw() {
        return None;
    }
    let environ = fs::read(format!("/proc/{pid}/environ")).ok()?;
    Some(parse_markers(&environ))
}

/// The markers in a NUL-separated environment block.
pub(crate) fn parse_markers(environ: &[u8]) -> Markers {
    let mut found = Markers::default();
    for var in environ.split(|&b| b == 0) {
        let Some(eq) = var.iter().position(|&b| b == b'=') else { continue };
        let (name, value) = (&var[..eq], &var[eq + 1..]);
        let slot = match name {
            b"HANDS_OWNER" => &mut found.owner,
            b"HANDS_SESSION" => &mut found.session,
            b"HANDS_PROCESS" => &mut found.process,
            _ => continue,
        };
        *slot = Some(String::from_utf8_lossy(value).into_owned());
    }
    found
}

/// What a search looks for: processes of one hands instance, and of one session or one process.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The owner marker that must match.
    pub owner: String,
    /// The session marker that must match, if any.
    pub session: Option<String>,
    /// The process marker that must match, if any.
    pub process: Option<String>,
    /// A process group (and session) whose live members belong too, while its leader is ours.
    pub group: Option<i32>,
    /// Claim hands' unmarked orphans started at or after this start time (clock ticks since
    /// boot): processes that cleared their markers and left their group, re-parented to hands
    /// (the subreaper) when their parent exited. Nothing says which call made one, so a target
    /// claims those born during its life; set for bash calls and for the end of a session.
    pub orphans_since: Option<u64>,
}

impl Target {
    fn marks(&self, m: &Markers) -> bool {
        m.owner.as_deref() == Some(self.owner.as_str())
            && self.session.as_ref().is_none_or(|s| m.session.as_ref() == Some(s))
            && self.process.as_ref().is_none_or(|p| m.process.as_ref() == Some(p))
    }

    /// True for an orphan this target claims (see [`Target::orphans_since`]): a live child of
    /// hands outside hands' own session (every supervised child starts a session of its own;
    /// hands' other children — MCP servers, a sandbox — stay in hands'), not one the supervisor
    /// started, without any hands marker, born at or after `orphans_since`.
    fn claims_orphan(&self, p: &ProcInfo, m: Option<&Markers>, own: &ProcInfo) -> bool {
        self.orphans_since.is_some_and(|since| {
            p.ppid == own.pid
                && p.sid != own.sid
                && p.start >= since
                && !p.is_dead()
                && m.is_none_or(Markers::is_unmarked)
                && !crate::tracked::is_tracked(p.pid)
        })
    }
}

/// One scan of /proc: every live process with its markers, shared by concurrent callers.
#[derive(Debug)]
struct Scan {
    began: Instant,
    procs: Vec<(ProcInfo, Option<Arc<Markers>>)>,
}

/// The last scan, and the markers of every process seen, by (pid, start time): a process's
/// markers are read once, not at every scan of a grace period.
struct Cache {
    last: Option<Arc<Scan>>,
    markers: BTreeMap<(i32, u64), Option<Arc<Markers>>>,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache { last: None, markers: BTreeMap::new() });

/// A scan that began at or after `since` (the cached one when it is recent enough). Callers that
/// queue behind a running scan reuse its result when it is fresh enough for them.
fn scan_since(since: Instant) -> Arc<Scan> {
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(last) = &cache.last
        && last.began >= since
    {
        return Arc::clone(last);
    }
    let began = Instant::now();
    let me = own_pid();
    let mut seen = BTreeMap::new();
    let mut procs = Vec::new();
    for p in all() {
        if p.pid == me || p.is_dead() {
            continue;
        }
        let key = (p.pid, p.start);
        let markers = match cache.markers.remove(&key) {
            Some(m) => m,
            None => markers(p.pid).map(Arc::new),
        };
        seen.insert(key, markers.clone());
        procs.push((p, markers));
    }
    cache.markers = seen;
    let scan = Arc::new(Scan { began, procs });
    cache.last = Some(Arc::clone(&scan));
    scan
}

/// Live processes that belong to `target` now (a fresh scan).
pub(crate) fn find(target: &Target) -> Vec<ProcInfo> {
    find_since(target, Instant::now())
}

/// Live processes that belong to `target`, from a scan begun at or after `since`: members of its
/// group or session, processes carrying its markers, and (transitively) live children of those,
/// which catches a descendant that both left the group and cleared its environment while its
/// parent still lives.
pub(crate) fn find_since(target: &Target, since: Instant) -> Vec<ProcInfo> {
    let scan = scan_since(since);
    let own = stat(own_pid());
    let mut found: Vec<ProcInfo> = Vec::new();
    let mut rest = Vec::new();
    for (p, m) in &scan.procs {
        let in_group = target.group.is_some_and(|g| p.pgrp == g || p.sid == g);
        let orphan = own.as_ref().is_some_and(|own| target.claims_orphan(p, m.as_deref(), own));
        if in_group || orphan || m.as_deref().is_some_and(|m| target.marks(m)) {
            found.push(p.clone());
        } else {
            rest.push(p.clone());
        }
    }
    // Children of found processes, to a fixed point (bounded by the number of processes).
    loop {
        let (kids, others): (Vec<ProcInfo>, Vec<ProcInfo>) =
            rest.into_iter().partition(|p| found.iter().any(|f| f.pid == p.ppid));
        rest = others;
        if kids.is_empty() {
            break;
        }
        found.extend(kids);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_is_parsed_after_the_last_parenthesis() {
        let text = "4242 (we ir) d) S 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 \
                    1000 100 18446744073709551615";
        let info = parse_stat(4242, text).unwrap();
        assert_eq!(info.state, 'S');
        assert_eq!((info.ppid, info.pgrp, info.sid), (1, 4242, 4242));
        assert_eq!(info.start, 987_654);
    }

    #[test]
    fn our_own_stat_is_readable_and_stable() {
        let me = own_pid();
        let a = stat(me).unwrap();
        assert_eq!(a.pid, me);
        assert_eq!(start_time(me), Some(a.start));
        assert!(owner_marker().starts_with(&format!("{me}.")));
    }

    #[test]
    fn markers_are_read_from_an_environment_block() {
        let m = parse_markers(b"A=1\0HANDS_OWNER=1.2\0HANDS_SESSION=s\0HANDS_PROCESS=s/p1\0B\0");
        assert_eq!(m.owner.as_deref(), Some("1.2"));
        assert_eq!(m.session.as_deref(), Some("s"));
        assert_eq!(m.process.as_deref(), Some("s/p1"));
        assert_eq!(parse_markers(b"HANDS_SESSIONX=1\0"), Markers::default());
    }
}
