//! supabase_setup: link a PostgreSQL (Supabase) database, write a migration, apply the pending
//! ones, show their status, and make PostgREST reload.
//!
//! Flow: the arguments are checked for the action; every action but `status` then waits for the
//! user's yes under `approval = "ask"`; `link` verifies the database URL (stored, else asked of
//! the user out of band) and records the secret's name in `.hands/project.toml`; `new` writes
//! local.rs's file; `migrate` and `status` compare local.rs's folder with migrate.rs's history
//! (the Supabase CLI's table), `migrate` applying what is pending under an advisory lock and
//! ending with `NOTIFY pgrst, 'reload schema'`; `restart` sends PostgREST's two reloads and
//! connects again. A database URL is only ever shown redacted.

mod local;
mod migrate;
mod split;

use std::borrow::Cow;
use std::sync::Arc;

use hands_core::approval::{ApprovalRequest, ApproverHandle, Decision};
use hands_core::config::Approval;
use hands_core::secret::{SecretStore, SecretValue};
use hands_core::{Annotations, Context, Family, Label, Policy, Tool, ToolError, ToolOutput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::DatabaseConfig;
use crate::database::{self, Database};
use crate::postgres::{self, DbError};
use crate::{DB_URL_NAME, ask, files};

pub use migrate::{Failure, LOCK_KEY, TABLE};
pub use split::{Statement, statements};

const TOOL: &str = "supabase_setup";

/// What supabase_setup does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Link the project to its database: verify the URL and record which secret holds it.
    Link,
    /// Write a new migration file from `name` and `sql`.
    New,
    /// Apply the pending migrations in order.
    Migrate,
    /// Show which migrations are applied and which are pending.
    Status,
    /// Make PostgREST reload its schema cache and configuration, and reconnect.
    Restart,
}

/// Arguments of supabase_setup.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SupabaseSetupArgs {
    /// What to do: `link`, `new`, `migrate`, `status` or `restart`.
    pub action: Action,
    /// For `new`: the migration's name, 1 to 100 letters, digits, `_` or `-` (like create_todos).
    #[serde(default)]
    pub name: Option<String>,
    /// For `new`: the migration's SQL (at most 1 MiB).
    #[serde(default)]
    pub sql: Option<String>,
    /// For `link`: the Supabase project's ref (20 lowercase letters and digits); read from the
    /// database URL when left out.
    #[serde(default)]
    pub project_ref: Option<String>,
    /// For `link`: the name of the secret holding the database URL (default SUPABASE_DB_URL);
    /// the user is asked for it when it is not stored.
    #[serde(default)]
    pub secret: Option<String>,
}

/// One migration, as the folder and the database know it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MigrationState {
    /// Its version (the file name's leading digits).
    pub version: String,
    /// Its name.
    pub name: String,
    /// Its file, when the folder has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `applied`, `pending`, or `only_in_database` (a version no file has).
    pub state: String,
    /// True when the file was edited after it was applied.
    pub edited: bool,
}

/// The structured result of supabase_setup: everything its text says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SetupResult {
    /// The action.
    pub action: String,
    /// The database, as `user@host:port/database` (never the password).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    /// The name of the secret holding the database URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// The Supabase project's ref, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_ref: Option<String>,
    /// The database's `select version()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_version: Option<String>,
    /// The file written (`new`) or the file the link is recorded in (`link`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The new migration's version (`new`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Every migration and its state (`migrate`, `status`).
    pub migrations: Vec<MigrationState>,
    /// The files this call applied, in order.
    pub applied: Vec<String>,
    /// The file that failed, where and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<Failure>,
    /// Why `migrate` applied nothing at all, when it refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The `NOTIFY pgrst` payloads sent.
    pub notified: Vec<String>,
    /// What needs a look: edited files, versions only in the database, files out of order.
    pub warnings: Vec<String>,
    /// Files of the migrations folder that are not migrations.
    pub skipped: Vec<String>,
}

