//! image_gen's settings, arguments, results and sizes: what the tool, its files and its providers share.

use hands_core::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// fal's key variable.
pub const FAL_KEY: &str = "FAL_KEY";
/// OpenAI's key variable (used only with `[image_gen] provider = "openai"`).
pub const OPENAI_KEY: &str = "OPENAI_API_KEY";
/// The longest prompt, in characters.
pub const MAX_PROMPT_CHARS: usize = 4000;

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

    pub(crate) fn key_name(&self) -> &'static str {
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
    pub(crate) fn parse(raw: Option<&str>) -> Result<Self, ToolError> {
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
