//! connector_scaffold's TypeScript: a typed client module from an [`Api`], and the server route
//! a browser client calls when the key must stay on the server.
//!
//! The code compiles under `strict` with `exactOptionalPropertyTypes`,
//! `noUncheckedIndexedAccess`, `noPropertyAccessFromIndexSignature` and `erasableSyntaxOnly`,
//! with the DOM library or `@types/node` (it needs `fetch`, `URL`, `Request`, `Response` and
//! `btoa`, nothing else): no enums, namespaces or parameter properties, optional members never
//! assigned `undefined`, the environment read through `globalThis` so that no Node types are
//! needed. Named types that would shadow a global the module uses get a `Type` suffix.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::api::{Api, ApiOperation, Names, Ty, pascal_ident};
use crate::config::{AuthKind, Connector};

/// Where the client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// On a server (Node, Bun, Deno): the key from `process.env`.
    Server,
    /// On an edge runtime: the key from the `env` option (a Worker's bindings), else
    /// `process.env` where the runtime has one.
    Edge,
    /// In the browser, calling the service directly (its auth needs no secret).
    Browser,
    /// In the browser, calling the project's own route (which holds the key).
    ViaRoute,
}

/// Names the module declares or uses: a schema of that name is renamed.
const RESERVED: &[&str] = &[
    "Array",
    "ArrayBuffer",
    "BodyInit",
    "Boolean",
    "Date",
    "Error",
    "Headers",
    "HeadersInit",
    "JSON",
    "Map",
    "Number",
    "Object",
    "Partial",
    "Promise",
    "ReadonlyArray",
    "Record",
    "RegExp",
    "Request",
    "RequestInit",
    "Response",
    "ReturnType",
    "Set",
    "String",
    "URL",
    "URLSearchParams",
    "Uint8Array",
];

/// `my-api` → `MY_API` (`_1API` for a name that starts with a digit): a constant's name.
fn constant(name: &str) -> String {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    if upper.starts_with(|c: char| c.is_ascii_digit()) { format!("_{upper}") } else { upper }
}

/// The PascalCase stem of the module's own names (`petstore` → `Petstore`).
pub fn stem(connector: &str) -> String {
    pascal_ident(connector)
}