/// The supabase_setup tool.
#[derive(Clone)]
pub struct SupabaseSetup {
    net: hands_net::NetConfig,
    database: DatabaseConfig,
    approval: Approval,
    store: Arc<dyn SecretStore>,
}

impl SupabaseSetup {
    /// With the `[net]` rule for the database's address, the `[database]` settings, the
    /// approval policy and the user's secret store.
    pub fn new(
        net: hands_net::NetConfig,
        database: DatabaseConfig,
        approval: Approval,
        store: Arc<dyn SecretStore>,
    ) -> Self {
        Self { net, database, approval, store }
    }
}

impl Tool for SupabaseSetup {
    type Args = SupabaseSetupArgs;

    fn name(&self) -> &'static str {
        TOOL
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("supabase_setup.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations { read_only: false, destructive: true, idempotent: false, open_world: true }
    }

    // `status` needs no approval; every other action asks inside `call`.
    fn needs_approval(&self) -> bool {
        false
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
            .label(Label::Key { key: "action" })
            .family(Family::Project)
            .timeout_ms(ask::ASK_TIMEOUT_MS)
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(hands_core::output_schema_for::<SetupResult>())
    }

    async fn call(&self, ctx: Context, args: Self::Args) -> Result<ToolOutput, ToolError> {
        check_args(&args)?;
        if args.action != Action::Status {
            self.approve(&ctx, &args).await?;
        }
        let (result, error) = match args.action {
            Action::Link => (self.link(&ctx, &args).await?, false),
            Action::New => (create(&ctx, &args)?, false),
            Action::Migrate => self.migrate(&ctx).await?,
            Action::Status => (self.status(&ctx).await?, false),
            Action::Restart => (self.restart(&ctx).await?, false),
        };
        let text = render(&result);
        let structured = serde_json::to_value(&result)
            .map_err(|err| ToolError::Fatal(format!("a result did not serialize: {err}")))?;
        let out = if error { ToolOutput::error(text) } else { ToolOutput::text(text) };
        Ok(out.with_structured(structured))
    }
}

fn check_args(args: &SupabaseSetupArgs) -> Result<(), ToolError> {
    let only = |field: &str, value: bool, action: &str| {
        if value {
            Err(ToolError::model(format!(
                "`{field}` is only for action {action}; call again without it"
            )))
        } else {
            Ok(())
        }
    };
    let new = args.action == Action::New;
    let link = args.action == Action::Link;
    only("name", args.name.is_some() && !new, "new")?;
    only("sql", args.sql.is_some() && !new, "new")?;
    only("project_ref", args.project_ref.is_some() && !link, "link")?;
    only("secret", args.secret.is_some() && !link, "link")?;
    if new {
        let name = args.name.as_deref().ok_or_else(|| {
            ToolError::model("action new needs `name` (like create_todos) and `sql`")
        })?;
        local::check_name(name)?;
        let sql = args.sql.as_deref().ok_or_else(|| {
            ToolError::model("action new needs `sql`: the migration's statements")
        })?;
        local::check_sql(sql)?;
    }
    if let Some(secret) = &args.secret {
        check_secret_name(secret)?;
    }
    if let Some(reference) = &args.project_ref
        && !is_ref(reference)
    {
        return Err(ToolError::model(
            "`project_ref` must be the Supabase project's ref: 20 lowercase letters and digits \
             (Supabase dashboard → Project Settings → General)",
        ));
    }
    Ok(())
}

fn check_secret_name(name: &str) -> Result<(), ToolError> {
    let ok = (2..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(ToolError::model(format!(
            "`secret` must be a secret's name: 2 to 64 of A-Z, 0-9 and _, starting with a letter \
             (like {DB_URL_NAME})"
        )))
    }
}

fn is_ref(text: &str) -> bool {
    text.len() == 20 && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The project ref a Supabase database URL names: `db.<ref>.supabase.co`, or the pooler's user
/// `postgres.<ref>`.
fn ref_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    let host = parsed.host_str()?.to_ascii_lowercase();
    let from_host = host
        .strip_prefix("db.")
        .and_then(|rest| rest.strip_suffix(".supabase.co"))
        .filter(|r| is_ref(r))
        .map(str::to_owned);
    from_host.or_else(|| {
        parsed.username().strip_prefix("postgres.").filter(|r| is_ref(r)).map(str::to_owned)
    })
}

