// The conversation as the page shows it: the session's events folded, in id order, into a list of
// items (user messages, streamed text, tool cards, questions, approvals, notices). Folding mutates
// the list in place and replaces only the items an event changes, so that the views of unchanged
// items (memoised by identity) are not rendered again.

import type { HandsEvent } from "./api";

export type Item =
  | { kind: "user"; key: string; text: string; turn: string }
  | { kind: "text"; key: string; text: string }
  | { kind: "tool"; key: string; call: string; nth: number; name: string; args: any; at: number; duration?: number; error?: boolean; summary?: string; exit?: Exit }
  | { kind: "question"; key: string; id: string; question: string; options: string[]; done: boolean; call?: string; answer?: string }
  | {
      kind: "approval";
      key: string;
      id: string;
      tool: string;
      summary: string;
      details?: string;
      /// The arguments of the call that asks (from its card), when the card came first.
      args?: any;
      /// The user may allow the tool for the rest of the session (never for a plan).
      sessionAllowable: boolean;
      decided?: boolean;
      approved?: boolean;
      forSession?: boolean;
    }
  | { kind: "secret"; key: string; id: string; name: string; description: string; state: "open" | "given" | "declined" }
  | { kind: "changes"; key: string; n: number; turn: string; files: number; additions: number; deletions: number }
  | { kind: "notice"; key: string; text: string; detail?: string; error?: boolean }
  | { kind: "end"; key: string; reason: string }
  /// Not folded from an event: the row shown while the model works on its answer.
  | { kind: "thinking"; key: string; since: number };

/// How a command ended, when its card can tell: the exit code, the signal that ended it, or the
/// time limit that stopped it.
export interface Exit {
  code?: number;
  signal?: string;
  timedOut?: boolean;
  /// A failure said in words that fit none of the above.
  reason?: string;
}

export type ItemOf<K extends Item["kind"]> = Extract<Item, { kind: K }>;

export interface Conversation {
  items: Item[];
  todos: any[];
  mode?: string;
  running: boolean;
  lastId: number;
  /// Events folded, and how many arrived with an id that did not follow the previous one (shown
  /// as data attributes of the log, so that tests can compare them with the stored events).
  count: number;
  gaps: number;
  /// Bumped by events that change what the checkpoints view lists.
  checkpoints: number;
  /// Bumped when the stored conversation was rewound (tool results must be read again).
  restored: number;
  /// Cards per call id so far (a model's ids may repeat across turns).
  calls: Map<string, number>;
  /// Calls started and not finished yet.
  inFlight: number;
  /// Set while the model works on its next answer (from the turn's start, or from its last
  /// call's end, until text streams or a call starts): the page shows a "thinking" row.
  thinking?: { key: string; since: number };
}

export const empty = (): Conversation => ({
  items: [],
  todos: [],
  running: false,
  lastId: 0,
  count: 0,
  gaps: 0,
  checkpoints: 0,
  restored: 0,
  calls: new Map(),
  inFlight: 0,
});

function findLast<T>(a: T[], f: (x: T) => boolean): number {
  for (let i = a.length - 1; i >= 0; i--) if (f(a[i])) return i;
  return -1;
}

/// Replace the last item of `kind` that `match`es with `change` applied to a copy of it.
function update<K extends Item["kind"]>(items: Item[], kind: K, match: (x: ItemOf<K>) => boolean, change: Partial<ItemOf<K>>) {
  const i = findLast(items, (x) => x.kind === kind && match(x as ItemOf<K>));
  if (i >= 0) items[i] = { ...items[i], ...change } as Item;
}

