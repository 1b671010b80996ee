//! add_dependency through the real binary against real package managers and registries, all
//! on this machine: npm, pnpm and bun against a Verdaccio started by the test with no uplink;
//! a missing package, a missing version, a peer conflict; a registry that accepts connections
//! and never answers (the time limit stops the whole tree, and the manager's environment is the
//! one every child of the project gets); `cargo add` of a workspace member offline; pip against
//! a simple index served from a folder over HTTP on 127.0.0.1, with a wheel built here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
mod registry;

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{Value, json};

use registry::{Verdaccio, path_with, tools_bin};

/// A temp HOME, state folder and caches for one test.
struct Setup {
    tmp: tempfile::TempDir,
    bin: PathBuf,
}

impl Setup {
    fn new(bin: PathBuf) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("home/.config/hands")).unwrap();
        Self { tmp, bin }
    }

    fn dir(&self, name: &str) -> PathBuf {
        let dir = self.tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A JavaScript project `name` using `registry` (its package.json is `manifest`).
    fn js_project(&self, name: &str, manifest: Value, registry: &str) -> PathBuf {
        let dir = self.dir(name);
        std::fs::write(dir.join("package.json"), manifest.to_string()).unwrap();
        std::fs::write(dir.join(".npmrc"), format!("registry={registry}\n")).unwrap();
        dir
    }

    /// `hands` with this test's HOME, state folder, PATH and caches.
    fn hands(&self) -> StdCommand {
        let mut command = StdCommand::new(assert_cmd::cargo::cargo_bin("hands"));
        let cache = self.tmp.path().join("cache");
        command
            .env("HOME", self.tmp.path().join("home"))
            .env("XDG_STATE_HOME", self.tmp.path().join("state"))
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("HANDS_APPROVAL")
            .env("PATH", path_with(&self.bin))
            .env("npm_config_cache", cache.join("npm"))
            .env("npm_config_store_dir", cache.join("pnpm-store"))
            .env("BUN_INSTALL_CACHE_DIR", cache.join("bun"))
            .env("CARGO_NET_OFFLINE", "true")
            // cargo is rustup's proxy, which finds its toolchains from HOME.
            .env("RUSTUP_HOME", real_home(".rustup", "RUSTUP_HOME"))
            .env("CARGO_HOME", real_home(".cargo", "CARGO_HOME"))
            // The tool's own limit, under the test's: a hang is reported, not cut off.
            .args(["-c", "deps.timeout_ms=150000"]);
        command
    }

    fn command(&self, root: &Path, args: &Value, flags: &[&str]) -> StdCommand {
        let mut command = self.hands();
        command
            .args(flags)
            .args(["call", "add_dependency"])
            .arg(args.to_string())
            .args(["--json", "--root"])
            .arg(root)
            .stdin(Stdio::null());
        command
    }

    /// `hands call add_dependency ARGS --json` in `root`: the exit code and the parsed result.
    fn add(&self, root: &Path, args: Value, flags: &[&str]) -> (i32, Value) {
        let out = Command::from_std(self.command(root, &args, flags))
            .timeout(Duration::from_secs(240))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let value: Value = serde_json::from_str(&stdout).unwrap_or_else(|_| {
            panic!("not JSON: {stdout}\n{}", String::from_utf8_lossy(&out.stderr))
        });
        (out.status.code().unwrap_or(-1), value)
    }
}

/// `$VAR`, else `$HOME/dir` of the real user.
fn real_home(dir: &str, var: &str) -> PathBuf {
    std::env::var_os(var).map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(dir),
        PathBuf::from,
    )
}

fn text(result: &Value) -> String {
    result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect()
}

fn change<'a>(result: &'a Value, name: &str) -> &'a Value {
    let changes = result["structuredContent"]["changes"].as_array().unwrap();
    changes.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("{name}: {result:#}"))
}

