//! Running preview_act's actions and telling what they caused.
//!
//! Flow: note where every log stands (console, network, runtime errors, the page load and URL);
//! run the actions in order, each ref checked against the session's baseline snapshot (a ref of
//! another document is refused: the page navigated or reloaded since); stop at the first action
//! that fails; let the page settle (a navigation's load, then no request in flight for a moment,
//! then two animation frames); then answer with what changed since the notes: the snapshot delta
//! (which becomes the new baseline), console messages, runtime errors, failed requests, and the
//! navigation when there was one.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::actions::{Action, project_files, same_origin};
use crate::collector::ErrorKind;
use crate::input::Page;
use crate::outline::resolve_expression;
use crate::preview::Preview;

/// Longest wait for a navigation's load after an action.
const LOAD_WAIT: Duration = Duration::from_secs(10);
/// Longest wait for the network to go quiet after an action.
const SETTLE_WAIT: Duration = Duration::from_millis(1500);
/// How long no request must be in flight to call the network quiet after an action.
const QUIET: Duration = Duration::from_millis(60);
/// How long `wait network_idle` wants no request in flight.
const IDLE: Duration = Duration::from_millis(500);

/// Where the logs stood before the actions.
#[derive(Debug, Clone)]
pub(crate) struct Marks {
    console: u64,
    network: u64,
    errors: u64,
    load: u64,
    url: String,
}

/// What the actions did and caused.
#[derive(Debug, Clone, Default)]
pub struct ActReport {
    /// One line per action run (and the failure, if one failed).
    pub done: Vec<String>,
    /// The action that failed, with why.
    pub failed: Option<String>,
    /// The snapshot delta (or the whole outline after a navigation).
    pub changes: Vec<String>,
    /// True when `changes` is a whole new document's outline.
    pub new_document: bool,
    /// `from → to`, when the page navigated (a new document or a route change).
    pub navigation: Option<String>,
    /// Console messages, as lines.
    pub console: Vec<String>,
    /// Runtime errors other than console messages, as lines.
    pub errors: Vec<String>,
    /// Failed requests, as lines.
    pub failed_requests: Vec<String>,
}

impl Preview {
    pub(crate) fn marks(&self) -> Marks {
        Marks {
            console: self.console.cursor(),
            network: self.network.cursor(),
            errors: *self.errors.subscribe().borrow(),
            load: self.errors.current_load(),
            url: self.location(),
        }
    }

    /// The ref number `name` stands for, when the ref is of the current document's latest
    /// snapshot.
    pub(crate) fn node_of(&self, name: &str) -> Result<u64, String> {
        let node = name.strip_prefix('e').and_then(|n| n.parse::<u64>().ok()).ok_or_else(|| {
            format!("{name:?} is not a ref: refs look like e12 (from preview_snapshot)")
        })?;
        let baseline = self.outline.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(baseline) = baseline.as_ref() else {
            return Err(format!(
                "{name} is from no snapshot of this session: call preview_snapshot first and use its refs"
            ));
        };
        let replaced = baseline.is_stale(node);
        if baseline.load != self.errors.current_load() || replaced {
            return Err(format!(
                "{name} is stale: it is from an earlier document, replaced since (the page navigated or \
                 reloaded). Take a new snapshot (preview_snapshot) and use its refs."
            ));
        }
        if !baseline.lines.iter().any(|l| l.node == Some(node)) {
            return Err(format!(
                "{name} is not in the latest snapshot (snapshot {}): take a new snapshot (preview_snapshot) and use its refs",
                baseline.number
            ));
        }
        Ok(node)
    }

