//! The user's secrets: a store outside every project ([`Store`]: one 0600 file per scope in a
//! 0700 folder under hands' state folder, global or for one project) and the redaction engine
//! built from it ([`Engine`]: every stored value and its encoded forms, plus well-known key
//! shapes). The binary calls [`install`] once at start-up: children then get the secrets granted
//! to their project ([`hands_core::env::ChildEnv`]) and every surface hides every stored value
//! ([`hands_core::redact`]), rebuilt whenever the store changes.
//!
//! ```no_run
//! use std::sync::Arc;
//! use hands_core::secret::{SecretStore, SecretValue};
//!
//! let store = Arc::new(hands_secrets::Store::open()?);
//! hands_secrets::install(store.clone());
//! store.put(std::path::Path::new("/work/app"), "STRIPE_SECRET_KEY", &SecretValue::new("sk_test_…"))?;
//! assert_eq!(hands_core::redact::text("key sk_test_…"), "key [secret:STRIPE_SECRET_KEY]");
//! # Ok::<(), hands_core::secret::SecretError>(())
//! ```
#![deny(missing_docs)]

mod cut;
mod engine;
mod file;
mod forms;
mod rules;
mod store;

use std::sync::Arc;

pub use engine::{Engine, Hit};
pub use store::{
    MIN_VALUE, Store, check_host, check_name, check_value, default_dir, hint, project_scope,
};

/// Make `store` the one children's environments use, install the engine built from it, and
/// install a new engine whenever it changes.
pub fn install(store: Arc<Store>) {
    fn reinstall(store: &Store) {
        let values = store.values();
        match Engine::new(values.iter().map(|(n, v)| (n.as_str(), v.as_str()))) {
            Ok(engine) => hands_core::redact::install(Arc::new(engine)),
            // The engine installed before stays.
            Err(err) => tracing::error!(%err, "the redaction engine could not be built"),
        }
    }
    store.on_change(reinstall);
    reinstall(&store);
    hands_core::env::ChildEnv::set_secrets(store);
}
