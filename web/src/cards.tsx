// The views of the conversation's items: tool cards (opened, they read their result; a command
// that failed is red), approvals (what the call will do, whole; a plan as Markdown), questions
// with their answers, secret requests, a turn's changes and the "thinking" row. Each is memoised
// on its item, which the fold replaces only when an event changes it.

import { memo } from "preact/compat";
import { useEffect, useState } from "preact/hooks";
import { api, reportError } from "./api";
import { callLine, Exit, exitInText, failed, Item, ItemOf } from "./conversation";
import { Markdown } from "./markdown";
import type { Results } from "./results";

/// Reads of the transcript a card makes before it gives up on its result.
const RESULT_TRIES = 4;

/// The text of a tool result (its text parts joined).
function resultText(result: any): string {
  return (result?.content ?? []).map((p: any) => p.text ?? "").join("\n");
}

/// How a command ended, in the card's header.
function exitWords(exit: Exit): string {
  if (exit.timedOut) return "timed out";
  if (exit.reason !== undefined) return exit.reason;
  if (exit.signal !== undefined) return /^\d+$/.test(exit.signal) ? `signal ${exit.signal}` : exit.signal;
  return `exit ${exit.code}`;
}

export const ToolCard = memo(function ToolCard({ item, results }: { item: ItemOf<"tool">; results: Results }) {
  const [open, setOpen] = useState(() => results.opened.has(item.key));
  const [result, setResult] = useState<any>(() => results.get(item.call, item.nth));
  const finished = item.duration !== undefined;
  // A bash call whose summary did not reach its status line: its result tells how it ended.
  const needsExit = finished && item.name === "bash" && !item.exit;
  useEffect(() => {
    if (!(open || needsExit) || !finished || result) return;
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
  }, [open, finished, result, needsExit]);
  const exit = item.exit ?? (item.name === "bash" && result ? exitInText(resultText(result).trimEnd()) : undefined);
  const bad = !!item.error || failed(exit);
  const status = !finished ? "running" : bad ? "error" : "ok";
  const words = [exit && (failed(exit) || item.name === "bash") ? exitWords(exit) : "", item.error && !failed(exit) ? "failed" : ""].filter(Boolean);
  return (
    <details
      class={`tool ${status}`}
      data-exit={exit?.code}
      open={open}
      onToggle={(e) => {
        const now = (e.currentTarget as HTMLDetailsElement).open;
        if (now) results.opened.add(item.key);
        else results.opened.delete(item.key);
        setOpen(now);
      }}
    >
      <summary>
        <span class="name">{item.name}</span> <span class="args">{callLine(item.name, item.args)}</span>
        <span class="status">{status === "running" ? "…" : `${words.length ? words.join(" · ") + " · " : ""}${item.duration} ms`}</span>
      </summary>
      {open && (
        <>
          <CallArgs name={item.name} args={item.args} />
          {item.summary && !result && <pre class="summary">{item.summary}</pre>}
          {result && <ToolResult name={item.name} result={result} />}
        </>
      )}
    </details>
  );
});

/// What the call was given: the command, the file's content, the todo list, else the arguments.
function CallArgs({ name, args }: { name: string; args: any }) {
  if (typeof args?.command === "string")
    return (
      <>
        <h4>Command</h4>
        <pre class="bash">{args.command}</pre>
      </>
    );
  if (name === "write_file" && typeof args?.content === "string")
    return (
      <>
        <h4>Content of {args.path}</h4>
        <pre>{args.content}</pre>
      </>
    );
  if (name === "todo_write" && Array.isArray(args?.todos))
    return (
      <ul class="todo-args">
        {args.todos.map((t: any, i: number) => (
          <li key={i}>
            {t.status === "completed" ? "☑" : t.status === "in_progress" ? "▶" : "☐"} {t.content}
          </li>
        ))}
      </ul>
    );
  if (name === "exit_plan_mode" && typeof args?.plan === "string") return <Markdown text={args.plan} />;
  return (
    <>
      <h4>Arguments</h4>
      <pre>{JSON.stringify(args, null, 2)}</pre>
    </>
  );
}

