//! web_scrape through Firecrawl's `POST /v2/scrape` (`Authorization: Bearer`), through the egress
//! guard.
//!
//! Flow: one request (`formats` of one: markdown, html or links; text is asked as html and turned
//! into text here; `onlyMainContent`; `maxAge: 0` when `fresh`), a 429 retried once; the answer's
//! `data` mapped to a [`Scraped`]. When the main content comes back under 500 characters, the page
//! is asked for again whole (`onlyMainContent: false`) and returned with a note.

use hands_core::{Context, ToolError};
use hands_net::{Guard, Request};
use serde_json::{Value, json};

use super::extract::{MIN_MAIN_CHARS, html_to_text, visible_chars};
use super::types::{FIRECRAWL_KEY, Format, Scraped};
use crate::api::{self, Keys};

/// Firecrawl's answers are JSON of the page: bounded like any page.
const MAX_RESPONSE_BYTES: u64 = 20 * 1024 * 1024;

/// What is asked of Firecrawl.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ask<'a> {
    pub url: &'a str,
    pub format: Format,
    pub main: bool,
    pub fresh: bool,
}

/// Scrape through the Firecrawl at `base`.
pub(super) async fn scrape(
    guard: &Guard,
    keys: &Keys,
    ctx: &Context,
    base: &str,
    ask: Ask<'_>,
) -> Result<Scraped, ToolError> {
    let endpoint = format!("{}/v2/scrape", base.trim_end_matches('/'));
    let key = keys.for_url(ctx.root(), "web_scrape", FIRECRAWL_KEY, &endpoint)?;
    let send = |main: bool| {
        let endpoint = endpoint.clone();
        let key = key.clone();
        async move {
            let request = request(&endpoint, &key, ask, main)?;
            let fetched = api::send(guard, ctx, "web_scrape", "Firecrawl", request).await?;
            parse(ask, main, fetched.status, &fetched.body)
        }
    };
    let first = send(ask.main).await?;
    if !ask.main || ask.format == Format::Links {
        return Ok(first);
    }
    let chars = visible_chars(&first.content);
    if chars >= MIN_MAIN_CHARS {
        return Ok(first);
    }
    match send(false).await {
        Ok(mut whole) => {
            whole.notes.insert(
                0,
                format!(
                    "Firecrawl's main content was only {chars} characters, so this is the whole \
                     page."
                ),
            );
            Ok(whole)
        }
        Err(err) => {
            let mut first = first;
            first.notes.push(format!(
                "The main content is only {chars} characters, and the whole page could not be \
                 fetched: {}",
                err
            ));
            Ok(first)
        }
    }
}

fn request(
    endpoint: &str,
    key: &hands_core::secret::SecretValue,
    ask: Ask<'_>,
    main: bool,
) -> Result<Request, ToolError> {
    let format = match ask.format {
        Format::Markdown => "markdown",
        Format::Html | Format::Text => "html",
        Format::Links => "links",
    };
    let mut body = json!({"url": ask.url, "formats": [format], "onlyMainContent": main});
    if ask.fresh {
        body["maxAge"] = json!(0);
    }
    let bytes = serde_json::to_vec(&body)
        .map_err(|err| ToolError::Fatal(format!("a request did not serialize: {err}")))?;
    Ok(Request::post(endpoint, bytes)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .secret_header("authorization", api::authorization("Bearer", key))
        .max_bytes(MAX_RESPONSE_BYTES))
}

/// Firecrawl's answer as a [`Scraped`], or the error it means.
fn parse(ask: Ask<'_>, main: bool, status: u16, body: &[u8]) -> Result<Scraped, ToolError> {
    let said = || api::error_message(body).map(|m| format!(" It said: {m}")).unwrap_or_default();
    match status {
        200..=299 => {}
        401 => {
            return Err(ToolError::model(format!(
                "Firecrawl refused the key in {FIRECRAWL_KEY} (HTTP 401); ask the user to store a \
                 valid one with `hands secrets set {FIRECRAWL_KEY}`."
            )));
        }
        402 => {
            return Err(ToolError::model(format!(
                "Firecrawl answered 402: this key has no credits left. Ask the user to top up \
                 their Firecrawl plan.{}",
                said()
            )));
        }
        403 => {
            return Err(ToolError::model(format!(
                "Firecrawl answered 403: this key may not scrape that page or use this feature.{}",
                said()
            )));
        }
        400 => {
            return Err(ToolError::model(format!(
                "Firecrawl refused the request (HTTP 400).{} Check the URL.",
                said()
            )));
        }
        408 => {
            return Err(ToolError::model(format!(
                "Firecrawl gave up loading the page (HTTP 408).{} Try again later.",
                said()
            )));
        }
        status => {
            return Err(ToolError::model(format!(
                "Firecrawl answered with HTTP status {status}.{} Try again later.",
                said()
            )));
        }
    }
    let value: Value = serde_json::from_slice(body).map_err(|err| {
        ToolError::model(format!(
            "Firecrawl answered with something that is not JSON ({err}); check [web_scrape] \
             base_url."
        ))
    })?;
    if value.get("success").and_then(Value::as_bool) == Some(false) {
        return Err(ToolError::model(format!(
            "Firecrawl could not scrape the page.{} Check the URL, or try again later.",
            said()
        )));
    }
    let data = value.get("data").filter(|d| d.is_object()).ok_or_else(|| {
        ToolError::model("Firecrawl's answer has no `data`; check [web_scrape] base_url.")
    })?;
    let meta = data.get("metadata").cloned().unwrap_or(Value::Null);
    if let Some(code) = meta.get("statusCode").and_then(Value::as_u64).filter(|c| *c >= 400) {
        return Err(ToolError::model(format!(
            "{} answered with HTTP status {code} (through Firecrawl); check the URL.",
            ask.url
        )));
    }
    let text = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let content = match ask.format {
        Format::Markdown => text("markdown"),
        Format::Html => text("html"),
        Format::Text => html_to_text(&text("html")),
        Format::Links => data
            .get("links")
            .and_then(Value::as_array)
            .map(|links| links.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default(),
    };
    let first = |v: Option<&Value>| -> Option<String> {
        match v? {
            Value::String(s) => Some(s.clone()),
            Value::Array(items) => items.first().and_then(Value::as_str).map(str::to_owned),
            _ => None,
        }
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
    };
    let final_url = first(meta.get("url"))
        .or_else(|| first(meta.get("sourceURL")))
        .unwrap_or_else(|| ask.url.to_owned());
    let mut notes = Vec::new();
    if let Some(kind) = first(meta.get("contentType")).filter(|c| !c.contains("html")) {
        notes.push(format!("The URL serves {kind}; this is Firecrawl's reading of it."));
    }
    if let Some(warning) = data.get("warning").and_then(Value::as_str).filter(|w| !w.is_empty()) {
        notes.push(format!("Firecrawl: {warning}"));
    }
    Ok(Scraped {
        final_url,
        format: ask.format,
        title: first(meta.get("title")),
        main_content: main && ask.format != Format::Links,
        content,
        notes,
    })
}
