// The session API client: every request carries the bearer token from sessionStorage in the
// Authorization header (never in a URL); a one-time sign-in link (`#signin=CODE`, made by
// `hands serve --open`) is traded for that token once. Each request tells the page how the
// connection fares:
// `hands:ok` (with its method) when the server answered, `hands:offline` when it could not be
// reached; the page shows "reconnecting…" instead of the browser's `Failed to fetch`.

const TOKEN_KEY = "hands.token";

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/// The code of a one-time sign-in link (`/#signin=CODE`), taken out of the address bar at once so
/// that it stays in no history entry, bookmark or shared URL; `null` without one.
export function takeSignInCode(): string | null {
  const m = /^#signin=([^&]+)$/.exec(location.hash);
  if (!m) return null;
  history.replaceState(history.state, "", location.pathname + location.search);
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return m[1];
  }
}

/// Trade a sign-in code for the bearer token and keep it (the exchange itself needs no token).
/// A used, expired or unknown code is an ApiError with status 401.
export async function signIn(code: string): Promise<void> {
  const init: RequestInit = { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code }) };
  const res = await reach("/v1/signin", init, "POST");
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      message = (await res.json())?.error?.message ?? message;
    } catch {
      /* not JSON */
    }
    throw new ApiError(res.status, message, "POST");
  }
  const body = (await res.json()) as { token?: string };
  setToken(body.token ?? null);
}

export class ApiError extends Error {
  /// `status` 0: the server could not be reached (it is down, or the network is).
  constructor(public status: number, message: string, public method = "GET") {
    super(message);
  }
}

/// The message of a request that did not reach the server.
export const OFFLINE = "The server is not answering: reconnecting…";

function signal(name: "hands:ok" | "hands:offline", method: string) {
  window.dispatchEvent(new CustomEvent(name, { detail: { method } }));
}

/// Show `error` in the page's banner (for views that have no error callback of their own).
export function reportError(error: unknown) {
  window.dispatchEvent(new CustomEvent("hands:error", { detail: error }));
}

/// `fetch`, with a request that never reached the server turned into an ApiError with status 0.
async function reach(path: string, init: RequestInit, method: string): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, init);
  } catch (e) {
    if ((e as Error)?.name === "AbortError") throw e;
    signal("hands:offline", method);
    throw new ApiError(0, OFFLINE, method);
  }
  // An answer, even an error, means the server is there again.
  if (res.ok) signal("hands:ok", method);
  return res;
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const h: Record<string, string> = { ...extra };
  const t = token();
  if (t) h["Authorization"] = `Bearer ${t}`;
  return h;
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await reach(path, init, method);
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const j = await res.json();
      if (j?.error?.message) message = j.error.message;
    } catch {
      /* not JSON */
    }
    throw new ApiError(res.status, message, method);
  }
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export interface SessionInfo {
  id: string;
  project_id: string;
  root: string;
  mode: "build" | "plan";
  title?: string | null;
  running_turn?: string | null;
  pending_questions: any[];
  pending_approvals: any[];
  created_at_ms: number;
  updated_at_ms: number;
}

export interface HandsEvent {
  id: number;
  session_id: string;
  at_ms: number;
  type: string;
  [k: string]: any;
}

export interface ProcessRow {
  [k: string]: any;
}

export type Stage = "stopped" | "typechecking" | "building" | "starting_server" | "launching_browser" | "attaching" | "ready" | "error";

export interface ErrorCounts {
  errors: number;
  warnings: number;
  occurrences: number;
  unread: number;
  dropped: number;
}

export interface PreviewState {
  available: boolean;
  stage: Stage;
  running: boolean;
  url?: string;
  port?: number;
  kind?: string;
  last_error?: string;
  page_loads: number;
  errors: ErrorCounts;
}

export interface RuntimeError {
  seq: number;
  kind: string;
  message: string;
  location?: string;
  originalLocation?: string;
  count: number;
  pageLoad: number;
  lastAtMs: number;
}

export interface Checkpoint {
  n: number;
  turn: string;
  kind: "turn_start" | "turn_end" | "restore";
  created_at: string | number;
  files_changed: number;
  additions: number;
  deletions: number;
}

export interface FileChange {
  path: string;
  change: "added" | "modified" | "deleted" | "mode";
  additions: number;
  deletions: number;
  binary: boolean;
  diff: string;
}

export type RestoreScope = "code" | "conversation" | "both";

const s = (id: string) => `/v1/sessions/${encodeURIComponent(id)}`;

/// A binary body (a screenshot) as a blob, with the bearer header.
export async function blob(path: string): Promise<Blob> {
  const res = await reach(path, { headers: headers() }, "GET");
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      message = (await res.json())?.error?.message ?? message;
    } catch {
      /* not JSON */
    }
    throw new ApiError(res.status, message);
  }
  return res.blob();
}

