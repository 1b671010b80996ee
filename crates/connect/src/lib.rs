//! The tools of hands that connect a project to outside services: `enable_stripe`,
//! `connect_supabase`, `db_schema` (the linked database's live schema) and `supabase_setup`
//! (link the database, write and apply migrations as the Supabase CLI does, reload PostgREST).
//!
//! Each asks the user for its keys out of band (the session's
//! [`SecretAskerHandle`](hands_core::secret::SecretAskerHandle): the model never sees a value),
//! verifies them against the service (Stripe through the egress guard, Supabase's database under
//! the guard's address rule), and only then stores them in the user's
//! [`SecretStore`](hands_core::secret::SecretStore) for the project and records the link in the
//! project. Both need a user to answer ([`hands_core::Policy::needs_user`]).
//!
//! ```no_run
//! # fn demo(store: std::sync::Arc<dyn hands_core::secret::SecretStore>) {
//! use hands_core::{CoreConfig, Registry};
//! let config = hands_connect::ConnectConfig::default();
//! let guard = hands_net::Guard::new(&config.net).unwrap();
//! let registry =
//!     hands_connect::register(Registry::builder(CoreConfig::default()), &config, &guard, store)
//!         .build();
//! assert!(registry.get("enable_stripe").is_some());
//! # }
//! ```

mod ask;
mod config;
mod connect_supabase;
pub mod database;
mod db_schema;
mod enable_stripe;
pub mod files;
pub mod postgres;
pub mod supabase_setup;

use std::sync::Arc;

pub use config::{
    ConnectConfig, DatabaseConfig, STATEMENT_TIMEOUT_MS, STRIPE_BASE_URL, StripeConfig,
    SupabaseConfig,
};
pub use connect_supabase::{
    ConnectSupabase, ConnectSupabaseArgs, DB_URL_NAME, Project, SERVICE_ROLE_NAME, SupabaseResult,
    check_anon_key, project,
};
pub use db_schema::{DbSchema, DbSchemaArgs, Include, SchemaResult, catalog_queries};
pub use enable_stripe::{
    EnableStripe, EnableStripeArgs, PUBLISHABLE_NAME, SECRET_NAME, StripeMode, StripeResult,
    check_key,
};
pub use supabase_setup::{SetupResult, SupabaseSetup, SupabaseSetupArgs};

use hands_core::RegistryBuilder;
use hands_core::secret::SecretStore;

pub use ask::ASK_TIMEOUT_MS;

/// Register enable_stripe and connect_supabase with `config`, the egress `guard` built from
/// `config.net`, and the user's secret `store`; db_schema and supabase_setup beside them. Each is
/// offered only where the project has its context, so that a plain repository's every request
/// does not carry them: enable_stripe in a web project (or with a Stripe key), connect_supabase
/// in a web project or one with a database, db_schema and supabase_setup where a database is
/// linked or set up (a `.hands/project.toml` link, a `supabase/` folder, a schema file, a
/// database variable in `.env.example`, a configured database or its key).
pub fn register(
    builder: RegistryBuilder,
    config: &ConnectConfig,
    guard: &hands_net::Guard,
    store: Arc<dyn SecretStore>,
) -> RegistryBuilder {
    let configured = config.database.url_secret.is_some() || config.database.sqlite.is_some();
    let has_database = move |c: &hands_core::Conditions| {
        configured
            || c.project(|p| p.database)
            || c.has_key(DB_URL_NAME)
            || c.has_key("DATABASE_URL")
    };
    builder
        .tool_if(
            |c| c.project(|p| p.web) || c.has_key(SECRET_NAME),
            EnableStripe::new(config.stripe.clone(), guard.clone(), Arc::clone(&store)),
        )
        .tool_if(
            move |c| c.project(|p| p.web) || has_database(c),
            ConnectSupabase::new(config.supabase.clone(), config.net.clone(), Arc::clone(&store)),
        )
        .tool_if(
            has_database,
            DbSchema::new(config.net.clone(), config.database.clone(), Arc::clone(&store)),
        )
        .tool_if(
            has_database,
            SupabaseSetup::new(config.net.clone(), config.database.clone(), config.approval, store),
        )
}