    /// The element (its `backendNodeId`, what the DOM and Input domains act on) that ref `name` of
    /// the latest snapshot names; refused when the ref is stale or the page removed the element.
    pub(crate) async fn element(&self, page: &Page<'_>, name: &str) -> Result<u64, String> {
        let n = self.node_of(name)?;
        let found =
            page.call("Runtime.evaluate", json!({"expression": resolve_expression(n)})).await?;
        let Some(object) = found["result"]["objectId"].as_str() else {
            return Err(format!(
                "{name} is gone from the page (removed since the snapshot): take a new snapshot \
                 (preview_snapshot) and use its refs"
            ));
        };
        let described = page.call("DOM.describeNode", json!({"objectId": object})).await;
        let _ = page.call("Runtime.releaseObject", json!({"objectId": object})).await;
        described?["node"]["backendNodeId"]
            .as_u64()
            .ok_or_else(|| format!("{name}: the browser did not say which element it is"))
    }

    /// [`Preview::element`] on the open page.
    pub(crate) async fn element_now(&self, name: &str) -> Result<u64, String> {
        let (cdp, session) =
            self.page().ok_or("No preview is open in this session: call preview_open first.")?;
        self.element(&Page { cdp: &cdp, session: &session }, name).await
    }

    /// Run `actions` in order and report what they caused.
    pub(crate) async fn act(&self, actions: &[Action]) -> Result<ActReport, String> {
        let (cdp, session) =
            self.page().ok_or("No preview is open in this session: call preview_open first.")?;
        let page = Page { cdp: &cdp, session: &session };
        let marks = self.marks();
        let mut report = ActReport::default();
        for (i, action) in actions.iter().enumerate() {
            let checked: Result<(), String> =
                action.refs().iter().try_for_each(|r| self.node_of(r).map(drop));
            let outcome = match checked {
                Ok(()) => self.run(&page, action).await,
                Err(err) => Err(err),
            };
            match outcome {
                Ok(what) => report.done.push(format!("{}. {}", i + 1, what)),
                Err(why) => {
                    report.failed = Some(format!("{}. {} failed: {why}", i + 1, action.word()));
                    let left = actions.len() - i - 1;
                    if left > 0 {
                        report.done.push(format!(
                            "({left} later action{} not run)",
                            if left == 1 { "" } else { "s" }
                        ));
                    }
                    break;
                }
            }
        }
        self.settle(&page, &marks).await;
        self.effects(&marks, &mut report).await;
        Ok(report)
    }

