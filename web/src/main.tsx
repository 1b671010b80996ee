// The web UI of `hands serve`: a login form when the server wants a token, the list of sessions,
// and one session's page (the URL's hash names it, so a reload or a shared link returns to it).
// Everything goes through the public session API.

import { render } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { api, ApiError, SessionInfo, token } from "./api";
import { SessionView } from "./session";
import { Login, Sessions } from "./sessions";
import "./style.css";

/// The first request, sent before anything renders: it tells whether the token is good and
/// brings the session list.
let firstList: Promise<{ sessions: SessionInfo[] }> | null = api.list();

function sessionFromUrl(): string | null {
  const m = /^#\/s\/([^/]+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

function App() {
  const [authed, setAuthed] = useState<"unknown" | "yes" | "no" | "failed">("unknown");
  const [current, setCurrent] = useState<string | null>(sessionFromUrl());
  const [error, setError] = useState("");
  const [initial, setInitial] = useState<SessionInfo[]>([]);

  const check = useCallback(() => {
    const list = firstList ?? api.list();
    firstList = null;
    list
      .then((r) => {
        setInitial(r.sessions);
        setAuthed("yes");
      })
      .catch((e) => {
        if (e instanceof ApiError && e.status === 401) setAuthed(token() ? "failed" : "no");
        else {
          setAuthed("yes");
          setError(e.message);
        }
      });
  }, []);
  useEffect(() => {
    check();
    const onHash = () => setCurrent(sessionFromUrl());
    const onUnauth = () => setAuthed("failed");
    window.addEventListener("hashchange", onHash);
    window.addEventListener("hands:unauthorized", onUnauth);
    return () => {
      window.removeEventListener("hashchange", onHash);
      window.removeEventListener("hands:unauthorized", onUnauth);
    };
  }, []);

  if (authed === "unknown") return <main class="loading">Loading…</main>;
  if (authed !== "yes") return <Login failed={authed === "failed"} onDone={check} />;
  const open = (id: string | null) => {
    location.hash = id ? `#/s/${encodeURIComponent(id)}` : "";
    setCurrent(id);
  };
  return (
    <div class="app">
      <Sessions initial={initial} current={current} onOpen={open} onError={setError} />
      <main>
        {error && (
          <div class="error banner" role="alert">
            {error}{" "}
            <button class="small" onClick={() => setError("")}>
              dismiss
            </button>
          </div>
        )}
        {current ? <SessionView key={current} id={current} onError={setError} /> : <p class="empty">Create a session on a project root, or open one.</p>}
      </main>
    </div>
  );
}

render(<App />, document.getElementById("app")!);
