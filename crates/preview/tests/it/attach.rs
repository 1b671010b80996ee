//! One dev server (issue 34): preview_open attaches to the dev server the agent runs with
//! spawn_process instead of starting a second one, leaves it running at close, follows it when
//! the agent restarts it on another port, starts its own when nothing matches, and starts its own
//! again after it crashed. The app is a tiny node server run by `npm run dev`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Env, evaluate, require};
use serde_json::{Value, json};

/// How long a test waits for the preview to follow a server before it fails (not a speed
/// requirement: CI shares two cores).
const FOLLOW: Duration = Duration::from_secs(180);

const PACKAGE: &str =
    r#"{"name": "attach-app", "private": true, "scripts": {"dev": "node server.js"}}"#;

/// Serves index.html on `--port`, `$PORT` or a free port (after `$DELAY_MS`), and says where.
const SERVER: &str = r#"const http = require("http");
const fs = require("fs");
const i = process.argv.indexOf("--port");
const port = i > 0 ? Number(process.argv[i + 1]) : Number(process.env.PORT || 0);
const server = http.createServer((req, res) => {
  res.writeHead(200, { "content-type": "text/html" });
  res.end(fs.readFileSync("index.html"));
});
console.log("starting");
setTimeout(() => server.listen(port, "127.0.0.1", () =>
  console.log(`  Local: http://127.0.0.1:${server.address().port}/`)), Number(process.env.DELAY_MS || 0));
"#;

const INDEX: &str = "<!doctype html><title>app</title><h1>the attached app</h1>";

/// `program` on PATH.
fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// Chromium and npm (node with it).
fn required() -> bool {
    let npm = on_path("npm").unwrap_or_else(|| PathBuf::from("/usr/bin/npm"));
    require(Path::new("/usr/bin/chromium"), "apt-get install chromium")
        & require(&npm, "install Node.js with npm")
}

/// The app, with the preview's own serve command being the same script.
fn app() -> Env {
    Env::with_files(
        &[("package.json", PACKAGE), ("server.js", SERVER), ("index.html", INDEX)],
        |c| {
            c.serve = "npm run dev -- --port {port}".into();
        },
    )
}

/// Live processes of the session that run `server.js` (node with it as an argument; not the
/// shell npm runs it through).
fn servers(env: &Env) -> Vec<u32> {
    env.marked()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == b"server.js"))
        })
        .collect()
}

/// The text of the page's heading, read through the discovery file's DevTools endpoint.
async fn heading(env: &Env) -> Value {
    evaluate(env.root(), "document.querySelector('h1')?.textContent").await
}

/// spawn_process `command` as a daemon: its structured result, with `url` where it serves.
async fn spawn(env: &Env, command: &str) -> Value {
    let (text, mut spawned) =
        env.ok("spawn_process", json!({"command": command, "type": "daemon"})).await;
    let port = spawned["port"].as_u64().unwrap_or_else(|| panic!("no port: {text}"));
    spawned["url"] = json!(format!("http://127.0.0.1:{port}/"));
    spawned
}

