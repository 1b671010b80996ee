//! The ecosystems' own audit commands, when installed: `npm audit --json` beside a
//! package-lock.json, `pip-audit` over a requirements file, `cargo audit --json` beside a
//! Cargo.lock. Each runs without a shell in its own process group with the children's scrubbed
//! environment, under its time limit; a timeout, a cancellation or the call's end kills the
//! group. Their JSON becomes findings; a command that cannot reach its advisory service is
//! reported as failed, with its first line of error.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use hands_core::CancellationToken;
use tokio::io::AsyncReadExt;

use crate::finding::{Check, CheckRun, Finding, Severity};

/// One audit to run: the program, its arguments, the folder it runs in, and the lock file.
#[derive(Debug, Clone)]
pub struct Audit {
    /// `npm audit`, `pip-audit`, `cargo audit`.
    pub label: &'static str,
    program: &'static str,
    args: Vec<String>,
    dir: PathBuf,
    /// The lock file, relative to the project root.
    pub file: String,
    parse: fn(&serde_json::Value, &str) -> Vec<Finding>,
}

/// The audits the lock files at the project root call for.
pub fn planned(root: &Path) -> Vec<Audit> {
    let mut out = Vec::new();
    if root.join("package-lock.json").is_file() {
        out.push(Audit {
            label: "npm audit",
            program: "npm",
            args: vec!["audit".into(), "--json".into()],
            dir: root.to_path_buf(),
            file: "package-lock.json".into(),
            parse: npm,
        });
    }
    if root.join("requirements.txt").is_file() {
        out.push(Audit {
            label: "pip-audit",
            program: "pip-audit",
            args: ["-r", "requirements.txt", "-f", "json", "--progress-spinner", "off"]
                .map(String::from)
                .to_vec(),
            dir: root.to_path_buf(),
            file: "requirements.txt".into(),
            parse: pip,
        });
    }
    if root.join("Cargo.lock").is_file() {
        out.push(Audit {
            label: "cargo audit",
            program: "cargo-audit",
            args: vec!["audit".into(), "--json".into()],
            dir: root.to_path_buf(),
            file: "Cargo.lock".into(),
            parse: cargo,
        });
    }
    out
}

/// True when `program` is on `PATH`.
fn installed(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path)
            .any(|dir| std::fs::metadata(dir.join(program)).is_ok_and(|m| m.is_file()))
    })
}

/// Run `audit` within `limit`.
pub async fn run(
    audit: &Audit,
    limit: Duration,
    cancel: &CancellationToken,
) -> (CheckRun, Vec<Finding>) {
    if !installed(audit.program) {
        return (
            CheckRun::skipped(audit.label, format!("{} is not installed", audit.program)),
            Vec::new(),
        );
    }
    let mut command = tokio::process::Command::new(audit.program);
    command
        .args(&audit.args)
        .current_dir(&audit.dir)
        .env_clear()
        .envs(hands_core::env::ChildEnv::vars())
        .env("NO_COLOR", "1")
        .env("CI", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            return (CheckRun::failed(audit.label, format!("it did not start: {err}")), Vec::new());
        }
    };
    let group = Group(child.id().and_then(|id| rustix::process::Pid::from_raw(id as i32)));
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let work = async {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let read = async {
            if let Some(s) = stdout.as_mut() {
                let _ = s.take(64 << 20).read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(s) = stderr.as_mut() {
                let _ = s.take(64 << 10).read_to_end(&mut err).await;
            }
        };
        tokio::join!(read, read_err);
        let _ = child.wait().await;
        (out, err)
    };
    let (out, err) = tokio::select! {
        done = tokio::time::timeout(limit, work) => match done {
            Ok(done) => done,
            Err(_) => {
                drop(group);
                return (CheckRun::failed(audit.label, format!("it did not finish within {} s and was stopped", limit.as_secs())), Vec::new());
            }
        },
        () = cancel.cancelled() => {
            drop(group);
            return (CheckRun::skipped(audit.label, "the scan was stopped"), Vec::new());
        }
    };
    drop(group);
    match serde_json::from_slice::<serde_json::Value>(&out) {
        Ok(json) if json.get("error").is_none() => {
            let findings = (audit.parse)(&json, &audit.file);
            let detail = format!(
                "{}: {} finding{}",
                audit.file,
                findings.len(),
                if findings.len() == 1 { "" } else { "s" }
            );
            (CheckRun::ran(audit.label, detail), findings)
        }
        _ => {
            let text = String::from_utf8_lossy(&err);
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("no output").trim();
            let first: String = first.chars().take(300).collect();
            (
                CheckRun::failed(
                    audit.label,
                    format!("it gave no report (is its advisory service reachable?): {first}"),
                ),
                Vec::new(),
            )
        }
    }
}

