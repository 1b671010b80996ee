//! The page's DevTools events, turned into collector entries as they arrive: uncaught exceptions
//! and unhandled rejections (`Runtime.exceptionThrown`), console errors and warnings
//! (`Runtime.consoleAPICalled`), the browser's own errors (`Log.entryAdded`, network ones left to
//! the Network domain), failed requests and responses ≥ 400 (`Network.*`), page loads
//! (`Page.frameNavigated` of the main frame) and page crashes. Dialogs (`alert`, `confirm`) are
//! accepted at once, so that they never block the page.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cdp::{Cdp, Event};
use crate::collector::{ErrorKind, Frame, MAX_FRAMES, Occurrence};
use crate::preview::{Preview, WeakPreview};

/// Requests whose URL is remembered until they finish (a runaway page cannot grow the map).
const MAX_REQUESTS: usize = 10_000;

/// Run the event loop of `page` until the channel closes or `stop` fires.
pub fn spawn(
    preview: WeakPreview,
    cdp: Arc<Cdp>,
    page: String,
    mut events: mpsc::UnboundedReceiver<Event>,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        let mut requests: HashMap<String, (String, String)> = HashMap::new();
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                () = stop.cancelled() => None,
            };
            let Some(event) = event else { break };
            if event.session_id.as_deref().is_some_and(|s| s != page) {
                continue;
            }
            let Some(preview) = preview.upgrade() else { break };
            handle(&preview, &cdp, &page, &mut requests, event);
        }
    });
}

fn handle(
    preview: &Preview,
    cdp: &Arc<Cdp>,
    page: &str,
    requests: &mut HashMap<String, (String, String)>,
    event: Event,
) {
    let p = &event.params;
    match event.method.as_str() {
        "Runtime.exceptionThrown" => exception(preview, &p["exceptionDetails"]),
        "Runtime.consoleAPICalled" => {
            console_message(preview, p);
            console(preview, p);
        }
        "Log.entryAdded" => log_entry(preview, &p["entry"]),
        "Network.requestWillBeSent" => {
            preview.network.sent(p, preview.errors.current_load());
            if requests.len() < MAX_REQUESTS
                && let Some(id) = p["requestId"].as_str()
            {
                let url = p["request"]["url"].as_str().unwrap_or("").to_owned();
                let method = p["request"]["method"].as_str().unwrap_or("GET").to_owned();
                requests.insert(id.to_owned(), (method, url));
            }
        }
        "Network.responseReceived" => {
            preview.network.response(p);
            let status = p["response"]["status"].as_u64().unwrap_or(0);
            let url = p["response"]["url"].as_str().unwrap_or("");
            if status >= 400 && !is_implicit_favicon(url, p) {
                let method = p["requestId"]
                    .as_str()
                    .and_then(|id| requests.get(id))
                    .map_or("GET", |(m, _)| m.as_str());
                let text = p["response"]["statusText"].as_str().unwrap_or("");
                preview.errors.record(
                    ErrorKind::HttpError,
                    Occurrence {
                        message: format!(
                            "{status}{} {method} {url}{}",
                            if text.is_empty() { String::new() } else { format!(" {text}") },
                            resource_type(p)
                        ),
                        location: Some(url.to_owned()),
                        stack: Vec::new(),
                    },
                );
            }
        }
        "Network.loadingFinished" => {
            preview.network.finished(p);
            if let Some(id) = p["requestId"].as_str() {
                requests.remove(id);
            }
        }
        "Network.loadingFailed" => {
            preview.network.failed(p);
            let request = p["requestId"].as_str().and_then(|id| requests.remove(id));
            // A navigation away or an aborted fetch is not the app's error.
            if p["canceled"].as_bool() == Some(true) {
                return;
            }
            let (method, url) = request.unwrap_or_else(|| ("GET".into(), String::new()));
            let reason = p["blockedReason"]
                .as_str()
                .map(|b| format!("blocked ({b})"))
                .unwrap_or_else(|| p["errorText"].as_str().unwrap_or("failed").to_owned());
            preview.errors.record(
                ErrorKind::RequestFailed,
                Occurrence {
                    message: format!("{reason}: {method} {url}{}", resource_type(p)),
                    location: Some(url),
                    stack: Vec::new(),
                },
            );
        }
        "Page.frameNavigated" => {
            let frame = &p["frame"];
            if frame.get("parentId").is_none() {
                let url = frame["url"].as_str().unwrap_or("");
                requests.clear();
                preview.network.navigated();
                *preview.location.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                    (url.to_owned(), frame["id"].as_str().unwrap_or("").to_owned());
                preview.errors.page_load(url);
                preview.mapper.clear();
            }
        }
        "Page.navigatedWithinDocument" => {
            let mut location =
                preview.location.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if p["frameId"].as_str() == Some(location.1.as_str())
                && let Some(url) = p["url"].as_str()
            {
                location.0 = url.to_owned();
            }
        }
        "Page.loadEventFired" => {
            let load = preview.errors.current_load();
            preview.loaded.send_replace(load);
        }
        "Page.javascriptDialogOpening" => {
            let message = p["message"].as_str().unwrap_or("").to_owned();
            let kind = p["type"].as_str().unwrap_or("alert").to_owned();
            preview.errors.record(
                ErrorKind::BrowserWarning,
                Occurrence {
                    message: format!("{kind}() dialog accepted automatically: {message}"),
                    location: None,
                    stack: Vec::new(),
                },
            );
            let cdp = Arc::clone(cdp);
            let page = page.to_owned();
            tokio::spawn(async move {
                let _ = cdp
                    .call("Page.handleJavaScriptDialog", json!({"accept": true}), Some(&page))
                    .await;
            });
        }
        "Inspector.targetCrashed" => {
            let message = "The page crashed (its renderer process is gone). preview_open \
                           reloads it; look for runaway memory or recursion.";
            preview.errors.record(
                ErrorKind::Crash,
                Occurrence { message: message.into(), location: None, stack: Vec::new() },
            );
            preview.fail(message);
        }
        _ => {}
    }
}

