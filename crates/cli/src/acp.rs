//! `hands acp`: the Agent Client Protocol on stdio ([`hands_acp::serve`]). Each session/new's
//! cwd gets the host `hands run` would build there (`setup`: that project's settings and tools,
//! approval `ask` unless a layer says otherwise) with the configured model. Sessions live in
//! memory while `hands acp` runs (it does not offer session/load).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;

use crate::run::{self, Setup};

/// Serve until the editor closes stdin; `setup` builds what `hands run --root ROOT` runs on.
pub fn serve(setup: impl Fn(&Path) -> Result<Setup> + Send + Sync + 'static) -> Result<ExitCode> {
    let projects: hands_acp::Projects = Arc::new(move |root: &Path| {
        let mut setup = setup(root)?;
        // One host per root, each of which sweeps its store's running turns when it opens: a
        // store of its own, so that opening a second project never ends the first one's turn.
        setup.settings.store.backend = hands_store::StoreBackend::Memory;
        run::host_parts(setup.registry, &setup.settings)
    });
    run::block_on(async move {
        hands_acp::serve(projects).await?;
        Ok(ExitCode::SUCCESS)
    })
}