/// Kills its process group when dropped.
struct Group(Option<rustix::process::Pid>);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

fn severity(word: &str) -> Severity {
    match word.to_ascii_lowercase().as_str() {
        "critical" => Severity::Critical,
        "high" => Severity::High,
        "low" | "info" => Severity::Low,
        _ => Severity::Medium,
    }
}

fn npm(json: &serde_json::Value, file: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(vulns) = json.get("vulnerabilities").and_then(|v| v.as_object()) else { return out };
    for (name, vuln) in vulns {
        let sev = severity(vuln.get("severity").and_then(|s| s.as_str()).unwrap_or(""));
        let range = vuln.get("range").and_then(|r| r.as_str()).unwrap_or("");
        for via in vuln.get("via").and_then(|v| v.as_array()).into_iter().flatten() {
            let Some(title) = via.get("title").and_then(|t| t.as_str()) else { continue };
            let url = via.get("url").and_then(|u| u.as_str()).unwrap_or("");
            let id = url.rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or("npm-audit");
            out.push(Finding {
                severity: sev,
                check: Check::Dependencies,
                rule: id.to_owned(),
                location: format!("{file}: {name} {range}"),
                message: format!("{title} (npm audit; {url})"),
            });
        }
    }
    out
}

fn pip(json: &serde_json::Value, file: &str) -> Vec<Finding> {
    let deps = json.get("dependencies").or(Some(json)).and_then(|d| d.as_array());
    let mut out = Vec::new();
    for dep in deps.into_iter().flatten() {
        let name = dep.get("name").and_then(|n| n.as_str()).unwrap_or("?");
        let version = dep.get("version").and_then(|n| n.as_str()).unwrap_or("?");
        for vuln in dep.get("vulns").and_then(|v| v.as_array()).into_iter().flatten() {
            let id = vuln.get("id").and_then(|i| i.as_str()).unwrap_or("pip-audit");
            let fixes: Vec<&str> = vuln
                .get("fix_versions")
                .and_then(|f| f.as_array())
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str())
                .collect();
            out.push(Finding {
                severity: Severity::Medium,
                check: Check::Dependencies,
                rule: id.to_owned(),
                location: format!("{file}: {name}@{version}"),
                message: format!(
                    "pip-audit: {id}{}",
                    if fixes.is_empty() {
                        String::new()
                    } else {
                        format!("; fixed in {}", fixes.join(", "))
                    }
                ),
            });
        }
    }
    out
}

fn cargo(json: &serde_json::Value, file: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let list = json.pointer("/vulnerabilities/list").and_then(|l| l.as_array());
    for vuln in list.into_iter().flatten() {
        let id = vuln.pointer("/advisory/id").and_then(|i| i.as_str()).unwrap_or("cargo-audit");
        let title = vuln.pointer("/advisory/title").and_then(|i| i.as_str()).unwrap_or("");
        let name = vuln.pointer("/package/name").and_then(|i| i.as_str()).unwrap_or("?");
        let version = vuln.pointer("/package/version").and_then(|i| i.as_str()).unwrap_or("?");
        out.push(Finding {
            severity: Severity::Medium,
            check: Check::Dependencies,
            rule: id.to_owned(),
            location: format!("{file}: {name}@{version}"),
            message: format!("{title} (cargo audit)"),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_reports_become_findings() {
        let npm_json: serde_json::Value = serde_json::from_str(r#"{"vulnerabilities":{"lodash":{"severity":"high","range":"<4.17.21",
            "via":[{"title":"Prototype Pollution","url":"https://github.com/advisories/GHSA-p6mc-m468-83gw"},"other"]}}}"#).unwrap();
        let found = npm(&npm_json, "package-lock.json");
        assert_eq!(found.len(), 1);
        assert_eq!(
            (found[0].rule.as_str(), found[0].severity),
            ("GHSA-p6mc-m468-83gw", Severity::High)
        );
        let pip_json: serde_json::Value = serde_json::from_str(r#"{"dependencies":[{"name":"requests","version":"2.19.0","vulns":[{"id":"PYSEC-2018-28","fix_versions":["2.20.0"]}]}]}"#).unwrap();
        assert!(pip(&pip_json, "requirements.txt")[0].message.contains("fixed in 2.20.0"));
        assert!(!installed("surely-no-such-program-hands"));
    }
}
