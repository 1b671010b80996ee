// The per-turn changes view: the session's checkpoints grouped by turn (each turn is checkpointed
// before its first change and at its end), what a turn changed (files, line counts, a coloured
// diff) and a revert button that restores the checkpoint taken before the turn — code,
// conversation or both. A restore is itself checkpointed, so it offers its undo.

import { useEffect, useState } from "preact/hooks";
import { api, Checkpoint, FileChange, RestoreScope } from "./api";
import { Diff } from "./cards";

interface Turn {
  turn: string;
  /// The checkpoint at its start (what a revert restores), if any.
  start?: Checkpoint;
  /// The checkpoint at its end (what it changed), if any.
  end?: Checkpoint;
}

/// The turns, newest first, from checkpoints oldest first.
export function turns(checkpoints: Checkpoint[]): Turn[] {
  const byTurn = new Map<string, Turn>();
  for (const c of checkpoints) {
    if (c.kind === "restore") continue;
    const t = byTurn.get(c.turn) ?? { turn: c.turn };
    if (c.kind === "turn_start") t.start = c;
    else t.end = c;
    byTurn.set(c.turn, t);
  }
  return [...byTurn.values()].reverse();
}

export function Changes({ session, epoch, selected, onSelect, messages }: {
  session: string;
  /// Changes when a checkpoint is created or the conversation restored: the list is read again.
  epoch: number;
  selected: number | null;
  onSelect: (n: number | null) => void;
  /// The user's message of each turn, by turn id.
  messages: Map<string, string>;
}) {
  const [list, setList] = useState<Checkpoint[] | null>(null);
  const [error, setError] = useState("");
  const [done, setDone] = useState<{ text: string; undo?: number; scope: RestoreScope } | null>(null);
  useEffect(() => {
    let live = true;
    api
      .checkpoints(session)
      .then((r) => {
        if (!live) return;
        setList(r.checkpoints);
        setError("");
      })
      .catch((e) => live && setError(e.status === 404 ? "This server keeps no checkpoints." : e.message));
    return () => {
      live = false;
    };
  }, [session, epoch]);

  const restore = async (n: number, scope: RestoreScope, what: string) => {
    try {
      const r = await api.restore(session, n, scope);
      const files = r.files_changed === undefined ? "" : ` (${r.files_changed} ${r.files_changed === 1 ? "file" : "files"})`;
      setDone({ text: `${what}: restored checkpoint ${r.restored}, ${r.scope}${files}.`, undo: r.undo, scope });
      setError("");
    } catch (e: any) {
      setError(e.status === 409 ? `Not now: ${e.message}` : e.message);
    }
  };

  if (error && !list) return <p class="notice">{error}</p>;
  if (!list) return <p class="notice">Loading checkpoints…</p>;
  const all = turns(list);
  if (!all.length) return <p class="notice">No turn has changed the project yet.</p>;
  return (
    <section class="changes" aria-label="Changes">
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {done && (
        <p class="notice" role="status">
          {done.text}{" "}
          {done.undo !== undefined && (
            <button class="small" onClick={() => restore(done.undo!, done.scope, "Undone")}>
              Undo
            </button>
          )}
        </p>
      )}
      <ul>
        {all.map((t) => (
          <TurnRow key={t.turn} t={t} message={messages.get(t.turn)} open={!!t.end && selected === t.end.n} session={session}
            onToggle={(open) => onSelect(open && t.end ? t.end.n : null)} onRevert={restore} />
        ))}
      </ul>
    </section>
  );
}

function TurnRow({ t, message, open, session, onToggle, onRevert }: {
  t: Turn;
  message?: string;
  open: boolean;
  session: string;
  onToggle: (open: boolean) => void;
  onRevert: (n: number, scope: RestoreScope, what: string) => void;
}) {
  const [scope, setScope] = useState<RestoreScope>("code");
  const end = t.end;
  const label = message ? (message.length > 60 ? message.slice(0, 57) + "…" : message) : `turn ${t.turn}`;
  return (
    <li class="turn" data-turn={t.turn}>
      <div class="turn-line">
        <span class="what">{label}</span>
        {end ? (
          <span class="meta">
            {end.files_changed} {end.files_changed === 1 ? "file" : "files"} <span class="add">+{end.additions}</span>{" "}
            <span class="del">−{end.deletions}</span>
          </span>
        ) : (
          <span class="meta">running…</span>
        )}
      </div>
      {end && end.files_changed > 0 && (
        <details open={open} onToggle={(e) => onToggle((e.currentTarget as HTMLDetailsElement).open)}>
          <summary>Files changed</summary>
          {open && <Files session={session} n={end.n} />}
        </details>
      )}
      {t.start && (
        <div class="revert">
          <label>
            Revert{" "}
            <select value={scope} onChange={(e) => setScope((e.target as HTMLSelectElement).value as RestoreScope)}>
              <option value="code">code</option>
              <option value="conversation">conversation</option>
              <option value="both">code and conversation</option>
            </select>
          </label>
          <button class="danger" onClick={() => onRevert(t.start!.n, scope, "Reverted")}>
            Revert to before this turn
          </button>
        </div>
      )}
    </li>
  );
}

function Files({ session, n }: { session: string; n: number }) {
  const [files, setFiles] = useState<FileChange[] | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    let live = true;
    api
      .diff(session, n)
      .then((r) => live && setFiles(r.files))
      .catch((e) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [session, n]);
  if (error) return <p class="error">{error}</p>;
  if (!files) return <p class="notice">Loading the diff…</p>;
  return (
    <ul class="files">
      {files.map((f) => (
        <li key={f.path}>
          <div class="file-line">
            <span class={`change ${f.change}`}>{f.change}</span> <code>{f.path}</code>{" "}
            <span class="meta">
              <span class="add">+{f.additions}</span> <span class="del">−{f.deletions}</span>
            </span>
          </div>
          {f.binary ? <p class="notice">binary file</p> : f.diff ? <Diff text={f.diff} /> : null}
        </li>
      ))}
    </ul>
  );
}