fn db_error(err: &DbError) -> ToolError {
    ToolError::model(format!("supabase_setup could not reach the database: {err}"))
}

fn sql_failed(what: &str, err: &tokio_postgres::Error) -> ToolError {
    ToolError::model(format!("supabase_setup could not {what}: {}", migrate::sql_error(err)))
}

impl SupabaseSetup {
    async fn approve(&self, ctx: &Context, args: &SupabaseSetupArgs) -> Result<(), ToolError> {
        if self.approval == Approval::Auto {
            return Ok(());
        }
        let action = format!("{:?}", args.action).to_ascii_lowercase();
        let session = ctx.session();
        let Some(ApproverHandle(approver)) =
            session.get_extension::<ApproverHandle>().as_deref().cloned()
        else {
            return Err(ToolError::model(format!(
                "{TOOL} {action} needs the user's approval (approval = \"ask\"), but there is \
                 nobody to ask in this session, so it was not run. Only `status` runs without it."
            )));
        };
        let what = match args.action {
            Action::New => format!(
                "write {}/<timestamp>_{}.sql",
                local::DIR,
                args.name.as_deref().unwrap_or_default()
            ),
            Action::Migrate => format!("apply the pending migrations of {}", local::DIR),
            Action::Link => "link the project's database".to_owned(),
            Action::Restart => "make PostgREST reload its schema and configuration".to_owned(),
            Action::Status => "show the migrations".to_owned(),
        };
        let mut shown = serde_json::json!({
            "action": action, "name": args.name, "sql": args.sql,
            "project_ref": args.project_ref, "secret": args.secret,
        });
        hands_core::redact::json(&mut shown);
        let request = ApprovalRequest {
            session: session.id().to_owned(),
            tool: TOOL.to_owned(),
            summary: format!("{TOOL}: {what}"),
            args: shown,
        };
        match approver.approve(&request, ctx.cancel_token()).await {
            Decision::Approve => Ok(()),
            Decision::Deny(words) => Err(ToolError::model(match words {
                Some(words) if !words.trim().is_empty() => {
                    format!("The user declined {TOOL} {action} and said: {words}")
                }
                _ => format!(
                    "The user declined {TOOL} {action}; nothing was done. Ask what they want \
                     instead."
                ),
            })),
        }
    }

    /// The linked PostgreSQL database's URL and secret name.
    fn postgres(&self, ctx: &Context) -> Result<(SecretValue, String), ToolError> {
        match database::linked(ctx, &*self.store, &self.database)? {
            Database::Postgres { url, secret } => Ok((url, secret)),
            Database::Sqlite { path } => Err(ToolError::model(format!(
                "the project's database is the SQLite file {path} (`[database] sqlite`); \
                 supabase_setup works on PostgreSQL (Supabase) databases. Link one with action \
                 link."
            ))),
        }
    }

