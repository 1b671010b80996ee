//! What the bwrap sandbox confines (issue 11, items 1, 2 and 9), through the real `hands` binary
//! run as the test's user (root in CI): no capabilities inside (`CapEff` 0, `mount -o remount`
//! fails), nothing writable outside the project and the sandbox's own /tmp; the host's loopback is
//! unreachable both without a network (the default) and with `sandbox.network = true` (slirp4netns
//! with `--disable-host-loopback`), while the sandbox's own loopback works; and under `hands
//! serve` a session's sandbox binds the session's root, not a folder named by its project id.
//!
//! No traffic leaves loopback: the network test only checks that slirp's tap0 is there.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hands_mcp::sandbox::find_on_path;
use serde_json::{Value, json};

fn hands_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("hands")
}

/// bubblewrap, or false locally when it is missing (CI must have it: the test fails there).
fn have(program: &str) -> bool {
    if find_on_path(program).is_some() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "{program} is required in CI");
    eprintln!("!!!!! {program} is not installed: SKIPPING this sandbox test !!!!!");
    false
}

/// A folder outside /tmp (which the sandbox replaces with its own), with `proj` and a sibling
/// `outside` in it.
fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("proj");
    let outside = base.join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    (tmp, root, outside)
}

/// `hands call bash` under bwrap; returns what it printed (stdout and stderr).
fn sandboxed_bash(root: &Path, flags: &[&str], command: &str) -> String {
    let out = Command::new(hands_bin())
        .env("HANDS_STATE_DIR", root.with_file_name("state")) // beside the root: a root holding it is refused
        .arg("--root")
        .arg(root)
        .args(["-c", "sandbox.backend=\"bwrap\""])
        .args(flags.iter().flat_map(|f| ["-c", f]))
        .args(["call", "bash"])
        .arg(format!("command={command}"))
        .output()
        .unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    text
}

#[test]
fn the_sandbox_has_no_capabilities_and_only_the_project_is_writable() {
    if !have("bwrap") {
        return;
    }
    let (_tmp, root, outside) = workspace();
    let probe = format!("hands-probe-{}", std::process::id());
    let var_tmp = Path::new("/var/tmp").join(&probe);
    let shm = Path::new("/dev/shm").join(&probe);
    let command = format!(
        "grep CapEff /proc/self/status; \
         mount -o remount,rw / 2>/dev/null && echo REMOUNTED; \
         touch {var_tmp} 2>/dev/null && echo VAR-TMP-WRITTEN; \
         touch {outside}/x 2>/dev/null && echo OUTSIDE-WRITTEN; \
         touch /dev/shm/{probe} && echo SHM-PRIVATE; \
         touch /tmp/{probe} && echo TMP-PRIVATE; \
         touch made.txt && echo PROJECT-WRITTEN",
        var_tmp = var_tmp.display(),
        outside = outside.display(),
    );
    let text = sandboxed_bash(&root, &[], &command);
    let _ = std::fs::remove_file(&var_tmp);
    assert!(text.contains("CapEff:\t0000000000000000"), "capabilities inside: {text}");
    assert!(!text.contains("REMOUNTED"), "remounted / read-write: {text}");
    assert!(!text.contains("VAR-TMP-WRITTEN"), "wrote the host's /var/tmp: {text}");
    assert!(!text.contains("OUTSIDE-WRITTEN"), "wrote outside the project: {text}");
    assert!(text.contains("SHM-PRIVATE") && text.contains("TMP-PRIVATE"), "{text}");
    assert!(!shm.exists() && !Path::new("/tmp").join(&probe).exists(), "not private: {text}");
    assert!(text.contains("PROJECT-WRITTEN"), "{text}");
    // Files written in the project belong to the real user (the user namespace maps our ids):
    // the same owner as a file the test writes itself.
    use std::os::unix::fs::MetadataExt as _;
    std::fs::write(root.join("mine.txt"), "").unwrap();
    let ours = std::fs::metadata(root.join("mine.txt")).unwrap();
    let made = std::fs::metadata(root.join("made.txt")).unwrap();
    assert_eq!((made.uid(), made.gid()), (ours.uid(), ours.gid()));
}