/// Fold one event into the conversation.
export function apply(c: Conversation, e: HandsEvent): Conversation {
  const items = c.items;
  const k = String(e.id);
  if (e.id !== c.lastId + 1) c.gaps++;
  c.count++;
  c.lastId = e.id;
  switch (e.type) {
    case "turn_started":
      items.push({ kind: "user", key: k, text: e.message, turn: e.turn_id });
      c.running = true;
      c.inFlight = 0;
      c.thinking = { key: `thinking-${k}`, since: e.at_ms };
      break;
    case "text_delta": {
      c.thinking = undefined;
      const last = items[items.length - 1];
      if (last && last.kind === "text") items[items.length - 1] = { ...last, text: last.text + e.text };
      else items.push({ kind: "text", key: k, text: e.text });
      break;
    }
    case "tool_call_started": {
      const nth = c.calls.get(e.call_id) ?? 0;
      c.calls.set(e.call_id, nth + 1);
      c.inFlight++;
      c.thinking = undefined;
      items.push({ kind: "tool", key: k, call: e.call_id, nth, name: e.name, args: e.args, at: e.at_ms });
      break;
    }
    case "tool_call_finished":
      update(items, "tool", (x) => x.call === e.call_id && x.duration === undefined, {
        duration: e.duration_ms,
        error: e.is_error,
        summary: e.summary,
        exit: e.name === "bash" ? exitOf(e) : undefined,
      });
      if (e.name === "ask_user")
        update(items, "question", (x) => x.call === e.call_id, { done: true, answer: e.is_error ? undefined : answerOf(e.summary ?? "") });
      c.inFlight = Math.max(0, c.inFlight - 1);
      // The results go back to the model: it works on its next answer.
      if (c.running && c.inFlight === 0 && e.turn_id) c.thinking = { key: `thinking-${k}`, since: e.at_ms };
      break;
    case "question": {
      const call = items[findLast(items, (x) => x.kind === "tool" && x.name === "ask_user" && x.duration === undefined)] as ItemOf<"tool"> | undefined;
      items.push({ kind: "question", key: k, id: e.question_id, question: e.question, options: e.options ?? [], done: false, call: call?.call });
      break;
    }
    case "question_answered":
      update(items, "question", (x) => x.id === e.question_id, { done: true });
      break;
    case "approval_requested": {
      const card = items[findLast(items, (x) => x.kind === "tool" && x.name === e.tool && x.duration === undefined)] as ItemOf<"tool"> | undefined;
      items.push({
        kind: "approval",
        key: k,
        id: e.approval_id,
        tool: e.tool,
        summary: e.summary,
        details: e.details,
        args: card?.args,
        sessionAllowable: e.session_allowable !== false,
      });
      break;
    }
    case "approval_decided":
      update(items, "approval", (x) => x.id === e.approval_id, { decided: true, approved: e.approved, forSession: !!e.for_session });
      break;
    case "secret_requested":
      items.push({ kind: "secret", key: k, id: e.request_id, name: e.name, description: e.description, state: "open" });
      break;
    case "secret_answered":
    case "secret_declined":
      update(items, "secret", (x) => x.id === e.request_id, { state: e.type === "secret_answered" ? "given" : "declined" });
      break;
    case "process_notice":
      items.push({ kind: "notice", key: k, ...userNotice(e.text) });
      break;
    case "todos_changed":
      c.todos = Array.isArray(e.todos) ? e.todos : Array.isArray(e.todos?.todos) ? e.todos.todos : [];
      break;
    case "mode_changed":
      c.mode = e.mode;
      items.push({ kind: "notice", key: k, text: `mode: ${e.mode}` });
      break;
    case "checkpoint_created":
      c.checkpoints++;
      if (e.kind === "turn_end" && e.files_changed > 0)
        items.push({ kind: "changes", key: k, n: e.n, turn: e.turn, files: e.files_changed, additions: e.additions, deletions: e.deletions });
      break;
    case "conversation_restored":
      c.checkpoints++;
      c.restored++;
      items.push({ kind: "notice", key: k, text: `conversation restored to checkpoint ${e.checkpoint} (${e.messages} messages)` });
      break;
    case "turn_ended":
      c.running = false;
      c.inFlight = 0;
      c.thinking = undefined;
      items.push({ kind: "end", key: k, reason: e.reason });
      break;
    case "error":
      c.thinking = undefined;
      items.push({ kind: "notice", key: k, text: e.message, error: true });
      break;
  }
  return c;
}

/// How a bash call ended: the event's own fields when it has them (`failure`, `exit_code`,
/// `timed_out`, `signal`), else the status line that ends bash's result (`[exit code N]`,
/// `[killed by signal N (NAME)]`) or its time-out sentence, when the summary (the result's first
/// 300 characters) reaches them.
export function exitOf(e: HandsEvent): Exit | undefined {
  // `failure` ("exit 1", "timed out", "killed by signal 9 (SIGKILL)") and `exit_code` are set
  // on a failed command only.
  if (typeof e.failure === "string") {
    if (/timed out/.test(e.failure)) return { timedOut: true };
    const sig = /signal (\d+)(?: \((\w+)\))?/.exec(e.failure);
    if (sig) return { signal: sig[2] ?? sig[1] };
  }
  if (typeof e.exit_code === "number") return { code: e.exit_code };
  if (typeof e.failure === "string") {
    const code = /exit (?:code )?(-?\d+)/.exec(e.failure);
    if (code) return { code: Number(code[1]) };
  }
  if (e.timed_out === true) return { timedOut: true };
  if (e.signal !== undefined && e.signal !== null) return { signal: String(e.signal) };
  return exitInText(e.summary ?? "") ?? (typeof e.failure === "string" ? { reason: e.failure } : undefined);
}

