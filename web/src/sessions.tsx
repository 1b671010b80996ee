// The login form (the token kept in sessionStorage, sent as a bearer header) and the list of
// sessions (create on a root, the server's own offered first; open, delete; refreshed every few
// seconds).

import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { api, setToken, SessionInfo } from "./api";

export function ago(ms: number): string {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return new Date(ms).toLocaleDateString();
}

export function Login({ onDone, failed, linkRefused }: {
  onDone: () => void;
  failed: boolean;
  /// The page came with a sign-in link the server refused (used, expired or unknown).
  linkRefused: boolean;
}) {
  const [value, setValue] = useState("");
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => field.current?.focus(), []);
  return (
    <main class="login">
      <form
        onSubmit={(ev) => {
          ev.preventDefault();
          setToken(value.trim());
          onDone();
        }}
      >
        <h1>hands</h1>
        <p>This server requires a token. <code>hands serve</code> printed where it is kept.</p>
        {linkRefused && !failed && (
          <p class="error" role="alert">
            This sign-in link was already used or has expired: run <code>hands serve --open</code> again, or paste the token
            from the file <code>hands serve</code> named on its stderr.
          </p>
        )}
        {failed && <p class="error" role="alert">That token was not accepted.</p>}
        <label for="token">Token</label>
        <input id="token" ref={field} type="password" autocomplete="off" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} autofocus />
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

export function Sessions({ initial, defaultRoot, current, onOpen, onError }: {
  /// The list the sign-in check read (shown at once, without asking again).
  initial: SessionInfo[];
  /// The folder `hands serve` was started on: the root field starts with it.
  defaultRoot: string;
  current: string | null;
  onOpen: (id: string | null) => void;
  onError: (e: unknown) => void;
}) {
  const [list, setList] = useState<SessionInfo[]>(initial);
  const [root, setRoot] = useState(defaultRoot);
  const refresh = useCallback(() => {
    api
      .list()
      .then((r) => setList(r.sessions))
      .catch((e) => onError(e));
  }, []);
  useEffect(() => {
    // The first list on screen: the page is usable (what bench/ui.sh measures).
    if (!performance.getEntriesByName("hands:interactive").length) performance.mark("hands:interactive");
  }, []);
  const first = useRef(true);
  useEffect(() => {
    if (!first.current) refresh();
    first.current = false;
    const t = setInterval(refresh, 5000);
    return () => clearInterval(t);
  }, [current]);
  return (
    <nav class="sessions" aria-label="Sessions">
      <form
        class="new"
        onSubmit={async (ev) => {
          ev.preventDefault();
          try {
            const s = await api.create(root.trim(), "build");
            refresh();
            onOpen(s.id);
          } catch (e: any) {
            onError(e);
          }
        }}
      >
        <label for="root">Project root</label>
        <input id="root" placeholder="/path/to/project" value={root} onInput={(e) => setRoot((e.target as HTMLInputElement).value)} required />
        <button type="submit">New session</button>
      </form>
      <ul>
        {list.map((s) => (
          <li key={s.id} class={s.id === current ? "current" : ""}>
            <a href={`#/s/${encodeURIComponent(s.id)}`} aria-current={s.id === current ? "page" : undefined}>
              <span class="title">{s.title || s.root}</span>
              <span class="meta">
                {s.project_id} · {s.mode} · {ago(s.updated_at_ms)}
                {s.running_turn ? " · running" : ""}
              </span>
            </a>
            <button
              class="small"
              aria-label={`Delete session ${s.title || s.id}`}
              onClick={async () => {
                if (!confirm("Delete this session and its records?")) return;
                try {
                  await api.remove(s.id);
                  if (s.id === current) onOpen(null);
                  refresh();
                } catch (e: any) {
                  onError(e);
                }
              }}
            >
              ×
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}
