//! image_gen: images from a prompt, by the user's image provider (fal by default; OpenAI only when
//! the user chooses it), saved into the project and shown to the model.
//!
//! Flow: validate the arguments; work out the files it will write and refuse, before anything is
//! paid for, a path that escapes the project, a protected one or an existing file without
//! `overwrite` ([`files`]); read the provider's key at call time; generate ([`providers`]: fal's
//! result URLs are fetched through the egress guard); check every image by its magic bytes; write
//! them atomically through the confined workspace; answer with paths, dimensions and the images.

mod files;
mod providers;

use std::borrow::Cow;
use std::sync::Arc;

use hands_core::ToolOutput;
use hands_core::secret::SecretStore;
use hands_core::{Annotations, Content, Context, Family, Label, Policy, Tool, ToolError};
use hands_net::{Guard, NetConfig};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Keys;

/// fal's key variable.
pub const FAL_KEY: &str = "FAL_KEY";
/// OpenAI's key variable (used only with `[image_gen] provider = "openai"`).
pub const OPENAI_KEY: &str = "OPENAI_API_KEY";
/// The longest prompt, in characters.
pub const MAX_PROMPT_CHARS: usize = 4000;
/// Images up to this size are also returned as image content.
const SHOW_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// An image provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageProvider {
    /// fal (`FAL_KEY`), the default.
    #[default]
    Fal,
    /// OpenAI's images API (`OPENAI_API_KEY`), only when the user chooses it.
    Openai,
}

/// `[image_gen]`: which provider draws, with which model, where (the user's only: a repository
/// must not choose what is paid for, or where a key goes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImageConfig {
    /// `fal` (default) or `openai`.
    pub provider: ImageProvider,
    /// The model: a fal endpoint (default `fal-ai/flux/schnell`) or an OpenAI model (default
    /// `gpt-image-1`).
    pub model: Option<String>,
    /// The provider's address (default `https://fal.run`, or `https://api.openai.com`).
    pub base_url: Option<String>,
    /// The longest wait for the provider's answer, in milliseconds.
    pub timeout_ms: u64,
}

impl Default for ImageConfig {
    fn default() -> Self {
        Self { provider: ImageProvider::Fal, model: None, base_url: None, timeout_ms: 180_000 }
    }
}

impl ImageConfig {
    /// Whether image_gen is offered: the chosen provider's key exists.
    pub fn offered(&self, has_key: impl Fn(&str) -> bool) -> bool {
        has_key(self.key_name())
    }

    fn key_name(&self) -> &'static str {
        match self.provider {
            ImageProvider::Fal => FAL_KEY,
            ImageProvider::Openai => OPENAI_KEY,
        }
    }
}

/// Arguments of image_gen.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageArgs {
    /// What to draw (1 to 4000 characters).
    pub prompt: String,
    /// Where to save the image, relative to the project root: a `.png`, `.jpg`, `.jpeg` or `.webp`
    /// file (default `.hands/media/<words of the prompt>.png`). With `n` over 1 the others get
    /// `-2`, `-3`, `-4` before the extension.
    pub path: Option<String>,
    /// `square` (default), `landscape`, `portrait`, or `WIDTHxHEIGHT` such as `1280x720`.
    pub size: Option<String>,
    /// How many images (1 to 4, default 1).
    pub n: Option<u32>,
    /// Replace files that exist at `path` (default false: an existing file is refused before
    /// anything is generated).
    #[serde(default)]
    pub overwrite: bool,
}

/// One image written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SavedImage {
    /// Path relative to the project root.
    pub path: String,
    /// `created` or `replaced`.
    pub action: String,
    /// Its MIME type, from its bytes.
    pub mime_type: String,
    /// Width in pixels.
    pub width: u64,
    /// Height in pixels.
    pub height: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// The structured result of image_gen: everything its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ImageResult {
    /// `fal` or `openai`.
    pub provider: String,
    /// The model that drew.
    pub model: String,
    /// The images, in the provider's order.
    pub images: Vec<SavedImage>,
    /// What to know: a file saved under another name than asked, a safety filter's verdict.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The size asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Size {
    Square,
    Landscape,
    Portrait,
    Exact(u32, u32),
}

impl Size {
    fn parse(raw: Option<&str>) -> Result<Self, ToolError> {
        let Some(raw) = raw.map(str::trim) else { return Ok(Self::Square) };
        match raw.to_ascii_lowercase().as_str() {
            "square" => return Ok(Self::Square),
            "landscape" => return Ok(Self::Landscape),
            "portrait" => return Ok(Self::Portrait),
            _ => {}
        }
        let bad = || {
            ToolError::model(format!(
                "`size` {raw:?} is not a size: use `square`, `landscape`, `portrait`, or \
                 WIDTHxHEIGHT in pixels such as `1280x720` (each 64 to 4096)."
            ))
        };
        let (w, h) = raw.split_once(['x', 'X', '×']).ok_or_else(bad)?;
        let w: u32 = w.trim().parse().map_err(|_| bad())?;
        let h: u32 = h.trim().parse().map_err(|_| bad())?;
        if !(64..=4096).contains(&w) || !(64..=4096).contains(&h) {
            return Err(bad());
        }
        Ok(Self::Exact(w, h))
    }
}

/// The image_gen tool.
#[derive(Clone)]
pub struct ImageGen {
    /// For the provider's request: the `[net]` rules, with the provider's own time limit.
    provider_guard: Guard,
    /// For fal's result URLs.
    guard: Guard,
    config: ImageConfig,
    keys: Keys,
}