/// The browser asks every site for `/favicon.ico` by itself (type `Other`); a site without one is
/// not an error of the app. A `<link rel="icon">` that fails is still reported.
fn is_implicit_favicon(url: &str, p: &Value) -> bool {
    p["type"] == "Other"
        && url::Url::parse(url).is_ok_and(|u| u.path() == "/favicon.ico" && u.query().is_none())
}

/// ` (Fetch)`, ` (Image)`: what kind of resource a request was for.
fn resource_type(p: &Value) -> String {
    p["type"].as_str().map_or(String::new(), |t| format!(" ({t})"))
}

/// The frames of a `StackTrace`, 1-based.
fn frames(stack: &Value) -> Vec<Frame> {
    stack["callFrames"]
        .as_array()
        .map(|frames| {
            frames
                .iter()
                .take(MAX_FRAMES)
                .map(|f| Frame {
                    function: f["functionName"].as_str().unwrap_or("").to_owned(),
                    url: f["url"].as_str().unwrap_or("").to_owned(),
                    line: f["lineNumber"].as_u64().unwrap_or(0) as u32 + 1,
                    column: f["columnNumber"].as_u64().unwrap_or(0) as u32 + 1,
                    original: None,
                })
                .collect()
        })
        .unwrap_or_default()
}

fn exception(preview: &Preview, details: &Value) {
    let text = details["text"].as_str().unwrap_or("Uncaught");
    let kind = if text.contains("(in promise)") {
        ErrorKind::UnhandledRejection
    } else {
        ErrorKind::Exception
    };
    let exception = &details["exception"];
    let described = exception["description"]
        .as_str()
        .and_then(|d| d.lines().next())
        .map(str::to_owned)
        .or_else(|| exception.get("value").map(render_value));
    let message = match described {
        Some(d) if !d.is_empty() => d,
        _ => text.to_owned(),
    };
    let stack = frames(&details["stackTrace"]);
    let location = match stack.first() {
        Some(frame) => Some(frame.location()),
        None => details["url"].as_str().filter(|u| !u.is_empty()).map(|url| {
            format!(
                "{url}:{}:{}",
                details["lineNumber"].as_u64().unwrap_or(0) + 1,
                details["columnNumber"].as_u64().unwrap_or(0) + 1
            )
        }),
    };
    preview.errors.record(kind, Occurrence { message, location, stack });
}

