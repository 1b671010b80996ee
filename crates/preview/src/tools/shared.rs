//! What the preview tools share: the empty argument type and the settings handle.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::preview::Settings;

/// Arguments of the tools that take none.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The settings the tools share.
pub(crate) type Shared = Arc<Settings>;