    async fn link(
        &self,
        ctx: &Context,
        args: &SupabaseSetupArgs,
    ) -> Result<SetupResult, ToolError> {
        let name = args
            .secret
            .clone()
            .or_else(|| database::recorded_secret(ctx))
            .unwrap_or_else(|| DB_URL_NAME.to_owned());
        let stored = self.store.get(ctx.root(), &name);
        let asked = stored.is_none();
        let url = match stored {
            Some(url) => url,
            None => {
                ask::secret(
                    ctx,
                    &*self.store,
                    TOOL,
                    &name,
                    "the database's connection URL with its password \
                     (postgresql://postgres:PASSWORD@db.REF.supabase.co:5432/postgres: Supabase \
                     dashboard → Connect)",
                )
                .await?
            }
        };
        let version = postgres::version(url.expose(), &self.net, ctx.cancel_token())
            .await
            .map_err(|err| {
                ToolError::model(format!(
                    "the database could not be verified: {err}. Nothing was stored or recorded; \
                     ask the user to check {name}, then call again."
                ))
            })?;
        if asked {
            self.store.put(ctx.root(), &name, &url).map_err(|err| {
                ToolError::model(format!("the database answered but {name} was not stored: {err}"))
            })?;
        }
        let reference = args.project_ref.clone().or_else(|| ref_of(url.expose()));
        let path = ".hands/project.toml";
        let ws = hands_fs::Workspace::of(ctx)?;
        let dir = files::hands_dir(ws.dir()).map_err(|err| files::error(path, &err))?;
        let existing = files::read(&dir, "project.toml").map_err(|err| files::error(path, &err))?;
        let mut entries = vec![(database::LINK_KEY, name.as_str())];
        if let Some(reference) = &reference {
            entries.push(("ref", reference.as_str()));
        }
        let text = files::project_toml_with(&existing, "supabase", &entries).map_err(|why| {
            ToolError::model(format!(
                "{path} was not changed because {why}; fix the file (or remove it) and call \
                 again."
            ))
        })?;
        files::write(&dir, "project.toml", text.as_bytes())
            .map_err(|err| files::error(path, &err))?;
        Ok(SetupResult {
            action: "link".to_owned(),
            database: Some(database::redacted(url.expose())),
            secret: Some(name),
            project_ref: reference,
            postgres_version: Some(version),
            file: Some(path.to_owned()),
            ..SetupResult::default()
        })
    }

    async fn connect(&self, url: &str) -> Result<tokio_postgres::Client, ToolError> {
        postgres::connect(url, &self.net).await.map_err(|err| db_error(&err))
    }

    async fn status(&self, ctx: &Context) -> Result<SetupResult, ToolError> {
        let ws = hands_fs::Workspace::of(ctx)?;
        let (local, skipped) = local::list(&ws)?;
        let (url, secret) = self.postgres(ctx)?;
        let client = self.connect(url.expose()).await?;
        let remote =
            migrate::history(&client).await.map_err(|e| sql_failed("read the history", &e))?;
        let plan = migrate::plan(&local, &remote);
        Ok(SetupResult {
            action: "status".to_owned(),
            database: Some(database::redacted(url.expose())),
            secret: Some(secret),
            migrations: states(&local, &remote, &plan, &[]),
            warnings: warnings(&plan),
            skipped,
            ..SetupResult::default()
        })
    }

    async fn migrate(&self, ctx: &Context) -> Result<(SetupResult, bool), ToolError> {
        let ws = hands_fs::Workspace::of(ctx)?;
        let (local, skipped) = local::list(&ws)?;
        let (url, secret) = self.postgres(ctx)?;
        let client = self.connect(url.expose()).await?;
        let mut result = SetupResult {
            action: "migrate".to_owned(),
            database: Some(database::redacted(url.expose())),
            secret: Some(secret),
            skipped,
            ..SetupResult::default()
        };
        match migrate::lock(&client, ctx.cancel_token()).await {
            Ok(()) => {}
            Err(migrate::LockError::Busy) => {
                return Err(ToolError::model(format!(
                    "another migrate has held the migration lock for {} s; nothing was applied. \
                     Call again when it is done (status shows what it applied).",
                    migrate::LOCK_WAIT.as_secs()
                )));
            }
            Err(migrate::LockError::Cancelled) => {
                return Err(ToolError::model("migrate was stopped while waiting for the lock"));
            }
            Err(migrate::LockError::Sql(err)) => return Err(sql_failed("take the lock", &err)),
        }
        let outcome = self.migrate_locked(ctx, &client, url.expose(), &local, &mut result).await;
        migrate::unlock(&client).await;
        outcome.map(|error| (result, error))
    }

