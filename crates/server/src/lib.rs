//! The HTTP front end of hands: MCP at `/mcp`, the session API under `/v1/` (sessions, messages,
//! an SSE event stream that resumes with `Last-Event-ID`, direct tool calls, answers, approvals,
//! aborts, processes), the compatibility routes `POST /vibe/answer` and
//! `POST /vibe/abort/{projectId}`, and the OpenAPI document at `/v1/openapi.json`.
