//! db_schema's arguments and results: the types the tool, its two readers and its text share.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What db_schema may add to the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Include {
    /// Views and their definitions.
    Views,
    /// Triggers on the tables.
    Triggers,
    /// Row-level security policies (always shown with their table).
    Policies,
    /// Functions and procedures: arguments, result, language, security, volatility.
    Functions,
}

/// Arguments of db_schema.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DbSchemaArgs {
    /// One table's name; all tables of the schema when left out.
    #[serde(default)]
    pub table: Option<String>,
    /// The schema (`public` when left out); `*` for every schema but PostgreSQL's own.
    #[serde(default)]
    pub schema: Option<String>,
    /// Extra objects to show: views, triggers, policies, functions.
    #[serde(default)]
    pub include: Vec<Include>,
}

/// One column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Column {
    /// Its name.
    pub name: String,
    /// Its type as the database prints it (PostgreSQL's `format_type`, SQLite's declared type).
    #[serde(rename = "type")]
    pub data_type: String,
    /// False when NOT NULL.
    pub nullable: bool,
    /// Its default expression, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// One constraint (primary key, foreign key, unique, check, exclusion).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Constraint {
    /// Its name.
    pub name: String,
    /// `primary_key`, `foreign_key`, `unique`, `check` or `exclude`.
    pub kind: String,
    /// Its definition (`pg_get_constraintdef`).
    pub definition: String,
}

/// One row-level security policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RlsPolicy {
    /// Its name.
    pub name: String,
    /// `ALL`, `SELECT`, `INSERT`, `UPDATE` or `DELETE`.
    pub command: String,
    /// The roles it applies to.
    pub roles: Vec<String>,
    /// False for a RESTRICTIVE policy.
    pub permissive: bool,
    /// Its USING expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub using: Option<String>,
    /// Its WITH CHECK expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_check: Option<String>,
}

/// One table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Table {
    /// Its schema.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// Its columns in order.
    pub columns: Vec<Column>,
    /// Its constraints.
    pub constraints: Vec<Constraint>,
    /// Its indexes (`pg_get_indexdef`).
    pub indexes: Vec<String>,
    /// Whether row-level security is enabled.
    pub rls_enabled: bool,
    /// Whether row-level security is forced on the owner too.
    pub rls_forced: bool,
    /// Its policies.
    pub policies: Vec<RlsPolicy>,
    /// Its triggers (`pg_get_triggerdef`), with `include: ["triggers"]`.
    pub triggers: Vec<String>,
}

/// One enum type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EnumType {
    /// Its schema.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// Its labels in order.
    pub labels: Vec<String>,
}

/// One view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct View {
    /// Its schema.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// Whether it is a materialized view.
    pub materialized: bool,
    /// Its definition.
    pub definition: String,
}

/// One function or procedure (its body is not shown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Function {
    /// Its schema.
    pub schema: String,
    /// Its name.
    pub name: String,
    /// `function` or `procedure`.
    pub kind: String,
    /// Its arguments as declared (`pg_get_function_arguments`: names, modes, types, defaults).
    pub arguments: String,
    /// What it returns (`pg_get_function_result`); none for a procedure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<String>,
    /// Its language (`sql`, `plpgsql`, …).
    pub language: String,
    /// True for SECURITY DEFINER: it runs with its owner's rights, not the caller's.
    pub security_definer: bool,
    /// `immutable`, `stable` or `volatile`.
    pub volatility: String,
}

/// The structured result of db_schema: everything its text says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SchemaResult {
    /// `postgresql` or `sqlite`.
    pub engine: String,
    /// Which database: `user@host:port/database` (never the password) or the SQLite file.
    pub database: String,
    /// The schema asked for (`*` for all).
    pub schema: String,
    /// The tables.
    pub tables: Vec<Table>,
    /// The enum types.
    pub enums: Vec<EnumType>,
    /// The views, with `include: ["views"]` (or when `table` names a view).
    pub views: Vec<View>,
    /// The functions and procedures, with `include: ["functions"]`.
    pub functions: Vec<Function>,
    /// What was asked for and cannot be shown, and why.
    pub notes: Vec<String>,
}

/// What one read is asked for, checked.
pub(crate) struct Request<'a> {
    pub schema: &'a str,
    pub table: Option<&'a str>,
    pub include: &'a [Include],
    pub timeout: Duration,
}

impl Request<'_> {
    pub(crate) fn wants(&self, what: Include) -> bool {
        self.include.contains(&what)
    }
}