    /// One action; what it did.
    async fn run(&self, page: &Page<'_>, action: &Action) -> Result<String, String> {
        match action {
            Action::Click { target, double } => {
                let node = self.element(page, target).await?;
                let (x, y) = page.centre(node, target).await?;
                page.click(x, y, if *double { 2 } else { 1 }).await?;
                Ok(format!("{} {target}", if *double { "double-clicked" } else { "clicked" }))
            }
            Action::Hover { target } => {
                let (x, y) = page.centre(self.element(page, target).await?, target).await?;
                page.hover(x, y).await?;
                Ok(format!("hovered {target}"))
            }
            Action::Type { target, text, submit } => {
                if let Some(target) = target {
                    page.focus(self.element(page, target).await?).await?;
                }
                page.insert(text).await?;
                if *submit {
                    page.press("Enter").await?;
                }
                Ok(format!(
                    "typed {} character{}{}{}",
                    text.chars().count(),
                    if text.chars().count() == 1 { "" } else { "s" },
                    target.as_ref().map_or(String::new(), |t| format!(" into {t}")),
                    if *submit { " and pressed Enter" } else { "" }
                ))
            }
            Action::Fill { fields } => {
                for field in fields {
                    let node = self.element(page, &field.target).await?;
                    fill(page, node, &field.value)
                        .await
                        .map_err(|e| format!("{}: {e}", field.target))?;
                }
                let names: Vec<&str> = fields.iter().map(|f| f.target.as_str()).collect();
                Ok(format!("filled {}", names.join(", ")))
            }
            Action::Select { target, values } => {
                let chosen = page
                    .on_element(self.element(page, target).await?, SELECT, &[json!(values)])
                    .await?;
                Ok(format!("selected {chosen} in {target}"))
            }
            Action::Check { target, checked } => {
                let wanted = checked.unwrap_or(true);
                let node = self.element(page, target).await?;
                let now = page.on_element(node, IS_CHECKED, &[]).await?;
                if now.as_bool() != Some(wanted) {
                    let (x, y) = page.centre(node, target).await?;
                    page.click(x, y, 1).await?;
                    let after = page.on_element(node, IS_CHECKED, &[]).await?;
                    if after.as_bool() != Some(wanted) {
                        return Err(format!(
                            "{target} is still {}checked after a click",
                            if wanted { "un" } else { "" }
                        ));
                    }
                    Ok(format!("{} {target}", if wanted { "checked" } else { "unchecked" }))
                } else {
                    Ok(format!(
                        "{target} was already {}",
                        if wanted { "checked" } else { "unchecked" }
                    ))
                }
            }
            Action::Press { key, target } => {
                if let Some(target) = target {
                    page.focus(self.element(page, target).await?).await?;
                }
                page.press(key).await?;
                Ok(format!("pressed {key}"))
            }
            Action::Scroll { target: Some(target), .. } => {
                page.centre(self.element(page, target).await?, target).await?;
                Ok(format!("scrolled {target} into view"))
            }
            Action::Scroll { target: None, dy } => {
                let metrics = page.call("Page.getLayoutMetrics", json!({})).await?;
                let view = &metrics["cssLayoutViewport"];
                let (w, h) = (
                    view["clientWidth"].as_f64().unwrap_or(800.0),
                    view["clientHeight"].as_f64().unwrap_or(600.0),
                );
                let dy = dy.unwrap_or(h * 0.9);
                page.wheel(w / 2.0, h / 2.0, dy).await?;
                Ok(format!("scrolled the page by {dy:.0} px"))
            }
            Action::Navigate { url } => {
                let preview = self.status().preview_url.unwrap_or_default();
                let to = same_origin(url, &self.location(), &preview)?;
                let sent = page.call("Page.navigate", json!({"url": to})).await?;
                if let Some(error) = sent["errorText"].as_str().filter(|e| !e.is_empty()) {
                    return Err(format!("{to} could not be loaded: {error}"));
                }
                Ok(format!("navigated to {to}"))
            }
            Action::Back | Action::Forward => {
                let history = page.call("Page.getNavigationHistory", json!({})).await?;
                let current = history["currentIndex"].as_i64().unwrap_or(0);
                let step = if matches!(action, Action::Back) { -1 } else { 1 };
                let entries = history["entries"].as_array().cloned().unwrap_or_default();
                let entry = usize::try_from(current + step).ok().and_then(|i| entries.get(i));
                let Some(entry) = entry else {
                    return Err(format!("there is no page to go {} to", action.word()));
                };
                page.call("Page.navigateToHistoryEntry", json!({"entryId": entry["id"]})).await?;
                Ok(format!("went {} to {}", action.word(), entry["url"].as_str().unwrap_or("?")))
            }
            Action::Reload => {
                page.call("Page.reload", json!({})).await?;
                Ok("reloaded".to_owned())
            }
            Action::Wait { text, selector, network_idle, gone, timeout_ms } => {
                let limit = Duration::from_millis(timeout_ms.unwrap_or(5000).min(30_000));
                self.wait(page, text.as_deref(), selector.as_deref(), *network_idle, *gone, limit)
                    .await
            }
            Action::Upload { target, paths } => {
                let node = self.element(page, target).await?;
                let files = project_files(&self.root, paths)?;
                let kind = page
                    .on_element(
                        node,
                        "function(){return this.tagName + ':' + (this.type||'')}",
                        &[],
                    )
                    .await?;
                if kind != json!("INPUT:file") {
                    return Err(format!("{target} is not a file input (<input type=file>)"));
                }
                let files: Vec<String> =
                    files.iter().map(|f| f.to_string_lossy().into_owned()).collect();
                page.call("DOM.setFileInputFiles", json!({"files": files, "backendNodeId": node}))
                    .await?;
                Ok(format!("put {} into {target}", paths.join(", ")))
            }
            Action::Viewport { preset, width, height } => {
                let (w, h, scale, mobile) = match (preset, width, height) {
                    (_, Some(w), Some(h)) if *w > 0 && *h > 0 => (*w, *h, 1.0, false),
                    (Some(p), None, None) => p.metrics(),
                    _ => {
                        return Err(
                            "give a preset (mobile, tablet, desktop) or both width and height"
                                .into(),
                        );
                    }
                };
                page.call(
                    "Emulation.setDeviceMetricsOverride",
                    json!({"width": w, "height": h, "deviceScaleFactor": scale, "mobile": mobile}),
                )
                .await?;
                let _ = page
                    .call("Emulation.setTouchEmulationEnabled", json!({"enabled": mobile}))
                    .await;
                Ok(format!("viewport {w}×{h}{}", if mobile { " (mobile)" } else { "" }))
            }
        }
    }