/// The version `bin/manager --version` prints: a `packageManager` field naming another one would
/// make pnpm fetch that version first.
fn version(bin: &Path, manager: &str) -> String {
    let out = StdCommand::new(bin.join(manager)).arg("--version").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn publish_fixture_packages(registry: &Verdaccio) {
    registry.publish("hands-left", "1.0.0", json!({}));
    registry.publish("hands-left", "1.2.0", json!({}));
    registry.publish("peer-base", "1.0.0", json!({}));
    registry.publish("peer-base", "2.0.0", json!({}));
    registry.publish("peer-host", "1.0.0", json!({"peerDependencies": {"peer-base": "^2.0.0"}}));
}

#[test]
fn npm_adds_and_explains_each_failure() {
    let Some(bin) = tools_bin() else { return };
    let setup = Setup::new(bin);
    let registry = Verdaccio::start(&setup.bin, &setup.dir("registry"));
    publish_fixture_packages(&registry);
    let base = json!({"name": "fx", "version": "1.0.0", "private": true,
                      "dependencies": {"peer-base": "1.0.0"}});
    let project = setup.js_project("npm-app", base, &registry.url());

    // Added: package.json and package-lock.json say so, and the result reads them.
    let (code, result) = setup.add(&project, json!({"packages": ["hands-left@^1.0.0"]}), &[]);
    assert_eq!(code, 0, "{result:#}");
    let s = &result["structuredContent"];
    assert_eq!(s["manager"], "npm");
    assert_eq!(s["ok"], true);
    // The exact argv: the manager by its absolute path, found on PATH outside the project.
    let program = s["command"][0].as_str().unwrap_or_default();
    assert!(program.starts_with('/') && program.ends_with("/npm"), "{program}");
    let left = change(&result, "hands-left");
    assert_eq!((left["status"].as_str(), left["version"].as_str()), (Some("added"), Some("1.2.0")));
    assert_eq!(left["requirement"], "^1.2.0");
    assert_eq!(read_json(&project.join("package.json"))["dependencies"]["hands-left"], "^1.2.0");
    let lock = read_json(&project.join("package-lock.json"));
    assert_eq!(lock["packages"]["node_modules/hands-left"]["version"], "1.2.0");
    assert!(text(&result).contains("+ hands-left 1.2.0"), "{}", text(&result));

    // A dev dependency, pinned to an older version: an update of the same package.
    let (code, result) =
        setup.add(&project, json!({"packages": ["hands-left@1.0.0"], "dev": true}), &[]);
    assert_eq!(code, 0, "{result:#}");
    let left = change(&result, "hands-left");
    assert_eq!(left["dev"], true, "{result:#}");
    assert_eq!((left["before"].as_str(), left["version"].as_str()), (Some("1.2.0"), Some("1.0.0")));

    let cases = [
        ("no-such-package-hands", "unknown_package", "no package of that name"),
        ("hands-left@9.9.9", "version_not_found", "no published version matches"),
        ("peer-host", "peer_conflict", "peer dependencies conflict"),
    ];
    for (spec, cause, says) in cases {
        let before = std::fs::read(project.join("package.json")).unwrap();
        let (code, result) = setup.add(&project, json!({"packages": [spec]}), &[]);
        assert_eq!(code, 1, "{spec}: {result:#}");
        let s = &result["structuredContent"];
        assert_eq!((s["ok"].as_bool(), s["cause"].as_str()), (Some(false), Some(cause)), "{spec}");
        assert!(!s["output_tail"].as_str().unwrap().is_empty());
        assert!(s["output_tail"].as_str().unwrap().lines().count() <= 40);
        assert!(text(&result).contains(says), "{spec}: {}", text(&result));
        assert_eq!(std::fs::read(project.join("package.json")).unwrap(), before, "{spec}");
    }

    // Bad specs never reach npm.
    for (spec, says) in [
        ("--registry=http://127.0.0.1:9/", "starts with `-`"),
        ("git+https://github.com/a/b.git", "not a registry package"),
        ("file:../x", "not a registry package"),
        ("https://127.0.0.1:9/x.tgz", "not a registry package"),
        ("Bad Name", "not an npm package name"),
    ] {
        let (code, result) = setup.add(&project, json!({"packages": [spec]}), &[]);
        assert_eq!(code, 1, "{spec}");
        assert!(text(&result).contains(says), "{spec}: {}", text(&result));
        assert!(result["structuredContent"].is_null(), "{spec}: nothing ran");
    }
    let many: Vec<String> = (0..21).map(|i| format!("p{i}")).collect();
    let (_, result) = setup.add(&project, json!({"packages": many}), &[]);
    assert!(text(&result).contains("packages"), "{}", text(&result));
    let (_, result) = setup.add(&project, json!({"packages": []}), &[]);
    assert!(result["isError"].as_bool().unwrap(), "{result:#}");
    let (_, result) = setup.add(&project, json!({"packages": ["x"], "path": "../elsewhere"}), &[]);
    assert!(text(&result).contains("outside the project root"), "{}", text(&result));
}

#[test]
fn pnpm_and_bun_add_from_the_local_registry() {
    let Some(bin) = tools_bin() else { return };
    let setup = Setup::new(bin);
    let registry = Verdaccio::start(&setup.bin, &setup.dir("registry"));
    publish_fixture_packages(&registry);
    for (manager, lock) in [("pnpm", "pnpm-lock.yaml"), ("bun", "bun.lock")] {
        let manifest = json!({"name": format!("{manager}-app"), "version": "1.0.0", "private": true,
                              "packageManager": format!("{manager}@{}", version(&setup.bin, manager))});
        let project = setup.js_project(&format!("{manager}-app"), manifest, &registry.url());
        let (code, result) = setup.add(&project, json!({"packages": ["hands-left"]}), &[]);
        assert_eq!(code, 0, "{manager}: {result:#}");
        let s = &result["structuredContent"];
        assert_eq!(s["manager"], manager);
        assert!(s["detected_by"].as_str().unwrap().contains("packageManager"), "{s:#}");
        assert_eq!(s["lock_file"], lock, "{s:#}");
        let left = change(&result, "hands-left");
        assert_eq!(left["status"], "added", "{manager}: {result:#}");
        assert_eq!(left["version"], "1.2.0", "{manager}: {result:#}");
        let declared =
            read_json(&project.join("package.json"))["dependencies"]["hands-left"].clone();
        assert!(declared.as_str().unwrap().contains("1.2.0"), "{manager}: {declared}");
        let lock_text = std::fs::read_to_string(project.join(lock)).unwrap();
        assert!(lock_text.contains("hands-left@1.2.0"), "{manager}: {lock_text}");

        let (code, result) = setup.add(&project, json!({"packages": ["hands-left@7.0.0"]}), &[]);
        assert_eq!(code, 1, "{manager}");
        assert_eq!(result["structuredContent"]["cause"], "version_not_found", "{result:#}");
        let (code, result) =
            setup.add(&project, json!({"packages": ["no-such-package-hands"]}), &[]);
        assert_eq!(code, 1, "{manager}");
        assert_eq!(result["structuredContent"]["cause"], "unknown_package", "{result:#}");
    }
    // pnpm installs a package whose peer is unmet, with a warning the result carries.
    let manifest = json!({"name": "peer-app", "version": "1.0.0", "private": true,
                          "packageManager": format!("pnpm@{}", version(&setup.bin, "pnpm")),
                          "dependencies": {"peer-base": "1.0.0"}});
    let project = setup.js_project("pnpm-peer", manifest, &registry.url());
    let (code, result) = setup.add(&project, json!({"packages": ["peer-host"]}), &[]);
    assert_eq!(code, 0, "{result:#}");
    let warnings = result["structuredContent"]["warnings"].to_string();
    assert!(warnings.contains("unmet peer peer-base"), "{result:#}");
}

#[test]
fn a_registry_that_never_answers_times_out_and_nothing_is_left() {
    let Some(bin) = tools_bin() else { return };
    let setup = Setup::new(bin);
    let silent = registry::silent_registry();
    let project = setup.js_project(
        "hung",
        json!({"name": "hung", "version": "1.0.0", "private": true}),
        &format!("http://127.0.0.1:{silent}/"),
    );
    // A secret granted to this project reaches the manager; one of another project does not.
    let store = hands_secrets::Store::at(setup.tmp.path().join("state/hands/secrets"));
    use hands_core::secret::{SecretStore as _, SecretValue};
    store.put(&project, "DEPS_GRANTED", &SecretValue::new("granted-canary-5f1e2d")).unwrap();
    store.put(&setup.dir("other"), "DEPS_OTHER", &SecretValue::new("other-canary-8a7b6c")).unwrap();
    let marker = format!("HANDS_DEPS_TREE={}", std::process::id());
    let mut command = setup.command(
        &project,
        &json!({"packages": ["hands-left"]}),
        &["-c", "deps.timeout_ms=6000"],
    );
    command
        .env("HANDS_DEPS_TREE", std::process::id().to_string())
        .env("DEPS_OTHER", "leaked-from-hands-env")
        .env("ANTHROPIC_API_KEY", "sk-ant-never-to-a-child")
        .stdout(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    // While npm waits on the silent registry (until hands stops it): its environment.
    let mut seen = None;
    while seen.is_none() && child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(120), "hands did not stop npm");
        seen = common::live_with_env(&marker).into_iter().find_map(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            (comm.trim() == "npm" || comm.trim() == "node")
                .then(|| std::fs::read(format!("/proc/{pid}/environ")).ok())
                .flatten()
                .filter(|env| env.windows(3).any(|w| w == b"CI="))
        });
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let env = String::from_utf8_lossy(&seen.expect("npm was seen running")).replace('\0', "\n");
    assert!(env.lines().any(|l| l == "CI=1"), "{env}");
    assert!(env.lines().any(|l| l == "DEPS_GRANTED=granted-canary-5f1e2d"), "{env}");
    assert!(!env.contains("DEPS_OTHER") && !env.contains("other-canary"), "{env}");
    assert!(!env.contains("sk-ant-never"), "{env}");

    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{result:#}");
    assert_eq!(result["structuredContent"]["cause"], "timeout", "{result:#}");
    assert!(text(&result).contains("took too long"), "{}", text(&result));
    assert!(took < Duration::from_secs(60), "{took:?}");
    assert!(common::live_with_env(&marker).is_empty(), "processes left after the timeout");
}

#[test]
fn cargo_adds_a_workspace_member_offline() {
    if registry::which("cargo").is_none() {
        assert!(std::env::var_os("CI").is_none(), "cargo is missing");
        eprintln!("\n*** SKIPPED: cargo is missing ***\n");
        return;
    }
    let setup = Setup::new(PathBuf::from("/nonexistent"));
    let ws = setup.dir("ws");
    let write = |path: &str, text: &str| {
        let path = ws.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("Cargo.toml", "[workspace]\nmembers = [\"app\", \"helper\"]\nresolver = \"2\"\n");
    write(
        "app/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    write("app/src/main.rs", "fn main() {}\n");
    write(
        "helper/Cargo.toml",
        "[package]\nname = \"helper\"\nversion = \"0.2.0\"\nedition = \"2021\"\n",
    );
    write("helper/src/lib.rs", "");
    let (code, result) = setup.add(&ws, json!({"packages": ["helper"], "path": "app"}), &[]);
    assert_eq!(code, 0, "{result:#}");
    let s = &result["structuredContent"];
    assert_eq!((s["manager"].as_str(), s["path"].as_str()), (Some("cargo"), Some("app")));
    assert_eq!(s["lock_file"], "Cargo.lock", "{s:#}");
    let helper = change(&result, "helper");
    assert_eq!(
        (helper["status"].as_str(), helper["version"].as_str()),
        (Some("added"), Some("0.2.0"))
    );
    assert!(helper["requirement"].as_str().unwrap().contains("../helper"), "{helper}");
    let manifest = std::fs::read_to_string(ws.join("app/Cargo.toml")).unwrap();
    assert!(
        manifest.contains("helper = { version = \"0.2.0\", path = \"../helper\" }"),
        "{manifest}"
    );

    let (code, result) =
        setup.add(&ws, json!({"packages": ["no_such_crate_hands"], "path": "app"}), &[]);
    assert_eq!(code, 1, "{result:#}");
    assert_eq!(result["structuredContent"]["cause"], "unknown_package", "{result:#}");
    let (_, result) = setup.add(&ws, json!({"packages": ["helper/feature"], "path": "app"}), &[]);
    assert!(text(&result).contains("not a crate name"), "{}", text(&result));
}

/// A wheel of `name` `version` with one module, built with Python's zipfile.
fn build_wheel(python: &str, dir: &Path, name: &str, version: &str) -> String {
    let file = format!("{name}-{version}-py3-none-any.whl");
    let script = format!(
        "import zipfile,hashlib,base64\n\
         n,v='{name}','{version}'\n\
         di=f'{{n}}-{{v}}.dist-info'\n\
         files={{f'{{n}}/__init__.py': f'VERSION = \"{{v}}\"\\n',\n\
                f'{{di}}/METADATA': f'Metadata-Version: 2.1\\nName: {{n}}\\nVersion: {{v}}\\n',\n\
                f'{{di}}/WHEEL': 'Wheel-Version: 1.0\\nGenerator: hands-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'}}\n\
         rec=''\n\
         for p,t in files.items():\n\
         \x20   d=base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b'=').decode()\n\
         \x20   rec+=f'{{p}},sha256={{d}},{{len(t.encode())}}\\n'\n\
         files[f'{{di}}/RECORD']=rec+f'{{di}}/RECORD,,\\n'\n\
         with zipfile.ZipFile('{file}','w') as z:\n\
         \x20   [z.writestr(p,t) for p,t in files.items()]\n"
    );
    let out = StdCommand::new(python).arg("-c").arg(script).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    file
}

#[test]
fn pip_installs_from_a_local_index_and_pins_it() {
    let Some(python) = ["python3", "python"].into_iter().find(|p| registry::which(p).is_some())
    else {
        assert!(std::env::var_os("CI").is_none(), "python3 is missing");
        eprintln!("\n*** SKIPPED: python3 is missing ***\n");
        return;
    };
    let setup = Setup::new(PathBuf::from("/nonexistent"));
    // The index: /simple/hands-wheel/ links to the wheels, served by Python's http.server.
    let index = setup.dir("index");
    let files = index.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let mut links = String::new();
    for version in ["1.0.0", "1.1.0"] {
        let wheel = build_wheel(python, &files, "hands_wheel", version);
        links.push_str(&format!("<a href=\"../../files/{wheel}\">{wheel}</a>\n"));
    }
    std::fs::create_dir_all(index.join("simple/hands-wheel")).unwrap();
    std::fs::write(
        index.join("simple/hands-wheel/index.html"),
        format!("<html><body>\n{links}</body></html>\n"),
    )
    .unwrap();
    std::fs::write(index.join("simple/index.html"), "<a href=\"hands-wheel/\">hands-wheel</a>\n")
        .unwrap();
    let port = registry::free_port();
    let mut server = StdCommand::new(python)
        .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1", "--directory"])
        .arg(&index)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while registry::http(port, "GET", "/simple/", "").is_none() {
        assert!(started.elapsed() < Duration::from_secs(20), "the index did not start");
        std::thread::sleep(Duration::from_millis(100));
    }

    let project = setup.dir("py-app");
    std::fs::write(project.join("requirements.txt"), "# the app's packages\n").unwrap();
    let venv = StdCommand::new(python)
        .args(["-m", "venv", ".venv"])
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(venv.status.success(), "{}", String::from_utf8_lossy(&venv.stderr));
    let index_url = format!("http://127.0.0.1:{port}/simple/");
    // The project's .venv is the repository's program: `hands call` (approval = "auto") runs it
    // only when the user allows repository programs.
    let flags: &[&str] = &["-c", "deps.allow_project_programs=true"];
    let run = |args: Value| {
        let mut command = setup.command(&project, &args, flags);
        command.env("PIP_INDEX_URL", &index_url).env("PIP_NO_CACHE_DIR", "1");
        let out = Command::from_std(command).timeout(Duration::from_secs(240)).output().unwrap();
        let value: Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code().unwrap_or(-1), value)
    };
    let (code, result) = run(json!({"packages": ["hands-wheel"]}));
    assert_eq!(code, 0, "{result:#}");
    let s = &result["structuredContent"];
    assert_eq!(
        (s["manager"].as_str(), s["pinned_in"].as_str()),
        (Some("pip"), Some("requirements.txt"))
    );
    let wheel = change(&result, "hands-wheel");
    assert_eq!(
        (wheel["status"].as_str(), wheel["version"].as_str()),
        (Some("added"), Some("1.1.0"))
    );
    let requirements = std::fs::read_to_string(project.join("requirements.txt")).unwrap();
    assert_eq!(requirements, "# the app's packages\nhands-wheel==1.1.0\n");
    assert!(project.join(".venv/lib").read_dir().unwrap().next().is_some());

    let (code, result) = run(json!({"packages": ["hands-wheel==1.0.0"]}));
    assert_eq!(code, 0, "{result:#}");
    let wheel = change(&result, "hands-wheel");
    assert_eq!(wheel["status"], "updated", "{result:#}");
    let requirements = std::fs::read_to_string(project.join("requirements.txt")).unwrap();
    assert_eq!(requirements, "# the app's packages\nhands-wheel==1.0.0\n");

    let (code, result) = run(json!({"packages": ["hands-wheel==5.0"]}));
    assert_eq!(code, 1);
    assert_eq!(result["structuredContent"]["cause"], "version_not_found", "{result:#}");
    let (code, result) = run(json!({"packages": ["no-such-wheel-hands"]}));
    assert_eq!(code, 1);
    assert_eq!(result["structuredContent"]["cause"], "unknown_package", "{result:#}");
    let _ = server.kill();
    let _ = server.wait();
}

/// `hands mcp` driven over stdio, one JSON-RPC line at a time (enough for tools/call).
struct Mcp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    next: u64,
}

impl Mcp {
    fn start(setup: &Setup, root: &Path) -> Self {
        let mut command = setup.hands();
        command
            .args(["mcp", "--root"])
            .arg(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut mcp = Self { child, stdin, lines, next: 0 };
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "add-dependency-test", "version": "0"}});
        mcp.request("initialize", init);
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        use std::io::Write as _;
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(240);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).expect("hands mcp answered in time");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_running_dev_server_is_judged() {
    let Some(bin) = tools_bin() else { return };
    let vite = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/preview/fixtures/vite-app/node_modules/.bin/vite");
    if !vite.exists() {
        assert!(std::env::var_os("CI").is_none(), "tests/preview/fixtures/vite-app needs npm ci");
        eprintln!(
            "\n*** SKIPPED: tests/preview/fixtures/vite-app/node_modules is not installed ***\n"
        );
        return;
    }
    let setup = Setup::new(bin);
    let registry = Verdaccio::start(&setup.bin, &setup.dir("registry"));
    registry.publish("hands-left", "1.2.0", json!({}));
    let manifest = json!({"name": "web", "version": "1.0.0", "private": true,
                          "scripts": {"dev": "node server.js"}});
    let project = setup.js_project("web", manifest, &registry.url());
    std::fs::write(project.join("index.html"), "<h1>web</h1>\n").unwrap();
    let port = registry::free_port();
    std::fs::write(
        project.join("server.js"),
        format!(
            "require('http').createServer((q, s) => s.end('ok')).listen({port}, '127.0.0.1', \
             () => console.log('listening on http://127.0.0.1:{port}'));\n"
        ),
    )
    .unwrap();
    let mut mcp = Mcp::start(&setup, &project);
    let node = mcp.call("spawn_process", json!({"command": "npm run dev", "type": "daemon"}));
    assert_eq!(node["structuredContent"]["status"], "running", "{node:#}");
    let vite_port = registry::free_port();
    let command = format!("{} --port {vite_port} --strictPort --host 127.0.0.1", vite.display());
    let started = mcp.call("spawn_process", json!({"command": command, "type": "daemon"}));
    assert_eq!(started["structuredContent"]["status"], "running", "{started:#}");

    let result = mcp.call("add_dependency", json!({"packages": ["hands-left"]}));
    assert_eq!(result["isError"], false, "{result:#}");
    let servers = result["structuredContent"]["dev_servers"].as_array().unwrap().clone();
    assert_eq!(servers.len(), 2, "{result:#}");
    let node = servers.iter().find(|s| s["command"] == "npm run dev").unwrap();
    assert_eq!(
        (node["picks_up"].as_bool(), node["needs_restart"].as_bool()),
        (Some(false), Some(true))
    );
    assert!(node["note"].as_str().unwrap().contains("stop_process"), "{node}");
    let vite = servers.iter().find(|s| s["command"].as_str().unwrap().contains("vite")).unwrap();
    assert_eq!(
        (vite["picks_up"].as_bool(), vite["needs_restart"].as_bool()),
        (Some(true), Some(false))
    );
    assert!(vite["note"].as_str().unwrap().contains("re-optimises"), "{vite}");
    let text = text(&result);
    assert!(text.contains("offer the user to restart it"), "{text}");
}

#[test]
fn under_ask_nothing_runs_without_the_users_yes() {
    let setup = Setup::new(PathBuf::from("/nonexistent"));
    let project =
        setup.js_project("app", json!({"name": "app", "version": "1.0.0"}), "http://127.0.0.1:9/");
    let mut command = setup.command(&project, &json!({"packages": ["left-pad"]}), &[]);
    command.env("HANDS_APPROVAL", "ask");
    let out = Command::from_std(command).timeout(Duration::from_secs(60)).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(text(&result).contains("needs the user's approval"), "{result:#}");
    assert!(!project.join("node_modules").exists() && !project.join("package-lock.json").exists());
}
