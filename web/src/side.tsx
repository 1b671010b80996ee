// The session's side panels: its todo list (live from todos_changed) and its background
// processes (polled: status, uptime, URL or port, a live tail of output, Stop).

import { useEffect, useRef, useState } from "preact/hooks";
import { api, ProcessRow } from "./api";

const webUrl = (p: ProcessRow) => typeof p.url === "string" && /^https?:\/\//.test(p.url);

/// The state of a process, said once: `running`, `exited with code 0`, `stopped`, `timed out
/// and was stopped` (the row's detail when it adds to its status).
export function statusWords(p: ProcessRow): string {
  const detail: string = typeof p.detail === "string" ? p.detail : "";
  if (!detail || detail === p.status || /^stopped \((stopped|user|by the user)\)$/.test(detail)) return p.status;
  return detail;
}

export function Processes({ session }: { session: string }) {
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
            <div class="proc-line">
              <span class="name">{p.name}</span> <span class={`status ${p.status}`}>{statusWords(p)}</span>{" "}
              <span class="meta">
                {Math.round(p.duration_ms / 1000)}s{p.port && !webUrl(p) ? ` · port ${p.port}` : ""}
              </span>
            </div>
            {webUrl(p) && (
              <a class="url" href={p.url} target="_blank" rel="noopener noreferrer">
                {p.url}
              </a>
            )}
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

export function Todos({ todos }: { todos: any[] }) {
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
