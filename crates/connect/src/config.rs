//! The settings of the connect tools: where the Stripe API is (`[stripe]`) and which hosts besides
//! `*.supabase.co` a Supabase project URL may name (`[supabase]`), both the user's only (a
//! repository's `.hands/config.toml` could send the user's key to its own server); and which
//! database db_schema and supabase_setup read (`[database]`), which a project may set: it names
//! only a secret stored for that project (never a global one, unless the user set the name), or a
//! file inside it.

use serde::{Deserialize, Serialize};

/// The Stripe API's address when none is configured.
pub const STRIPE_BASE_URL: &str = "https://api.stripe.com";

/// `[stripe]`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StripeConfig {
    /// The Stripe API's base URL (`https://api.stripe.com`); a test or a proxy may change it.
    pub base_url: String,
}

impl Default for StripeConfig {
    fn default() -> Self {
        Self { base_url: STRIPE_BASE_URL.to_owned() }
    }
}

/// `[supabase]`
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SupabaseConfig {
    /// Hosts whose URLs connect_supabase accepts as a project URL besides
    /// `https://<ref>.supabase.co` (a self-hosted Supabase); the ref is then the host's first
    /// label. Exact host names, or `*.example.com` for its subdomains.
    pub allow_custom_url: Vec<String>,
}

impl SupabaseConfig {
    /// True when `host` is one of [`SupabaseConfig::allow_custom_url`].
    pub fn allows(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.allow_custom_url.iter().any(|entry| {
            let entry = entry.trim().to_ascii_lowercase();
            match entry.strip_prefix("*.") {
                Some(domain) => host.ends_with(&format!(".{domain}")),
                None => host == entry,
            }
        })
    }
}

/// The statement timeout of db_schema's read when none is configured.
pub const STATEMENT_TIMEOUT_MS: u64 = 10_000;

/// `[database]`: the database linked to the project, when it is not the one connect_supabase
/// stored (`SUPABASE_DB_URL`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseConfig {
    /// The name of a secret stored for the project whose value is a PostgreSQL URL
    /// (`hands secrets set NAME`). Set in a project's `.hands/config.toml`, it names only a
    /// secret stored for that project; set by the user (their own file, `HANDS_*`, `-c`), a
    /// global one too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url_secret: Option<String>,
    /// True when the user, not the project, set [`DatabaseConfig::url_secret`]: the loader of the
    /// settings knows each value's layer and says so (false, the safe reading, when it does not).
    #[serde(skip)]
    pub url_secret_by_user: bool,
    /// A SQLite database file in the project (a path relative to the root), read read-only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqlite: Option<String>,
    /// The statement timeout of db_schema's read, in milliseconds.
    pub statement_timeout_ms: u64,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            url_secret: None,
            url_secret_by_user: false,
            sqlite: None,
            statement_timeout_ms: STATEMENT_TIMEOUT_MS,
        }
    }
}

/// Everything the connect tools read from the settings.
#[derive(Debug, Clone, Default)]
pub struct ConnectConfig {
    /// `[stripe]`
    pub stripe: StripeConfig,
    /// `[supabase]`
    pub supabase: SupabaseConfig,
    /// `[net]`: the rule a database connection's address is checked by, as every fetch's.
    pub net: hands_net::NetConfig,
    /// `[database]`
    pub database: DatabaseConfig,
    /// `approval`: supabase_setup asks the user before every action but `status` under `ask`.
    pub approval: hands_core::config::Approval,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_hosts_match_exactly_or_by_subdomain() {
        let config = SupabaseConfig {
            allow_custom_url: vec!["db.example.com".into(), "*.internal.dev".into()],
        };
        assert!(config.allows("db.example.com") && config.allows("DB.example.com"));
        assert!(config.allows("a.internal.dev") && !config.allows("internal.dev"));
        assert!(!config.allows("evil-db.example.com") && !config.allows("xinternal.dev"));
    }
}
