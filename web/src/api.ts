// The session API client: every request carries the bearer token from sessionStorage in the
// Authorization header (never in a URL).

const TOKEN_KEY = "hands.token";

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
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
  const res = await fetch(path, init);
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const j = await res.json();
      if (j?.error?.message) message = j.error.message;
    } catch {
      /* not JSON */
    }
    throw new ApiError(res.status, message);
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

export interface CheckpointRow {
  n: number;
  turn?: string | null;
  kind: "turn_start" | "turn_end" | "restore";
  created_at: string;
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
  diff?: string | null;
}

export const api = {
  list: () => call<{ sessions: SessionInfo[] }>("GET", "/v1/sessions"),
  get: (id: string) => call<SessionInfo>("GET", `/v1/sessions/${encodeURIComponent(id)}`),
  create: (root: string, mode: string) => call<SessionInfo>("POST", "/v1/sessions", { root, mode }),
  update: (id: string, body: { title?: string; mode?: string }) =>
    call<SessionInfo>("PATCH", `/v1/sessions/${encodeURIComponent(id)}`, body),
  remove: (id: string) => call<void>("DELETE", `/v1/sessions/${encodeURIComponent(id)}`),
  send: (id: string, text: string) => call<{ turn_id: string }>("POST", `/v1/sessions/${encodeURIComponent(id)}/messages`, { text }),
  abort: (id: string) => call<void>("POST", `/v1/sessions/${encodeURIComponent(id)}/abort`),
  answer: (id: string, answer: string, question_id?: string) =>
    call<void>("POST", `/v1/sessions/${encodeURIComponent(id)}/answer`, { answer, question_id }),
  decide: (id: string, approval: string, approve: boolean, reason?: string) =>
    call<void>("POST", `/v1/sessions/${encodeURIComponent(id)}/approvals/${encodeURIComponent(approval)}`, { approve, reason }),
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
  checkpoints: (id: string) =>
    call<{ checkpoints: CheckpointRow[] }>("GET", `/v1/sessions/${encodeURIComponent(id)}/checkpoints`),
  checkpointDiff: (id: string, n: number) =>
    call<{ n: number; files: FileChange[] }>("GET", `/v1/sessions/${encodeURIComponent(id)}/checkpoints/${n}/diff`),
  restoreCheckpoint: (id: string, n: number, scope: "code" | "conversation" | "both") =>
    call<{ restored: number; scope: string; undo: number; files_changed: number }>(
      "POST",
      `/v1/sessions/${encodeURIComponent(id)}/checkpoints/${n}/restore`,
      { scope },
    ),
  tool: (id: string, name: string, args: Record<string, unknown>) =>
    call<any>("POST", `/v1/sessions/${encodeURIComponent(id)}/tools/${encodeURIComponent(name)}`, { args }),
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
        delay = 250;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let cut: number;
          while ((cut = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
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
        }
      } catch {
        if (stopped) return;
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
