//! `[web]`: the limits of the web tools.

use serde::{Deserialize, Serialize};

/// Settings of the web tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// download_to_repo: the most bytes a call may ask for with `max_bytes` (after decompression).
    pub download_max_bytes: u64,
}

/// What download_to_repo accepts when the call gives no `max_bytes` (lowered to the setting).
pub const DEFAULT_DOWNLOAD_BYTES: u64 = 20 * 1024 * 1024;

impl Default for WebConfig {
    fn default() -> Self {
        Self { download_max_bytes: 100 * 1024 * 1024 }
    }
}