/// Try the host's listener from inside; true when the sandbox reached it.
fn reaches_host(root: &Path, flags: &[&str], listener: &TcpListener) -> (bool, String) {
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' 2>/dev/null \
         && echo HOST-REACHED || echo HOST-UNREACHABLE; \
         tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ,; echo"
    );
    let text = sandboxed_bash(root, flags, &command);
    listener.set_nonblocking(true).unwrap();
    let accepted = listener.accept().is_ok();
    (accepted || text.contains("HOST-REACHED"), text)
}

#[test]
fn the_host_loopback_is_unreachable_without_a_network() {
    if !have("bwrap") {
        return;
    }
    let (_tmp, root, _) = workspace();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    // No flag: the default is no network.
    let (reached, text) = reaches_host(&root, &[], &listener);
    assert!(!reached, "the sandbox reached the host's 127.0.0.1: {text}");
    assert!(text.contains("HOST-UNREACHABLE"), "{text}");
    assert!(text.lines().any(|l| l.trim() == "lo,"), "only loopback: {text}");
}

#[test]
fn the_host_loopback_is_unreachable_with_the_sandbox_network() {
    if !have("bwrap") || !have("slirp4netns") {
        return;
    }
    let (_tmp, root, _) = workspace();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let (reached, text) = reaches_host(&root, &["sandbox.network=true"], &listener);
    assert!(!reached, "the sandbox reached the host's 127.0.0.1: {text}");
    assert!(text.contains("HOST-UNREACHABLE"), "{text}");
    assert!(text.contains("tap0"), "slirp4netns gave the sandbox no network: {text}");
    // The sandbox's own loopback works: a listener and a client inside it (perl-base is on
    // every Debian system).
    let own = "perl -MIO::Socket::INET -e 'my $s = IO::Socket::INET->new(Listen => 1, \
               LocalAddr => \"127.0.0.1\", LocalPort => 0) or die; my $c = \
               IO::Socket::INET->new(PeerAddr => \"127.0.0.1\", PeerPort => $s->sockport) or \
               die; my $a = $s->accept; print $c \"OWN-LOOPBACK-\\n\"; my $l = <$a>; \
               chomp $l; print \"${l}OK\\n\"'";
    let text = sandboxed_bash(&root, &["sandbox.network=true"], own);
    assert!(text.contains("OWN-LOOPBACK-OK"), "{text}");
}

#[test]
fn without_slirp4netns_a_network_is_refused_not_shared() {
    if !have("bwrap") {
        return;
    }
    let (_tmp, root, _) = workspace();
    // A PATH with bwrap but without slirp4netns.
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(find_on_path("bwrap").unwrap(), bin.join("bwrap")).unwrap();
    let out = Command::new(hands_bin())
        .env("PATH", &bin)
        .env("HANDS_STATE_DIR", root.with_file_name("state")) // beside the root: a root holding it is refused
        .arg("--root")
        .arg(&root)
        .args(["-c", "sandbox.backend=\"bwrap\"", "-c", "sandbox.network=true"])
        .args(["call", "bash", "command=echo RAN"])
        .output()
        .unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{text}");
    assert!(!text.contains("RAN"), "{text}");
    assert!(text.contains("slirp4netns") && text.contains("sandbox.network = false"), "{text}");
}

const TOKEN: &str = "sandbox-confined-test-token";

