// Tool results for the cards, read from the transcript only when a card is opened, and then only
// the messages not read yet (`?offset=`): a long session is not fetched again on every call.

import { api } from "./api";

export class Results {
  private read = 0;
  private byCall = new Map<string, any[]>();
  private pending: Promise<void> | null = null;
  /// The cards the user opened: a card scrolled out of the virtualised list and back stays open.
  readonly opened = new Set<string>();

  constructor(private session: string) {}

  /// Forget everything (the stored conversation was rewound).
  reset() {
    this.read = 0;
    this.byCall.clear();
  }

  /// The results given for `call` so far: a model's call ids may repeat across turns, so the
  /// `nth` (0-based) of them belongs to the nth card with that id.
  get(call: string, nth: number): any | undefined {
    return this.byCall.get(call)?.[nth];
  }

  /// Read the messages stored since the last read.
  load(): Promise<void> {
    if (!this.pending)
      this.pending = api
        .messages(this.session, this.read)
        .then((r) => {
          this.read += r.messages.length;
          for (const m of r.messages)
            for (const b of m.content ?? [])
              if (b.type === "tool_result") {
                const list = this.byCall.get(b.tool_use_id) ?? [];
                list.push(b);
                this.byCall.set(b.tool_use_id, list);
              }
        })
        .finally(() => {
          this.pending = null;
        });
    return this.pending;
  }
}
