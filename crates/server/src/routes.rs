//! The one list of the session API's operations: each entry binds a method and a path to its
//! handler and carries what the OpenAPI document says about it (bodies, responses, parameters).
//! The router and the document are both built from this list, so neither can name a route the
//! other lacks.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::handler::Handler;
use axum::response::IntoResponse;
use axum::routing::{MethodFilter, MethodRouter, on};
use hands_agent::host::Host;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::schemas::{
    Aborted, Answer, Answered, CallTool, CreateSession, Decision, PostMessage, SessionListDoc,
    TranscriptDoc, TurnAccepted, VibeAnswer,
};
use crate::{docs, events, openapi, sessions, vibe};

/// What every handler reads.
#[derive(Clone)]
pub struct AppState {
    /// The sessions.
    pub host: Arc<Host>,
    /// Fired at shutdown: event streams end so that the server can stop.
    pub shutdown: CancellationToken,
    /// `[server] max_body_bytes`, for the 413 message.
    pub max_body_bytes: usize,
    /// The OpenAPI document, built once.
    pub openapi: Arc<Value>,
}

/// An HTTP method the API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// GET.
    Get,
    /// POST.
    Post,
    /// DELETE.
    Delete,
}

impl Verb {
    /// Lower case, as OpenAPI keys operations.
    pub fn name(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Post => "post",
            Self::Delete => "delete",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Self::Get => MethodFilter::GET,
            Self::Post => MethodFilter::POST,
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
    /// The JSON body it requires.
    pub body: Option<SchemaFn>,
    /// The success status.
    pub status: u16,
    /// The success body.
    pub response: Payload,
    /// Error statuses besides those every operation (401, 403) or every operation with a body
    /// (400, 413, 415) or under a session (404) can return.
    pub errors: &'static [u16],
    /// Query and header parameters.
    pub params: &'static [Param],
    handler: MethodRouter<AppState>,
}

impl Operation {
    fn new<H, T>(verb: Verb, path: &'static str, id: &'static str, handler: H) -> Self
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
            status: 200,
            response: Payload::Empty,
            errors: &[],
            params: &[],
            handler: on(verb.filter(), handler),
        }
    }

    fn tag(mut self, tag: &'static str) -> Self {
        self.tag = tag;
        self
    }

    fn doc(mut self, summary: &'static str, description: &'static str) -> Self {
        self.summary = summary;
        self.description = description;
        self
    }

    fn body<T: JsonSchema>(mut self) -> Self {
        self.body = Some(schema::<T>);
        self
    }

    fn returns<T: JsonSchema>(mut self, status: u16) -> Self {
        self.status = status;
        self.response = Payload::Json(schema::<T>);
        self
    }

    fn returns_with(mut self, status: u16, payload: Payload) -> Self {
        self.status = status;
        self.response = payload;
        self
    }

    fn errors(mut self, errors: &'static [u16]) -> Self {
        self.errors = errors;
        self
    }

    fn params(mut self, params: &'static [Param]) -> Self {
        self.params = params;
        self
    }
}

/// Any JSON object.
fn any_object(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({ "type": "object" })
}

const EVENT_PARAMS: &[Param] = &[
    Param {
        location: "query",
        name: "after",
        description: "Send the events after this id (default 0: all of them). `Last-Event-ID` \
                      wins when both are given.",
    },
    Param {
        location: "header",
        name: "Last-Event-ID",
        description: "The id of the last event received: the stream resumes right after it.",
    },
];

