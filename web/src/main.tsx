import { render } from "preact";
import { useEffect, useRef, useState, useCallback } from "preact/hooks";
import { api, call, follow, token, setToken, ApiError, HandsEvent, SessionInfo, StreamState, ProcessRow, CheckpointRow, FileChange } from "./api";
import { Markdown } from "./markdown";
import "./style.css";

type Item =
  | { kind: "user"; key: string; text: string }
  | { kind: "text"; key: string; text: string }
  | { kind: "tool"; key: string; call: string; name: string; args: any; at: number; duration?: number; error?: boolean; summary?: string }
  | { kind: "question"; key: string; id: string; question: string; options: string[]; done: boolean }
  | { kind: "approval"; key: string; id: string; tool: string; summary: string; decided?: boolean; approved?: boolean }
  | { kind: "secret"; key: string; id: string; name: string; description: string; state: "open" | "given" | "declined" }
  | { kind: "notice"; key: string; text: string; error?: boolean }
  | { kind: "end"; key: string; reason: string };

interface Conversation {
  items: Item[];
  todos: any[];
  mode?: string;
  running: boolean;
  lastId: number;
  /// Events folded, and how many arrived with an id that did not follow the previous one (shown
  /// as data attributes of the log, so that tests can compare them with the stored events).
  count: number;
  gaps: number;
}

const empty = (): Conversation => ({ items: [], todos: [], running: false, lastId: 0, count: 0, gaps: 0 });

/// Folds one event into the conversation (mutating a copy of the list's tail only).
function apply(c: Conversation, e: HandsEvent): Conversation {
  const items = c.items;
  const k = String(e.id);
  if (e.id !== c.lastId + 1) c.gaps++;
  c.count++;
  c.lastId = e.id;
  switch (e.type) {
    case "turn_started":
      items.push({ kind: "user", key: k, text: e.message });
      c.running = true;
      break;
    case "text_delta": {
      const last = items[items.length - 1];
      if (last && last.kind === "text") items[items.length - 1] = { ...last, text: last.text + e.text };
      else items.push({ kind: "text", key: k, text: e.text });
      break;
    }
    case "tool_call_started":
      items.push({ kind: "tool", key: k, call: e.call_id, name: e.name, args: e.args, at: e.at_ms });
      break;
    case "tool_call_finished": {
      const i = findLast(items, (x) => x.kind === "tool" && x.call === e.call_id);
      if (i >= 0) items[i] = { ...(items[i] as any), duration: e.duration_ms, error: e.is_error, summary: e.summary };
      break;
    }
    case "question":
      items.push({ kind: "question", key: k, id: e.question_id, question: e.question, options: e.options ?? [], done: false });
      break;
    case "question_answered": {
      const i = findLast(items, (x) => x.kind === "question" && x.id === e.question_id);
      if (i >= 0) items[i] = { ...(items[i] as any), done: true };
      break;
    }
    case "approval_requested":
      items.push({ kind: "approval", key: k, id: e.approval_id, tool: e.tool, summary: e.summary });
      break;
    case "approval_decided": {
      const i = findLast(items, (x) => x.kind === "approval" && x.id === e.approval_id);
      if (i >= 0) items[i] = { ...(items[i] as any), decided: true, approved: e.approved };
      break;
    }
    case "secret_requested":
      items.push({ kind: "secret", key: k, id: e.request_id, name: e.name, description: e.description, state: "open" });
      break;
    case "secret_answered":
    case "secret_declined": {
      const i = findLast(items, (x) => x.kind === "secret" && x.id === e.request_id);
      if (i >= 0) items[i] = { ...(items[i] as any), state: e.type === "secret_answered" ? "given" : "declined" };
      break;
    }
    case "process_notice":
      items.push({ kind: "notice", key: k, text: e.text });
      break;
    case "todos_changed":
      c.todos = Array.isArray(e.todos) ? e.todos : Array.isArray(e.todos?.todos) ? e.todos.todos : [];
      break;
    case "mode_changed":
      c.mode = e.mode;
      items.push({ kind: "notice", key: k, text: `mode: ${e.mode}` });
      break;
    case "turn_ended":
      c.running = false;
      items.push({ kind: "end", key: k, reason: e.reason });
      break;
    case "error":
      items.push({ kind: "notice", key: k, text: e.message, error: true });
      break;
  }
  return c;
}