export const api = {
  /// `default_root`: the folder `hands serve` was started on, offered for a new session.
  list: () => call<{ sessions: SessionInfo[]; default_root?: string }>("GET", "/v1/sessions"),
  get: (id: string) => call<SessionInfo>("GET", `/v1/sessions/${encodeURIComponent(id)}`),
  create: (root: string, mode: string) => call<SessionInfo>("POST", "/v1/sessions", { root, mode }),
  update: (id: string, body: { title?: string; mode?: string }) =>
    call<SessionInfo>("PATCH", `/v1/sessions/${encodeURIComponent(id)}`, body),
  remove: (id: string) => call<void>("DELETE", `/v1/sessions/${encodeURIComponent(id)}`),
  send: (id: string, text: string) => call<{ turn_id: string }>("POST", `/v1/sessions/${encodeURIComponent(id)}/messages`, { text }),
  abort: (id: string) => call<void>("POST", `/v1/sessions/${encodeURIComponent(id)}/abort`),
  answer: (id: string, answer: string, question_id?: string) =>
    call<void>("POST", `/v1/sessions/${encodeURIComponent(id)}/answer`, { answer, question_id }),
  /// `scope: "session"` allows the tool for the rest of the session (not offered for a plan).
  decide: (id: string, approval: string, approve: boolean, reason?: string, scope: "once" | "session" = "once") =>
    call<void>("POST", `/v1/sessions/${encodeURIComponent(id)}/approvals/${encodeURIComponent(approval)}`, { approve, reason, scope }),
  secret: (id: string, request: string, body: { value: string } | { decline: true }) =>
    call<unknown>("POST", `/v1/sessions/${encodeURIComponent(id)}/secrets/${encodeURIComponent(request)}`, body),
  processes: (id: string) => call<{ processes: ProcessRow[] }>("GET", `/v1/sessions/${encodeURIComponent(id)}/processes`),
  processOutput: (id: string, pid: string, lines = 200) =>
    call<{ process_id: string; output: string }>(
      "GET",
      `/v1/sessions/${encodeURIComponent(id)}/processes/${encodeURIComponent(pid)}/output?lines=${lines}`,
    ),
  stopProcess: (id: string, pid: string) =>
    call<unknown>("POST", `/v1/sessions/${encodeURIComponent(id)}/processes/${encodeURIComponent(pid)}/stop`),
  /// A tool called directly, outside a turn (the preview's Start/Stop): its output.
  callTool: (id: string, name: string, args: Record<string, unknown> = {}) =>
    call<{ content?: { type: string; text?: string }[]; is_error?: boolean }>("POST", `${s(id)}/tools/${encodeURIComponent(name)}`, { args }),
  messages: (id: string, offset: number) => call<{ messages: any[] }>("GET", `${s(id)}/messages?offset=${offset}`),
  preview: (id: string) => call<PreviewState>("GET", `${s(id)}/preview`),
  previewErrors: (id: string) => call<{ errors: RuntimeError[]; counts: ErrorCounts }>("GET", `${s(id)}/preview/errors`),
  screenshot: (id: string) => blob(`${s(id)}/preview/screenshot`),
  checkpoints: (id: string) => call<{ checkpoints: Checkpoint[] }>("GET", `${s(id)}/checkpoints`),
  diff: (id: string, n: number) => call<{ n: number; files: FileChange[] }>("GET", `${s(id)}/checkpoints/${n}/diff`),
  restore: (id: string, n: number, scope: RestoreScope) =>
    call<{ restored: number; scope: RestoreScope; undo?: number; files_changed?: number }>("POST", `${s(id)}/checkpoints/${n}/restore`, { scope }),
};

export type StreamState = "connecting" | "live" | "reconnecting" | "closed";

/// Follows a session's events over fetch (EventSource cannot send a bearer header). On a drop it
/// reconnects with Last-Event-ID = the last id handed on, so nothing is lost; ids at or below it
/// are ignored, so nothing is handed on twice.
export function follow(
  session: string,
  onEvent: (e: HandsEvent) => void,
  onState: (s: StreamState) => void,
): () => void {
  let last = 0;
  let stopped = false;
  const ctrl = { abort: new AbortController() };
  const run = async () => {
    let delay = 250;
    while (!stopped) {
      onState(last === 0 ? "connecting" : "reconnecting");
      try {
        const h = headers({ Accept: "text/event-stream" });
        if (last > 0) h["Last-Event-ID"] = String(last);
        const res = await fetch(`/v1/sessions/${encodeURIComponent(session)}/events`, {
          headers: h,
          signal: ctrl.abort.signal,
        });
        if (res.status === 401) {
          onState("closed");
          window.dispatchEvent(new CustomEvent("hands:unauthorized"));
          return;
        }
        if (!res.ok || !res.body) throw new Error(String(res.status));
        onState("live");
        signal("hands:ok", "GET");
        delay = 250;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          // One read may carry thousands of events (a replay): walk the buffer, cut it once.
          let start = 0;
          let cut: number;
          while ((cut = buf.indexOf("\n\n", start)) >= 0) {
            const block = buf.slice(start, cut);
            start = cut + 2;
            let data = "";
            for (const line of block.split("\n")) {
              if (line.startsWith("data:")) data += (data ? "\n" : "") + line.slice(5).replace(/^ /, "");
            }
            if (!data) continue;
            const ev = JSON.parse(data) as HandsEvent;
            if (ev.id <= last) continue;
            last = ev.id;
            onEvent(ev);
          }
          buf = buf.slice(start);
        }
      } catch (e) {
        if (stopped) return;
        // A fetch that threw reached no server (an HTTP error is an Error thrown above).
        if (e instanceof TypeError) signal("hands:offline", "GET");
      }
      if (stopped) return;
      onState("reconnecting");
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 4000);
    }
  };
  run();
  return () => {
    stopped = true;
    ctrl.abort.abort();
    onState("closed");
  };
}
