//! connect_supabase: link the project to a Supabase project and verify its database.
//!
//! Flow: the project URL and anon key (public: from the arguments, else asked through ask_user's
//! asker) are checked and give the project ref; the service-role key and the database URL are
//! asked as secrets; `select version()` runs on the database (postgres.rs, under the egress
//! guard's address rule); only then are both secrets stored and `[supabase]` recorded in
//! `.hands/project.toml`. A failure before that leaves nothing stored.

use crate::postgres::UrlFrom;
use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine as _;
use hands_core::secret::SecretStore;
use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::SupabaseConfig;
use crate::postgres::{self, DbError};
use crate::{ask, files};

/// The variable the service-role key is stored as.
pub const SERVICE_ROLE_NAME: &str = "SUPABASE_SERVICE_ROLE_KEY";
/// The variable the database URL is stored as.
pub const DB_URL_NAME: &str = "SUPABASE_DB_URL";

/// Arguments of connect_supabase.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectSupabaseArgs {
    /// The project URL, `https://<ref>.supabase.co` (public); asked of the user when left out.
    #[serde(default)]
    pub project_url: Option<String>,
    /// The project's anon key (public); asked of the user when left out.
    #[serde(default)]
    pub anon_key: Option<String>,
}

/// The structured result of connect_supabase: everything its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SupabaseResult {
    /// The project's ref (the first label of its host).
    pub project_ref: String,
    /// The project URL.
    pub url: String,
    /// The database's `select version()`.
    pub postgres_version: String,
    /// The variables the secrets are stored as and given to the project's processes.
    pub stored: Vec<StoredName>,
    /// Where the link is recorded.
    pub recorded_in: String,
}

/// One stored secret, as it may be shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StoredName {
    /// The variable.
    pub name: String,
    /// A masked hint, never the value.
    pub hint: String,
}

/// The connect_supabase tool.
#[derive(Clone)]
pub struct ConnectSupabase {
    config: SupabaseConfig,
    net: hands_net::NetConfig,
    store: Arc<dyn SecretStore>,
}

impl ConnectSupabase {
    /// With the Supabase settings, the `[net]` rule for the database's address, and the store.
    pub fn new(
        config: SupabaseConfig,
        net: hands_net::NetConfig,
        store: Arc<dyn SecretStore>,
    ) -> Self {
        Self { config, net, store }
    }
}

impl Tool for ConnectSupabase {
    type Args = ConnectSupabaseArgs;

    fn name(&self) -> &'static str {
        "connect_supabase"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("connect_supabase.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: false, idempotent: true, open_world: true }
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .needs_user()
            .label(Label::Key { key: "project_url" })
            .family(Family::Project)
            .timeout_ms(ask::ASK_TIMEOUT_MS)
    }

