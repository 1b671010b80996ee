//! clone_site: capture a reference page — HTML, stylesheets, fonts, images, a screenshot, its
//! copy as Markdown and a manifest — into a folder of the project, with hands' own headless
//! Chromium (the preview's launcher and CDP client). Every request the page makes is paused
//! (`Fetch.enable`), fetched by hands through the egress guard and answered by hands, so the
//! browser reaches nothing the guard forbids.

mod capture;
mod css;
mod markdown;
mod tool;

pub use tool::{CloneArgs, CloneResult, CloneSite, DEFAULT_MAX_ASSETS, DEFAULT_MAX_BYTES};

use hands_core::RegistryBuilder;
use hands_net::Guard;

/// Register clone_site, fetching through `guard` and loading pages with the Chromium at
/// `chromium` (a path or a program name); offered only when that program is found.
pub fn register(
    builder: RegistryBuilder,
    guard: &Guard,
    chromium: &str,
    root: &std::path::Path,
) -> RegistryBuilder {
    match hands_preview::detect::find_program(root, chromium) {
        Some(_) => builder.tool(CloneSite::new(guard.clone(), chromium.to_owned())),
        None => builder,
    }
}