fn console(preview: &Preview, p: &Value) {
    let kind = match p["type"].as_str() {
        Some("error") => ErrorKind::ConsoleError,
        Some("assert") => ErrorKind::ConsoleError,
        Some("warning") => ErrorKind::ConsoleWarning,
        _ => return,
    };
    let args: Vec<String> = p["args"]
        .as_array()
        .map(|args| args.iter().map(render_remote).collect())
        .unwrap_or_default();
    let mut message = args.join(" ");
    if p["type"] == "assert" {
        message = format!("Assertion failed: {message}");
    }
    let stack = frames(&p["stackTrace"]);
    let location = stack.first().map(Frame::location);
    preview.errors.record(kind, Occurrence { message, location, stack });
}

/// Every console call, for the console log (the collector keeps the errors and warnings).
fn console_message(preview: &Preview, p: &Value) {
    let level = p["type"].as_str().unwrap_or("log");
    let args: Vec<String> = p["args"]
        .as_array()
        .map(|args| args.iter().map(render_remote).collect())
        .unwrap_or_default();
    let location = frames(&p["stackTrace"]).first().map(Frame::location);
    preview.console.record(level, &args.join(" "), location, preview.errors.current_load());
}

fn log_entry(preview: &Preview, entry: &Value) {
    // Network errors arrive from the Network domain with more detail; console calls from Runtime.
    if matches!(entry["source"].as_str(), Some("network" | "console-api")) {
        return;
    }
    let kind = match entry["level"].as_str() {
        Some("error") => ErrorKind::BrowserError,
        Some("warning") => ErrorKind::BrowserWarning,
        _ => return,
    };
    let message = entry["text"].as_str().unwrap_or("").to_owned();
    let stack = frames(&entry["stackTrace"]);
    let location = stack.first().map(Frame::location).or_else(|| {
        entry["url"].as_str().filter(|u| !u.is_empty()).map(|url| {
            match entry["lineNumber"].as_u64() {
                Some(line) => format!("{url}:{}", line + 1),
                None => url.to_owned(),
            }
        })
    });
    preview.errors.record(kind, Occurrence { message, location, stack });
}

/// A console argument as text: strings as they are, the rest by their description.
fn render_remote(arg: &Value) -> String {
    match arg["type"].as_str() {
        Some("string") => arg["value"].as_str().unwrap_or("").to_owned(),
        Some("undefined") => "undefined".to_owned(),
        _ => {
            if let Some(value) = arg.get("value") {
                return render_value(value);
            }
            if let Some(unserializable) = arg["unserializableValue"].as_str() {
                return unserializable.to_owned();
            }
            let description = arg["description"].as_str().unwrap_or("");
            if arg["subtype"] == "error" {
                // An Error's description is its stack; the first line is the message.
                return description.lines().next().unwrap_or("").to_owned();
            }
            if description.is_empty() {
                arg["className"].as_str().unwrap_or("object").to_owned()
            } else {
                description.to_owned()
            }
        }
    }
}

fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_arguments_are_rendered() {
        assert_eq!(render_remote(&json!({"type": "string", "value": "hi"})), "hi");
        assert_eq!(render_remote(&json!({"type": "number", "value": 3})), "3");
        assert_eq!(
            render_remote(
                &json!({"type": "object", "subtype": "error", "description": "Error: x\n    at f (a.js:1:2)"})
            ),
            "Error: x"
        );
        assert_eq!(render_remote(&json!({"type": "number", "unserializableValue": "NaN"})), "NaN");
        assert_eq!(
            render_remote(
                &json!({"type": "object", "className": "Object", "description": "Object"})
            ),
            "Object"
        );
    }

    #[test]
    fn frames_are_one_based_and_capped() {
        let stack = json!({"callFrames": (0..9).map(|i| json!({"functionName": format!("f{i}"), "url": "http://h/a.js", "lineNumber": i, "columnNumber": 4})).collect::<Vec<_>>()});
        let frames = frames(&stack);
        assert_eq!(frames.len(), MAX_FRAMES);
        assert_eq!((frames[0].line, frames[0].column), (1, 5));
        assert_eq!(frames[0].location(), "http://h/a.js:1:5");
    }
}