    fn cacheable(&self) -> bool {
        false
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<SupabaseResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        const TOOL: &str = "connect_supabase";
        let url =
            match args.project_url {
                Some(url) => url,
                None => ask::public(
                    &ctx,
                    TOOL,
                    "project_url",
                    "What is your Supabase project URL? (Supabase dashboard → Project Settings → \
                     API → Project URL, like https://abcdefghijklmnopqrst.supabase.co)",
                )
                .await?,
            };
        let project = project(&url, &self.config)?;
        let anon = match args.anon_key {
            Some(key) => key,
            None => {
                ask::public(
                    &ctx,
                    TOOL,
                    "anon_key",
                    "What is your Supabase project's anon (public) key? (Supabase dashboard → \
                     Project Settings → API → anon public)",
                )
                .await?
            }
        };
        let anon = check_anon_key(anon.trim(), &project.reference)?;
        let service = ask::secret(
            &ctx,
            &*self.store,
            TOOL,
            SERVICE_ROLE_NAME,
            "your Supabase project's service_role key (secret): Supabase dashboard → Project \
             Settings → API → service_role",
        )
        .await?;
        check_service_key(service.expose(), &project.reference)?;
        let db_url = ask::secret(
            &ctx,
            &*self.store,
            TOOL,
            DB_URL_NAME,
            "your Supabase database connection URL with its password \
             (postgresql://postgres:PASSWORD@db.REF.supabase.co:5432/postgres): Supabase \
             dashboard → Connect",
        )
        .await?;
        let version =
            postgres::version(db_url.expose(), UrlFrom::User, &self.net, ctx.cancel_token())
                .await
                .map_err(|err| db_error(&err))?;
        let mut stored = Vec::new();
        for (name, value) in [(SERVICE_ROLE_NAME, &service), (DB_URL_NAME, &db_url)] {
            let secret = self.store.put(ctx.root(), name, value).map_err(|err| {
                ToolError::model(format!("the database answered but {name} was not stored: {err}"))
            })?;
            stored.push(StoredName { name: name.to_owned(), hint: secret.hint });
        }
        record(&ctx, &project, anon)?;
        let result = SupabaseResult {
            project_ref: project.reference,
            url: project.url,
            postgres_version: version,
            stored,
            recorded_in: ".hands/project.toml".to_owned(),
        };
        Ok(ToolOutput::text(text(&result)).with_structured(
            serde_json::to_value(&result)
                .map_err(|err| ToolError::Fatal(format!("a result did not serialize: {err}")))?,
        ))
    }
}

/// A Supabase project as its URL names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The ref.
    pub reference: String,
    /// The URL, normalized (`https://<ref>.supabase.co`).
    pub url: String,
}