/// The end of a command as bash's result text tells it (`undefined` when it does not).
export function exitInText(text: string): Exit | undefined {
  if (/^bash timed out after/.test(text)) return { timedOut: true };
  const code = /\[exit code (-?\d+)\]\s*$/.exec(text);
  if (code) return { code: Number(code[1]) };
  const sig = /\[killed by signal (\d+)(?: \((\w+)\))?\]\s*$/.exec(text);
  if (sig) return { signal: sig[2] ?? sig[1] };
  return undefined;
}

/// Whether a command's end is a failure: a non-zero exit, a signal or a time-out.
export function failed(exit: Exit | undefined): boolean {
  return !!exit && (exit.timedOut === true || exit.signal !== undefined || exit.reason !== undefined || (exit.code !== undefined && exit.code !== 0));
}

/// The answer in ask_user's result (`The user chose: …`, `The user answered: …`).
export function answerOf(result: string): string | undefined {
  const m = /^The user (?:chose|answered): ([\s\S]*)$/.exec(result.trim());
  return m ? m[1] : undefined;
}

/// A notice as the user reads it: the words for the model (`[notice] `, `— read_runtime_errors`,
/// which tool shows more) left out, and its last lines of output apart, to be opened.
export function userNotice(raw: string): { text: string; detail?: string } {
  let text = raw.replace(/^\[notice\]\s*/, "");
  let detail: string | undefined;
  const last = text.search(/\s*Last lines:\n/);
  if (last >= 0) {
    detail = text.slice(last).replace(/^\s*Last lines:\n/, "").replace(/\s+$/, "");
    text = text.slice(0, last);
  } else if (text.includes("\n")) {
    detail = text.slice(text.indexOf("\n") + 1).replace(/\s+$/, "");
    text = text.slice(0, text.indexOf("\n"));
  }
  text = text
    // `p2 (build: \`npm run build\`)` → `build`: the process by its name (else its command).
    .replace(/^(Background process|Terminal) (\S+) \((?:([^:`]+): )?`([^`]*)`\)/, (_, what, _id, name, command) => `${what} ${name ?? command}`)
    .replace(/\s+[—-]\s+read_runtime_errors\b.*$/, " (see the Preview tab)")
    .replace(/\s*\(notify_on\)/g, "")
    // A sentence that tells the model which call to make next.
    .replace(/\s*\b[a-z]+_[a-z_]+ \{[^}]*\}[^.]*\./g, "")
    .trim();
  return detail ? { text, detail } : { text };
}

const plural = (n: number, one: string, many = one + "s") => `${n} ${n === 1 ? one : many}`;

/// The lines of a file's content.
function lines(content: string): number {
  if (!content) return 0;
  return content.split("\n").length - (content.endsWith("\n") ? 1 : 0);
}

/// The first line of `text`, with an ellipsis when there is more.
function firstLine(text: string): string {
  const t = text.trim();
  const i = t.indexOf("\n");
  return i < 0 ? t : t.slice(0, i) + " …";
}

/// One line for a tool card: what the call does, in words (`3 tasks, 1 in progress`,
/// `index.html (12 lines)`, the command), never the raw arguments.
export function callLine(name: string, args: any): string {
  if (!args || typeof args !== "object") return String(args ?? "");
  if (name === "todo_write" && Array.isArray(args.todos)) {
    const t: any[] = args.todos;
    const going = t.filter((x) => x?.status === "in_progress").length;
    const done = t.filter((x) => x?.status === "completed").length;
    return [plural(t.length, "task"), going && `${going} in progress`, done && `${done} done`].filter(Boolean).join(", ");
  }
  if (name === "write_file" && typeof args.path === "string" && typeof args.content === "string")
    return `${args.path} (${plural(lines(args.content), "line")})`;
  if (name === "exit_plan_mode" && typeof args.plan === "string") return firstLine(args.plan.replace(/^#+\s*/, ""));
  if (typeof args.command === "string") return firstLine(args.command);
  for (const key of ["path", "file_path", "url", "query", "pattern", "name", "question", "id", "process_id"]) {
    if (typeof args[key] === "string") return args[key];
  }
  const parts = Object.entries(args)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : Array.isArray(v) ? plural(v.length, "item") : JSON.stringify(v)}`);
  const s = parts.join(", ");
  return s.length > 120 ? s.slice(0, 117) + "…" : s;
}
