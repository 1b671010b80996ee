// The views of the conversation's items: tool cards (opened, they read their result), approvals,
// questions, secret requests and a turn's changes. Each is memoised on its item, which the fold
// replaces only when an event changes it.

import { memo } from "preact/compat";
import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { argLine, Item, ItemOf } from "./conversation";
import { Markdown } from "./markdown";
import type { Results } from "./results";

/// Reads of the transcript a card makes before it gives up on its result.
const RESULT_TRIES = 4;

export const ToolCard = memo(function ToolCard({ item, results }: { item: ItemOf<"tool">; results: Results }) {
  const [open, setOpen] = useState(() => results.opened.has(item.key));
  const [result, setResult] = useState<any>(() => results.get(item.call, item.nth));
  const finished = item.duration !== undefined;
  useEffect(() => {
    if (!open || !finished || result) return;
    let live = true;
    let tries = 0;
    const look = () =>
      results
        .load()
        .then(() => {
          const found = results.get(item.call, item.nth);
          if (!live) return;
          if (found) setResult(found);
          // The step's results are stored when all of its calls are done.
          else if (++tries < RESULT_TRIES) setTimeout(look, 400);
        })
        .catch(() => {});
    look();
    return () => {
      live = false;
    };
  }, [open, finished, result]);
  const status = !finished ? "running" : item.error ? "error" : "ok";
  return (
    <details
      class={`tool ${status}`}
      open={open}
      onToggle={(e) => {
        const now = (e.currentTarget as HTMLDetailsElement).open;
        if (now) results.opened.add(item.key);
        else results.opened.delete(item.key);
        setOpen(now);
      }}
    >
      <summary>
        <span class="name">{item.name}</span> <span class="args">{argLine(item.args)}</span>
        <span class="status">{status === "running" ? "…" : `${item.duration} ms${item.error ? " · failed" : ""}`}</span>
      </summary>
      {open && (
        <>
          <h4>Arguments</h4>
          <pre>{JSON.stringify(item.args, null, 2)}</pre>
          {item.summary && !result && <pre class="summary">{item.summary}</pre>}
          {result && <ToolResult name={item.name} result={result} />}
        </>
      )}
    </details>
  );
});

function ToolResult({ name, result }: { name: string; result: any }) {
  const parts: any[] = result.content ?? [];
  return (
    <div class="result">
      <h4>Result{result.is_error ? " (error)" : ""}</h4>
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

/// A unified diff, each line coloured by its sign.
export function Diff({ text }: { text: string }) {
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

export const Approval = memo(function Approval({ session, item }: { session: string; item: ItemOf<"approval"> }) {
  const [reason, setReason] = useState("");
  if (item.decided) return <div class="card approval">{item.tool}: {item.approved ? "allowed" : "denied"}</div>;
  return (
    <div class="card approval" role="group" aria-label="Approval request">
      <strong>{item.tool} asks for approval</strong>
      <pre>{item.summary}</pre>
      {item.details && <pre class="details" aria-label="What it will do">{item.details}</pre>}
      <input aria-label="Reason (optional)" placeholder="Reason (optional)" value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      <button onClick={() => api.decide(session, item.id, true, reason || undefined)}>Allow</button>
      <button onClick={() => api.decide(session, item.id, false, reason || undefined)}>Deny</button>
    </div>
  );
});

export const Question = memo(function Question({ session, item }: { session: string; item: ItemOf<"question"> }) {
  const [text, setText] = useState("");
  return (
    <div class="card question" role="group" aria-label="Question">
      <Markdown text={item.question} />
      {!item.done && (
        <>
          {item.options.map((o) => (
            <button key={o} onClick={() => api.answer(session, o, item.id)}>
              {o}
            </button>
          ))}
          <form
            onSubmit={(ev) => {
              ev.preventDefault();
              if (text.trim()) api.answer(session, text, item.id);
            }}
          >
            <input aria-label="Your answer" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
            <button type="submit">Answer</button>
          </form>
        </>
      )}
      {item.done && <em>answered</em>}
    </div>
  );
});

export const Secret = memo(function Secret({ session, item }: { session: string; item: ItemOf<"secret"> }) {
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
      <button type="button" onClick={() => api.secret(session, item.id, { decline: true })}>
        Decline
      </button>
      {error && <p class="error" role="alert">{error}</p>}
    </form>
  );
});

/// One item of the conversation.
export const ItemView = memo(function ItemView({ session, item, results, onChanges }: { session: string; item: Item; results: Results; onChanges: (n: number) => void }) {
  switch (item.kind) {
    case "user":
      return <div class="user-msg">{item.text}</div>;
    case "text":
      return <Markdown text={item.text} />;
    case "tool":
      return <ToolCard item={item} results={results} />;
    case "question":
      return <Question session={session} item={item} />;
    case "approval":
      return <Approval session={session} item={item} />;
    case "secret":
      return <Secret session={session} item={item} />;
    case "changes":
      return (
        <div class="changes-line">
          This turn changed {item.files} {item.files === 1 ? "file" : "files"} (<span class="add">+{item.additions}</span>{" "}
          <span class="del">−{item.deletions}</span>){" "}
          <button class="small" onClick={() => onChanges(item.n)}>
            Review changes
          </button>
        </div>
      );
    case "notice":
      return <div class={item.error ? "error" : "notice"}>{item.text}</div>;
    case "end":
      return item.reason !== "completed" ? <div class="notice">turn ended: {item.reason}</div> : null;
  }
});

/// A first guess at an item's height in pixels, until it is measured.
export function estimate(item: Item): number {
  switch (item.kind) {
    case "text":
      return 24 + 22 * Math.ceil(item.text.length / 90);
    case "tool":
      return 38;
    case "question":
    case "approval":
    case "secret":
      return 120;
    case "end":
      return item.reason === "completed" ? 0 : 28;
    default:
      return 36;
  }
}
