//! What web_scrape's backends share with the tool: the key and limits, the format asked for and
//! what a backend found.

use schemars::JsonSchema;
use serde::Deserialize;

/// The Firecrawl key's variable.
pub const FIRECRAWL_KEY: &str = "FIRECRAWL_API_KEY";
/// Firecrawl's API, unless the user sets `[web_scrape] base_url`.
pub const FIRECRAWL_BASE_URL: &str = "https://api.firecrawl.dev";
/// HTML past this many bytes is cut before it is parsed.
pub const MAX_HTML_BYTES: usize = 2 * 1024 * 1024;

/// What to return of the page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Markdown (the default).
    #[default]
    Markdown,
    /// Cleaned HTML (no scripts or styles).
    Html,
    /// Plain text, block by block.
    Text,
    /// The page's links, absolute, one per line.
    Links,
}

impl Format {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Self::Markdown => "markdown",
            Self::Html => "html",
            Self::Text => "text",
            Self::Links => "links",
        }
    }
}

/// What a backend found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scraped {
    pub final_url: String,
    pub format: Format,
    pub title: Option<String>,
    pub main_content: bool,
    pub content: String,
    pub notes: Vec<String>,
}
