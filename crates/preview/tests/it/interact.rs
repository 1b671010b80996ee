//! Using the app in the preview (issue 32): a fixture app with a login, a list, a route change, a
//! failing request, a console error and an upload, driven through preview_snapshot, preview_act,
//! preview_network and preview_console, and checked on the app's side (its server's log) and in
//! what the tools answered; snapshot budgets on a 5,000-node page; stale refs; and a page whose
//! requests outside its origin are refused without a connection.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::Read as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Env, require_for};
use serde_json::{Value, json};

/// The ref (`e12`, the word after the name) on the first line of `text` that contains `needle`.
fn ref_of(text: &str, needle: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"));
    let rest = &line[line.find(needle).unwrap() + needle.len()..];
    rest.split([' ', ':'])
        .find(|w| w.len() > 1 && w.starts_with('e') && w[1..].bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no ref on {line:?} in:\n{text}"))
        .to_owned()
}

fn png_size(data: &[u8]) -> (u32, u32) {
    assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(data[16..20].try_into().unwrap());
    (width, u32::from_be_bytes(data[20..24].try_into().unwrap()))
}

fn server_log(env: &Env) -> String {
    std::fs::read_to_string(env.root().join("server.log")).unwrap_or_default()
}

async fn act(env: &Env, actions: Value) -> String {
    let (text, _) = env.ok("preview_act", json!({"actions": actions})).await;
    text
}

fn interact_env() -> Env {
    Env::fixture("interact-app", |c| c.serve = "python3 server.py {port}".into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_logs_in_adds_and_deletes_follows_a_link_and_finds_what_failed() {
    if !require_for("interact-app") {
        return;
    }
    let env = interact_env();
    env.open().await;
    let (first, _) = env.ok("preview_snapshot", json!({})).await;
    assert!(first.starts_with("Snapshot 1 of http://127.0.0.1:"), "{first}");
    assert!(first.contains("\n h1 \"Interact fixture\"\n"), "{first}");
    assert!(first.contains("combobox \"Color\" e") && first.contains(": Red\n"), "{first}");
    assert!(!first.contains("About this app"), "a hidden section is left out:\n{first}");
    let path = first.split("whole: ").nth(1).unwrap().split(')').next().unwrap();
    assert!(env.root().join(path).is_file(), "the whole snapshot is kept at {path}");
    let (user, password) =
        (ref_of(&first, "textbox \"User\""), ref_of(&first, "textbox \"Password\""));
    let (color, remember) =
        (ref_of(&first, "combobox \"Color\""), ref_of(&first, "checkbox \"Remember me\""));
    let login = ref_of(&first, "button \"Log in\"");

    // Log in: several fields in one call, a select, a checkbox, a click, a wait.
    let done = act(
        &env,
        json!([
            {"action": "fill", "fields": [{"ref": user, "value": "alice"}, {"ref": password, "value": "wonderland"}]},
            {"action": "select", "ref": color, "values": ["Green"]},
            {"action": "check", "ref": remember},
            {"action": "click", "ref": login},
            {"action": "wait", "text": "Welcome, alice"}
        ]),
    )
    .await;
    assert!(done.contains("h2 \"Welcome, alice\""), "the delta shows the welcome:\n{done}");
    assert!(!done.contains("h1 \"Interact fixture\""), "only what changed:\n{done}");
    assert!(
        server_log(&env).contains("login alice ok color=g remember=True"),
        "{}",
        server_log(&env)
    );

    // A snapshot with nothing new is one line; the full one is far larger.
    let (same, _) = env.ok("preview_snapshot", json!({})).await;
    assert!(same.contains("No change since snapshot"), "{same}");
    let (full, _) = env.ok("preview_snapshot", json!({"full": true})).await;
    let new_item = ref_of(&full, "textbox \"New item\"");

    // Add an item (typing, Enter submits), then delete it by the ref the delta gave.
    let added = act(
        &env,
        json!([
            {"action": "type", "ref": new_item, "text": "Buy milk", "submit": true},
            {"action": "wait", "text": "Buy milk"}
        ]),
    )
    .await;
    assert!(
        added.len() < full.len(),
        "the delta ({} B) is smaller than the full snapshot ({} B)",
        added.len(),
        full.len()
    );
    assert!(server_log(&env).contains("add 1 Buy milk"), "{}", server_log(&env));
    let delete = ref_of(&added, "button \"Delete Buy milk\"");
    let deleted = act(
        &env,
        json!([{"action": "click", "ref": delete}, {"action": "wait", "text": "Buy milk", "gone": true}]),
    )
    .await;
    assert!(deleted.contains("- "), "{deleted}");
    // The deleted button's ref names nothing any more: refused, not clicked elsewhere.
    let (gone, _) =
        env.err("preview_act", json!({"actions": [{"action": "click", "ref": delete}]})).await;
    assert!(gone.contains("not in the latest snapshot"), "{gone}");
    assert!(server_log(&env).contains("delete 1"), "{}", server_log(&env));

    // The failing request and the console error, in the action's answer and in the logs.
    let report = ref_of(&full, "button \"Load report\"");
    let broken = ref_of(&full, "button \"Break\"");
    let caused = act(
        &env,
        json!([{"action": "click", "ref": report}, {"action": "click", "ref": broken}, {"action": "wait", "network_idle": true}]),
    )
    .await;
    assert!(caused.contains("GET /api/report → 500"), "{caused}");
    assert!(caused.contains("[error] boom: the Break button"), "{caused}");
    assert!(server_log(&env).contains("report 500"));
    let (network, _) = env.ok("preview_network", json!({"since": 0, "status": "failed"})).await;
    assert!(network.contains("GET /api/report → 500 (Fetch"), "{network}");
    assert!(!network.contains("/api/items"), "filtered: {network}");
    // Chromium's own background calls (the profile's Google accounts, update checks) made
    // meanwhile are refused at the proxy and are not the page's: not listed.
    assert!(!network.contains("google"), "the browser's own calls listed: {network}");
    let (posts, _) =
        env.ok("preview_network", json!({"since": 0, "method": "POST", "url": "/api/items"})).await;
    let seq: u64 = posts
        .lines()
        .nth(1)
        .unwrap()
        .trim_start_matches('#')
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (body, _) = env.ok("preview_network", json!({"body": seq})).await;
    assert!(body.contains("Request body:\n{\"text\":\"Buy milk\"}"), "{body}");
    assert!(body.contains("Response body:\n{\"id\": 1"), "{body}");
    let (console, _) = env.ok("preview_console", json!({"since": 0, "levels": ["error"]})).await;
    assert!(console.contains("[error] boom: the Break button"), "{console}");
    assert!(!console.contains("report status"), "levels filter: {console}");

    // Upload a project file into the file input.
    let file = ref_of(&full, "button \"Attachment\"");
    let upload = ref_of(&full, "button \"Upload\"");
    let uploaded = act(
        &env,
        json!([
            {"action": "upload", "ref": file, "paths": ["notes.txt"]},
            {"action": "click", "ref": upload},
            {"action": "wait", "text": "Uploaded notes.txt"}
        ]),
    )
    .await;
    assert!(uploaded.contains("Uploaded notes.txt (27 bytes)"), "{uploaded}");
    assert!(server_log(&env).contains("upload notes.txt 27 bytes"), "{}", server_log(&env));
    let (text, _) = env
        .err(
            "preview_act",
            json!({"actions": [{"action": "upload", "ref": file, "paths": ["/etc/passwd"]}]}),
        )
        .await;
    assert!(text.contains("outside the project"), "{text}");

    // A phone's viewport, and a screenshot of one element as an image.
    let mobile = act(&env, json!([{"action": "viewport", "preset": "mobile"}])).await;
    assert!(mobile.contains("viewport 390×844 (mobile)"), "{mobile}");
    let shot = env.call("preview_screenshot", json!({"ref": upload})).await;
    let hands_core::Content::Image { data, .. } = &shot.content[0] else { panic!("{shot:?}") };
    let (width, height) = png_size(data);
    assert!(width > 0 && width < 390 * 3 && height < 200 * 3, "{width}×{height}");
    act(&env, json!([{"action": "viewport", "preset": "desktop"}])).await;
    let shot = env.call("preview_screenshot", json!({})).await;
    let hands_core::Content::Image { data, .. } = &shot.content[0] else { panic!("{shot:?}") };
    assert_eq!(png_size(data), (1280, 800));

    // Follow the link: a route change in the same document.
    let about = ref_of(&full, "link \"About\"");
    let items = ref_of(&full, "list \"Items\"");
    let followed = act(&env, json!([{"action": "click", "ref": about}])).await;
    assert!(followed.contains("/about (same document"), "{followed}");
    assert!(followed.contains("h2 \"About this app\""), "{followed}");

    // A new document: the old refs are refused, and so is another origin.
    let moved = act(&env, json!([{"action": "navigate", "url": "/list"}])).await;
    assert!(moved.contains("a new document"), "{moved}");
    let (stale, _) =
        env.err("preview_act", json!({"actions": [{"action": "hover", "ref": items}]})).await;
    assert!(stale.contains("stale") && stale.contains("preview_snapshot"), "{stale}");
    for elsewhere in ["http://127.0.0.2:8000/", "file:///etc/passwd"] {
        let (text, _) = env
            .err("preview_act", json!({"actions": [{"action": "navigate", "url": elsewhere}]}))
            .await;
        assert!(text.contains("not on the preview's origin"), "{text}");
    }
    env.session.close().await;
    assert!(env.nothing_left().await, "left running: {:?}", env.marked());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_of_a_5000_node_page_stays_within_its_budget() {
    if !require_for("static-site") {
        return;
    }
    let rows: String =
        (0..2500).map(|i| format!("<li>Row number {i} <button>Edit {i}</button></li>")).collect();
    let script = "<script>document.addEventListener('click', (e) => { \
        if (e.target.tagName === 'BUTTON') e.target.textContent = 'Edited'; })</script>";
    let page = format!("<!doctype html><title>Big</title><h1>Big</h1><ul>{rows}</ul>{script}");
    let env = Env::with_files(&[("index.html", &page)], |_| {});
    env.open().await;
    let (text, _) = env.ok("preview_snapshot", json!({"max_tokens": 1000})).await;
    assert!(text.len() <= 4000, "{} bytes over a budget of 1000 tokens", text.len());
    assert!(text.contains("more lines cut to stay within the budget"), "{text}");
    let path = text.split("whole: ").nth(1).unwrap().split(')').next().unwrap();
    let whole = std::fs::read_to_string(env.root().join(path)).unwrap();
    assert!(whole.lines().count() >= 5000, "{} lines kept", whole.lines().count());
    let head: Vec<&str> = whole.lines().take(12).collect();
    assert!(
        whole.contains("\n li \"Row number 7\"\n  button \"Edit 7\" e"),
        "a row's text joins its line:\n{}",
        head.join("\n")
    );
    let (default, _) = env.ok("preview_snapshot", json!({"full": true})).await;
    assert!(default.len() <= 3000 * 4, "{} bytes over the default budget", default.len());
    let (narrow, _) = env.ok("preview_snapshot", json!({"query": "Edit 2499"})).await;
    assert!(narrow.contains("button \"Edit 2499\""), "{narrow}");
    assert!(narrow.lines().count() < 10, "{narrow}");

    // The same element keeps its ref from one snapshot to the next.
    let last = ref_of(&narrow, "button \"Edit 2499\"");
    assert_eq!(ref_of(&whole, "button \"Edit 2499\""), last, "{narrow}");
    assert_eq!(ref_of(&default, "button \"Edit 7\""), ref_of(&whole, "button \"Edit 7\""));
    // A ref of the compact lines is clicked (the last row: scrolled into view first), and the
    // answer is the one changed line, far smaller than the page.
    let clicked = act(&env, json!([{"action": "click", "ref": last}])).await;
    let edited = format!("button \"Edited\" {last}");
    assert!(clicked.lines().any(|l| l.starts_with("~ ") && l.contains(&edited)), "{clicked}");
    assert!(clicked.len() < 1000 && clicked.len() < whole.len() / 100, "{clicked}");
    // After a reload the refs of the old document are refused, and the new document's refs are
    // other numbers, so that an old ref never names a new element.
    act(&env, json!([{"action": "reload"}])).await;
    let (stale, _) =
        env.err("preview_act", json!({"actions": [{"action": "click", "ref": last}]})).await;
    assert!(stale.contains("stale"), "{stale}");
    let (again, _) = env.ok("preview_snapshot", json!({"query": "Edit 2499"})).await;
    assert_ne!(ref_of(&again, "button \"Edit 2499\""), last, "{again}");
    env.session.close().await;
}

/// The outline's roles, names, values and states as the page computes them: labels of several
/// kinds, what is not rendered left out, a password's value masked, states, a list box's choices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outline_names_what_a_user_perceives_and_leaves_out_what_is_hidden() {
    if !require_for("static-site") {
        return;
    }
    let page = r#"<!doctype html><title>Names</title>
<nav aria-label="Site"><a href="/a">Home</a> <a>no href</a></nav>
<h3>Third <em>level</em></h3>
<p>Plain <b>bold</b> text.</p>
<span id="lbl">Search the site</span><input aria-labelledby="lbl">
<input placeholder="Your email" type="email" required>
<label for="pw">Password</label><input id="pw" type="password" value="hunter2">
<input type="submit" value="Send"><input type="checkbox" aria-label="Agree" checked disabled>
<button aria-expanded="false" aria-pressed="true">Menu</button>
<img src="x.png" alt="A cat"><img src="y.png" alt="">
<select multiple aria-label="Fruit"><option selected>Apple</option><option>Pear</option></select>
<div hidden>hidden div</div><div style="display:none">none div</div>
<div aria-hidden="true"><button>aria hidden</button></div>
<div style="visibility:hidden">invisible <span style="visibility:visible">but this</span></div>
<div role="button" tabindex="0">Custom</div>
<details><summary>More</summary>Inside</details>
<svg><path d="M0 0"/></svg>"#;
    let env = Env::with_files(&[("index.html", page)], |_| {});
    env.open().await;
    let (text, _) = env.ok("preview_snapshot", json!({})).await;
    let body: Vec<&str> = text.lines().skip(1).collect();
    let has = |prefix: &str| body.iter().any(|l| l.starts_with(prefix));
    for line in [
        "navigation \"Site\" e",
        " link \"Home\" e",
        " \"no href\"",
        "h3 \"Third level\"",
        "p \"Plain bold text.\"",
        "textbox \"Search the site\" e",
        "textbox \"Your email\" e",
        "textbox \"Password\" e",
        "button \"Send\" e",
        "checkbox \"Agree\" e",
        "button \"Menu\" e",
        "img \"A cat\"",
        "listbox \"Fruit\" e",
        " option \"Apple\" selected",
        " option \"Pear\"",
        "\"but this\"",
        "button \"Custom\" e",
        " button \"More\" e",
    ] {
        assert!(has(line), "no line starting {line:?} in:\n{text}");
    }
    let line = |prefix: &str| *body.iter().find(|l| l.starts_with(prefix)).unwrap();
    assert!(line("textbox \"Your email\"").ends_with(" required"), "{text}");
    assert!(line("textbox \"Password\"").ends_with(": •••••••"), "masked:\n{text}");
    assert!(line("checkbox \"Agree\"").ends_with(" checked disabled"), "{text}");
    assert!(line("button \"Menu\"").ends_with(" pressed collapsed"), "{text}");
    assert!(line(" button \"More\"").ends_with(" collapsed"), "{text}");
    for gone in ["Inside", "hidden div", "none div", "aria hidden", "invisible", "hunter2", "img\n"]
    {
        assert!(!text.contains(gone), "{gone:?} shown:\n{text}");
    }
    assert!(!body.iter().any(|l| l.trim() == "img" || l.contains("generic")), "{text}");
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_outside_the_origin_are_refused_without_a_connection() {
    if !require_for("interact-app") {
        return;
    }
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            counted.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut stream) = stream {
                let _ = stream.read(&mut [0; 64]);
            }
        }
    });
    // A STUN server's port: WebRTC must send it nothing (no proxied UDP exists).
    let stun = std::net::UdpSocket::bind(("127.0.0.1", 0)).unwrap();
    let udp = stun.local_addr().unwrap().port();
    stun.set_read_timeout(Some(std::time::Duration::from_millis(200))).unwrap();
    let packets = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stun_thread = {
        let (packets, stop) = (Arc::clone(&packets), Arc::clone(&stop));
        std::thread::spawn(move || {
            // Bounded: 200 ms reads until told to stop (at most 10 minutes).
            for _ in 0..3_000 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                if stun.recv_from(&mut [0; 1500]).is_ok() {
                    packets.fetch_add(1, Ordering::SeqCst);
                }
            }
        })
    };
    let env = Env::fixture("interact-app", |c| {
        c.serve = "python3 server.py {port}".into();
        c.url = format!("http://127.0.0.1:{{port}}/guarded.html?port={port}&udp={udp}");
    });
    env.open().await;
    let done = act(
        &env,
        json!([{"action": "wait", "selector": "#results li:nth-child(5)", "timeout_ms": 20000}]),
    )
    .await;
    assert!(done.contains("shown"), "{done}");
    let (results, _) = env.ok("preview_snapshot", json!({"query": ": "})).await;
    for what in [
        "fetch 127.0.0.2: refused",
        "fetch 127.0.0.1: refused",
        "file: refused",
        "websocket: refused",
    ] {
        assert!(results.contains(what), "{what} missing:\n{results}");
    }
    assert!(results.contains("webrtc: 0 candidates"), "WebRTC gathered candidates:\n{results}");
    stop.store(true, Ordering::SeqCst);
    stun_thread.join().unwrap();
    assert_eq!(packets.load(Ordering::SeqCst), 0, "WebRTC sent UDP to the STUN port");
    assert_eq!(seen.load(Ordering::SeqCst), 0, "the page reached the listener");
    let (network, _) = env.ok("preview_network", json!({"since": 0})).await;
    assert!(network.contains("Refused by the egress rule"), "{network}");
    assert!(network.contains(&format!("127.0.0.1:{port}")), "{network}");
    env.session.close().await;
}

/// preview_evaluate, where the user turned it on: a value, an awaited promise, a throw, a cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_runs_in_the_page_when_the_user_turned_it_on() {
    if !require_for("interact-app") {
        return;
    }
    let env = Env::fixture("interact-app", |c| {
        c.serve = "python3 server.py {port}".into();
        c.evaluate = true;
    });
    env.open().await;
    let (title, _) = env.ok("preview_evaluate", json!({"expression": "document.title"})).await;
    assert_eq!(title, "\"Interact fixture\"");
    let (awaited, _) = env
        .ok("preview_evaluate", json!({"expression": "fetch('/api/items').then(r => r.status)"}))
        .await;
    assert_eq!(awaited, "200");
    let (thrown, _) = env.err("preview_evaluate", json!({"expression": "nope.nope"})).await;
    assert!(thrown.contains("threw") && thrown.contains("nope is not defined"), "{thrown}");
    let (cut, _) = env
        .ok("preview_evaluate", json!({"expression": "'x'.repeat(5000)", "max_bytes": 300}))
        .await;
    assert!(cut.contains("[cut: 300 of 5002 bytes shown]"), "{cut}");
    env.session.close().await;
}