fn js(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

fn doc(text: &str, indent: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    format!("{indent}/** {} */\n", text.replace("*/", "*\\/"))
}

fn is_ident(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn key(name: &str) -> String {
    if is_ident(name) { name.to_owned() } else { js(name) }
}

/// Renders [`Ty`]s with the module's names for the API's types.
struct Types {
    renamed: BTreeMap<String, String>,
}

impl Types {
    fn new(api: &Api, stem: &str) -> Self {
        let mut names = Names::default();
        for reserved in RESERVED {
            names.unique(reserved);
        }
        for own in ["Client", "Error", "Options", "Query", "Method", "CallInit"] {
            names.unique(&format!("{stem}{own}"));
        }
        let renamed = api
            .types
            .iter()
            .map(|t| {
                let wanted = if RESERVED.contains(&t.name.as_str()) {
                    format!("{}Type", t.name)
                } else {
                    t.name.clone()
                };
                (t.name.clone(), names.unique(&wanted))
            })
            .collect();
        Self { renamed }
    }

    fn ts(&self, ty: &Ty) -> String {
        match ty {
            Ty::Unknown => "unknown".into(),
            Ty::Void => "void".into(),
            Ty::String => "string".into(),
            Ty::Number => "number".into(),
            Ty::Boolean => "boolean".into(),
            Ty::Null => "null".into(),
            Ty::Literal(value) => match value {
                Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => {
                    value.to_string()
                }
                _ => "unknown".into(),
            },
            Ty::Array(item) => format!("Array<{}>", self.ts(item)),
            Ty::Object { props, rest } => {
                let mut out = String::from("{ ");
                for p in props {
                    let inner = if p.ty == Ty::Void { "unknown".into() } else { self.ts(&p.ty) };
                    let _ = write!(
                        out,
                        "{}{}: {inner}; ",
                        key(&p.name),
                        if p.required { "" } else { "?" }
                    );
                }
                match rest {
                    // Declared properties must fit the index signature: with some, it is unknown.
                    Some(r) if props.is_empty() => {
                        let _ = write!(out, "[key: string]: {}; ", self.ts(r));
                    }
                    Some(_) => out.push_str("[key: string]: unknown; "),
                    None => {}
                }
                out.push('}');
                out
            }
            Ty::Named(name) => self.renamed.get(name).cloned().unwrap_or_else(|| "unknown".into()),
            Ty::Union(members) => {
                let parts: Vec<String> = members.iter().map(|m| self.ts(m)).collect();
                format!("({})", parts.join(" | "))
            }
            Ty::All(members) => {
                let parts: Vec<String> = members.iter().map(|m| self.ts(m)).collect();
                format!("({})", parts.join(" & "))
            }
        }
    }
}

/// The client module of `connector` for `side`. `route` is the path of the project's route
/// (for [`Side::ViaRoute`]).
pub fn client(connector: &Connector, api: &Api, side: Side, route: &str) -> String {
    let stem = stem(&connector.name);
    let types = Types::new(api, &stem);
    let auth = &connector.file.auth;
    let secret = auth.secret.as_deref().filter(|_| auth.kind != AuthKind::None);
    let keyed = secret.is_some() && side != Side::ViaRoute && side != Side::Browser;
    let mut out = String::new();
    for t in &api.types {
        out.push_str(&doc(&t.description, ""));
        let _ = writeln!(out, "export type {} = {};", types.renamed[&t.name], types.ts(&t.ty));
    }
    if !api.types.is_empty() {
        out.push('\n');
    }
    let methods: Vec<String> = connector.methods.iter().map(|m| js(m)).collect();
    let base = if side == Side::ViaRoute { route.to_owned() } else { connector.base.to_string() };
    let _ = write!(
        out,
        "/** The methods the connector allows. */\n\
         export type {stem}Method = {};\n\n\
         /** Query parameters: arrays repeat the parameter, objects travel as JSON. */\n\
         export type {stem}Query = Record<string, string | number | boolean | null | undefined | ReadonlyArray<string | number | boolean>>;\n\n\
         const DEFAULT_BASE_URL = {};\n\n",
        if methods.is_empty() { "never".to_owned() } else { methods.join(" | ") },
        js(base.trim_end_matches('/')),
    );
    let _ = writeln!(out, "export interface {stem}Options {{");
    let _ = writeln!(
        out,
        "  /** The service's base URL (default {}). */\n  baseUrl?: string;",
        base.trim_end_matches('/').replace("*/", "*\\/")
    );
    if keyed && let Some(secret) = secret {
        let _ = writeln!(
            out,
            "  /** The key (default: the environment variable {secret}). Never give it to code that runs in a browser. */\n  apiKey?: string;"
        );
    }
    if side == Side::Edge {
        out.push_str(
            "  /** The runtime's environment bindings (a Worker's `env`), read before `process.env`. */\n  env?: Record<string, string | undefined>;\n",
        );
    }
    out.push_str(
        "  /** The fetch to use (default: the global one). */\n  fetch?: typeof fetch;\n}\n\n",
    );
    let _ = write!(
        out,
        "/** A non-2xx answer: its status and its body (parsed when it is JSON). */\n\
         export class {stem}Error extends Error {{\n  readonly status: number;\n  readonly body: unknown;\n\n  \
         constructor(status: number, body: unknown) {{\n    super(`{name} answered HTTP ${{status}}`);\n    \
         this.name = \"{stem}Error\";\n    this.status = status;\n    this.body = body;\n  }}\n}}\n\n",
        name = connector.name,
    );
    if keyed {
        out.push_str(READ_ENV);
    }
    out.push_str(&send(connector, &stem, side, keyed));
    let _ = writeln!(
        out,
        "/** A client of {}. */\nexport function create{stem}Client(options: {stem}Options = {{}}) {{\n  return {{",
        connector.name
    );
    for op in &api.operations {
        out.push_str(&operation(op, &types, &stem));
    }
    let _ = write!(
        out,
        "    /** Any allowed call: `path` is relative to the base URL. */\n    \
         request<T = unknown>(method: {stem}Method, path: string, init: {{ query?: {stem}Query; body?: unknown }} = {{}}): Promise<T> {{\n      \
         return send<T>(options, method, path, init.query, init.body);\n    }},\n  }};\n}}\n\n\
         export type {stem}Client = ReturnType<typeof create{stem}Client>;\n"
    );
    out
}

const READ_ENV: &str = "function readEnv(name: string): string | undefined {\n  \
    const env = (globalThis as unknown as { process?: { env?: Record<string, string | undefined> } }).process?.env;\n  \
    return env?.[name];\n}\n\n";

/// The request function: URL, query, JSON body, the key, the answer.
fn send(connector: &Connector, stem: &str, side: Side, keyed: bool) -> String {
    let auth = &connector.file.auth;
    let mut out = format!(
        "async function send<T>(options: {stem}Options, method: string, path: string, query: object | undefined, body: unknown): Promise<T> {{\n  \
         const base = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\\/+$/, \"\");\n"
    );
    if side == Side::ViaRoute {
        out.push_str(
            "  const here = (globalThis as unknown as { location?: { href: string } }).location?.href ?? \"http://localhost/\";\n  \
             const url = new URL(base + path, here);\n",
        );
    } else {
        out.push_str("  const url = new URL(base + path);\n");
    }
    out.push_str(
        "  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {\n    \
         if (value === undefined || value === null) continue;\n    \
         for (const item of Array.isArray(value) ? value : [value]) {\n      \
         url.searchParams.append(name, typeof item === \"object\" ? JSON.stringify(item) : String(item));\n    }\n  }\n  \
         const headers: Record<string, string> = { accept: \"application/json\" };\n  \
         let payload: string | undefined;\n  \
         if (body !== undefined) {\n    headers[\"content-type\"] = \"application/json\";\n    payload = JSON.stringify(body);\n  }\n",
    );
    if keyed && let Some(secret) = &auth.secret {
        let source = if side == Side::Edge {
            format!("options.apiKey ?? options.env?.[{0}] ?? readEnv({0})", js(secret))
        } else {
            format!("options.apiKey ?? readEnv({})", js(secret))
        };
        let _ = write!(
            out,
            "  const key = {source};\n  \
             if (!key) throw new Error({});\n",
            js(&format!(
                "{secret} is not set: give it in the environment (see .env.example) or as the apiKey option"
            ))
        );
        let name = auth.name.clone().unwrap_or_default();
        match auth.kind {
            AuthKind::Bearer => out.push_str("  headers[\"authorization\"] = `Bearer ${key}`;\n"),
            AuthKind::Header => {
                let _ = writeln!(out, "  headers[{}] = key;", js(&name.to_ascii_lowercase()));
            }
            AuthKind::Query => {
                let _ = writeln!(out, "  url.searchParams.set({}, key);", js(&name));
            }
            AuthKind::Basic => match &auth.username {
                Some(user) => {
                    let _ = writeln!(
                        out,
                        "  headers[\"authorization\"] = `Basic ${{btoa({} + \":\" + key)}}`;",
                        js(user)
                    );
                }
                None => out.push_str("  headers[\"authorization\"] = `Basic ${btoa(key)}`;\n"),
            },
            AuthKind::None => {}
        }
    }
    out.push_str(
        "  const response = await (options.fetch ?? fetch)(url.toString(), {\n    \
         method,\n    headers,\n    redirect: \"error\",\n    \
         ...(payload === undefined ? {} : { body: payload }),\n  });\n  \
         const text = await response.text();\n  \
         const type = response.headers.get(\"content-type\") ?? \"\";\n  \
         const data: unknown = text !== \"\" && type.includes(\"json\") ? JSON.parse(text) : text;\n",
    );
    let _ = write!(
        out,
        "  if (!response.ok) throw new {stem}Error(response.status, data);\n  \
         return (text === \"\" ? undefined : data) as T;\n}}\n\n"
    );
    out
}

/// One method of the client object.
fn operation(op: &ApiOperation, types: &Types, stem: &str) -> String {
    let mut members = Vec::new();
    let mut required = false;
    if !op.path_params.is_empty() {
        let fields: Vec<String> = op
            .path_params
            .iter()
            .map(|p| format!("{}: {}", key(&p.name), types.ts(&p.ty)))
            .collect();
        members.push(format!("path: {{ {} }}", fields.join("; ")));
        required = true;
    }
    match &op.query {
        Some(params) if !params.is_empty() => {
            let any_required = params.iter().any(|p| p.required);
            let fields: Vec<String> = params
                .iter()
                .map(|p| {
                    format!(
                        "{}{}: {}",
                        key(&p.name),
                        if p.required { "" } else { "?" },
                        types.ts(&p.ty)
                    )
                })
                .collect();
            members.push(format!(
                "query{}: {{ {} }}",
                if any_required { "" } else { "?" },
                fields.join("; ")
            ));
            required |= any_required;
        }
        Some(_) => {}
        None => members.push(format!("query?: {stem}Query")),
    }
    if let Some((ty, body_required)) = &op.body {
        members.push(format!("body{}: {}", if *body_required { "" } else { "?" }, types.ts(ty)));
        required |= body_required;
    }
    let mut path_expr = String::from("`");
    let mut rest = op.path.as_str();
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        path_expr.push_str(&template_text(&rest[..open]));
        let name = &rest[open + 1..open + close];
        let _ = write!(path_expr, "${{encodeURIComponent(String(params.path[{}]))}}", js(name));
        rest = &rest[open + close + 1..];
    }
    path_expr.push_str(&template_text(rest));
    path_expr.push('`');
    let params_decl = if members.is_empty() {
        String::new()
    } else if required {
        format!("params: {{ {} }}", members.join("; "))
    } else {
        format!("params: {{ {} }} = {{}}", members.join("; "))
    };
    let query =
        if op.query.as_ref().is_some_and(Vec::is_empty) { "undefined" } else { "params.query" };
    let body = if op.body.is_some() { "params.body" } else { "undefined" };
    let response = types.ts(&op.response);
    let summary = if op.description.is_empty() {
        format!("{} {}", op.method, op.path)
    } else {
        format!("{} ({} {})", op.description, op.method, op.path)
    };
    let (query, body) = if members.is_empty() { ("undefined", "undefined") } else { (query, body) };
    format!(
        "{}    {}({params_decl}): Promise<{response}> {{\n      return send<{response}>(options, {}, {path_expr}, {query}, {body});\n    }},\n",
        doc(&summary, "    "),
        key(&op.name),
        js(&op.method),
    )
}

/// Text inside a template literal.
fn template_text(text: &str) -> String {
    text.replace('\\', "\\\\").replace('`', "\\`").replace("${", "\\${")
}

/// A path glob of `allowed_paths` as a regular expression (`*` one segment, `**` any depth).
pub fn glob_regex(glob: &str) -> String {
    let mut out = String::from("^");
    let chars: Vec<char> = glob.chars().collect();
    let mut i = 0;
    let mut in_alt = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() => {
                i += 1;
                out.push_str(&regex_escape(chars[i]));
            }
            '*' if chars.get(i + 1) == Some(&'*') => {
                out.push_str(".*");
                i += 1;
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            '{' if !in_alt => {
                in_alt = true;
                out.push_str("(?:");
            }
            '}' if in_alt => {
                in_alt = false;
                out.push(')');
            }
            ',' if in_alt => out.push('|'),
            '[' => {
                let close = chars[i + 1..].iter().position(|c| *c == ']').map(|p| p + i + 1);
                match close {
                    Some(end) => {
                        let inner: String = chars[i + 1..end].iter().collect();
                        let inner =
                            inner.strip_prefix('!').map(|r| format!("^{r}")).unwrap_or(inner);
                        let _ =
                            write!(out, "[{}]", inner.replace('\\', "\\\\").replace(']', "\\]"));
                        i = end;
                    }
                    None => out.push_str("\\["),
                }
            }
            _ => out.push_str(&regex_escape(c)),
        }
        i += 1;
    }
    out.push('$');
    out
}