    /// The part of migrate under the lock; true when the result is an error.
    async fn migrate_locked(
        &self,
        ctx: &Context,
        client: &tokio_postgres::Client,
        url: &str,
        local: &[local::Local],
        result: &mut SetupResult,
    ) -> Result<bool, ToolError> {
        let remote =
            migrate::history(client).await.map_err(|e| sql_failed("read the history", &e))?;
        let plan = migrate::plan(local, &remote);
        result.warnings = warnings(&plan);
        if !plan.missing.is_empty() {
            result.migrations = states(local, &remote, &plan, &[]);
            result.refused = Some(format!(
                "the database has migrations that {} does not: {}. Nothing was applied. Restore \
                 those files (from git or whoever wrote them); if they were removed on purpose, \
                 the user can mark them reverted with the Supabase CLI (`supabase migration \
                 repair --status reverted VERSION`).",
                local::DIR,
                plan.missing.join(", ")
            ));
            return Ok(true);
        }
        if !plan.pending.is_empty() {
            migrate::create_history(client)
                .await
                .map_err(|e| sql_failed("create the history table", &e))?;
        }
        let runner = migrate::Runner { client, cancel: ctx.cancel_token(), url, net: &self.net };
        for m in &plan.pending {
            match migrate::apply(&runner, m).await {
                Ok(()) => result.applied.push(m.file.clone()),
                Err(failure) => {
                    result.failed = Some(failure);
                    break;
                }
            }
        }
        if !result.applied.is_empty() {
            migrate::notify(client, &["reload schema"])
                .await
                .map_err(|e| sql_failed("notify PostgREST", &e))?;
            result.notified.push("reload schema".to_owned());
        }
        result.migrations = states(local, &remote, &plan, &result.applied);
        Ok(result.failed.is_some())
    }

    async fn restart(&self, ctx: &Context) -> Result<SetupResult, ToolError> {
        let (url, secret) = self.postgres(ctx)?;
        let client = self.connect(url.expose()).await?;
        let payloads = ["reload schema", "reload config"];
        migrate::notify(&client, &payloads)
            .await
            .map_err(|e| sql_failed("notify PostgREST", &e))?;
        drop(client);
        let version = postgres::version(url.expose(), &self.net, ctx.cancel_token())
            .await
            .map_err(|err| db_error(&err))?;
        Ok(SetupResult {
            action: "restart".to_owned(),
            database: Some(database::redacted(url.expose())),
            secret: Some(secret),
            postgres_version: Some(version),
            notified: payloads.map(str::to_owned).to_vec(),
            ..SetupResult::default()
        })
    }
}

fn create(ctx: &Context, args: &SupabaseSetupArgs) -> Result<SetupResult, ToolError> {
    let (Some(name), Some(sql)) = (&args.name, &args.sql) else {
        return Err(ToolError::model("action new needs `name` and `sql`"));
    };
    let ws = hands_fs::Workspace::of(ctx)?;
    let (file, version) = local::create(&ws, name, sql, std::time::SystemTime::now())?;
    let mut warnings = Vec::new();
    if sql.lines().skip(1).any(|l| l.trim_end() == local::NO_TRANSACTION) {
        warnings.push(format!("`{}` only counts on the file's first line", local::NO_TRANSACTION));
    }
    Ok(SetupResult {
        action: "new".to_owned(),
        file: Some(file),
        version: Some(version),
        warnings,
        ..SetupResult::default()
    })
}

fn states(
    local: &[local::Local],
    remote: &[migrate::Remote],
    plan: &migrate::Plan<'_>,
    applied: &[String],
) -> Vec<MigrationState> {
    let mut out: Vec<MigrationState> = local
        .iter()
        .map(|m| {
            let done = remote.iter().any(|r| r.version == m.version) || applied.contains(&m.file);
            MigrationState {
                version: m.version.clone(),
                name: m.name.clone(),
                file: Some(m.file.clone()),
                state: if done { "applied" } else { "pending" }.to_owned(),
                edited: plan.edited.iter().any(|e| e.version == m.version),
            }
        })
        .collect();
    out.extend(remote.iter().filter(|r| plan.missing.contains(&r.version)).map(|r| {
        MigrationState {
            version: r.version.clone(),
            name: r.name.clone().unwrap_or_default(),
            file: None,
            state: "only_in_database".to_owned(),
            edited: false,
        }
    }));
    out.sort_by(|a, b| a.version.cmp(&b.version));
    out
}

