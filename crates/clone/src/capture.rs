//! The browser half of clone_site: load the page with every request paused and answered by
//! hands through the guard, then read the DOM and take the screenshot.
//!
//! Flow: start Chromium (the preview's launcher), open a blank page, `Fetch.enable` on `*` at the
//! request stage, navigate. Each `Fetch.requestPaused` is fetched through the guard in its own
//! task and answered with `Fetch.fulfillRequest`, or `Fetch.failRequest` (`BlockedByClient`) when
//! the guard refuses or a limit is hit. Once the load event has fired and no request has been
//! pending for a quiet period, scripts are removed from the live DOM, URLs made absolute, and
//! the DOM and a screenshot are taken.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use hands_core::{Context, ToolError};
use hands_exec::{ExecConfig, Supervisor};
use hands_net::{Guard, Request};
use hands_preview::cdp::Cdp;
use hands_preview::{BrowserOptions, Confinement, Launch, LaunchError};
use serde_json::{Value, json};

/// One response the page got.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub url: String,
    pub resource_type: String,
    pub mime: String,
    pub body: Vec<u8>,
}

/// One request that was refused.
#[derive(Debug, Clone)]
pub struct Blocked {
    pub url: String,
    pub reason: String,
}

/// What the browser produced.
pub struct Captured {
    /// The page's URL (after the browser's own resolution of it).
    pub url: String,
    pub html: String,
    pub screenshot: Vec<u8>,
    pub fetched: Vec<Fetched>,
    pub blocked: Vec<Blocked>,
    /// The browser on its way out (await it before answering).
    pub stopping: Option<tokio::task::JoinHandle<()>>,
    /// Why the browser ran without its sandbox and on the machine's network, when it did.
    pub unconfined: Option<String>,
}

/// Limits of one capture.
pub struct Limits {
    pub max_assets: usize,
    pub max_bytes: u64,
    pub full_page: bool,
    /// The sandbox and the empty network namespace (off only in tests; see [`start_browser`]).
    pub namespaces: bool,
}

#[derive(Default)]
struct Tally {
    fetched: Vec<Fetched>,
    blocked: Vec<Blocked>,
    requests: usize,
    bytes: u64,
    pending: usize,
    last_change: Option<Instant>,
}

/// The whole load may take this long.
const LOAD_TIMEOUT: Duration = Duration::from_secs(45);
/// No request pending for this long after the load event: the page is done.
const QUIET: Duration = Duration::from_millis(300);

/// Flags of clone_site's browser beyond the preview's. Its network stack resolves nothing, IP
/// literals included: every request the page makes over HTTP is paused and answered by hands,
/// so Chromium itself never needs to connect, and what `Fetch` does not see — WebSocket
/// handshakes, `<link rel=preconnect>`, DNS prefetch, a service worker's script and fetches,
/// WebTransport, TURN over TCP — fails before it reaches a socket. This holds where the
/// network namespace of [`hands_preview::Confinement::Isolated`] is not available too.
const FLAGS: &[&str] = &["--host-resolver-rules=MAP * ~NOTFOUND", "--dns-prefetch-disable"];

/// The fresh profile's preferences: WebRTC sends nothing over UDP (STUN, TURN over UDP, host
/// candidates and their mDNS names are resolver-free, so the rules above do not cover them).
const PREFERENCES: &str = r#"{"webrtc": {"ip_handling_policy": "disable_non_proxied_udp",
  "multiple_routes_enabled": false, "nonproxied_udp_enabled": false}}"#;

/// Start clone_site's Chromium: the preview's launcher, with Chromium's own sandbox and an empty
/// network namespace where the platform allows ([`hands_preview::Confinement`] says), and the
/// flags and preferences above in any case.
///
/// `namespaces: false` leaves out the sandbox and the network namespace, as on a platform
/// without user namespaces: the tests show that the flags and preferences hold by themselves.
pub async fn start_browser(
    launch: Launch<'_>,
    chromium: &str,
    namespaces: bool,
) -> Result<(hands_preview::Browser, hands_preview::Confinement), LaunchError> {
    let options =
        BrowserOptions { offline: namespaces, flags: FLAGS, preferences: Some(PREFERENCES) };
    hands_preview::start_browser_with(
        launch,
        chromium,
        "1280,800",
        Duration::from_secs(20),
        options,
    )
    .await
}