    /// `wait`: poll the condition every 50 ms until it holds or `limit` passes.
    async fn wait(
        &self,
        page: &Page<'_>,
        text: Option<&str>,
        selector: Option<&str>,
        network_idle: bool,
        gone: bool,
        limit: Duration,
    ) -> Result<String, String> {
        let (what, expression) = match (text, selector) {
            (Some(text), _) => (
                format!("text {text:?}"),
                format!("!!(document.body && document.body.innerText.includes({}))", json!(text)),
            ),
            (None, Some(selector)) => (
                format!("selector {selector:?}"),
                format!("!!document.querySelector({})", json!(selector)),
            ),
            (None, None) if network_idle => {
                return if self.quiet(IDLE, limit).await {
                    Ok("the network is idle".to_owned())
                } else {
                    Err(format!("requests were still in flight after {} ms", limit.as_millis()))
                };
            }
            (None, None) => return Err("wait needs text, selector or network_idle".to_owned()),
        };
        let began = Instant::now();
        loop {
            // A navigation in between makes the evaluation fail: the next poll reads the new page.
            let shown = page.evaluate(&expression).await;
            if let Err(err) = &shown
                && err.contains("SyntaxError")
            {
                return Err(format!("{what} is not a valid CSS selector: {err}"));
            }
            if shown.is_ok_and(|v| v.as_bool() == Some(!gone)) {
                let waited = began.elapsed().as_millis();
                return Ok(format!(
                    "{what} {} after {waited} ms",
                    if gone { "gone" } else { "shown" }
                ));
            }
            if began.elapsed() >= limit {
                return Err(format!(
                    "{what} was {} after {} ms",
                    if gone { "still there" } else { "not shown" },
                    limit.as_millis()
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// True once no request has been in flight for `quiet`, within `limit`.
    async fn quiet(&self, quiet: Duration, limit: Duration) -> bool {
        let mut inflight = self.network.inflight();
        let deadline = Instant::now() + limit;
        loop {
            if *inflight.borrow_and_update() == 0 {
                match tokio::time::timeout(quiet, inflight.changed()).await {
                    Err(_) => return true,
                    Ok(Err(_)) => return false,
                    Ok(Ok(())) => {}
                }
            } else {
                let left = deadline.saturating_duration_since(Instant::now());
                if tokio::time::timeout(left, inflight.changed()).await.is_err() {
                    return false;
                }
            }
            if Instant::now() >= deadline {
                return false;
            }
        }
    }

    /// Let the page settle after the actions: a navigation's load, a quiet network, two frames.
    async fn settle(&self, page: &Page<'_>, marks: &Marks) {
        if self.errors.current_load() != marks.load {
            let mut loaded = self.loaded.subscribe();
            let load = self.errors.current_load();
            let _ = tokio::time::timeout(LOAD_WAIT, loaded.wait_for(|n| *n >= load)).await;
        }
        self.quiet(QUIET, SETTLE_WAIT).await;
        let frames =
            "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))";
        let _ = tokio::time::timeout(
            Duration::from_millis(500),
            page.call("Runtime.evaluate", json!({"expression": frames, "awaitPromise": true})),
        )
        .await;
    }

    /// What happened since `marks`.
    pub(crate) async fn effects(&self, marks: &Marks, report: &mut ActReport) {
        match self.changes().await {
            Ok((changes, new_document)) => {
                report.changes = changes;
                report.new_document = new_document;
            }
            Err(err) => report.changes = vec![format!("(no snapshot: {err})")],
        }
        let url = self.location();
        if self.errors.current_load() != marks.load {
            report.navigation = Some(format!(
                "{} → {url} (a new document: refs of earlier snapshots are stale)",
                marks.url
            ));
        } else if url != marks.url {
            report.navigation =
                Some(format!("{} → {url} (same document: refs stay valid)", marks.url));
        }
        report.console = self.console.since(marks.console).iter().map(|m| m.line()).collect();
        let (errors, _) = self.errors.snapshot();
        report.errors = errors
            .iter()
            .filter(|e| {
                e.seq > marks.errors
                    && !matches!(e.kind, ErrorKind::ConsoleError | ErrorKind::ConsoleWarning)
            })
            .map(|e| format!("[{}] {}", e.kind.label(), e.message))
            .collect();
        let origin = self.origin();
        report.failed_requests = self
            .network
            .since(marks.network)
            .iter()
            .filter(|r| r.is_failure())
            .map(|r| r.line(origin.as_deref()))
            .collect();
    }

    /// The preview's origin (`http://127.0.0.1:5173`).
    pub(crate) fn origin(&self) -> Option<String> {
        let url = url::Url::parse(&self.status().preview_url?).ok()?;
        Some(url.origin().ascii_serialization())
    }
}

/// Set one field of a `fill` by its kind.
async fn fill(page: &Page<'_>, node: u64, value: &str) -> Result<(), String> {
    let kind = page.on_element(node, KIND, &[]).await?;
    match kind.as_str().unwrap_or("") {
        "select" => page.on_element(node, SELECT, &[json!([value])]).await.map(drop),
        "checkbox" | "radio" => {
            let wanted = matches!(value, "true" | "on" | "yes" | "1" | "checked");
            if page.on_element(node, IS_CHECKED, &[]).await?.as_bool() != Some(wanted) {
                let (x, y) = page.centre(node, "the field").await?;
                page.click(x, y, 1).await?;
            }
            Ok(())
        }
        "file" => Err("a file input: use the upload action".to_owned()),
        _ => {
            page.on_element(node, SELECT_ALL, &[]).await?;
            if value.is_empty() { page.press("Delete").await } else { page.insert(value).await }
        }
    }
}

/// What a field is: `select`, `checkbox`, `radio`, `file`, or `text`.
const KIND: &str = "function() {
  if (this.tagName === 'SELECT') return 'select';
  if (this.tagName === 'INPUT' && ['checkbox', 'radio', 'file'].includes(this.type)) return this.type;
  return 'text';
}";

/// Focus the field and select its content, so that what is typed replaces it.
const SELECT_ALL: &str = "function() {
  this.focus();
  if (typeof this.select === 'function') { this.select(); return true; }
  const range = document.createRange();
  range.selectNodeContents(this);
  const selection = getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  return true;
}";

/// Whether a checkbox, radio or ARIA switch is checked.
const IS_CHECKED: &str = "function() {
  if ('checked' in this && this.tagName === 'INPUT') return this.checked;
  return this.getAttribute('aria-checked') === 'true';
}";

/// Choose the options of a select whose value or label is among `wanted`; their labels.
const SELECT: &str = "function(wanted) {
  if (this.tagName !== 'SELECT') throw new Error('not a <select>');
  const options = [...this.options];
  let found = 0;
  for (const o of options) {
    const hit = wanted.includes(o.value) || wanted.includes(o.label.trim());
    if (hit) found++;
    o.selected = hit && (this.multiple || found === 1);
  }
  if (!found) throw new Error('no option ' + JSON.stringify(wanted) + '; the options are: ' + options.map(o => o.label.trim()).join(', '));
  this.dispatchEvent(new Event('input', {bubbles: true}));
  this.dispatchEvent(new Event('change', {bubbles: true}));
  return options.filter(o => o.selected).map(o => o.label.trim()).join(', ');
}";
