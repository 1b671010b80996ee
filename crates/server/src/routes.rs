//! The one list of the session API's operations: each entry binds a method and a path to its
//! handler and carries what the OpenAPI document says about it (bodies, responses, parameters).
//! The router and the document are both built from this list, so neither can name a route the
//! other lacks.

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::response::IntoResponse;
use hands_agent::host::Host;
use schemars::{Schema, SchemaGenerator};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::operation::{Operation, Param, Payload, SchemaFn, Verb};
pub use crate::state::AppState;

use crate::schemas::{
    Aborted, Answer, Answered, CallTool, CheckpointList, CreateSession, Decision, PostMessage,
    ProcessOutput, RestoreCheckpoint, SecretAnswer, SecretReceipt, SessionListDoc, SignInRequest,
    SignedIn, TranscriptDoc, TurnAccepted, UpdateSession, VibeAnswer,
};
use crate::signin::SignIn;
use crate::{checkpoints, docs, events, openapi, preview, secrets, sessions, signin_route, vibe};

/// Any JSON object.
fn any_object(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({ "type": "object" })
}

const OUTPUT_PARAMS: &[Param] = &[Param {
    location: "query",
    name: "lines",
    description: "How many of the last lines to return (default 100; 1 to 2,000, larger values \
                  are capped).",
}];

const TRANSCRIPT_PARAMS: &[Param] = &[Param {
    location: "query",
    name: "offset",
    description: "Leave out the first `offset` messages (default 0).",
}];

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
    use Verb::{Delete, Get, Patch, Post};
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
        Operation::new(Patch, "/v1/sessions/{id}", "updateSession", sessions::update)
            .doc(
                "Rename a session or switch its mode",
                "`title` renames it; `mode` switches between build and plan (announced as \
                 `mode_changed`; 409 while a turn runs).",
            )
            .body::<UpdateSession>()
            .returns::<docs::SessionInfo>(200)
            .errors(&[409]),
        Operation::new(Delete, "/v1/sessions/{id}", "deleteSession", sessions::delete)
            .doc("Delete a session", "Aborts its turn, stops its processes, deletes its records.")
            .returns_with(204, Payload::Empty),
        Operation::new(Get, "/v1/sessions/{id}/messages", "getTranscript", sessions::transcript)
            .doc(
                "The conversation",
                "Every message of the session, oldest first; with `offset`, those after the \
                 first `offset` (a client that has read N messages asks for the new ones).",
            )
            .returns::<TranscriptDoc>(200)
            .params(TRANSCRIPT_PARAMS),
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
        Operation::new(
            Post,
            "/v1/sessions/{id}/secrets/{request_id}",
            "answerSecret",
            secrets::answer,
        )
        .doc(
            "Give a requested secret",
            "Answers a `secret_requested` event: `{\"value\": \"…\"}` (or the bare value as \
             `text/plain`) gives the value to the waiting secrets tool, which stores it in the \
             user's secret store for the session's project; `{\"decline\": true}` refuses. The \
             body is never stored, logged or echoed: the response names the secret and a masked \
             hint. 404 when no such request waits (answered, declined or timed out); 400 for a \
             value under 8 characters (the request still waits) or an unreadable body.",
        )
        .body::<SecretAnswer>()
        .returns::<SecretReceipt>(200)
        .errors(&[400, 404, 415]),
        Operation::new(Get, "/v1/sessions/{id}/processes", "listProcesses", sessions::processes)
            .doc("The session's background processes", "")
            .returns::<docs::ProcessList>(200),
        Operation::new(
            Get,
            "/v1/sessions/{id}/processes/{process_id}/output",
            "processOutput",
            sessions::process_output,
        )
        .doc(
            "The last lines a background process printed",
            "For a live tail: `lines` (default 100, at most 2,000) of its output as it is now; \
             the model's read cursor does not move. 404 for an unknown process.",
        )
        .returns::<ProcessOutput>(200)
        .params(OUTPUT_PARAMS),
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
        Operation::new(Get, "/v1/sessions/{id}/preview", "previewState", preview::state)
            .doc(
                "The session's preview",
                "Whether the project has a preview, its stage (stopped, building, …, ready, \
                 error), the app's URL on the server's loopback, the last error and the counts \
                 of the runtime errors collected. The agent opens and closes the preview with its \
                 tools; this only reads it.",
            )
            .returns::<hands_core::preview::PreviewState>(200),
        Operation::new(
            Get,
            "/v1/sessions/{id}/preview/screenshot",
            "previewScreenshot",
            preview::screenshot,
        )
        .doc(
            "A fresh screenshot of the preview",
            "The page as the preview's browser shows it now, as a PNG. 409 when no page is open.",
        )
        .returns_with(200, Payload::Png)
        .errors(&[409]),
        Operation::new(Get, "/v1/sessions/{id}/preview/errors", "previewErrors", preview::errors)
            .doc(
                "The preview's runtime errors",
                "Every entry the collector keeps (exceptions, rejections, console errors and \
             warnings, failed requests, build and typecheck errors), each with its count, oldest \
             first. Reading them here does not move the model's cursor in them.",
            )
            .returns::<hands_core::preview::RuntimeErrors>(200),
        Operation::new(Get, "/v1/sessions/{id}/checkpoints", "listCheckpoints", checkpoints::list)
            .doc(
                "The session's checkpoints",
                "Oldest first: one before each turn's first change (`turn_start`), one at its end \
                 (`turn_end`), one just before each restore (`restore`: restoring it undoes the \
                 restore). The counts are of the changes since the project's previous checkpoint \
                 (of any session); each new one is announced as a `checkpoint_created` event.",
            )
            .returns::<CheckpointList>(200),
        Operation::new(
            Get,
            "/v1/sessions/{id}/checkpoints/{n}/diff",
            "checkpointDiff",
            checkpoints::diff,
        )
        .doc(
            "What changed at a checkpoint",
            "The changes from the project's previous checkpoint to checkpoint `n`: each path \
             added, modified, deleted or changed mode, with line counts and a unified diff for \
             text files (`null` for binary files and files above the size cap). 404 for a \
             checkpoint that is not one of the session's.",
        )
        .returns::<hands_agent::host::CheckpointDiff>(200),
        Operation::new(
            Post,
            "/v1/sessions/{id}/checkpoints/{n}/restore",
            "restoreCheckpoint",
            checkpoints::restore,
        )
        .doc(
            "Restore a checkpoint",
            "`scope`: `code` (the project's files as they were, every byte and mode; files above \
             the size cap are left as they are), `conversation` (the session's messages as they \
             were: later ones are no longer sent to the model, a `conversation_restored` event \
             says so) or `both` (default; the body may be omitted). A checkpoint of the state \
             just before is taken first: `undo` names it. 409 while a turn runs in the session \
             (or, for the code, on the project).",
        )
        .optional_body::<RestoreCheckpoint>()
        .returns::<hands_agent::host::RestoreOutcome>(200)
        .errors(&[409]),
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
        Operation::new(Post, "/v1/signin", "signIn", signin_route::exchange)
            .tag("meta")
            .open()
            .doc(
                "Trade a one-time sign-in code for the bearer token",
                "The one operation without the token. `hands serve --open` opens the browser at \
                 `/#signin=CODE` (a fragment: the code is in no request line and no Referer); the \
                 page sends the code here and gets the token. A code is good for one exchange \
                 within 60 s of its making; a used, expired or unknown code is 401 \
                 `signin_refused`.",
            )
            .body::<SignInRequest>()
            .returns::<SignedIn>(200),
        Operation::new(Get, "/v1/openapi.json", "openapi", serve_openapi)
            .tag("meta")
            .doc("This document", "OpenAPI 3.1.")
            .returns_with(200, Payload::Json(any_object)),
    ]
}

