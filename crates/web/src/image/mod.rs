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
mod types;

use std::borrow::Cow;
use std::sync::Arc;

use hands_core::ToolOutput;
use hands_core::secret::SecretStore;
use hands_core::{Annotations, Content, Context, Family, Label, Policy, Tool, ToolError};
use hands_net::{Guard, NetConfig};
use serde_json::Value;

use crate::api::Keys;

use types::Size;
pub use types::{
    FAL_KEY, ImageArgs, ImageConfig, ImageProvider, ImageResult, MAX_PROMPT_CHARS, OPENAI_KEY,
    SavedImage,
};

/// Images up to this size are also returned as image content.
const SHOW_IMAGE_BYTES: usize = 5 * 1024 * 1024;

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