impl std::fmt::Debug for ImageGen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageGen").field("config", &self.config).finish_non_exhaustive()
    }
}

impl ImageGen {
    /// Drawing with `config` through `guard` (whose rules also apply to the provider, with
    /// `config.timeout_ms` as its read timeout); keys read from `secrets`, then the environment.
    pub fn new(guard: Guard, config: ImageConfig, secrets: Option<Arc<dyn SecretStore>>) -> Self {
        let slow =
            NetConfig { read_timeout_ms: config.timeout_ms.max(1), ..guard.config().clone() };
        // The guard was built from the same rules, so this cannot fail; keep it if it does.
        let provider_guard = Guard::new(&slow).unwrap_or_else(|_| guard.clone());
        Self { provider_guard, guard, config, keys: Keys::new(secrets) }
    }
}

impl Tool for ImageGen {
    type Args = ImageArgs;

    fn name(&self) -> &'static str {
        "image_gen"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("../image_gen.md"))
    }

    fn annotations(&self) -> Annotations {
        // Not read-only: it writes files and costs money, so it needs approval under "ask".
        Annotations { read_only: false, destructive: false, idempotent: false, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "prompt" })
            .family(Family::Web)
            .timeout_ms(self.config.timeout_ms.saturating_add(120_000))
    }

    fn output_schema(&self) -> Option<Value> {
        Some(hands_core::output_schema_for::<ImageResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        let prompt = args.prompt.trim().to_owned();
        let chars = prompt.chars().count();
        if chars == 0 || chars > MAX_PROMPT_CHARS {
            return Err(ToolError::model(format!(
                "`prompt` must have 1 to {MAX_PROMPT_CHARS} characters (it has {chars}); describe \
                 the image in fewer words."
            )));
        }
        let n = args.n.unwrap_or(1);
        if !(1..=4).contains(&n) {
            return Err(ToolError::model(format!("`n` must be 1 to 4 (it is {n}).")));
        }
        let size = Size::parse(args.size.as_deref())?;
        let plan = {
            let (ctx, path, prompt) = (ctx.clone(), args.path.clone(), prompt.clone());
            let overwrite = args.overwrite;
            blocking(move || files::plan(&ctx, path.as_deref(), &prompt, n, overwrite)).await??
        };
        let ask = providers::Ask { prompt: &prompt, size, n };
        let generated = providers::generate(
            &self.config,
            &self.keys,
            &self.provider_guard,
            &self.guard,
            &ctx,
            ask,
        )
        .await?;
        let mut notes = generated.notes;
        let mut checked = Vec::new();
        for (i, bytes) in generated.images.into_iter().enumerate() {
            let kind = files::image_kind(&bytes).map_err(|why| {
                ToolError::model(format!(
                    "{} answered with image {} that is not an image ({why}); nothing was written.",
                    generated.provider,
                    i + 1
                ))
            })?;
            checked.push((bytes, kind));
        }
        if checked.len() < n as usize {
            notes.push(format!(
                "{} returned {} of the {n} images asked for.",
                generated.provider,
                checked.len()
            ));
        }
        let (saved, written, more_notes) = {
            let ctx = ctx.clone();
            let plan = plan.clone();
            blocking(move || files::write_all(&ctx, &plan, checked)).await??
        };
        notes.extend(more_notes);
        let result = ImageResult {
            provider: generated.provider.to_owned(),
            model: generated.model,
            images: saved,
            notes,
        };
        let mut text = format!(
            "Generated {} image{} with {} ({}):\n",
            result.images.len(),
            if result.images.len() == 1 { "" } else { "s" },
            result.provider,
            result.model
        );
        for image in &result.images {
            text.push_str(&format!(
                "- {} ({}×{} px, {}, {} bytes, {})\n",
                image.path, image.width, image.height, image.mime_type, image.bytes, image.action
            ));
        }
        for note in &result.notes {
            text.push_str(&format!("Note: {note}\n"));
        }
        let structured = serde_json::to_value(&result)
            .map_err(|err| ToolError::Fatal(format!("a result did not serialize: {err}")))?;
        let mut output = ToolOutput::text(text).with_structured(structured);
        for (bytes, mime) in written {
            if bytes.len() <= SHOW_IMAGE_BYTES {
                output.content.push(Content::Image { data: bytes, mime_type: mime });
            }
        }
        Ok(output)
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ToolError::Fatal(format!("image_gen task failed: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(Size::parse(None).unwrap(), Size::Square);
        assert_eq!(Size::parse(Some(" Landscape ")).unwrap(), Size::Landscape);
        assert_eq!(Size::parse(Some("portrait")).unwrap(), Size::Portrait);
        assert_eq!(Size::parse(Some("1280x720")).unwrap(), Size::Exact(1280, 720));
        assert_eq!(Size::parse(Some("512×512")).unwrap(), Size::Exact(512, 512));
        for bad in ["huge", "10x10", "5000x100", "x100", "12ax4", "-1x-1", ""] {
            assert!(Size::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn offered_by_the_chosen_providers_key() {
        let fal = ImageConfig::default();
        assert!(fal.offered(|k| k == FAL_KEY) && !fal.offered(|k| k == OPENAI_KEY));
        let openai = ImageConfig { provider: ImageProvider::Openai, ..ImageConfig::default() };
        assert!(openai.offered(|k| k == OPENAI_KEY) && !openai.offered(|k| k == FAL_KEY));
    }
}