function findLast<T>(a: T[], f: (x: T) => boolean): number {
  for (let i = a.length - 1; i >= 0; i--) if (f(a[i])) return i;
  return -1;
}

function argLine(args: any): string {
  if (!args || typeof args !== "object") return String(args ?? "");
  for (const key of ["command", "path", "file_path", "url", "query", "pattern", "name"]) {
    if (typeof args[key] === "string") return args[key];
  }
  const s = JSON.stringify(args);
  return s.length > 120 ? s.slice(0, 117) + "…" : s;
}

function sessionFromUrl(): string | null {
  const m = /^#\/s\/([^/]+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return new Date(ms).toLocaleDateString();
}

// ---------------------------------------------------------------------------------------------

function Login({ onDone, failed }: { onDone: () => void; failed: boolean }) {
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
        {failed && <p class="error" role="alert">That token was not accepted.</p>}
        <label for="token">Token</label>
        <input id="token" ref={field} type="password" autocomplete="off" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} autofocus />
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

function Sessions({ current, onOpen, onError }: { current: string | null; onOpen: (id: string | null) => void; onError: (m: string) => void }) {
  const [list, setList] = useState<SessionInfo[]>([]);
  const [root, setRoot] = useState("");
  const refresh = useCallback(() => {
    api.list().then((r) => setList(r.sessions)).catch((e) => onError(e.message));
  }, []);
  useEffect(() => {
    refresh();
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
            onError(e.message);
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
                  onError(e.message);
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

function ToolCard({ item, result }: { item: Extract<Item, { kind: "tool" }>; result?: any }) {
  const status = item.duration === undefined ? "running" : item.error ? "error" : "ok";
  return (
    <details class={`tool ${status}`}>
      <summary>
        <span class="name">{item.name}</span> <span class="args">{argLine(item.args)}</span>
        <span class="status">{status === "running" ? "…" : `${item.duration} ms${item.error ? " · failed" : ""}`}</span>
      </summary>
      <h4>Arguments</h4>
      <pre>{JSON.stringify(item.args, null, 2)}</pre>
      {item.summary && <pre class="summary">{item.summary}</pre>}
      {result && <ToolResult name={item.name} result={result} />}
    </details>
  );
}

function ToolResult({ name, result }: { name: string; result: any }) {
  const parts: any[] = result.content ?? [];
  return (
    <div class="result">
      <h4>Result</h4>
      {parts.map((p, i) =>
        p.type === "image" ? (
          <img key={i} alt="tool result image" src={`data:${p.media_type};base64,${p.data}`} />
        ) : name === "edit_file" || /^(---|\+\+\+|@@)/m.test(p.text ?? "") ? (
          <Diff key={i} text={p.text ?? ""} />
        ) : (
          <pre key={i} class={name === "bash" ? "bash" : ""}>{p.text}</pre>
        ),
      )}
    </div>
  );
}

function Diff({ text }: { text: string }) {
  return (
    <pre class="diff">
      {text.split("\n").map((l, i) => (
        <span key={i} class={l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : ""}>
          {l + "\n"}
        </span>
      ))}
    </pre>
  );
}

function Approval({ session, item }: { session: string; item: Extract<Item, { kind: "approval" }> }) {
  const [reason, setReason] = useState("");
  if (item.decided) return <div class="card approval">{item.tool}: {item.approved ? "allowed" : "denied"}</div>;
  return (
    <div class="card approval" role="group" aria-label="Approval request">
      <strong>{item.tool} asks for approval</strong>
      <pre>{item.summary}</pre>
      <input aria-label="Reason (optional)" placeholder="Reason (optional)" value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      <button onClick={() => api.decide(session, item.id, true, reason || undefined)}>Allow</button>
      <button onClick={() => api.decide(session, item.id, false, reason || undefined)}>Deny</button>
    </div>
  );
}

function Question({ session, item }: { session: string; item: Extract<Item, { kind: "question" }> }) {
  const [text, setText] = useState("");
  return (
    <div class="card question" role="group" aria-label="Question">
      <Markdown text={item.question} />
      {!item.done && (
        <>
          {item.options.map((o) => (
            <button key={o} onClick={() => api.answer(session, o, item.id)}>{o}</button>
          ))}
          <form onSubmit={(ev) => { ev.preventDefault(); if (text.trim()) api.answer(session, text, item.id); }}>
            <input aria-label="Your answer" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
            <button type="submit">Answer</button>
          </form>
        </>
      )}
      {item.done && <em>answered</em>}
    </div>
  );
}

function Secret({ session, item }: { session: string; item: Extract<Item, { kind: "secret" }> }) {
  const [value, setValue] = useState("");
  const [error, setError] = useState("");
  if (item.state !== "open") return <div class="card secret">{item.name}: {item.state}</div>;
  return (
    <form
      class="card secret"
      onSubmit={async (ev) => {
        ev.preventDefault();
        try {
          await api.secret(session, item.id, { value });
          setValue("");
        } catch (e: any) {
          setError(e.message);
        }
      }}
    >
      <strong>Secret requested: {item.name}</strong>
      <p>{item.description}</p>
      <label for={`s-${item.id}`}>Value</label>
      <input id={`s-${item.id}`} type="password" autocomplete="off" value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
      <button type="submit">Save</button>
      <button type="button" onClick={() => api.secret(session, item.id, { decline: true })}>Decline</button>
      {error && <p class="error" role="alert">{error}</p>}
    </form>
  );
}

function Processes({ session }: { session: string }) {
  const [rows, setRows] = useState<ProcessRow[]>([]);
  useEffect(() => {
    let live = true;
    const load = () => api.processes(session).then((r) => live && setRows(r.processes)).catch(() => {});
    load();
    const t = setInterval(load, 2000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [session]);
  if (!rows.length) return null;
  return (
    <section class="processes" aria-label="Processes">
      <h2>Processes</h2>
      <ul>
        {rows.map((p) => (
          <li key={p.id}>
            <span class="name">{p.name}</span> <span class="status">{p.status}</span>{" "}
            <span class="meta">{Math.round(p.duration_ms / 1000)}s{p.port ? ` · :${p.port}` : ""}</span>
            {p.url && /^https?:\/\//.test(p.url) && (
              <a href={p.url} target="_blank" rel="noopener noreferrer">{p.url}</a>
            )}
            {p.detail && <pre>{p.detail}</pre>}
            {p.status === "running" && <button onClick={() => api.stopProcess(session, p.id)}>Stop</button>}
            <Tail session={session} process={p.id} name={p.name} running={p.status === "running"} />
          </li>
        ))}
      </ul>
    </section>
  );
}

/// A process's last lines, re-read every second while open and the process runs.
function Tail({ session, process, name, running }: { session: string; process: string; name: string; running: boolean }) {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState("");
  const box = useRef<HTMLPreElement>(null);
  useEffect(() => {
    if (!open) return;
    let live = true;
    const load = () =>
      api
        .processOutput(session, process)
        .then((r) => live && setText(r.output))
        .catch((e) => live && setText(`(output unavailable: ${e.message})`));
    load();
    const t = running ? setInterval(load, 1000) : 0;
    return () => {
      live = false;
      if (t) clearInterval(t);
    };
  }, [open, running, session, process]);
  useEffect(() => {
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [text]);
  return (
    <details class="tail" onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Output of {name}</summary>
      <pre ref={box} class="bash" tabIndex={0} aria-label={`Output of ${name}`}>{text}</pre>
    </details>
  );
}

function Todos({ todos }: { todos: any[] }) {
  if (!todos.length) return null;
  return (
    <section class="todos" aria-label="Todos">
      <h2>Todos</h2>
      <ul>
        {todos.map((t, i) => (
          <li key={i} class={t.status ?? ""}>
            {t.status === "completed" ? "☑" : t.status === "in_progress" ? "▶" : "☐"} {t.content ?? t.text ?? JSON.stringify(t)}
          </li>
        ))}
      </ul>
    </section>
  );
}

/// The session's turns that changed files (from their checkpoints): per turn the files with their
/// line counts and diffs, and a button that reverts the turn's code (itself undoable: the restore
/// is checkpointed, and the notice names the checkpoint that undoes it).
function Changes({ session, running, version }: { session: string; running: boolean; version: number }) {
  const [rows, setRows] = useState<CheckpointRow[]>([]);
  const [open, setOpen] = useState<Record<number, FileChange[]>>({});
  const [note, setNote] = useState("");
  useEffect(() => {
    let live = true;
    api.checkpoints(session).then((r) => live && setRows(r.checkpoints)).catch(() => {});
    return () => {
      live = false;
    };
  }, [session, version]);
  // A turn's changes: its turn_end checkpoint, reverted by restoring its turn_start one.
  const turns = rows
    .filter((c) => c.kind === "turn_end" && c.files_changed > 0)
    .map((end) => ({ end, start: rows.find((c) => c.kind === "turn_start" && c.turn === end.turn) }))
    .reverse();
  if (!turns.length && !note) return null;
  const revert = async (n: number) => {
    try {
      const r = await api.restoreCheckpoint(session, n, "code");
      setNote(`reverted: ${r.files_changed} files; undo with checkpoint ${r.undo}`);
      setRows((await api.checkpoints(session)).checkpoints);
    } catch (e: any) {
      setNote(e.message ?? String(e));
    }
  };
  return (
    <section class="changes" aria-label="Changes">
      <h2>Changes</h2>
      {note && <p class="notice" role="status">{note}</p>}
      <ul>
        {turns.map(({ end, start }) => (
          <li key={end.n}>
            <details
              onToggle={(e) => {
                if ((e.target as HTMLDetailsElement).open && !open[end.n])
                  api.checkpointDiff(session, end.n).then((d) => setOpen((o) => ({ ...o, [end.n]: d.files }))).catch(() => {});
              }}
            >
              <summary>
                {end.files_changed} files, <span class="add">+{end.additions}</span> <span class="del">−{end.deletions}</span>{" "}
                <span class="meta">#{end.n} · {end.created_at.slice(11, 19)}</span>
              </summary>
              {(open[end.n] ?? []).map((f) => (
                <div key={f.path} class="file">
                  <div>
                    <span class="meta">{f.change}</span> {f.path}{" "}
                    <span class="meta">+{f.additions} −{f.deletions}{f.binary ? " · binary" : ""}</span>
                  </div>
                  {f.diff && <Diff text={f.diff} />}
                </div>
              ))}
            </details>
            {start && (
              <button disabled={running} title={running ? "wait for the turn to end" : ""} onClick={() => revert(start.n)}>
                Revert
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

function SessionView({ id, onError }: { id: string; onError: (m: string) => void }) {
  const conv = useRef<Conversation>(empty());
  const [, tick] = useState(0);
  const [state, setState] = useState<StreamState>("connecting");
  const [info, setInfo] = useState<SessionInfo | null>(null);
  const [results, setResults] = useState<Record<string, any>>({});
  const [draft, setDraft] = useState("");
  const [checkpoints, setCheckpoints] = useState(0);
  const [renaming, setRenaming] = useState(false);
  const [title, setTitle] = useState("");
  const list = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);

  const loadResults = useCallback(() => {
    api
      .get(id)
      .then(setInfo)
      .catch((e) => onError(e.message));
    fetchTranscript(id).then(setResults).catch(() => {});
  }, [id]);

  useEffect(() => {
    conv.current = empty();
    tick((n) => n + 1);
    loadResults();
    // Events are folded at once but rendered at most once per frame.
    let frame = 0;
    const stop = follow(
      id,
      (e) => {
        apply(conv.current, e);
        if (e.type === "tool_call_finished" || e.type === "turn_ended") loadResults();
        if (e.type === "checkpoint_created" || e.type === "conversation_restored") setCheckpoints((n) => n + 1);
        if (!frame)
          frame = requestAnimationFrame(() => {
            frame = 0;
            tick((n) => n + 1);
          });
      },
      setState,
    );
    return () => {
      stop();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [id]);

  useEffect(() => {
    const el = list.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  });

  const c = conv.current;
  const send = async () => {
    const text = draft.trim();
    if (!text) return;
    try {
      await api.send(id, text);
      setDraft("");
    } catch (e: any) {
      onError(e.message);
    }
  };
  const abort = () => api.abort(id).catch((e) => onError(e.message));
  const mode = c.mode ?? info?.mode ?? "build";

  return (
    <div class="session" onKeyDown={(e) => { if (e.key === "Escape" && c.running) { e.preventDefault(); abort(); } }}>
      <header>
        {renaming ? (
          <form
            class="rename"
            onSubmit={async (ev) => {
              ev.preventDefault();
              try {
                setInfo(await api.update(id, { title: title.trim() }));
                setRenaming(false);
              } catch (e: any) {
                onError(e.message);
              }
            }}
          >
            <label for="title" class="visually-hidden">Session title</label>
            <input id="title" value={title} maxLength={200} required autofocus onInput={(e) => setTitle((e.target as HTMLInputElement).value)}
              onKeyDown={(e) => { if (e.key === "Escape") { e.stopPropagation(); setRenaming(false); } }} />
            <button type="submit">Save</button>
            <button type="button" onClick={() => setRenaming(false)}>Cancel</button>
          </form>
        ) : (
          <>
            <h1>{info?.title || info?.root || id}</h1>
            <button class="small" onClick={() => { setTitle(info?.title || ""); setRenaming(true); }}>Rename</button>
          </>
        )}
        <span class={`stream ${state}`} role="status" data-state={state}>
          {state === "live" ? "live" : state === "reconnecting" ? "reconnecting…" : state}
        </span>
        <label class="mode">
          Mode{" "}
          <select
            value={mode}
            disabled={c.running}
            onChange={async (e) => {
              const next = (e.target as HTMLSelectElement).value;
              try {
                setInfo(await api.update(id, { mode: next }));
              } catch (err: any) {
                onError(err.message);
              }
            }}
          >
            <option value="build">build</option>
            <option value="plan">plan</option>
          </select>
        </label>
      </header>
      <div class="body">
        <div
          class="log"
          ref={list}
          role="log"
          aria-live="polite"
          aria-label="Conversation"
          data-events={c.count}
          data-last-event={c.lastId}
          data-gaps={c.gaps}
          tabIndex={0}
          onScroll={(e) => {
            const el = e.currentTarget;
            pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
          }}
        >
          {c.items.map((it) => (
            <div class={`item ${it.kind}`} key={it.key} data-kind={it.kind}>
              {it.kind === "user" && <div class="user-msg">{it.text}</div>}
              {it.kind === "text" && <Markdown text={it.text} />}
              {it.kind === "tool" && <ToolCard item={it} result={results[it.call]} />}
              {it.kind === "question" && <Question session={id} item={it} />}
              {it.kind === "approval" && <Approval session={id} item={it} />}
              {it.kind === "secret" && <Secret session={id} item={it} />}
              {it.kind === "notice" && <div class={it.error ? "error" : "notice"}>{it.text}</div>}
              {it.kind === "end" && it.reason !== "completed" && <div class="notice">turn ended: {it.reason}</div>}
            </div>
          ))}
        </div>
        <aside>
          <Todos todos={c.todos} />
          <Processes session={id} />
          <Changes session={id} running={c.running} version={checkpoints} />
        </aside>
      </div>
      <form
        class="composer"
        onSubmit={(ev) => {
          ev.preventDefault();
          send();
        }}
      >
        <label for="composer" class="visually-hidden">Message</label>
        <textarea
          id="composer"
          rows={2}
          placeholder="Message (Enter sends, Shift+Enter new line, Esc stops)"
          value={draft}
          onInput={(e) => setDraft((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
              e.preventDefault();
              send();
            }
          }}
        />
        {c.running ? (
          <button type="button" class="stop" onClick={abort}>Stop</button>
        ) : (
          <button type="submit">Send</button>
        )}
      </form>
    </div>
  );
}

async function fetchTranscript(id: string): Promise<Record<string, any>> {
  const t = await call<{ messages: any[] }>("GET", `/v1/sessions/${encodeURIComponent(id)}/messages`);
  const out: Record<string, any> = {};
  for (const m of t.messages)
    for (const b of m.content ?? []) if (b.type === "tool_result") out[b.tool_use_id] = b;
  return out;
}

function App() {
  const [authed, setAuthed] = useState<"unknown" | "yes" | "no" | "failed">("unknown");
  const [current, setCurrent] = useState<string | null>(sessionFromUrl());
  const [error, setError] = useState("");

  const check = useCallback(() => {
    api
      .list()
      .then(() => setAuthed("yes"))
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
      <Sessions current={current} onOpen={open} onError={setError} />
      <main>
        {error && (
          <div class="error banner" role="alert">
            {error} <button class="small" onClick={() => setError("")}>dismiss</button>
          </div>
        )}
        {current ? <SessionView key={current} id={current} onError={setError} /> : <p class="empty">Create a session on a project root, or open one.</p>}
      </main>
    </div>
  );
}

render(<App />, document.getElementById("app")!);
