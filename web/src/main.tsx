// The web UI of `hands serve`: a one-time sign-in link traded for the token (else a login form when
// the server wants one), the list of sessions, and one session's page (the URL's hash names it, so
// a reload or a shared link returns to it).
// Everything goes through the public session API. The banner shows the last error until a
// later request of its kind succeeds, and a lost server as "reconnecting…" until it answers again.

import { render } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { api, ApiError, SessionInfo, signIn, takeSignInCode, token } from "./api";

/// An error shown in the banner, with the method of the request that failed (a later success of
/// a read clears a failed read; of a change, a failed change).
interface Shown {
  message: string;
  method: string;
}
import { SessionView } from "./session";
import { Login, Sessions } from "./sessions";
import "./style.css";

/// Whether this page came with a sign-in link that was refused (used, expired or unknown).
let linkRefused = false;

/// The first request, sent before anything renders: after trading a sign-in link's code for the
/// token, if the page came with one, it tells whether the token is good and brings the session
/// list.
const code = takeSignInCode();
let firstList: Promise<{ sessions: SessionInfo[]; default_root?: string }> | null = (code ? signIn(code) : Promise.resolve())
  .catch((e) => {
    linkRefused = e instanceof ApiError && e.status === 401;
  })
  .then(() => api.list());

function sessionFromUrl(): string | null {
  const m = /^#\/s\/([^/]+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

function App() {
  const [authed, setAuthed] = useState<"unknown" | "yes" | "no" | "failed">("unknown");
  const [current, setCurrent] = useState<string | null>(sessionFromUrl());
  const [error, setError] = useState<Shown | null>(null);
  const [offline, setOffline] = useState(false);
  const [initial, setInitial] = useState<SessionInfo[]>([]);
  const [defaultRoot, setDefaultRoot] = useState("");
  const report = useCallback((e: unknown) => {
    if (e instanceof ApiError && e.status === 0) setOffline(true);
    else setError({ message: e instanceof Error ? e.message : String(e), method: e instanceof ApiError ? e.method : "POST" });
  }, []);

  const check = useCallback(() => {
    const list = firstList ?? api.list();
    firstList = null;
    list
      .then((r) => {
        setInitial(r.sessions);
        setDefaultRoot(r.default_root ?? "");
        setAuthed("yes");
      })
      .catch((e) => {
        if (e instanceof ApiError && e.status === 401) setAuthed(token() ? "failed" : "no");
        else {
          setAuthed("yes");
          report(e);
        }
      });
  }, []);
  useEffect(() => {
    check();
    const onHash = () => setCurrent(sessionFromUrl());
    const onUnauth = () => setAuthed("failed");
    const onOk = (e: Event) => {
      const method = (e as CustomEvent).detail?.method ?? "GET";
      setOffline(false);
      setError((old) => (old && (method !== "GET" || old.method === "GET") ? null : old));
    };
    const onOffline = () => setOffline(true);
    const onError = (e: Event) => report((e as CustomEvent).detail);
    const listeners: [string, (e: Event) => void][] = [
      ["hashchange", onHash],
      ["hands:unauthorized", onUnauth],
      ["hands:ok", onOk],
      ["hands:offline", onOffline],
      ["hands:error", onError],
    ];
    for (const [name, f] of listeners) window.addEventListener(name, f);
    return () => {
      for (const [name, f] of listeners) window.removeEventListener(name, f);
    };
  }, []);

  if (authed === "unknown") return <main class="loading">Loading…</main>;
  if (authed !== "yes") return <Login failed={authed === "failed"} linkRefused={linkRefused} onDone={check} />;
  const open = (id: string | null) => {
    location.hash = id ? `#/s/${encodeURIComponent(id)}` : "";
    setCurrent(id);
  };
  return (
    <div class="app">
      <Sessions initial={initial} defaultRoot={defaultRoot} current={current} onOpen={open} onError={report} />
      <main>
        {offline && (
          <div class="banner offline" role="status">
            The connection to hands was lost: reconnecting…
          </div>
        )}
        {error && !offline && (
          <div class="error banner" role="alert">
            {error.message}{" "}
            <button class="small" onClick={() => setError(null)}>
              dismiss
            </button>
          </div>
        )}
        {current ? <SessionView key={current} id={current} onError={report} /> : <p class="empty">Create a session on a project root, or open one.</p>}
      </main>
    </div>
  );
}

render(<App />, document.getElementById("app")!);
