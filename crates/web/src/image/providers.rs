//! The image providers' APIs, through the egress guard.
//!
//! fal: the synchronous endpoint `POST {base}/{model}` (`Authorization: Key …`), answered with
//! `images[].url`, each fetched through the guard without the key (a `data:` URL is decoded).
//! OpenAI: `POST {base}/v1/images/generations` (`Authorization: Bearer …`), answered with
//! `data[].b64_json`. A 429 is retried once; every other failure names what to do.

use base64::Engine as _;
use hands_core::{Context, ToolError};
use hands_net::{Guard, Request};
use serde_json::{Value, json};

use super::types::{FAL_KEY, ImageConfig, ImageProvider, OPENAI_KEY, Size};
use crate::api::{self, Keys};

/// fal's synchronous endpoint, unless the user sets `[image_gen] base_url`.
pub const FAL_BASE_URL: &str = "https://fal.run";
/// fal's model when the user sets none.
pub const FAL_MODEL: &str = "fal-ai/flux/schnell";
/// OpenAI's API, unless the user sets `[image_gen] base_url`.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com";
/// OpenAI's model when the user sets none.
pub const OPENAI_MODEL: &str = "gpt-image-1";

/// The most bytes of one answer: a JSON of up to four base64 images, or one image.
const MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;

/// What is asked for.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ask<'a> {
    pub prompt: &'a str,
    pub size: Size,
    pub n: u32,
}

/// What came back.
#[derive(Debug)]
pub(super) struct Generated {
    pub provider: &'static str,
    pub model: String,
    pub images: Vec<Vec<u8>>,
    pub notes: Vec<String>,
}

/// Generate with the configured provider; its request goes through `provider_guard`, fal's
/// result URLs through `guard`.
pub(super) async fn generate(
    config: &ImageConfig,
    keys: &Keys,
    provider_guard: &Guard,
    guard: &Guard,
    ctx: &Context,
    ask: Ask<'_>,
) -> Result<Generated, ToolError> {
    match config.provider {
        ImageProvider::Fal => fal(config, keys, provider_guard, guard, ctx, ask).await,
        ImageProvider::Openai => openai(config, keys, provider_guard, ctx, ask).await,
    }
}

