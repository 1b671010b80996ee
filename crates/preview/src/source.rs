//! The preview tools as a live source: offered while the project has a preview. Detection looks
//! at a few files, so it never runs on a read call: it runs after a mutating call (a `write_file`
//! of `index.html`, an `npm create vite`), on a configuration refresh, and at most once a second
//! when the tools are listed (a file the user made in their editor).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hands_core::{DynTool, Refresh, ToolSource, erase};
use hands_exec::ExecConfig;

use crate::{
    PreviewAct, PreviewClose, PreviewConfig, PreviewConsole, PreviewEvaluate, PreviewNetwork,
    PreviewOpen, PreviewScreenshot, PreviewSnapshot, PreviewStatusTool, ReadRuntimeErrors,
    Settings, detect,
};

/// Listings look at the disk at most this often.
const LISTING_EVERY: Duration = Duration::from_secs(1);

/// See the module docs.
pub struct PreviewSource {
    root: PathBuf,
    config: PreviewConfig,
    tools: Vec<Arc<dyn DynTool>>,
    present: AtomicBool,
    /// When a listing last looked.
    looked: Mutex<Instant>,
}

impl PreviewSource {
    /// The preview tools of the project at `root`, with `[preview]`, the exec settings and the
    /// `[net]` rule of the page's requests.
    pub fn new(
        root: &Path,
        config: &PreviewConfig,
        exec: &ExecConfig,
        net: &hands_net::NetConfig,
    ) -> Self {
        let settings =
            Arc::new(Settings { preview: config.clone(), exec: exec.clone(), net: net.clone() });
        let tools = vec![
            erase(PreviewOpen::new(Arc::clone(&settings))),
            erase(PreviewStatusTool),
            erase(PreviewClose),
            erase(ReadRuntimeErrors::new(settings)),
            erase(PreviewScreenshot),
            erase(PreviewSnapshot),
            erase(PreviewAct),
            erase(PreviewNetwork),
            erase(PreviewConsole),
        ];
        let mut tools = tools;
        if config.evaluate {
            tools.push(erase(PreviewEvaluate));
        }
        let present = detect::has_preview(root, config);
        if !present {
            tracing::debug!(root = %root.display(), "no preview yet: the preview tools wait");
        }
        Self {
            root: root.to_owned(),
            config: config.clone(),
            tools,
            present: AtomicBool::new(present),
            looked: Mutex::new(Instant::now()),
        }
    }

    /// Look at the project; true when the answer changed.
    fn look(&self) -> bool {
        let present = detect::has_preview(&self.root, &self.config);
        let was = self.present.swap(present, Ordering::Relaxed);
        if was != present {
            tracing::info!(root = %self.root.display(), present, "the project's preview changed");
        }
        was != present
    }
}

impl ToolSource for PreviewSource {
    fn name(&self) -> &str {
        "preview"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        if self.present.load(Ordering::Relaxed) { self.tools.clone() } else { Vec::new() }
    }

    fn refresh(&self, why: Refresh) -> bool {
        if why == Refresh::Listing {
            let mut looked = self.looked.lock().unwrap_or_else(PoisonError::into_inner);
            if looked.elapsed() < LISTING_EVERY {
                return false;
            }
            *looked = Instant::now();
        }
        self.look()
    }
}