/// Every operation of `/v1` and `/vibe`.
pub fn operations() -> Vec<Operation> {
    use Verb::{Delete, Get, Post};
    vec![
        Operation::new(Post, "/v1/sessions", "createSession", sessions::create)
            .doc("Create a session", "A session works on one project root, in build or plan mode.")
            .body::<CreateSession>()
            .returns::<docs::SessionInfo>(201)
            .errors(&[409]),
        Operation::new(Get, "/v1/sessions", "listSessions", sessions::list)
            .doc("List sessions", "Live and stored sessions, most recent first.")
            .returns::<SessionListDoc>(200),
        Operation::new(Get, "/v1/sessions/{id}", "getSession", sessions::get)
            .doc("Get a session", "A stored session is loaded (resumed) by this.")
            .returns::<docs::SessionInfo>(200),
        Operation::new(Delete, "/v1/sessions/{id}", "deleteSession", sessions::delete)
            .doc("Delete a session", "Aborts its turn, stops its processes, deletes its records.")
            .returns_with(204, Payload::Empty),
        Operation::new(Get, "/v1/sessions/{id}/messages", "getTranscript", sessions::transcript)
            .doc("The conversation", "Every message of the session, oldest first.")
            .returns::<TranscriptDoc>(200),
        Operation::new(Post, "/v1/sessions/{id}/messages", "postMessage", sessions::post_message)
            .doc(
                "Send a user message",
                "Starts a turn and returns at once; follow it on the event stream. 409 while a \
                 turn runs, 503 when no model is configured.",
            )
            .body::<PostMessage>()
            .returns::<TurnAccepted>(202)
            .errors(&[409, 503]),
        Operation::new(Post, "/v1/sessions/{id}/abort", "abortSession", sessions::abort)
            .doc(
                "Abort the session's work",
                "Cancels its turn and every call in flight and stops its processes.",
            )
            .returns_with(204, Payload::Empty),
        Operation::new(Get, "/v1/sessions/{id}/events", "streamEvents", events::stream)
            .doc(
                "The session's events (SSE)",
                "Server-Sent Events: `id:` is the event id, `event:` its type, `data:` the Event \
                 JSON. Reconnect with `Last-Event-ID` to get exactly the events missed. A comment \
                 is sent every 15 s while idle.",
            )
            .returns_with(200, Payload::EventStream)
            .params(EVENT_PARAMS)
            .errors(&[400]),
        Operation::new(Post, "/v1/sessions/{id}/tools/{name}", "callTool", sessions::call_tool)
            .doc(
                "Call a tool directly",
                "For clients that run their own loop. The result is MCP's CallToolResult; a failed \
                 call is 200 with `isError: true` and says why.",
            )
            .body::<CallTool>()
            .returns::<docs::CallToolResult>(200)
            .errors(&[409]),
        Operation::new(Post, "/v1/sessions/{id}/answer", "answerQuestion", sessions::answer)
            .doc("Answer a pending question", "409 when no question is pending.")
            .body::<Answer>()
            .returns_with(204, Payload::Empty)
            .errors(&[409]),
        Operation::new(
            Post,
            "/v1/sessions/{id}/approvals/{approval_id}",
            "decideApproval",
            sessions::decide,
        )
        .doc("Grant or deny a pending approval", "404 or 409 when no such approval waits.")
        .body::<Decision>()
        .returns_with(204, Payload::Empty)
        .errors(&[409]),
        Operation::new(Get, "/v1/sessions/{id}/processes", "listProcesses", sessions::processes)
            .doc("The session's background processes", "")
            .returns::<docs::ProcessList>(200),
        Operation::new(
            Post,
            "/v1/sessions/{id}/processes/{process_id}/stop",
            "stopProcess",
            sessions::stop_process,
        )
        .doc(
            "Stop a background process",
            "SIGTERM to its group and descendants, a grace period, then SIGKILL.",
        )
        .returns::<docs::ProcessStopped>(200),
        Operation::new(Post, "/vibe/answer", "vibeAnswer", vibe::answer)
            .tag("compatibility")
            .doc(
                "Answer a question (compatibility route)",
                "`sessionId` names the session; without it, `projectId` picks the project's one \
                 session waiting for an answer; with neither, the one question pending anywhere. \
                 409 when none (or several) wait.",
            )
            .body::<VibeAnswer>()
            .returns::<Answered>(200)
            .errors(&[404, 409]),
        Operation::new(Post, "/vibe/abort/{projectId}", "vibeAbort", vibe::abort)
            .tag("compatibility")
            .doc(
                "Abort a project's work (compatibility route)",
                "Cancels every turn and call of the project's sessions and stops their processes. \
                 An idle or unknown project is 200 with 0.",
            )
            .returns::<Aborted>(200),
        Operation::new(Get, "/v1/openapi.json", "openapi", serve_openapi)
            .tag("meta")
            .doc("This document", "OpenAPI 3.1.")
            .returns_with(200, Payload::Json(any_object)),
    ]
}

async fn serve_openapi(State(state): State<AppState>) -> impl IntoResponse {
    axum::Json(Value::clone(&state.openapi))
}

/// The session API (`/v1`, `/vibe`) over `host`, without the request guard and the JSON error
/// layer ([`crate::router`] adds both). Bodies over `max_body_bytes` get 413.
pub fn api(host: Arc<Host>, max_body_bytes: usize, shutdown: CancellationToken) -> Router {
    let operations = operations();
    let openapi = Arc::new(openapi::document(&operations));
    let state = AppState { host, shutdown, max_body_bytes, openapi };
    let mut router = Router::new();
    for operation in operations {
        router = router.route(operation.path, operation.handler);
    }
    router.layer(DefaultBodyLimit::max(max_body_bytes)).with_state(state)
}