async fn serve_openapi(State(state): State<AppState>) -> impl IntoResponse {
    axum::Json(Value::clone(&state.openapi))
}

/// The session API's routes, by whether they need the bearer token.
pub struct Api {
    /// Every operation but the open ones: behind the token.
    pub guarded: Router,
    /// The operations answered without it (those with `open` set: the sign-in exchange).
    pub open: Router,
}

/// What the session API serves besides its host.
pub struct Serving {
    /// `[server] max_body_bytes`: larger bodies get 413.
    pub max_body_bytes: usize,
    /// Fired at shutdown.
    pub shutdown: CancellationToken,
    /// The folder the server was started on, absolute (the session list offers it).
    pub root: Option<Arc<Path>>,
    /// The one-time sign-in codes.
    pub signin: SignIn,
}

/// The session API (`/v1`, `/vibe`) over `host`, without the request guard and the JSON error
/// layer (the crate's `router` adds both, the guard without its token for [`Api::open`]).
pub fn api(host: Arc<Host>, serving: Serving) -> Api {
    let Serving { max_body_bytes, shutdown, root, signin } = serving;
    let operations = operations();
    let openapi = Arc::new(openapi::document(&operations));
    let state = AppState { host, shutdown, max_body_bytes, openapi, root, signin };
    let (mut guarded, mut open) = (Router::new(), Router::new());
    for operation in operations {
        if operation.open {
            open = open.route(operation.path, operation.handler);
        } else {
            guarded = guarded.route(operation.path, operation.handler);
        }
    }
    let finish = |router: Router<AppState>| {
        router.layer(DefaultBodyLimit::max(max_body_bytes)).with_state(state.clone())
    };
    Api { guarded: finish(guarded), open: finish(open) }
}

#[cfg(test)]
mod openapi_tests {
    use serde_json::Value;

    use super::operations;
    use crate::openapi::{document, path_params};

    #[test]
    fn every_operation_is_documented_once_with_its_parameters() {
        let ops = operations();
        let doc = document(&ops);
        let paths = doc["paths"].as_object().unwrap();
        let mut count = 0;
        for op in &ops {
            let entry = &paths[op.path][op.verb.name()];
            assert_eq!(entry["operationId"], op.id, "{} {}", op.verb.name(), op.path);
            let params: Vec<&str> = entry["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["in"] == "path")
                .map(|p| p["name"].as_str().unwrap())
                .collect();
            assert_eq!(params, path_params(op.path).collect::<Vec<_>>());
            count += 1;
        }
        let documented: usize = paths.values().map(|item| item.as_object().unwrap().len()).sum();
        assert_eq!(documented, count);
    }

    #[test]
    fn every_reference_resolves() {
        let doc = document(&operations());
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        assert!(!refs.is_empty());
        for r in refs {
            let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r}"));
            assert!(schemas.contains_key(name), "{r} does not resolve");
        }
        for name in ["SessionInfo", "Event", "Message", "CallToolResult", "ErrorBody"] {
            assert!(schemas.contains_key(name), "{name} missing");
        }
    }

    fn collect_refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    if k == "$ref" {
                        out.push(v.as_str().unwrap().to_owned());
                    } else {
                        collect_refs(v, out);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
            _ => {}
        }
    }
}
