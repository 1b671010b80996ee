//! One operation of the session API: a method and a path bound to its handler, with what the
//! OpenAPI document says about it (bodies, responses, parameters). routes.rs lists them; the
//! router and openapi.rs's document are built from that list.

use axum::handler::Handler;
use axum::routing::{MethodFilter, MethodRouter, on};
use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::state::AppState;

/// An HTTP method the API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// GET.
    Get,
    /// POST.
    Post,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
}

impl Verb {
    /// Lower case, as OpenAPI keys operations.
    pub fn name(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Post => "post",
            Self::Patch => "patch",
            Self::Delete => "delete",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Self::Get => MethodFilter::GET,
            Self::Post => MethodFilter::POST,
            Self::Patch => MethodFilter::PATCH,
            Self::Delete => MethodFilter::DELETE,
        }
    }
}

/// Builds the schema of a body in the document's components.
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// The schema of `T`, registered as a component.
fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// What a successful response carries.
#[derive(Clone, Copy)]
pub enum Payload {
    /// JSON of this schema.
    Json(SchemaFn),
    /// `text/event-stream` whose `data:` are [`docs::Event`]s.
    EventStream,
    /// A PNG image (`image/png`).
    Png,
    /// Nothing (204).
    Empty,
}

/// A query or header parameter.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// `query` or `header`.
    pub location: &'static str,
    /// Its name.
    pub name: &'static str,
    /// What it means.
    pub description: &'static str,
}

/// One operation of the API.
pub struct Operation {
    /// Its method.
    pub verb: Verb,
    /// Its path, with `{name}` parameters (the same syntax in axum and OpenAPI).
    pub path: &'static str,
    /// `operationId`.
    pub id: &'static str,
    /// The OpenAPI tag.
    pub tag: &'static str,
    /// One line.
    pub summary: &'static str,
    /// More, when needed.
    pub description: &'static str,
    /// The JSON body it takes.
    pub body: Option<SchemaFn>,
    /// Whether the body may be left out (its fields then take their defaults).
    pub body_optional: bool,
    /// The success status.
    pub status: u16,
    /// The success body.
    pub response: Payload,
    /// Error statuses besides those every operation (401, 403) or every operation with a body
    /// (400, 413, 415) or under a session (404) can return.
    pub errors: &'static [u16],
    /// Query and header parameters.
    pub params: &'static [Param],
    /// Whether it is answered without the bearer token (the sign-in exchange, which is how a
    /// browser gets the token).
    pub open: bool,
    /// The handler, for the router.
    pub(crate) handler: MethodRouter<AppState>,
}

impl Operation {
    pub(crate) fn new<H, T>(verb: Verb, path: &'static str, id: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        Self {
            verb,
            path,
            id,
            tag: "sessions",
            summary: "",
            description: "",
            body: None,
            body_optional: false,
            status: 200,
            response: Payload::Empty,
            errors: &[],
            params: &[],
            open: false,
            handler: on(verb.filter(), handler),
        }
    }

    pub(crate) fn tag(mut self, tag: &'static str) -> Self {
        self.tag = tag;
        self
    }

    pub(crate) fn doc(mut self, summary: &'static str, description: &'static str) -> Self {
        self.summary = summary;
        self.description = description;
        self
    }

    pub(crate) fn body<T: JsonSchema>(mut self) -> Self {
        self.body = Some(schema::<T>);
        self
    }

    pub(crate) fn optional_body<T: JsonSchema>(mut self) -> Self {
        self.body = Some(schema::<T>);
        self.body_optional = true;
        self
    }

    pub(crate) fn returns<T: JsonSchema>(mut self, status: u16) -> Self {
        self.status = status;
        self.response = Payload::Json(schema::<T>);
        self
    }

    pub(crate) fn returns_with(mut self, status: u16, payload: Payload) -> Self {
        self.status = status;
        self.response = payload;
        self
    }

    pub(crate) fn errors(mut self, errors: &'static [u16]) -> Self {
        self.errors = errors;
        self
    }

    pub(crate) fn params(mut self, params: &'static [Param]) -> Self {
        self.params = params;
        self
    }

    /// Answered without the bearer token.
    pub(crate) fn open(mut self) -> Self {
        self.open = true;
        self
    }
}
