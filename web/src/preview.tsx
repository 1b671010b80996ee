// The preview pane: the preview's stage and URL, the app itself in an iframe when its URL is
// reachable from this browser (the app runs on the server's loopback, so only a browser on the
// same machine reaches it), else the latest screenshot with a refresh button, and the runtime
// errors with their counts. Everything is read through the session API (the state polled, the
// errors read when their counts change, the screenshot fetched as a blob with the bearer header);
// reading the errors here does not move the model's read cursor. Start and Stop call the
// preview's own tools (preview_open, preview_close) directly, outside a turn: the user brings
// the preview back without the agent.

import { useEffect, useRef, useState } from "preact/hooks";
import { api, PreviewState, reportError, RuntimeError } from "./api";

/// How often the state is read while the pane is shown.
const POLL_MS = 1500;

const STAGES: Record<string, string> = {
  stopped: "stopped",
  typechecking: "typechecking…",
  building: "building…",
  starting_server: "starting the server…",
  launching_browser: "launching the browser…",
  attaching: "attaching…",
  ready: "ready",
  error: "error",
};

function loopback(host: string): boolean {
  return host === "localhost" || host === "[::1]" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/// Whether this browser can load `url`: an http(s) URL on loopback, and this page on loopback too
/// (the same machine as the server).
export function reachable(url: string | undefined): boolean {
  if (!url) return false;
  try {
    const u = new URL(url);
    return /^https?:$/.test(u.protocol) && loopback(u.hostname) && loopback(location.hostname);
  } catch {
    return false;
  }
}

/// Whether the session's project has a preview (the pane and its tab are shown then).
export function usePreview(session: string): PreviewState | null {
  const [state, setState] = useState<PreviewState | null>(null);
  useEffect(() => {
    let live = true;
    const load = () =>
      api
        .preview(session)
        .then((s) => live && setState((old) => (JSON.stringify(old) === JSON.stringify(s) ? old : s)))
        .catch(() => {});
    load();
    const t = setInterval(load, POLL_MS);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [session]);
  return state;
}

export function PreviewPane({ session, state }: { session: string; state: PreviewState }) {
  const live = state.running && reachable(state.url);
  const [mode, setMode] = useState<"app" | "screenshot">("app");
  const [frame, setFrame] = useState(0);
  const showApp = live && mode === "app";
  const [busy, setBusy] = useState<"" | "starting" | "stopping">("");
  const [failure, setFailure] = useState("");
  const run = (tool: "preview_open" | "preview_close") => {
    setBusy(tool === "preview_open" ? "starting" : "stopping");
    setFailure("");
    api
      .callTool(session, tool)
      .then((out) => {
        if (out?.is_error) setFailure((out.content ?? []).map((p) => p.text ?? "").join("\n"));
      })
      .catch(reportError)
      .finally(() => setBusy(""));
  };
  const idle = state.stage === "stopped" || state.stage === "error";
  return (
    <section class="preview" aria-label="Preview">
      <div class="preview-bar">
        <span class={`stage ${state.stage}`} data-stage={state.stage}>
          Preview: {STAGES[state.stage] ?? state.stage}
        </span>
        {state.available &&
          (idle && !state.running ? (
            <button class="small" disabled={!!busy} onClick={() => run("preview_open")}>
              {busy === "starting" ? "Starting…" : "Start preview"}
            </button>
          ) : (
            <button class="small" disabled={!!busy} onClick={() => run("preview_close")}>
              {busy === "stopping" ? "Stopping…" : "Stop preview"}
            </button>
          ))}
        {state.url && (
          <a href={state.url} target="_blank" rel="noopener noreferrer" class="url">
            {state.url}
          </a>
        )}
      </div>
      {failure && (
        <pre class="error" role="alert">
          {failure}
        </pre>
      )}
      {state.last_error && (
        <pre class="error" role="alert">
          {state.last_error}
        </pre>
      )}
      {state.running && (
        <div class="preview-view">
          {live && (
            <div class="toggle" role="group" aria-label="Preview view">
              <button aria-pressed={mode === "app"} onClick={() => setMode("app")}>
                App
              </button>
              <button aria-pressed={mode === "screenshot"} onClick={() => setMode("screenshot")}>
                Screenshot
              </button>
              {showApp && (
                <button onClick={() => setFrame((n) => n + 1)} aria-label="Reload the app">
                  Reload
                </button>
              )}
            </div>
          )}
          {showApp ? (
            <iframe key={frame} src={state.url} title="The app" sandbox="allow-scripts allow-forms allow-same-origin" />
          ) : (
            <Shot session={session} loads={state.page_loads} />
          )}
        </div>
      )}
      {!state.running && state.stage === "stopped" && <p class="notice">Start it here, or the agent opens it with its preview tools.</p>}
      <Errors session={session} state={state} />
    </section>
  );
}

/// The latest screenshot: taken when shown, when the page reloads, and on Refresh.
function Shot({ session, loads }: { session: string; loads: number }) {
  const [url, setUrl] = useState<string | null>(null);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const current = useRef<string | null>(null);
  const take = () => {
    setBusy(true);
    api
      .screenshot(session)
      .then((b) => {
        const next = URL.createObjectURL(b);
        if (current.current) URL.revokeObjectURL(current.current);
        current.current = next;
        setUrl(next);
        setError("");
      })
      .catch((e) => setError(e.message))
      .finally(() => setBusy(false));
  };
  useEffect(take, [session, loads]);
  useEffect(
    () => () => {
      if (current.current) URL.revokeObjectURL(current.current);
    },
    [],
  );
  return (
    <figure class="shot">
      {url && <img src={url} alt="Screenshot of the app" />}
      {error && <figcaption class="error">{error}</figcaption>}
      <button onClick={take} disabled={busy}>
        {busy ? "Taking a screenshot…" : "Refresh screenshot"}
      </button>
    </figure>
  );
}

function Errors({ session, state }: { session: string; state: PreviewState }) {
  const [list, setList] = useState<RuntimeError[]>([]);
  const c = state.errors;
  // Read again when the counts change, and when the model has read them (`unread` drops): its
  // read maps their frames through source maps.
  useEffect(() => {
    let live = true;
    api
      .previewErrors(session)
      .then((r) => live && setList(r.errors))
      .catch(() => {});
    return () => {
      live = false;
    };
  }, [session, c.occurrences, c.errors, c.warnings, c.unread]);
  return (
    <details class="runtime-errors" open={c.errors > 0}>
      <summary>
        Runtime errors: <span class="count" data-errors={c.errors}>{c.errors} {c.errors === 1 ? "error" : "errors"}</span>,{" "}
        <span class="count" data-warnings={c.warnings}>{c.warnings} {c.warnings === 1 ? "warning" : "warnings"}</span>
        {c.occurrences > c.errors + c.warnings && `, ${c.occurrences} occurrences`}
        {c.dropped > 0 && `, ${c.dropped} dropped`}
      </summary>
      <ul>
        {list
          .slice()
          .reverse()
          .map((e) => (
            <li key={e.seq} class={/warning/.test(e.kind) ? "warning" : "error"}>
              <span class="kind">{e.kind.replace(/_/g, " ")}</span> {e.message}
              {e.count > 1 && <span class="times"> ×{e.count}</span>}
              {(e.originalLocation || e.location) && <div class="meta">{e.originalLocation || e.location}</div>}
            </li>
          ))}
      </ul>
    </details>
  );
}
