//! The web tools of hands, each fetching through the egress guard (hands-net): `download_to_repo`
//! pulls a remote file into the project through the confined workspace (hands-fs); `web_search`
//! asks the user's search provider; `web_scrape` reads one page (Firecrawl, or hands' own
//! extraction); `image_gen` draws images with the user's image provider and saves them.
//!
//! ```no_run
//! use hands_core::{CoreConfig, Registry};
//! let guard = hands_net::Guard::new(&Default::default()).unwrap();
//! let registry =
//!     hands_web::register(Registry::builder(CoreConfig::default()), &guard, &Default::default())
//!         .build();
//! assert!(registry.get("download_to_repo").is_some());
//! ```

mod api;
mod config;
mod content;
mod download;
mod image;
mod scrape;
mod search;

pub use config::{DEFAULT_DOWNLOAD_BYTES, WebConfig};
pub use download::{DownloadArgs, DownloadResult, DownloadToRepo};
pub use image::{
    FAL_KEY, ImageArgs, ImageConfig, ImageGen, ImageProvider, ImageResult, MAX_PROMPT_CHARS,
    OPENAI_KEY, SavedImage,
};
pub use scrape::{
    FIRECRAWL_BASE_URL, FIRECRAWL_KEY, Format, MAX_HTML_BYTES, MIN_MAIN_CHARS, ScrapeArgs,
    ScrapeConfig, ScrapeResult, WebScrape,
};
pub use search::{
    BRAVE_BASE_URL, BRAVE_KEY, Provider, SearchArgs, SearchConfig, SearchHit, SearchResult,
    TAVILY_BASE_URL, TAVILY_KEY, TimeRange, WebSearch,
};

use std::sync::Arc;

use hands_core::document::DocumentParser;
use hands_core::secret::SecretStore;

use hands_core::RegistryBuilder;
use hands_net::Guard;

/// Register the web tools, fetching through `guard`: download_to_repo where a project has assets
/// to fetch (a web app or a package of any language), not in every plain repository's requests.
pub fn register(builder: RegistryBuilder, guard: &Guard, config: &WebConfig) -> RegistryBuilder {
    builder.tool_if(
        |c| c.project(|p| p.web || p.has_manifest()),
        DownloadToRepo::new(guard.clone(), config.clone()),
    )
}

/// Register web_search, offered while a key for its provider is stored or set (or SearXNG is
/// configured); the key is read from `secrets` (then the environment) at call time.
pub fn register_search(
    builder: RegistryBuilder,
    guard: &Guard,
    config: &SearchConfig,
    secrets: Option<Arc<dyn SecretStore>>,
) -> RegistryBuilder {
    let offered = config.clone();
    builder.tool_if(
        move |conditions| offered.offered(|name| conditions.has_key(name)),
        WebSearch::new(guard.clone(), config.clone(), secrets),
    )
}

/// Register web_scrape, offered while Firecrawl's key is stored or set, or the user turned on the
/// built-in backend; documents (PDF, office files) are read with `parser` when one is given.
pub fn register_scrape(
    builder: RegistryBuilder,
    guard: &Guard,
    config: &ScrapeConfig,
    secrets: Option<Arc<dyn SecretStore>>,
    parser: Option<Arc<dyn DocumentParser>>,
) -> RegistryBuilder {
    let offered = config.clone();
    builder.tool_if(
        move |conditions| offered.offered(|name| conditions.has_key(name)),
        WebScrape::new(guard.clone(), config.clone(), secrets, parser),
    )
}

/// Register image_gen, offered while the chosen provider's key (`FAL_KEY`, or `OPENAI_API_KEY`
/// with `provider = "openai"`) is stored or set.
pub fn register_image(
    builder: RegistryBuilder,
    guard: &Guard,
    config: &ImageConfig,
    secrets: Option<Arc<dyn SecretStore>>,
) -> RegistryBuilder {
    let offered = config.clone();
    builder.tool_if(
        move |conditions| offered.offered(|name| conditions.has_key(name)),
        ImageGen::new(guard.clone(), config.clone(), secrets),
    )
}