/// preview_status until `done` holds (or [`FOLLOW`] passes): the last status. A ready preview
/// counts once its discovery file is written too (just after the stage turns ready).
async fn status_until(env: &Env, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + FOLLOW;
    loop {
        let (_, status) = env.ok("preview_status", json!({})).await;
        let settled = status["stage"] != "ready" || status["discoveryFile"].is_string();
        if (done(&status) && settled) || Instant::now() > deadline {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn process<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["processes"].as_array().unwrap().iter().find(|p| p["id"] == id).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_open_attaches_to_the_agents_dev_server_and_close_leaves_it_running() {
    if !required() {
        return;
    }
    let env = app();
    let spawned = spawn(&env, "npm run dev").await;
    let id = spawned["id"].as_str().unwrap().to_owned();
    let url = spawned["url"].as_str().unwrap().to_owned();

    let (text, status) = env.ok("preview_open", json!({})).await;
    assert_eq!(status["stage"], "ready", "{text}");
    assert!(
        text.contains(&format!("attached to the running process {id} (`npm run dev`) at {url}")),
        "{text}"
    );
    assert_eq!(status["serverProcess"], id.as_str());
    assert_eq!(status["previewUrl"], url.as_str());
    assert_eq!(status["serverPid"], spawned["pid"]);
    // One server: the agent's; the preview started a browser and nothing else.
    assert_eq!(servers(&env).len(), 1, "one server.js runs: {:?}", servers(&env));
    let (_, list) = env.ok("list_processes", json!({})).await;
    let names: Vec<&str> =
        list["processes"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(!names.iter().any(|n| n.starts_with("preview server")), "{names:?}");
    assert_eq!(heading(&env).await, "the attached app");
    let (text, _) = env.ok("preview_status", json!({})).await;
    assert!(text.contains(&format!("the agent's process {id}")), "{text}");

    // Opening again reuses it.
    let (text, _) = env.ok("preview_open", json!({})).await;
    assert!(text.contains("reused"), "{text}");

    // Closing stops the browser only.
    let browser = status["browserPid"].as_u64().unwrap() as u32;
    let (text, _) = env.ok("preview_close", json!({})).await;
    assert!(
        text.contains(&format!("{id} (`npm run dev`)")) && text.contains("keeps running"),
        "{text}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while env.marked().contains(&browser) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!env.marked().contains(&browser), "the browser is stopped");
    let (_, list) = env.ok("list_processes", json!({})).await;
    assert_eq!(process(&list, &id)["status"], "running", "{list}");
    assert_eq!(servers(&env).len(), 1);
    let answered = reqwest::get(&url).await.unwrap().text().await.unwrap();
    assert!(answered.contains("the attached app"), "{answered}");
    env.session.close().await;
    assert!(
        env.nothing_left().await,
        "the session's end stops the agent's server: {:?}",
        env.marked()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_follows_the_agents_server_to_a_new_port_without_preview_open() {
    if !required() {
        return;
    }
    let env = app();
    let first = spawn(&env, "npm run dev").await;
    let status = env.open().await;
    assert_eq!(status["serverProcess"], first["id"]);
    let old_url = status["previewUrl"].as_str().unwrap().to_owned();

    let (text, _) = env.ok("stop_process", json!({"id": first["id"]})).await;
    assert!(text.starts_with("Stopped"), "{text}");
    let down = status_until(&env, |s| s["stage"] == "error").await;
    assert_eq!(down["running"], false, "{down}");
    let error = down["lastError"].as_str().unwrap_or_default();
    assert!(
        error.contains(first["id"].as_str().unwrap()) && error.contains("attaches again"),
        "{error}"
    );

    // The agent starts it again on another port; the preview follows by itself.
    let port = loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if !old_url.contains(&format!(":{port}/")) {
            break port;
        }
    };
    let second = spawn(&env, &format!("npm run dev -- --port {port}")).await;
    let new_url = format!("http://127.0.0.1:{port}/");
    let back =
        status_until(&env, |s| s["stage"] == "ready" && s["previewUrl"] == new_url.as_str()).await;
    assert_eq!(back["stage"], "ready", "the preview did not follow: {back}");
    assert_eq!(back["serverProcess"], second["id"]);
    assert_eq!(back["running"], true);
    assert_eq!(servers(&env).len(), 1, "still one server");
    assert_eq!(heading(&env).await, "the attached app");
    let (_, errors) = env.ok("read_runtime_errors", json!({"since": 0})).await;
    let crash = errors["errors"].as_array().unwrap().iter().any(|e| e["kind"] == "crash");
    assert!(crash, "the server's end was reported: {errors}");
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_matching_process_the_preview_starts_its_own_and_restarts_it_after_a_crash() {
    if !required() {
        return;
    }
    let env = app();
    // A server of the agent's that is not this app's dev script.
    std::fs::write(env.root().join("other.js"), SERVER.replace("index.html", "package.json"))
        .unwrap();
    let other = spawn(&env, "node other.js").await;
    let (text, status) = env.ok("preview_open", json!({})).await;
    assert_eq!(status["stage"], "ready", "{text}");
    assert!(text.starts_with("Preview ready at"), "{text}");
    assert!(status["serverProcess"].is_null(), "{status}");
    assert_ne!(status["serverPid"], other["pid"]);
    assert_eq!(heading(&env).await, "the attached app");
    let (_, list) = env.ok("list_processes", json!({})).await;
    let own = list["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"].as_str().is_some_and(|n| n.starts_with("preview server")))
        .cloned()
        .unwrap_or_else(|| panic!("the preview's own server is listed: {list}"));
    assert_eq!(own["pid"], status["serverPid"]);

    // Its own server crashes: the preview starts it again and reloads, without preview_open.
    let pid = status["serverPid"].as_u64().unwrap();
    let killed = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    assert!(killed.unwrap().success());
    let back = status_until(&env, |s| {
        s["stage"] == "ready" && s["serverPid"].as_u64().is_some_and(|p| p != pid)
    })
    .await;
    assert_eq!(back["stage"], "ready", "the preview did not restart its server: {back}");
    assert!(back["serverProcess"].is_null(), "{back}");
    assert_eq!(heading(&env).await, "the attached app");
    let (_, errors) = env.ok("read_runtime_errors", json!({"since": 0})).await;
    let restarted = errors["errors"].as_array().unwrap().iter().any(|e| {
        e["kind"] == "crash" && e["message"].as_str().is_some_and(|m| m.contains("restart 1 of"))
    });
    assert!(restarted, "the crash and the restart were reported: {errors}");
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_open_waits_for_the_url_of_an_agents_server_that_has_none_yet() {
    if !required() {
        return;
    }
    let env = app();
    // Ready by its first line, before it listens anywhere.
    let args = json!({"command": "DELAY_MS=1500 npm run dev", "type": "daemon",
        "ready_pattern": "starting"});
    let (text, spawned) = env.ok("spawn_process", args).await;
    assert!(spawned["port"].is_null(), "it does not listen yet: {text}");
    let (text, status) = env.ok("preview_open", json!({})).await;
    assert_eq!(status["stage"], "ready", "{text}");
    assert_eq!(status["serverProcess"], spawned["id"], "{text}");
    assert_eq!(servers(&env).len(), 1, "no second server");
    assert_eq!(heading(&env).await, "the attached app");
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vite_project_attaches_to_the_agents_npm_run_dev() {
    if !common::require_for("vite-app") {
        return;
    }
    let env = Env::fixture("vite-app", |_| {});
    let (text, spawned) =
        env.ok("spawn_process", json!({"command": "npm run dev", "type": "daemon"})).await;
    let port = spawned["port"].as_u64().unwrap_or_else(|| panic!("no port: {text}"));
    let (text, status) = env.ok("preview_open", json!({})).await;
    assert_eq!(status["stage"], "ready", "{text}");
    assert_eq!(status["kind"], "vite");
    assert_eq!(status["serverProcess"], spawned["id"], "{text}");
    assert_eq!(status["port"], port, "{text}");
    assert!(text.contains("attached to the running process"), "{text}");
    // One Vite: the agent's.
    let vites = env
        .marked()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg.ends_with(b"/vite")))
        })
        .count();
    assert_eq!(vites, 1, "one Vite runs");
    let title = evaluate(env.root(), "document.title").await;
    assert!(title.is_string(), "the page loaded: {title}");
    env.session.close().await;
}