function ToolResult({ name, result }: { name: string; result: any }) {
  // Notices ride on results as `[notice] …` text for the model; the page shows them as rows.
  const parts: any[] = (result.content ?? []).filter((p: any) => !(p.type === "text" && /^\[notice\] /.test(p.text ?? "")));
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
export function Diff({ text, label }: { text: string; label?: string }) {
  return (
    <pre class="diff" aria-label={label} tabIndex={label ? 0 : undefined}>
      {text.split("\n").map((l, i) => (
        <span key={i} class={/^(\+\+\+|---) /.test(l) ? "file" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : l.startsWith("@@") ? "hunk" : ""}>
          {l + "\n"}
        </span>
      ))}
    </pre>
  );
}

/// Whether `text` holds a unified diff.
const isDiff = (text: string) => /^(--- |\+\+\+ |@@ )/m.test(text);

/// The plan an exit_plan_mode approval is about: the call's `plan` argument (from its card, else
/// from the summary's or details' JSON).
function planOf(item: ItemOf<"approval">): string | null {
  if (item.tool !== "exit_plan_mode") return null;
  if (typeof item.args?.plan === "string") return item.args.plan;
  for (const text of [item.details, item.summary.replace(/^exit_plan_mode: /, "")]) {
    try {
      const plan = JSON.parse(text ?? "")?.plan;
      if (typeof plan === "string") return plan;
    } catch {
      /* not JSON */
    }
  }
  return item.details ?? item.summary.replace(/^exit_plan_mode: /, "");
}

export const Approval = memo(function Approval({ session, item }: { session: string; item: ItemOf<"approval"> }) {
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const plan = planOf(item);
  const decide = (approve: boolean, scope: "once" | "session" = "once") => {
    setBusy(true);
    api
      .decide(session, item.id, approve, reason.trim() || undefined, scope)
      .catch(reportError)
      .finally(() => setBusy(false));
  };
  if (item.decided)
    return (
      <div class="card approval decided">
        <span>
          {item.tool}: {item.approved ? (item.forSession ? `allowed for the rest of this session` : "allowed") : "denied"}
        </span>
        {plan !== null && (
          <div class="plan">
            <Markdown text={plan} />
          </div>
        )}
      </div>
    );
  // The summary names the tool and its main argument, cut at 300 characters: a command is
  // shown whole from the call's card; the header names the tool already.
  const what =
    typeof item.args?.command === "string"
      ? item.args.command
      : item.summary.startsWith(`${item.tool}: `)
        ? item.summary.slice(item.tool.length + 2)
        : item.summary;
  return (
    <div class="card approval" role="group" aria-label="Approval request">
      <strong>{plan !== null ? "The plan, for your approval" : `${item.tool} asks for approval`}</strong>
      {plan !== null ? (
        <div class="plan" aria-label="The plan">
          <Markdown text={plan} />
        </div>
      ) : (
        <>
          <pre class="what" aria-label="The call">{what}</pre>
          {item.details &&
            (isDiff(item.details) ? (
              <Diff text={item.details} label="What it will do" />
            ) : (
              <pre class="details" aria-label="What it will do" tabIndex={0}>
                {item.details}
              </pre>
            ))}
        </>
      )}
      <input aria-label="Reason (optional)" placeholder="Reason (optional, sent with Deny)" value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      <div class="choices">
        <button disabled={busy} onClick={() => decide(true)}>
          {plan !== null ? "Approve the plan" : "Allow once"}
        </button>
        {item.sessionAllowable && plan === null && (
          <button disabled={busy} onClick={() => decide(true, "session")}>
            Allow {item.tool} for this session
          </button>
        )}
        <button disabled={busy} class="danger" onClick={() => decide(false)}>
          Deny
        </button>
      </div>
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
            <button key={o} onClick={() => api.answer(session, o, item.id).catch(reportError)}>
              {o}
            </button>
          ))}
          <form
            onSubmit={(ev) => {
              ev.preventDefault();
              if (text.trim()) api.answer(session, text, item.id).catch(reportError);
            }}
          >
            <input aria-label="Your answer" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
            <button type="submit">Answer</button>
          </form>
        </>
      )}
      {item.done &&
        (item.answer !== undefined ? (
          <p class="answer">
            <em>Answered:</em> {item.answer}
          </p>
        ) : (
          <em>answered</em>
        ))}
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
      <button type="button" onClick={() => api.secret(session, item.id, { decline: true }).catch(reportError)}>
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
      return (
        <div class={item.error ? "error" : "notice"}>
          {item.text}
          {item.detail && (
            <details class="notice-detail">
              <summary>Last lines</summary>
              <pre>{item.detail}</pre>
            </details>
          )}
        </div>
      );
    case "end":
      return item.reason !== "completed" ? <div class="notice">turn ended: {item.reason}</div> : null;
    case "thinking":
      return <Thinking since={item.since} />;
  }
});

/// The row shown while the model works: "Thinking…" with the seconds since it started.
function Thinking({ since }: { since: number }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const s = Math.max(0, Math.floor((now - since) / 1000));
  return (
    <div class="thinking" role="status" data-seconds={s}>
      <span class="dots" aria-hidden="true" /> Thinking… {s} s
    </div>
  );
}

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
    case "thinking":
      return 28;
    default:
      return 36;
  }
}