fn warnings(plan: &migrate::Plan<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for m in &plan.edited {
        out.push(format!(
            "{} was edited after it was applied: the database ran its earlier text, and editing \
             an applied file changes nothing there. Put the change in a new migration (action \
             new).",
            m.file
        ));
    }
    for m in &plan.out_of_order {
        out.push(format!(
            "{} is older than the newest applied migration; it is applied now, after newer ones",
            m.file
        ));
    }
    out
}

/// The text of a result: what the structured result says.
fn render(r: &SetupResult) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let db = r.database.as_deref().unwrap_or("the database");
    match r.action.as_str() {
        "link" => {
            let _ = write!(
                out,
                "Linked {db} ({}), its URL kept in the secret {}; recorded in {}.",
                r.postgres_version.as_deref().unwrap_or_default(),
                r.secret.as_deref().unwrap_or_default(),
                r.file.as_deref().unwrap_or_default()
            );
            if let Some(reference) = &r.project_ref {
                let _ = write!(out, " Supabase project {reference}.");
            }
        }
        "new" => {
            let _ = write!(
                out,
                "Wrote {} (version {}). Apply it with action migrate.",
                r.file.as_deref().unwrap_or_default(),
                r.version.as_deref().unwrap_or_default()
            );
        }
        "restart" => {
            let _ = write!(
                out,
                "Sent NOTIFY pgrst '{}' to {db} and reconnected ({}).",
                r.notified.join("' and '"),
                r.postgres_version.as_deref().unwrap_or_default()
            );
        }
        _ => {
            if let Some(refused) = &r.refused {
                let _ = writeln!(out, "Refused: {refused}");
            } else if r.action == "migrate" {
                if r.applied.is_empty() && r.failed.is_none() {
                    let _ = writeln!(out, "Nothing to apply to {db}.");
                } else if !r.applied.is_empty() {
                    let _ = writeln!(out, "Applied to {db}: {}.", r.applied.join(", "));
                }
                if let Some(failed) = &r.failed {
                    let undone = if failed.rolled_back {
                        "it was rolled back"
                    } else {
                        "it ran without a transaction: its statements before the failing one \
                         stayed applied, and it is not recorded"
                    };
                    let _ = writeln!(
                        out,
                        "{}\n{} failed at statement {}; {undone}; nothing after it ran. Fix it and \
                         call migrate again.",
                        failed.render(),
                        failed.file,
                        failed.statement
                    );
                }
                if !r.notified.is_empty() {
                    let _ = writeln!(out, "Sent NOTIFY pgrst '{}'.", r.notified.join("', '"));
                }
            } else {
                let _ = writeln!(out, "Migrations of {db}:");
            }
            for m in &r.migrations {
                let edited = if m.edited { " (edited since applied)" } else { "" };
                let what = m.file.as_deref().unwrap_or("(no file)");
                let _ = writeln!(out, "  {} {} {what}{edited}", m.state, m.version);
            }
            if r.migrations.is_empty() {
                let _ = writeln!(out, "  (no migrations in {})", local::DIR);
            }
        }
    }
    for w in &r.warnings {
        let _ = write!(out, "\nwarning: {w}");
    }
    for s in &r.skipped {
        let _ = write!(out, "\nskipped: {s}");
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_come_from_supabase_urls() {
        assert_eq!(
            ref_of("postgresql://postgres:pw@db.abcdefghijklmnopqrst.supabase.co:5432/postgres")
                .as_deref(),
            Some("abcdefghijklmnopqrst")
        );
        assert_eq!(
            ref_of("postgres://postgres.abcdefghijklmnopqrst:pw@aws-0-eu.pooler.supabase.com/x")
                .as_deref(),
            Some("abcdefghijklmnopqrst")
        );
        assert_eq!(ref_of("postgres://u:p@127.0.0.1/x"), None);
        assert!(check_secret_name("MY_DB_URL").is_ok());
        assert!(check_secret_name("lower").is_err() && check_secret_name("A").is_err());
    }
}