/// Load `url` in a fresh headless Chromium and capture it.
pub async fn capture(
    ctx: &Context,
    guard: &Guard,
    chromium: &str,
    url: &str,
    limits: &Limits,
) -> Result<Captured, ToolError> {
    let started = Instant::now();
    let supervisor = Supervisor::of(ctx.session(), &ExecConfig::default());
    let cancel = ctx.cancel_token().clone();
    let launch = Launch {
        supervisor: &supervisor,
        root: ctx.root(),
        grace: Duration::from_secs(2),
        cancel: &cancel,
    };
    let (browser, confinement) =
        start_browser(launch, chromium, limits.namespaces).await.map_err(|err| match err {
            LaunchError::Failed(why) => ToolError::model(why),
            LaunchError::Cancelled => ToolError::model("clone_site was cancelled."),
        })?;
    let hands_preview::Browser { proc, profile, cdp, events } = browser;
    let launched = started.elapsed();
    let result = drive(&cdp, events, guard, url, limits, &cancel).await;
    tracing::debug!(?launched, driven = ?started.elapsed(), "clone_site's browser");
    cdp.close();
    // The browser stops while the files are written: the tool awaits it before it answers.
    let stopping = tokio::spawn(async move {
        proc.stop("clone_site done", Duration::from_secs(2)).await;
        supervisor.forget(&proc.id);
        drop(profile);
    });
    let unconfined = match confinement {
        Confinement::Isolated => None,
        Confinement::Unconfined(why) => {
            tracing::warn!(%why, "clone_site's browser ran without its sandbox");
            Some(why)
        }
    };
    result.map(|captured| Captured { stopping: Some(stopping), unconfined, ..captured })
}

fn cdp_error(err: hands_preview::cdp::CdpError) -> ToolError {
    ToolError::model(format!("The browser failed while loading the page: {err}. Try again."))
}

