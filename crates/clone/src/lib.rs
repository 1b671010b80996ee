//! clone_site: capture a reference page — HTML, stylesheets, fonts, images, a screenshot, its
//! copy as Markdown and a manifest — into a folder of the project, with hands' own headless
//! Chromium (the preview's launcher and CDP client). Every request the page makes is paused
//! (`Fetch.enable`), fetched by hands through the egress guard and answered by hands, so the
//! browser reaches nothing the guard forbids.

mod capture;
mod css;
mod markdown;
mod srcset;
mod tool;

pub use capture::start_browser;
pub use tool::{CloneArgs, CloneResult, CloneSite, DEFAULT_MAX_ASSETS, DEFAULT_MAX_BYTES};

use hands_core::RegistryBuilder;
use hands_net::Guard;

/// Register clone_site, fetching through `guard` and loading pages with the Chromium at
/// `chromium` (an absolute path or a name on the system's PATH, never a program of the
/// project); offered only with a project (see [`is_project`]) and when that program is found.
pub fn register(
    builder: RegistryBuilder,
    guard: &Guard,
    chromium: &str,
    root: &std::path::Path,
) -> RegistryBuilder {
    if !is_project(root) {
        tracing::debug!(root = %root.display(), "not a project: clone_site is not offered");
        return builder;
    }
    match hands_preview::find_browser(chromium) {
        // A copy of a page is something to build a web app from.
        Some(_) => builder
            .tool_if(|c| c.project(|p| p.web), CloneSite::new(guard.clone(), chromium.to_owned())),
        None => builder,
    }
}

/// "With a project", for clone_site: the root is a folder of its own — not the file system's
/// root and not the user's home folder, the folders a session may not take as its root either.
/// A clone is a copy of a page to work from in a project, and `hands call` runs wherever it is
/// typed: from `~` it would drop `.hands/clones/` into the home folder.
pub fn is_project(root: &std::path::Path) -> bool {
    let Ok(canonical) = std::fs::canonicalize(root) else { return false };
    if canonical.parent().is_none() || !canonical.is_dir() {
        return false;
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(std::path::PathBuf::from);
    home.and_then(|h| std::fs::canonicalize(h).ok()).is_none_or(|h| h != canonical)
}