async fn fal(
    config: &ImageConfig,
    keys: &Keys,
    provider_guard: &Guard,
    guard: &Guard,
    ctx: &Context,
    ask: Ask<'_>,
) -> Result<Generated, ToolError> {
    let model = config.model.clone().unwrap_or_else(|| FAL_MODEL.to_owned());
    let base = config.base_url.as_deref().unwrap_or(FAL_BASE_URL).trim_end_matches('/');
    let endpoint = format!("{base}/{}", model.trim_matches('/'));
    let key = keys.for_url(ctx.root(), "image_gen", FAL_KEY, &endpoint)?;
    let image_size = match ask.size {
        Size::Square => json!("square_hd"),
        Size::Landscape => json!("landscape_4_3"),
        Size::Portrait => json!("portrait_4_3"),
        Size::Exact(width, height) => json!({"width": width, "height": height}),
    };
    let body = json!({
        "prompt": ask.prompt,
        "image_size": image_size,
        "num_images": ask.n,
        "output_format": "png",
        "enable_safety_checker": true,
    });
    let request = json_post(&endpoint, &body)?
        .secret_header("authorization", api::authorization("Key", &key));
    let fetched = api::send(provider_guard, ctx, "image_gen", "fal", request).await?;
    check_status("fal", FAL_KEY, fetched.status, &fetched.body)?;
    let value = json_of("fal", &fetched.body)?;
    let urls: Vec<String> = value
        .get("images")
        .and_then(Value::as_array)
        .map(|images| {
            images
                .iter()
                .filter_map(|i| i.get("url").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if urls.is_empty() {
        return Err(ToolError::model(
            "fal answered without images; try another prompt, or try again later.",
        ));
    }
    let mut notes = Vec::new();
    let flagged = value
        .get("has_nsfw_concepts")
        .and_then(Value::as_array)
        .map_or(0, |flags| flags.iter().filter(|f| f.as_bool() == Some(true)).count());
    if flagged > 0 {
        notes.push(format!(
            "fal's safety checker flagged {flagged} image(s); they may be blank. Rephrase the \
             prompt if so."
        ));
    }
    let mut images = Vec::new();
    for url in urls.iter().take(ask.n as usize) {
        images.push(download(guard, ctx, url).await?);
    }
    Ok(Generated { provider: "fal", model, images, notes })
}

/// One of fal's result images: a `data:` URL decoded, anything else fetched through the guard
/// (never with the key).
async fn download(guard: &Guard, ctx: &Context, url: &str) -> Result<Vec<u8>, ToolError> {
    if let Some(rest) = url.strip_prefix("data:") {
        let (_, data) = rest.split_once(";base64,").ok_or_else(|| {
            ToolError::model("fal answered with a data: URL that is not base64; try again.")
        })?;
        return base64::engine::general_purpose::STANDARD.decode(data.trim()).map_err(|err| {
            ToolError::model(format!("fal's image data is not valid base64 ({err}); try again."))
        });
    }
    let shown: String = url.chars().take(200).collect();
    let fetched = guard
        .send(Request::get(url).max_bytes(MAX_RESPONSE_BYTES), ctx.cancel_token())
        .await
        .map_err(|err| {
            ToolError::model(format!(
                "fal's image could not be fetched: {err} Nothing was written."
            ))
        })?;
    if !(200..300).contains(&fetched.status) {
        return Err(ToolError::model(format!(
            "fal's image at {shown} answered with HTTP status {}; nothing was written. Try again.",
            fetched.status
        )));
    }
    Ok(fetched.body)
}

async fn openai(
    config: &ImageConfig,
    keys: &Keys,
    provider_guard: &Guard,
    ctx: &Context,
    ask: Ask<'_>,
) -> Result<Generated, ToolError> {
    let model = config.model.clone().unwrap_or_else(|| OPENAI_MODEL.to_owned());
    let base = config.base_url.as_deref().unwrap_or(OPENAI_BASE_URL).trim_end_matches('/');
    let endpoint = format!("{base}/v1/images/generations");
    let key = keys.for_url(ctx.root(), "image_gen", OPENAI_KEY, &endpoint)?;
    let size = match ask.size {
        Size::Square => "1024x1024".to_owned(),
        Size::Landscape => "1536x1024".to_owned(),
        Size::Portrait => "1024x1536".to_owned(),
        Size::Exact(width, height) => format!("{width}x{height}"),
    };
    let mut body = json!({"model": model, "prompt": ask.prompt, "n": ask.n, "size": size});
    // The DALL·E models answer with URLs unless asked otherwise; GPT image models always give
    // base64 and refuse the field.
    if model.starts_with("dall-e") {
        body["response_format"] = json!("b64_json");
    }
    let request = json_post(&endpoint, &body)?
        .secret_header("authorization", api::authorization("Bearer", &key));
    let fetched = api::send(provider_guard, ctx, "image_gen", "OpenAI", request).await?;
    check_status("OpenAI", OPENAI_KEY, fetched.status, &fetched.body)?;
    let value = json_of("OpenAI", &fetched.body)?;
    let mut images = Vec::new();
    for item in value.get("data").and_then(Value::as_array).into_iter().flatten() {
        let Some(data) = item.get("b64_json").and_then(Value::as_str) else { continue };
        let bytes =
            base64::engine::general_purpose::STANDARD.decode(data.trim()).map_err(|err| {
                ToolError::model(format!(
                    "OpenAI's image data is not valid base64 ({err}); try again."
                ))
            })?;
        images.push(bytes);
    }
    if images.is_empty() {
        return Err(ToolError::model(
            "OpenAI answered without images (no `b64_json`); try another prompt, or try again \
             later.",
        ));
    }
    images.truncate(ask.n as usize);
    let mut notes = Vec::new();
    if let Some(revised) = value.pointer("/data/0/revised_prompt").and_then(Value::as_str) {
        notes.push(format!("OpenAI revised the prompt to: {revised}"));
    }
    Ok(Generated { provider: "openai", model, images, notes })
}

fn json_post(endpoint: &str, body: &Value) -> Result<Request, ToolError> {
    let bytes = serde_json::to_vec(body)
        .map_err(|err| ToolError::Fatal(format!("a request did not serialize: {err}")))?;
    Ok(Request::post(endpoint, bytes)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .max_bytes(MAX_RESPONSE_BYTES))
}

fn json_of(service: &str, body: &[u8]) -> Result<Value, ToolError> {
    serde_json::from_slice(body).map_err(|err| {
        ToolError::model(format!(
            "{service} answered with something that is not JSON ({err}); check [image_gen] \
             base_url."
        ))
    })
}

fn check_status(service: &str, var: &str, status: u16, body: &[u8]) -> Result<(), ToolError> {
    // A 401's message can quote part of the key: it is never shown.
    let said = || api::error_message(body).map(|m| format!(" It said: {m}")).unwrap_or_default();
    match status {
        200..=299 => Ok(()),
        401 => Err(ToolError::model(format!(
            "{service} refused the key in {var} (HTTP 401); ask the user to store a valid one \
             with `hands secrets set {var}`. Nothing was generated."
        ))),
        403 => Err(ToolError::model(format!(
            "{service} answered 403: this key may not use that model.{} Nothing was generated.",
            said()
        ))),
        400 | 422 => Err(ToolError::model(format!(
            "{service} refused the request (HTTP {status}).{} Change the prompt or the size.",
            said()
        ))),
        _ => Err(ToolError::model(format!(
            "{service} answered with HTTP status {status}.{} Nothing was generated; try again \
             later.",
            said()
        ))),
    }
}