async fn drive(
    cdp: &Arc<Cdp>,
    mut events: tokio::sync::mpsc::UnboundedReceiver<hands_preview::cdp::Event>,
    guard: &Guard,
    url: &str,
    limits: &Limits,
    cancel: &hands_core::CancellationToken,
) -> Result<Captured, ToolError> {
    let target = cdp
        .call("Target.createTarget", json!({"url": "about:blank"}), None)
        .await
        .map_err(cdp_error)?;
    let target_id = target["targetId"].as_str().unwrap_or_default().to_owned();
    let attached = cdp
        .call("Target.attachToTarget", json!({"targetId": target_id, "flatten": true}), None)
        .await
        .map_err(cdp_error)?;
    let session = attached["sessionId"].as_str().unwrap_or_default().to_owned();
    let s = Some(session.as_str());
    cdp.call("Page.enable", json!({}), s).await.map_err(cdp_error)?;
    cdp.call(
        "Fetch.enable",
        json!({"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}),
        s,
    )
    .await
    .map_err(cdp_error)?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let navigated = cdp.call("Page.navigate", json!({"url": url}), s);
    let navigated = {
        // Requests pause while navigate waits for its answer: serve them meanwhile.
        tokio::pin!(navigated);
        loop {
            tokio::select! {
                done = &mut navigated => break done,
                event = events.recv() => match event {
                    Some(event) => on_event(cdp, &event, guard, limits, &tally, cancel),
                    None => return Err(cdp_error(hands_preview::cdp::CdpError::Closed)),
                }
            }
        }
    }
    .map_err(cdp_error)?;
    if let Some(text) = navigated["errorText"].as_str() {
        let blocked = tally.lock().unwrap_or_else(PoisonError::into_inner).blocked.clone();
        let why = blocked.first().map(|b| b.reason.clone()).unwrap_or_else(|| text.to_owned());
        return Err(ToolError::model(format!(
            "{url} could not be loaded: {why}. Check the URL; nothing was written."
        )));
    }
    let started = Instant::now();
    let mut loaded = false;
    loop {
        let quiet = {
            let t = tally.lock().unwrap_or_else(PoisonError::into_inner);
            t.pending == 0 && t.last_change.is_none_or(|at| at.elapsed() >= QUIET)
        };
        if loaded && quiet {
            break;
        }
        if started.elapsed() > LOAD_TIMEOUT {
            break; // capture what has loaded
        }
        if cancel.is_cancelled() {
            return Err(ToolError::model("clone_site was cancelled; nothing was written."));
        }
        match tokio::time::timeout(Duration::from_millis(50), events.recv()).await {
            Ok(Some(event)) => {
                if event.method == "Page.loadEventFired" {
                    loaded = true;
                }
                on_event(cdp, &event, guard, limits, &tally, cancel);
            }
            Ok(None) => return Err(cdp_error(hands_preview::cdp::CdpError::Closed)),
            Err(_) => {}
        }
    }
    // Scripts are never saved: removed from the DOM with inline handlers; URLs made absolute so
    // that they can be mapped to the saved files.
    let cleanup = r#"(() => {
      // srcset candidates as the HTML standard splits them, each URL made absolute.
      const absoluteSrcset = (v) => {
        const out = [];
        let i = 0;
        while (i < v.length) {
          while (i < v.length && /[\s,]/.test(v[i])) i++;
          if (i >= v.length) break;
          const start = i;
          while (i < v.length && !/\s/.test(v[i])) i++;
          let url = v.slice(start, i), desc = '';
          if (url.endsWith(',')) {
            url = url.replace(/,+$/, '');
          } else {
            const from = i;
            let depth = 0;
            while (i < v.length && !(v[i] === ',' && depth <= 0)) {
              if (v[i] === '(') depth++;
              if (v[i] === ')') depth--;
              i++;
            }
            desc = v.slice(from, i).trim();
            i++;
          }
          try { url = new URL(url, document.baseURI).href; } catch (e) {}
          if (url) out.push(desc ? url + ' ' + desc : url);
        }
        return out.join(', ');
      };
      document.querySelectorAll('script, link[rel=modulepreload], link[as=script], base').forEach(e => e.remove());
      for (const el of document.querySelectorAll('*')) {
        for (const a of [...el.attributes]) {
          if (a.name.startsWith('on')) el.removeAttribute(a.name);
        }
        for (const name of ['src', 'href', 'poster']) {
          if (el.hasAttribute(name) && typeof el[name] === 'string' && el[name]) el.setAttribute(name, el[name]);
        }
        for (const name of ['srcset', 'imagesrcset']) {
          if (el.hasAttribute(name)) el.setAttribute(name, absoluteSrcset(el.getAttribute(name)));
        }
      }
      document.querySelectorAll('a[href^="javascript:"]').forEach(e => e.setAttribute('href', '#'));
      return true;
    })()"#;
    // Web fonts may still be loading after the load event: wait for them (3 s at most), so
    // that the screenshot shows the page in its own type.
    let fonts = "Promise.race([document.fonts.ready.then(() => true), \
                 new Promise((done) => setTimeout(() => done(false), 3000))])";
    let _ =
        cdp.call("Runtime.evaluate", json!({"expression": fonts, "awaitPromise": true}), s).await;
    cdp.call("Runtime.evaluate", json!({"expression": cleanup}), s).await.map_err(cdp_error)?;
    let doc = cdp.call("DOM.getDocument", json!({"depth": 0}), s).await.map_err(cdp_error)?;
    let root = doc["root"]["nodeId"].clone();
    let outer =
        cdp.call("DOM.getOuterHTML", json!({"nodeId": root}), s).await.map_err(cdp_error)?;
    let html = format!("<!DOCTYPE html>\n{}", outer["outerHTML"].as_str().unwrap_or_default());
    let mut shot = json!({"format": "png"});
    if limits.full_page {
        let metrics = cdp.call("Page.getLayoutMetrics", json!({}), s).await.map_err(cdp_error)?;
        let size = &metrics["cssContentSize"];
        let width = size["width"].as_f64().unwrap_or(1280.0).clamp(1.0, 16_384.0);
        let height = size["height"].as_f64().unwrap_or(800.0).clamp(1.0, 16_384.0);
        shot["captureBeyondViewport"] = json!(true);
        shot["clip"] = json!({"x": 0, "y": 0, "width": width, "height": height, "scale": 1});
    }
    let png = cdp.call("Page.captureScreenshot", shot, s).await.map_err(cdp_error)?;
    let screenshot = base64::engine::general_purpose::STANDARD
        .decode(png["data"].as_str().unwrap_or_default())
        .map_err(|err| ToolError::Fatal(format!("the screenshot was not base64: {err}")))?;
    let t = std::mem::take(&mut *tally.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(Captured {
        url: url.to_owned(),
        html,
        screenshot,
        fetched: t.fetched,
        blocked: t.blocked,
        stopping: None,
        unconfined: None,
    })
}

/// Answer a paused request in its own task (the page's requests are fetched in parallel).
fn on_event(
    cdp: &Arc<Cdp>,
    event: &hands_preview::cdp::Event,
    guard: &Guard,
    limits: &Limits,
    tally: &Arc<Mutex<Tally>>,
    cancel: &hands_core::CancellationToken,
) {
    if event.method != "Fetch.requestPaused" {
        return;
    }
    let p = &event.params;
    let request_id = p["requestId"].as_str().unwrap_or_default().to_owned();
    let url = p["request"]["url"].as_str().unwrap_or_default().to_owned();
    let method = p["request"]["method"].as_str().unwrap_or("GET").to_owned();
    let resource_type = p["resourceType"].as_str().unwrap_or("Other").to_owned();
    let session = event.session_id.clone();
    let over = {
        let mut t = tally.lock().unwrap_or_else(PoisonError::into_inner);
        t.last_change = Some(Instant::now());
        t.requests += 1;
        if t.requests > limits.max_assets + 1 {
            Some(format!("over max_assets ({})", limits.max_assets))
        } else if method != "GET" {
            Some(format!("{method} requests are not made by clone_site"))
        } else if !(url.starts_with("http://") || url.starts_with("https://")) {
            Some("not an http(s) URL".to_owned())
        } else {
            t.pending += 1;
            None
        }
    };
    let (cdp, guard, tally, cancel) =
        (Arc::clone(cdp), guard.clone(), Arc::clone(tally), cancel.clone());
    let max_bytes = limits.max_bytes;
    tokio::spawn(async move {
        let s = session.as_deref();
        if let Some(reason) = over {
            record_blocked(&tally, &url, reason, false);
            let _ = cdp
                .call(
                    "Fetch.failRequest",
                    json!({"requestId": request_id, "errorReason": "BlockedByClient"}),
                    s,
                )
                .await;
            return;
        }
        let left = {
            let t = tally.lock().unwrap_or_else(PoisonError::into_inner);
            max_bytes.saturating_sub(t.bytes)
        };
        let answer = if left == 0 {
            Err(format!("over max_bytes ({max_bytes})"))
        } else {
            guard.send(Request::get(url.clone()).max_bytes(left), &cancel).await.map_err(|err| {
                let text = err.to_string();
                if text.contains("byte") && text.contains("limit") || text.contains("max_bytes") {
                    format!("over max_bytes ({max_bytes}): {text}")
                } else {
                    text
                }
            })
        };
        match answer {
            Ok(fetched) => {
                let mime = fetched
                    .content_type
                    .clone()
                    .unwrap_or_default()
                    .split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase();
                let headers: Vec<Value> = fetched
                    .headers
                    .iter()
                    .filter(|(name, _)| {
                        !matches!(
                            name.to_ascii_lowercase().as_str(),
                            "content-encoding"
                                | "content-length"
                                | "transfer-encoding"
                                | "set-cookie"
                                | "content-security-policy"
                        )
                    })
                    .map(|(name, value)| json!({"name": name, "value": value}))
                    .collect();
                let body = base64::engine::general_purpose::STANDARD.encode(&fetched.body);
                {
                    let mut t = tally.lock().unwrap_or_else(PoisonError::into_inner);
                    t.bytes += fetched.body.len() as u64;
                    if (200..300).contains(&fetched.status) {
                        t.fetched.push(Fetched {
                            url: url.clone(),
                            resource_type,
                            mime,
                            body: fetched.body,
                        });
                    }
                }
                let _ = cdp
                    .call(
                        "Fetch.fulfillRequest",
                        json!({"requestId": request_id, "responseCode": fetched.status,
                               "responseHeaders": headers, "body": body}),
                        s,
                    )
                    .await;
                record_done(&tally);
            }
            Err(reason) => {
                record_blocked(&tally, &url, reason, true);
                let _ = cdp
                    .call(
                        "Fetch.failRequest",
                        json!({"requestId": request_id, "errorReason": "BlockedByClient"}),
                        s,
                    )
                    .await;
            }
        }
    });
}

fn record_blocked(tally: &Mutex<Tally>, url: &str, reason: String, was_pending: bool) {
    let mut t = tally.lock().unwrap_or_else(PoisonError::into_inner);
    t.blocked.push(Blocked { url: url.to_owned(), reason });
    if was_pending {
        t.pending = t.pending.saturating_sub(1);
    }
    t.last_change = Some(Instant::now());
}

fn record_done(tally: &Mutex<Tally>) {
    let mut t = tally.lock().unwrap_or_else(PoisonError::into_inner);
    t.pending = t.pending.saturating_sub(1);
    t.last_change = Some(Instant::now());
}
