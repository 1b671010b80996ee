//! A real npm registry for the tests (as crates/cli/tests/add_dependency has it): Verdaccio from `tests/deps/node_modules` (installed by
//! `.ci/run` with `npm ci`), started on a free loopback port with no uplink (offline), a test
//! user created over its API, and packages published into it with `npm publish`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The folder of the test tools' executables (verdaccio, pnpm, bun, yarn), or `None` (with a loud
/// note) when they are not installed; with `CI` set that is a failure.
pub fn tools_bin() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/deps/node_modules/.bin");
    let ready = ["verdaccio", "pnpm", "bun", "yarn"].iter().all(|t| bin.join(t).exists())
        && which("npm").is_some();
    if ready {
        return Some(bin.canonicalize().unwrap());
    }
    let why = "tests/deps/node_modules is not installed (run `cd tests/deps && npm ci`) or npm is missing";
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("\n*** SKIPPED: {why} ***\n");
    None
}

/// `program` on PATH.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

/// PATH with the test tools first.
pub fn path_with(bin: &Path) -> std::ffi::OsString {
    let mut parts = vec![bin.to_path_buf()];
    parts.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(parts).unwrap()
}

/// A free port on 127.0.0.1 (bound and released: the caller binds it next).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One HTTP/1.1 request to 127.0.0.1:`port`; the response's status and body.
pub fn http(port: u16, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    Some((status, body))
}

/// A running Verdaccio; stopped on drop.
pub struct Verdaccio {
    child: Child,
    pub port: u16,
    token: String,
    dir: PathBuf,
}

impl Verdaccio {
    /// Start one with its storage under `dir`.
    pub fn start(bin: &Path, dir: &Path) -> Self {
        std::fs::create_dir_all(dir.join("storage")).unwrap();
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            "storage: ./storage\nauth:\n  htpasswd:\n    file: ./htpasswd\n    max_users: 100\n\
             uplinks: {}\npackages:\n  '**':\n    access: $all\n    publish: $authenticated\n\
             log: { type: stdout, format: pretty, level: warn }\n",
        )
        .unwrap();
        let port = free_port();
        let child = Command::new(bin.join("verdaccio"))
            .arg("--config")
            .arg(&config)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while http(port, "GET", "/-/ping", "").is_none_or(|(s, _)| s != 200) {
            // Generous: on a loaded two-core machine Node takes its time.
            assert!(started.elapsed() < Duration::from_secs(180), "verdaccio did not start");
            std::thread::sleep(Duration::from_millis(200));
        }
        let (status, body) = http(
            port,
            "PUT",
            "/-/user/org.couchdb.user:tester",
            r#"{"name": "tester", "password": "tester-password-1"}"#,
        )
        .unwrap();
        assert_eq!(status, 201, "{body}");
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        let token = json["token"].as_str().unwrap().to_owned();
        Self { child, port, token, dir: dir.to_path_buf() }
    }

    /// `http://127.0.0.1:PORT/`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// Publish `name@version` (a one-file package; `extra` adds fields to its package.json).
    pub fn publish(&self, name: &str, version: &str, extra: serde_json::Value) {
        let dir = self.dir.join("packages").join(format!("{}-{version}", name.replace('/', "+")));
        std::fs::create_dir_all(&dir).unwrap();
        let mut manifest =
            serde_json::json!({"name": name, "version": version, "main": "index.js"});
        if let (Some(m), Some(e)) = (manifest.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        std::fs::write(dir.join("package.json"), manifest.to_string()).unwrap();
        std::fs::write(dir.join("index.js"), format!("module.exports = '{name}@{version}';\n"))
            .unwrap();
        std::fs::write(
            dir.join(".npmrc"),
            format!("//127.0.0.1:{}/:_authToken={}\n", self.port, self.token),
        )
        .unwrap();
        let out = Command::new("npm")
            .args(["publish", "--registry", &self.url(), "--loglevel=error"])
            .env("npm_config_cache", self.dir.join("npm-cache"))
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for Verdaccio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