/// The project `url` names: `https://<ref>.supabase.co` (the ref 20 lowercase letters and
/// digits, as Supabase makes them), or any URL on a host the user allowed in
/// `[supabase] allow_custom_url` (a self-hosted Supabase; the ref is its first label).
pub fn project(url: &str, config: &SupabaseConfig) -> Result<Project, ToolError> {
    let bad = |why: &str| {
        ToolError::model(format!(
            "`project_url` {why}. Give the project URL from the Supabase dashboard → Project \
             Settings → API, like https://abcdefghijklmnopqrst.supabase.co, and call \
             connect_supabase again."
        ))
    };
    let parsed = url::Url::parse(url.trim()).map_err(|_| bad("is not a URL"))?;
    let host = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
    let custom = !host.is_empty() && config.allows(&host);
    if !matches!(parsed.scheme(), "https" | "http") {
        return Err(bad("must be an https:// URL"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(bad("must not hold a user name or password"));
    }
    // The parser has already folded `..`; anything left past the host is not a project URL.
    if !matches!(parsed.path(), "" | "/") || parsed.query().is_some() || parsed.fragment().is_some()
    {
        return Err(bad("must be the project's address alone, with no path, query or fragment"));
    }
    if custom {
        let reference = host.split('.').next().unwrap_or_default().to_owned();
        let url = parsed.as_str().trim_end_matches('/').to_owned();
        return Ok(Project { reference, url });
    }
    let Some(reference) = host.strip_suffix(".supabase.co") else {
        return Err(bad(&format!(
            "is on {host}, not on supabase.co (a self-hosted Supabase must be allowed by the \
             user in [supabase] allow_custom_url)"
        )));
    };
    if parsed.scheme() != "https" {
        return Err(bad("must start with https://"));
    }
    if parsed.port().is_some() {
        return Err(bad("must not name a port"));
    }
    if reference.len() != 20
        || !reference.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return Err(bad(&format!(
            "has `{reference}` where the project ref (20 lowercase letters) should be"
        )));
    }
    Ok(Project { reference: reference.to_owned(), url: format!("https://{host}") })
}

/// The claims of a Supabase JWT key (`role`, `ref`), when `key` is one.
fn claims(key: &str) -> Option<serde_json::Value> {
    let mut parts = key.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The anon key, checked: a JWT whose role is `anon` (and whose ref, when it has one, is the
/// project's), or a new-style `sb_publishable_…` key. A secret key given here is refused.
pub fn check_anon_key<'a>(key: &'a str, reference: &str) -> Result<&'a str, ToolError> {
    let redo = "Give the anon (public) key from the Supabase dashboard → Project Settings → API and \
                call connect_supabase again.";
    if key.starts_with("sb_secret_") {
        return Err(ToolError::model(format!(
            "`anon_key` is a secret key (sb_secret_…), not the public anon key. {redo} Tell the \
             user the secret key was shown in this conversation and should be rotated."
        )));
    }
    if key.starts_with("sb_publishable_") && key.len() > 20 {
        return Ok(key);
    }
    let Some(claims) = claims(key) else {
        return Err(ToolError::model(format!(
            "`anon_key` is not a Supabase anon key (a JWT starting with eyJ, or sb_publishable_…). {redo}"
        )));
    };
    match claims.get("role").and_then(serde_json::Value::as_str) {
        Some("anon") => {}
        Some("service_role") => {
            return Err(ToolError::model(format!(
                "`anon_key` is the service-role key, which is secret. {redo} Tell the user that \
                 key was shown in this conversation and should be rotated."
            )));
        }
        other => {
            return Err(ToolError::model(format!(
                "`anon_key` has the role {}, not anon. {redo}",
                other.unwrap_or("(none)")
            )));
        }
    }
    check_ref(&claims, reference, "`anon_key`")?;
    Ok(key)
}

/// The service-role key, checked: a JWT with role `service_role` (and the project's ref), or an
/// `sb_secret_…` key. Messages never hold the value.
fn check_service_key(key: &str, reference: &str) -> Result<(), ToolError> {
    if key.starts_with("sb_secret_") && key.len() > 20 {
        return Ok(());
    }
    let wrong = |what: &str| {
        ToolError::model(format!(
            "The value given for {SERVICE_ROLE_NAME} {what}. Nothing was stored. Ask the user for \
             the service_role key (Supabase dashboard → Project Settings → API), then call \
             connect_supabase again."
        ))
    };
    let Some(claims) = claims(key) else {
        return Err(wrong("is not a Supabase key (a JWT, or sb_secret_…)"));
    };
    if claims.get("role").and_then(serde_json::Value::as_str) != Some("service_role") {
        return Err(wrong("is not the service_role key (its role is another)"));
    }
    check_ref(&claims, reference, &format!("The value given for {SERVICE_ROLE_NAME}"))
}

fn check_ref(claims: &serde_json::Value, reference: &str, what: &str) -> Result<(), ToolError> {
    match claims.get("ref").and_then(serde_json::Value::as_str) {
        Some(found) if found != reference => Err(ToolError::model(format!(
            "{what} belongs to the project {found}, not to {reference}. Nothing was stored; use \
             the keys of the same project as the URL and call connect_supabase again."
        ))),
        _ => Ok(()),
    }
}

fn db_error(err: &DbError) -> ToolError {
    let next = match err {
        DbError::Url(_) | DbError::Auth(_) => {
            "Ask the user to check SUPABASE_DB_URL, then call connect_supabase again."
        }
        DbError::Refused(_) => {
            "A project cannot point hands at this machine's private network; the user can allow \
             the host in [net] allow_hosts (their own configuration) if it is theirs."
        }
        DbError::Connect(_) => {
            "Check that the database is running and reachable (Supabase pauses idle free \
             projects), then call connect_supabase again."
        }
        DbError::Cancelled => "Call connect_supabase again if it is still wanted.",
    };
    ToolError::model(format!(
        "The database could not be verified: {err}. Nothing was stored. {next}"
    ))
}

/// `[supabase] url, ref, anon_key` in `.hands/project.toml`.
fn record(ctx: &Context, project: &Project, anon: &str) -> Result<(), ToolError> {
    let path = ".hands/project.toml";
    let ws = hands_fs::Workspace::of(ctx)?;
    let dir = files::hands_dir(ws.dir()).map_err(|err| files::error(path, &err))?;
    let existing = files::read(&dir, "project.toml").map_err(|err| files::error(path, &err))?;
    let text = files::project_toml_with(
        &existing,
        "supabase",
        &[("url", &project.url), ("ref", &project.reference), ("anon_key", anon)],
    )
    .map_err(|why| {
        ToolError::model(format!(
            "{path} was not changed because {why}; the secrets are stored. Fix the file (or \
             remove it) and call connect_supabase again to record the link."
        ))
    })?;
    files::write(&dir, "project.toml", text.as_bytes()).map_err(|err| files::error(path, &err))
}

fn text(result: &SupabaseResult) -> String {
    let stored: Vec<String> =
        result.stored.iter().map(|s| format!("{} ({})", s.name, s.hint)).collect();
    format!(
        "Supabase project {} linked ({}). Database: {}. Stored {}, available to this project's \
         processes as environment variables; read them from the environment, never write them \
         into a file. Recorded in {}.",
        result.project_ref,
        result.url,
        result.postgres_version,
        stored.join(" and "),
        result.recorded_in
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.sig", b64(r#"{"alg":"HS256","typ":"JWT"}"#), b64(claims))
    }

    #[test]
    fn project_urls() {
        let config = SupabaseConfig::default();
        let p = project("https://abcdefghijklmnopqrst.supabase.co/", &config).unwrap();
        assert_eq!(p.reference, "abcdefghijklmnopqrst");
        assert_eq!(p.url, "https://abcdefghijklmnopqrst.supabase.co");
        for (url, why) in [
            ("http://abcdefghijklmnopqrst.supabase.co", "https://"),
            ("https://abcdefghijklmnopqrst.supabase.co/../../etc/passwd", "no path"),
            ("https://abcdefghijklmnopqrst.supabase.co/%2e%2e/x", "no path"),
            ("https://abcdefghijklmnopqrst.supabase.co.evil.com", "not on supabase.co"),
            ("https://evil.com/abcdefghijklmnopqrst.supabase.co", "no path"),
            ("https://evil.com", "not on supabase.co"),
            ("https://u:p@abcdefghijklmnopqrst.supabase.co", "user name"),
            ("https://abcdefghijklmnopqrst.supabase.co:8443", "port"),
            ("https://short.supabase.co", "project ref"),
            ("https://127.0.0.1", "not on supabase.co"),
            ("file:///etc/passwd", "https:// URL"),
            ("abcdefghijklmnopqrst", "not a URL"),
        ] {
            let err = project(url, &config).unwrap_err().to_string();
            assert!(err.contains(why), "{url}: {err}");
        }
        let config = SupabaseConfig { allow_custom_url: vec!["supa.example.dev".into()] };
        let p = project("http://supa.example.dev:8000", &config).unwrap();
        assert_eq!(
            (p.reference.as_str(), p.url.as_str()),
            ("supa", "http://supa.example.dev:8000")
        );
    }

    #[test]
    fn keys_are_told_apart() {
        let r = "abcdefghijklmnopqrst";
        let anon = jwt(&format!(r#"{{"iss":"supabase","ref":"{r}","role":"anon"}}"#));
        let service = jwt(&format!(r#"{{"iss":"supabase","ref":"{r}","role":"service_role"}}"#));
        assert!(check_anon_key(&anon, r).is_ok());
        assert!(check_anon_key("sb_publishable_0123456789abcdef", r).is_ok());
        let err = check_anon_key(&service, r).unwrap_err().to_string();
        assert!(err.contains("service-role key") && err.contains("rotated"), "{err}");
        let err = check_anon_key(&anon, "zzzzzzzzzzzzzzzzzzzz").unwrap_err().to_string();
        assert!(err.contains("belongs to the project abcdefghijklmnopqrst"), "{err}");
        assert!(check_anon_key("hello", r).is_err());
        assert!(check_service_key(&service, r).is_ok());
        let err = check_service_key(&anon, r).unwrap_err().to_string();
        assert!(err.contains("not the service_role key") && !err.contains(&anon), "{err}");
        assert!(check_service_key("sb_secret_0123456789abcdefgh", r).is_ok());
    }
}