struct Serve(Child, String);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `hands serve` with the bwrap backend, started in `cwd`.
fn serve(cwd: &Path, home: &Path) -> Serve {
    let mut child = Command::new(hands_bin())
        .current_dir(cwd)
        .args(["serve", "--listen", "127.0.0.1:0", "--token", TOKEN])
        // The server's own root (not the folder holding its HOME and state, which is refused);
        // the sessions below name theirs, and its cwd stays `cwd`.
        .arg("--root")
        .arg(cwd.join("real/app"))
        .args(["-c", "sandbox.backend=\"bwrap\""])
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("HANDS_STATE_DIR", home.join("state"))
        .env_remove("HANDS_SERVER__TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[hands serve] {line}");
            if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
                let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let _ = tx.send(port);
            }
        }
    });
    let port = rx.recv_timeout(Duration::from_secs(30)).expect("hands serve did not start");
    Serve(child, format!("http://127.0.0.1:{port}"))
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let response = client
        .post(url)
        .bearer_auth(TOKEN)
        .json(&body)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_serve_the_sandbox_binds_the_session_root_not_the_project_id() {
    if !have("bwrap") {
        return;
    }
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let w = tmp.path().canonicalize().unwrap();
    let real = w.join("real/app");
    for dir in [&real, &w.join("app"), &w.join("other"), &w.join("home")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let server = serve(&w, &w.join("home"));
    let client = reqwest::Client::new();
    // The default project id is the root's folder name, `app`, and `$W/app` exists too; a
    // client-chosen id `other` names another folder under the server's cwd.
    for (id, project) in [("s-default", None), ("s-chosen", Some("other"))] {
        let mut body = json!({"root": real, "id": id});
        if let Some(project) = project {
            body["project_id"] = json!(project);
        }
        let (status, info) = post(&client, format!("{}/v1/sessions", server.1), body).await;
        assert_eq!(status, 201, "{info}");
        let (status, result) = post(
            &client,
            format!("{}/v1/sessions/{id}/tools/bash", server.1),
            json!({"args": {"command": format!("touch made-by-{id}.txt && pwd")}}),
        )
        .await;
        assert_eq!(status, 200, "{result}");
        let name = format!("made-by-{id}.txt");
        assert!(real.join(&name).exists(), "not written in the session's root: {result}");
        for wrong in ["app", "other"] {
            assert!(!w.join(wrong).join(&name).exists(), "written into $W/{wrong}: {result}");
        }
    }
}

/// hands with every one of its folders under `base` (state, data, config, cache, home).
fn isolated(hands: &Path, base: &Path, root: &Path) -> Command {
    let mut cmd = Command::new(hands);
    cmd.env("HOME", base.join("home"))
        .env("HANDS_STATE_DIR", base.join("state"))
        .env_remove("HANDS_SECRETS_DIR")
        .env("XDG_STATE_HOME", base.join("xdg-state"))
        .env("XDG_DATA_HOME", base.join("data"))
        .env("XDG_CONFIG_HOME", base.join("config"))
        .env("XDG_CACHE_HOME", base.join("cache"))
        .arg("--root")
        .arg(root);
    cmd
}

fn store_secret(base: &Path, root: &Path, name: &str, scope: &[&str], value: &str) {
    use std::io::Write as _;
    let mut child = isolated(&hands_bin(), base, root)
        .args(["secrets", "set", name])
        .args(scope)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{value}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `hands call bash` under bwrap with `hands` and the folders of [`isolated`].
fn isolated_bash(hands: &Path, base: &Path, root: &Path, command: &str) -> String {
    let out = isolated(hands, base, root)
        .args(["-c", "sandbox.backend=\"bwrap\"", "call", "bash"])
        .arg(format!("command={command}"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    text
}

/// Issue 26, finding 3: a sandboxed command of project B reads none of hands' own files — not
/// project A's secret, not the global one, not even B's own (a sandbox gets no stored secret),
/// in a file, its environment or any process's `/proc/<pid>/environ`; not the session database,
/// the server token, a checkpoint object or the user's config file (the inner hands gets a copy
/// without the host's sections); the host's hands is not in its `/proc`. A project root inside
/// one of those folders is still bound, writable, with the rest of the folder hidden.
#[test]
fn a_sandboxed_command_reads_none_of_hands_own_files() {
    if !have("bwrap") {
        return;
    }
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (project_a, root) = (base.join("proj-a"), base.join("proj-b"));
    for dir in [&project_a, &root, &base.join("home")] {
        std::fs::create_dir_all(dir).unwrap();
    }
    store_secret(
        &base,
        &project_a,
        "A_SECRET",
        &["--project", project_a.to_str().unwrap()],
        "canary-aaaa-1111",
    );
    store_secret(&base, &root, "GLOBAL_SECRET", &["--global"], "canary-gggg-2222");
    store_secret(
        &base,
        &root,
        "B_SECRET",
        &["--project", root.to_str().unwrap()],
        "canary-bbbb-3333",
    );
    let state = base.join("state");
    std::fs::write(state.join("server-token"), "canary-token-4444\n").unwrap();
    let objects = state.join("checkpoints/0123/objects/ab");
    std::fs::create_dir_all(&objects).unwrap();
    std::fs::write(objects.join("cdef"), "canary-object-5555").unwrap();
    let data = base.join("data/hands");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("sessions.db"), "canary-sessions-6666").unwrap();
    std::fs::create_dir_all(base.join("config/hands")).unwrap();
    std::fs::write(
        base.join("config/hands/config.toml"),
        "[server]\ntoken = \"canary-config-7777\"\n\n[bash]\ndefault_timeout_ms = 123457\n",
    )
    .unwrap();
    std::fs::create_dir_all(base.join("xdg-state/hands")).unwrap();
    std::fs::write(base.join("xdg-state/hands/other.json"), "canary-xdg-8888").unwrap();
    std::fs::create_dir_all(base.join("cache/hands")).unwrap();
    std::fs::write(base.join("cache/hands/c"), "canary-cache-9999").unwrap();

    let command = format!(
        "cat {state}/secrets/*.json {state}/server-token {objects}/cdef {data}/sessions.db \
         {base}/xdg-state/hands/other.json {base}/cache/hands/c 2>&1; \
         find {state} {data} {base}/cache/hands {base}/xdg-state -type f 2>&1; \
         env; cat /proc/[0-9]*/environ | tr '\\0' '\\n'; \
         echo CONFIG-INSIDE; cat {base}/config/hands/config.toml; \
         echo PIDS $(ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '); echo DONE",
        state = state.display(),
        objects = objects.display(),
        data = data.display(),
        base = base.display(),
    );
    let out = isolated(&hands_bin(), &base, &root)
        .args(["-c", "sandbox.backend=\"bwrap\"", "call", "bash"])
        .arg(format!("command={command}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let host_pid = out.id();
    let out = out.wait_with_output().unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("DONE"), "{text}");
    // Redaction would turn a value read into `[secret:NAME]`: neither form may show.
    for canary in [
        "canary-aaaa",
        "canary-gggg",
        "canary-bbbb",
        "canary-token",
        "canary-object",
        "canary-sessions",
        "canary-config",
        "canary-xdg",
        "canary-cache",
        "[secret:",
        "A_SECRET",
        "GLOBAL_SECRET",
        "B_SECRET",
    ] {
        assert!(!text.contains(canary), "the sandbox saw {canary}: {text}");
    }
    // The inner hands has the user's tool settings, without the host's sections.
    let config = text.split("CONFIG-INSIDE").nth(1).unwrap();
    assert!(config.contains("default_timeout_ms = 123457"), "{text}");
    assert!(!config.contains("[server]"), "{text}");
    let pids = text.lines().find_map(|l| l.strip_prefix("PIDS ")).unwrap();
    assert!(!pids.split_whitespace().any(|p| p == host_pid.to_string()), "{text}");

    // A root under the data folder: bound and writable, the database beside it still hidden.
    let inside = data.join("projects/app");
    std::fs::create_dir_all(&inside).unwrap();
    let text = isolated_bash(
        &hands_bin(),
        &base,
        &inside,
        &format!("touch made.txt && echo MADE; cat {}/sessions.db; echo DONE", data.display()),
    );
    assert!(text.contains("MADE") && text.contains("DONE"), "{text}");
    assert!(!text.contains("canary-sessions"), "{text}");
    assert!(inside.join("made.txt").exists(), "{text}");
}

/// Issue 26, finding 13: a hands binary under /tmp (a target dir or a release unpacked there)
/// runs its bwrap sandbox, although the sandbox has a private /tmp.
#[test]
fn a_hands_binary_under_tmp_runs_its_sandbox() {
    if !have("bwrap") {
        return;
    }
    let bin = tempfile::tempdir_in("/tmp").unwrap();
    let hands = bin.path().join("hands");
    std::fs::copy(hands_bin(), &hands).unwrap();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("proj");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(base.join("home")).unwrap();
    let text = isolated_bash(&hands, &base, &root, "echo RAN-INSIDE; ls /tmp | wc -l");
    assert!(text.contains("RAN-INSIDE"), "{text}");
}
