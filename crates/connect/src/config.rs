//! The user-only settings of the connect tools: where the Stripe API is (`[stripe]`) and which
//! hosts besides `*.supabase.co` a Supabase project URL may name (`[supabase]`). A repository's
//! `.hands/config.toml` cannot set either: it could send the user's key to its own server.

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

/// Everything the connect tools read from the settings.
#[derive(Debug, Clone, Default)]
pub struct ConnectConfig {
    /// `[stripe]`
    pub stripe: StripeConfig,
    /// `[supabase]`
    pub supabase: SupabaseConfig,
    /// `[net]`: the rule a database connection's address is checked by, as every fetch's.
    pub net: hands_net::NetConfig,
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
