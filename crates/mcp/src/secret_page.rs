//! The secrets tool over MCP: a URL-mode elicitation (never a form: the specification forbids
//! forms for secrets) that sends the client's user to a one-time page of the HTTP server, where
//! they type the value; the page's POST hands it to the waiting tool. Offered only when the
//! server listens over HTTP and knows its own address ([`SecretPages::set_base`], done by
//! `hands serve`) and the client declares URL elicitation; otherwise the session has no secret
//! asker and the tool tells the user to run `hands secrets set NAME`.
//!
//! A page's token is 32 random bytes, good for one answer, and gone with its request (answered,
//! declined, timed out, aborted). The URL is the capability: the page needs no bearer token, but
//! the Host/Origin guard still applies. Neither the page nor its answer is logged.

use std::collections::HashMap;
use std::io::Read as _;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use axum::Router;
use axum::extract::{Form, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use hands_core::ask::AskError;
use hands_core::secret::{SecretAsker, SecretRequest, SecretValue};
use hands_core::{BoxFuture, CancellationToken};
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use serde::Deserialize;
use tokio::sync::oneshot;

/// Where the pages are served; the token follows.
pub const PAGE_PREFIX: &str = "/v1/secret-requests/";

/// True for the path of a page: the prefix, then hex digits only (no other route, no `..`).
pub(crate) fn is_page(path: &str) -> bool {
    path.strip_prefix(PAGE_PREFIX)
        .is_some_and(|token| !token.is_empty() && token.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Fewer characters than this cannot be hidden safely (the store refuses them too).
const MIN_CHARS: usize = 8;

/// The one-time pages of one HTTP server.
#[derive(Clone, Default)]
pub struct SecretPages {
    pages: Arc<Mutex<HashMap<String, Page>>>,
    base: Arc<RwLock<Option<String>>>,
}

struct Page {
    name: String,
    description: String,
    reply: oneshot::Sender<SecretValue>,
}

impl SecretPages {
    /// Serve pages under `base` (`http://127.0.0.1:7777`): from now on, clients that declare
    /// URL elicitation get the secrets tool's requests as pages.
    pub fn set_base(&self, base: &str) {
        *self.base.write().unwrap_or_else(PoisonError::into_inner) =
            Some(base.trim_end_matches('/').to_owned());
    }

    /// True once a base is set.
    pub fn served(&self) -> bool {
        self.base.read().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// A new page for `request`: its token, its URL and the value's receiver.
    fn open(
        &self,
        request: &SecretRequest,
    ) -> Result<(String, String, oneshot::Receiver<SecretValue>), AskError> {
        let base = self.base.read().unwrap_or_else(PoisonError::into_inner).clone();
        let base = base.ok_or(AskError::NoOneToAsk)?;
        let token = random_token()
            .map_err(|err| AskError::Unavailable(format!("no randomness for the page: {err}")))?;
        let (reply, value) = oneshot::channel();
        let page =
            Page { name: request.name.clone(), description: request.description.clone(), reply };
        self.lock().insert(token.clone(), page);
        let url = format!("{base}{PAGE_PREFIX}{token}");
        Ok((token, url, value))
    }

    fn close(&self, token: &str) {
        self.lock().remove(token);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Page>> {
        self.pages.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `GET` and `POST` of [`PAGE_PREFIX`]`{token}`.
    pub fn routes<S: Clone + Send + Sync + 'static>(&self) -> Router<S> {
        Router::new()
            .route(&format!("{PAGE_PREFIX}{{token}}"), get(show).post(answer))
            .with_state(self.clone())
    }
}

/// 32 random bytes from the kernel, as 64 hex digits.
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `&`, `<`, `>`, `"` and `'` escaped for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"referrer\" \
         content=\"no-referrer\"><title>{title}</title></head><body style=\"font-family: \
         sans-serif; max-width: 40em; margin: 3em auto\">{body}</body></html>"
    )
}

/// A page's answer to anything but a live token.
fn gone() -> Response {
    let body = page(
        "hands: no such request",
        "<p>This request is over (answered, declined or timed out), or the link is wrong. Ask \
         the agent again, or store the secret with <code>hands secrets set NAME</code>.</p>",
    );
    no_store((StatusCode::NOT_FOUND, Html(body)).into_response())
}

/// Nothing of a page is cached or referred.
fn no_store(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    headers.insert(
        header::HeaderName::from_static("referrer-policy"),
        header::HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::HeaderName::from_static("x-frame-options"),
        header::HeaderValue::from_static("DENY"),
    );
    response
}

async fn show(State(pages): State<SecretPages>, Path(token): Path<String>) -> Response {
    let (name, description) = match pages.lock().get(&token) {
        Some(page) => (escape(&page.name), escape(&page.description)),
        None => return gone(),
    };
    let body = page(
        &format!("hands: {name}"),
        &format!(
            "<h1>The agent asks for {name}</h1><p>{description}</p><p>It is stored in your \
             secret store for this project and given to its processes as <code>${name}</code>; \
             the agent never sees it.</p><form method=\"post\"><p><input type=\"password\" \
             name=\"value\" autocomplete=\"off\" required minlength=\"{MIN_CHARS}\" \
             autofocus size=\"50\"></p><p><button type=\"submit\">Store {name}</button> \
             <button type=\"submit\" name=\"decline\" value=\"1\" formnovalidate>Decline\
             </button></p></form>"
        ),
    );
    no_store(Html(body).into_response())
}

/// The page's form.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    value: String,
    #[serde(default)]
    decline: Option<String>,
}

async fn answer(
    State(pages): State<SecretPages>,
    Path(token): Path<String>,
    form: Result<Form<Answer>, axum::extract::rejection::FormRejection>,
) -> Response {
    // A body that is not the form: refused without a word of what it held.
    let Ok(Form(form)) = form else {
        let body =
            page("hands: not stored", "<p>The form could not be read; nothing was stored.</p>");
        return no_store((StatusCode::BAD_REQUEST, Html(body)).into_response());
    };
    let mut table = pages.lock();
    if !table.contains_key(&token) {
        drop(table);
        return gone();
    }
    if form.decline.is_some() {
        // Dropping the sender declines.
        table.remove(&token);
        let body = page(
            "hands: declined",
            "<p>Declined: nothing was stored. You can close this page.</p>",
        );
        return no_store(Html(body).into_response());
    }
    let value = form.value.trim();
    if value.chars().count() < MIN_CHARS {
        drop(table);
        let body = page(
            "hands: too short",
            &format!(
                "<p>That is too short: a secret has at least {MIN_CHARS} characters. Nothing was \
                 stored; go back and paste the whole value.</p>"
            ),
        );
        return no_store((StatusCode::BAD_REQUEST, Html(body)).into_response());
    }
    let Some(waiting) = table.remove(&token) else { return gone() };
    drop(table);
    let name = escape(&waiting.name);
    let hint = escape(&hint(value));
    let _ = waiting.reply.send(SecretValue::new(value));
    let body = page(
        "hands: stored",
        &format!("<p>Stored as {name} ({hint}). You can close this page and go back.</p>"),
    );
    no_store(Html(body).into_response())
}

/// A masked hint: a few characters at each end (as the store's).
fn hint(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    let n = (chars.len() / 4).min(4);
    let head: String = chars[..n].iter().collect();
    let tail: String = chars[chars.len() - n..].iter().collect();
    format!("{head}…{tail}")
}

/// Asks the MCP client's user for a secret through a one-time page.
pub(crate) struct UrlSecretAsker {
    elicitor: crate::rounds::Elicitor,
    pages: SecretPages,
}

impl UrlSecretAsker {
    pub(crate) fn new(elicitor: crate::rounds::Elicitor, pages: SecretPages) -> Self {
        Self { elicitor, pages }
    }
}

impl SecretAsker for UrlSecretAsker {
    fn request<'a>(
        &'a self,
        request: &'a SecretRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SecretValue, AskError>> {
        Box::pin(async move {
            let (token, url, value) = self.pages.open(request)?;
            // The page goes with the request, however the wait ends.
            struct Close<'a>(&'a SecretPages, &'a str);
            impl Drop for Close<'_> {
                fn drop(&mut self) {
                    self.0.close(self.1);
                }
            }
            let _close = Close(&self.pages, &token);
            let params = ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: format!(
                    "The agent asks for the secret {}: {}. Open the page to type it; it is \
                     stored for this project and the agent never sees it.",
                    request.name, request.description
                ),
                url,
                elicitation_id: format!("{}-{}", request.session, request.id),
            };
            tokio::pin!(value);
            let consent = tokio::select! {
                result = self.elicitor.elicit(params) => result,
                // Typed before the client answered: the value is what counts.
                value = &mut value => return value.map_err(|_| AskError::Declined(None)),
                () = cancel.cancelled() => return Err(AskError::Cancelled),
            };
            match consent {
                Ok(result) if result.action == ElicitationAction::Accept => {}
                Ok(_) => return Err(AskError::Declined(None)),
                Err(err) => return Err(AskError::Unavailable(err)),
            }
            tokio::select! {
                value = value => value.map_err(|_| AskError::Declined(None)),
                () = cancel.cancelled() => Err(AskError::Cancelled),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn tokens_are_long_and_differ() {
        let (a, b) = (random_token().unwrap(), random_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }

    #[test]
    fn pages_escape_what_the_model_wrote() {
        assert_eq!(escape("<script>\"x\" & 'y'"), "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;");
    }

    #[test]
    fn no_page_without_a_base() {
        let pages = SecretPages::default();
        let request = SecretRequest {
            session: "s".into(),
            id: "c".into(),
            name: "API_KEY".into(),
            description: "d".into(),
        };
        assert!(matches!(pages.open(&request), Err(AskError::NoOneToAsk)));
        pages.set_base("http://127.0.0.1:1/");
        let (token, url, _rx) = pages.open(&request).unwrap();
        assert_eq!(url, format!("http://127.0.0.1:1{PAGE_PREFIX}{token}"));
        pages.close(&token);
        assert!(pages.lock().is_empty());
    }
}
