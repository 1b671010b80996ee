//! `hands acp`: the Agent Client Protocol on stdio ([`hands_acp::serve`]). Each session/new's
//! cwd gets the host `hands run` would build there: that project's settings and tools, the
//! configured model, approval `ask` unless a layer says otherwise. Sessions live in memory while
//! `hands acp` runs (it does not offer session/load).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use hands_agent::host::HostParts;

/// Serve until the editor closes stdin.
pub fn run(flags: Vec<String>) -> Result<ExitCode> {
    let projects: hands_acp::Projects = Arc::new(move |root: &Path| parts(root, &flags));
    crate::run::block_on(async move {
        hands_acp::serve(projects).await?;
        Ok(ExitCode::SUCCESS)
    })
}

/// The host parts for the project at `root`, as `hands run --root ROOT` builds them.
fn parts(root: &Path, flags: &[String]) -> Result<HostParts> {
    let loaded = crate::load_settings(root, flags)?;
    let store_dir: Vec<_> =
        loaded.settings.store.path.parent().map(Path::to_path_buf).into_iter().collect();
    hands_agent::host::roots::check_root(root, &store_dir).map_err(anyhow::Error::msg)?;
    let mut setup = crate::agent_setup(loaded, root.to_path_buf())?;
    // One host per root, each of which sweeps its store's running turns when it opens: a store
    // of its own, so that opening a second project never ends the first one's turn.
    setup.settings.store.backend = hands_store::StoreBackend::Memory;
    crate::run::host_parts(setup.registry, &setup.settings)
}