fn regex_escape(c: char) -> String {
    if "\\^$.|?*+()[]{}/".contains(c) { format!("\\{c}") } else { c.to_string() }
}

/// The server route that a browser client calls: it checks the method and path against the
/// connector's allow-lists, adds the key from the server's environment and forwards.
pub fn route(connector: &Connector, prefix: &str) -> String {
    let stem = stem(&connector.name);
    let auth = &connector.file.auth;
    let secret = auth.secret.clone().unwrap_or_default();
    let methods: Vec<String> = connector.methods.iter().map(|m| js(m)).collect();
    let paths: Vec<String> = connector
        .file
        .allowed_paths
        .iter()
        .map(|g| format!("  new RegExp({}),", js(&glob_regex(g))))
        .collect();
    let mut out = format!(
        "/**\n * The server side of the {name} client: a Web-standard handler (`Request` → `Response`) that\n \
         * forwards calls under {prefix} to {base} with the key from the server's environment\n \
         * ({secret}), for the methods and paths the connector allows only. Mount it, e.g.:\n \
         * - Next.js: app/api/connectors/{name}/[...path]/route.ts: `export const GET = handle{stem}; export const POST = handle{stem};`\n \
         * - Hono: `app.all(\"{prefix}/*\", (c) => handle{stem}(c.req.raw))`\n \
         * - Bun / Deno / a Worker: `fetch(request, env) {{ return handle{stem}(request, {{ env }}); }}`\n */\n\n\
         const BASE_URL = {base_js};\nconst SECRET = {secret_js};\n\
         const METHODS: ReadonlyArray<string> = [{methods}];\n\
         const PATHS: ReadonlyArray<RegExp> = [\n{paths}\n];\n\n\
         /** Where the route is mounted. */\nexport const {upper}_ROUTE_PREFIX = {prefix_js};\n\n\
         export interface {stem}RouteOptions {{\n  /** Where the route is mounted (default {prefix}). */\n  prefix?: string;\n  \
         /** Environment bindings (a Worker's `env`), read before `process.env`. */\n  env?: Record<string, string | undefined>;\n  \
         /** The fetch to use (default: the global one). */\n  fetch?: typeof fetch;\n}}\n\n",
        name = connector.name,
        base = connector.base.as_str().trim_end_matches('/'),
        base_js = js(connector.base.as_str().trim_end_matches('/')),
        secret_js = js(&secret),
        methods = methods.join(", "),
        paths = paths.join("\n"),
        upper = constant(&connector.name),
        prefix_js = js(prefix),
    );
    out.push_str(READ_ENV);
    out.push_str(
        "function deny(status: number, error: string): Response {\n  \
         return new Response(JSON.stringify({ error }), { status, headers: { \"content-type\": \"application/json\" } });\n}\n\n",
    );
    let _ = write!(
        out,
        "/** Forward one call to the service; anything the connector does not allow is refused. */\n\
         export async function handle{stem}(request: Request, options: {stem}RouteOptions = {{}}): Promise<Response> {{\n  \
         const url = new URL(request.url);\n  \
         const prefix = (options.prefix ?? {upper}_ROUTE_PREFIX).replace(/\\/+$/, \"\");\n  \
         if (url.pathname !== prefix && !url.pathname.startsWith(prefix + \"/\")) return deny(404, \"not a {name} route\");\n  \
         const path = url.pathname.slice(prefix.length) || \"/\";\n  \
         if (/%2e|%2f|%5c|%00/i.test(path) || path.includes(\"//\") || path.split(\"/\").some((s) => s === \".\" || s === \"..\")) {{\n    \
         return deny(400, \"bad path\");\n  }}\n  \
         if (!METHODS.includes(request.method)) return deny(405, `{name} allows ${{METHODS.join(\", \")}} only`);\n  \
         if (!PATHS.some((allowed) => allowed.test(path))) return deny(403, `{name} does not allow ${{path}}`);\n  \
         const key = options.env?.[SECRET] ?? readEnv(SECRET);\n  \
         if (!key) return deny(500, `${{SECRET}} is not set on the server`);\n  \
         const target = new URL(BASE_URL + path);\n  \
         url.searchParams.forEach((value, name) => target.searchParams.append(name, value));\n  \
         const headers: Record<string, string> = {{ accept: request.headers.get(\"accept\") ?? \"application/json\" }};\n  \
         const type = request.headers.get(\"content-type\");\n  \
         if (type) headers[\"content-type\"] = type;\n",
        name = connector.name,
        upper = constant(&connector.name),
    );
    let name = auth.name.clone().unwrap_or_default();
    match auth.kind {
        AuthKind::Bearer => out.push_str("  headers[\"authorization\"] = `Bearer ${key}`;\n"),
        AuthKind::Header => {
            let _ = writeln!(out, "  headers[{}] = key;", js(&name.to_ascii_lowercase()));
        }
        AuthKind::Query => {
            let _ = writeln!(out, "  target.searchParams.set({}, key);", js(&name));
        }
        AuthKind::Basic => match &auth.username {
            Some(user) => {
                let _ = writeln!(
                    out,
                    "  headers[\"authorization\"] = `Basic ${{btoa({} + \":\" + key)}}`;",
                    js(user)
                );
            }
            None => out.push_str("  headers[\"authorization\"] = `Basic ${btoa(key)}`;\n"),
        },
        AuthKind::None => {}
    }
    out.push_str(
        "  const hasBody = request.method !== \"GET\" && request.method !== \"HEAD\";\n  \
         const answer = await (options.fetch ?? fetch)(target.toString(), {\n    \
         method: request.method,\n    headers,\n    redirect: \"error\",\n    \
         ...(hasBody ? { body: await request.arrayBuffer() } : {}),\n  });\n  \
         const out = new Headers();\n  \
         const answered = answer.headers.get(\"content-type\");\n  \
         if (answered) out.set(\"content-type\", answered);\n  \
         return new Response(answer.body, { status: answer.status, headers: out });\n}\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_become_anchored_expressions() {
        assert_eq!(glob_regex("/pets/*"), "^\\/pets\\/[^/]*$");
        assert_eq!(glob_regex("/a/**"), "^\\/a\\/.*$");
        assert_eq!(glob_regex("/{a,b}.json"), "^\\/(?:a|b)\\.json$");
        assert_eq!(glob_regex("/x\\*"), "^\\/x\\*$");
        assert_eq!(glob_regex("/[!a]"), "^\\/[^a]$");
    }

    #[test]
    fn a_schema_named_like_a_global_is_renamed() {
        let api = Api {
            operations: Vec::new(),
            types: vec![crate::api::NamedType {
                name: "Error".into(),
                ty: Ty::String,
                description: String::new(),
            }],
        };
        let types = Types::new(&api, "Pets");
        assert_eq!(types.ts(&Ty::Named("Error".into())), "ErrorType");
    }
}
