// The conversation as the page shows it: the session's events folded, in id order, into a list of
// items (user messages, streamed text, tool cards, questions, approvals, notices). Folding mutates
// the list in place and replaces only the items an event changes, so that the views of unchanged
// items (memoised by identity) are not rendered again.

import type { HandsEvent } from "./api";

export type Item =
  | { kind: "user"; key: string; text: string; turn: string }
  | { kind: "text"; key: string; text: string }
  | { kind: "tool"; key: string; call: string; nth: number; name: string; args: any; at: number; duration?: number; error?: boolean; summary?: string }
  | { kind: "question"; key: string; id: string; question: string; options: string[]; done: boolean }
  | { kind: "approval"; key: string; id: string; tool: string; summary: string; details?: string; decided?: boolean; approved?: boolean }
  | { kind: "secret"; key: string; id: string; name: string; description: string; state: "open" | "given" | "declined" }
  | { kind: "changes"; key: string; n: number; turn: string; files: number; additions: number; deletions: number }
  | { kind: "notice"; key: string; text: string; error?: boolean }
  | { kind: "end"; key: string; reason: string };

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
      break;
    case "text_delta": {
      const last = items[items.length - 1];
      if (last && last.kind === "text") items[items.length - 1] = { ...last, text: last.text + e.text };
      else items.push({ kind: "text", key: k, text: e.text });
      break;
    }
    case "tool_call_started": {
      const nth = c.calls.get(e.call_id) ?? 0;
      c.calls.set(e.call_id, nth + 1);
      items.push({ kind: "tool", key: k, call: e.call_id, nth, name: e.name, args: e.args, at: e.at_ms });
      break;
    }
    case "tool_call_finished":
      update(items, "tool", (x) => x.call === e.call_id && x.duration === undefined, {
        duration: e.duration_ms,
        error: e.is_error,
        summary: e.summary,
      });
      break;
    case "question":
      items.push({ kind: "question", key: k, id: e.question_id, question: e.question, options: e.options ?? [], done: false });
      break;
    case "question_answered":
      update(items, "question", (x) => x.id === e.question_id, { done: true });
      break;
    case "approval_requested":
      items.push({ kind: "approval", key: k, id: e.approval_id, tool: e.tool, summary: e.summary, details: e.details });
      break;
    case "approval_decided":
      update(items, "approval", (x) => x.id === e.approval_id, { decided: true, approved: e.approved });
      break;
    case "secret_requested":
      items.push({ kind: "secret", key: k, id: e.request_id, name: e.name, description: e.description, state: "open" });
      break;
    case "secret_answered":
    case "secret_declined":
      update(items, "secret", (x) => x.id === e.request_id, { state: e.type === "secret_answered" ? "given" : "declined" });
      break;
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
      items.push({ kind: "end", key: k, reason: e.reason });
      break;
    case "error":
      items.push({ kind: "notice", key: k, text: e.message, error: true });
      break;
  }
  return c;
}

/// One line for a tool card: the argument that says most about the call.
export function argLine(args: any): string {
  if (!args || typeof args !== "object") return String(args ?? "");
  for (const key of ["command", "path", "file_path", "url", "query", "pattern", "name", "question"]) {
    if (typeof args[key] === "string") return args[key];
  }
  const s = JSON.stringify(args);
  return s.length > 120 ? s.slice(0, 117) + "…" : s;
}
