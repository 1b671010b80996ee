//! A real PostgreSQL server for tests: initdb and pg_ctl run as the `postgres` user (tests run as
//! root) in a temp folder, listening on 127.0.0.1 and a free port, with password authentication
//! (scram-sha-256) for the role `hands_test`. Stopped (`pg_ctl stop -m immediate`, bounded) when
//! dropped. Shared by hands-connect's tests and the binary's (`crates/cli/tests/it/results.rs`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The password of `hands_test`.
pub const PASSWORD: &str = "CANARYdbpass-8c1f2e";

/// A PostgreSQL server of our own, stopped when dropped.
pub struct Postgres {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Postgres {
    /// Start one, or `None` when this machine has no PostgreSQL. With `tls`: a self-signed certificate, `ssl = on`, and every connection logged.
    pub fn start_with(tls: bool) -> Option<Self> {
        let bin = ["15", "16", "17", "14"]
            .iter()
            .map(|v| PathBuf::from(format!("/usr/lib/postgresql/{v}/bin")))
            .find(|b| b.join("initdb").exists() && b.join("pg_ctl").exists())?;
        let dir = tempfile::Builder::new().prefix("hands-pg-").tempdir().unwrap();
        let owner = |path: &Path| {
            let status =
                Command::new("chown").args(["-R", "postgres:postgres"]).arg(path).status().unwrap();
            assert!(status.success(), "chown {}", path.display());
        };
        let data = dir.path().join("data");
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, format!("{PASSWORD}\n")).unwrap();
        owner(dir.path());
        let as_postgres = |program: &str| {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(bin.join(program));
            cmd
        };
        let out = as_postgres("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "hands_test", "--auth=scram-sha-256", "--no-sync", "-E", "UTF8"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        let mut options = String::new();
        if tls {
            let out = Command::new("openssl")
                .args([
                    "req",
                    "-x509",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-days",
                    "1",
                    "-subj",
                    "/CN=localhost",
                ])
                .arg("-keyout")
                .arg(data.join("server.key"))
                .arg("-out")
                .arg(data.join("server.crt"))
                .output()
                .unwrap();
            assert!(out.status.success(), "openssl: {}", String::from_utf8_lossy(&out.stderr));
            owner(&data);
            std::fs::set_permissions(
                data.join("server.key"),
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
            )
            .unwrap();
            options.push_str(" -c ssl=on -c log_connections=on");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let out = as_postgres("pg_ctl")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(dir.path().join("log"))
            .args(["-w", "-t", "30", "-o"])
            .arg(format!(
                "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off{options}",
                dir.path().display()
            ))
            .arg("start")
            .output()
            .unwrap();
        let log = std::fs::read_to_string(dir.path().join("log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "pg_ctl start: {}\n{log}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(Self { bin, data, port, _dir: dir })
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("log")).unwrap_or_default()
    }

    pub fn url(&self, password: &str) -> String {
        format!(
            "postgresql://hands_test:{password}@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "-t", "10", "stop"])
            .output();
    }
}

pub fn postgres_or_skip() -> Option<Postgres> {
    postgres_or_skip_with(false)
}

pub fn postgres_or_skip_with(tls: bool) -> Option<Postgres> {
    match Postgres::start_with(tls) {
        Some(pg) => Some(pg),
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "PostgreSQL is not installed (/usr/lib/postgresql/*/bin): CI must install the postgresql package"
            )
        }
        None => {
            eprintln!(
                "SKIPPED: PostgreSQL is not installed (/usr/lib/postgresql/*/bin); install the postgresql package to run this test"
            );
            None
        }
    }
}
