// One session's page: the header (title, rename, stream state, mode), the conversation (a
// virtualised list of the folded events), the side panel (todos and processes, the preview, the
// per-turn changes) and the composer. Events are folded as they arrive and rendered at most once
// per animation frame, so a fast stream of text costs one render per frame, not one per delta.

import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { api, follow, SessionInfo, StreamState } from "./api";
import { estimate, ItemView } from "./cards";
import { Changes } from "./changes";
import { apply, Conversation, empty, Item } from "./conversation";
import { PreviewPane, usePreview } from "./preview";
import { Results } from "./results";
import { Processes, Todos } from "./side";
import { VirtualList } from "./virtual";

type Tab = "session" | "preview" | "changes";

const keyOf = (it: Item) => it.key;
const itemClass = (it: Item) => `item ${it.kind}`;
const shown = (it: Item) => !(it.kind === "end" && it.reason === "completed");

/// Where the side panel's width is kept, in pixels.
const WIDTH_KEY = "hands.sideWidth";
const MIN_SIDE = 240;
/// What the conversation keeps at least when the side panel widens.
const MIN_LOG = 320;

function storedWidth(): number | null {
  const n = Number(localStorage.getItem(WIDTH_KEY));
  return Number.isFinite(n) && n >= MIN_SIDE ? n : null;
}

/// The side panel's width: null until the user drags (the stylesheet's width then), else pixels.
function useSideWidth(): [number | null, (px: number, keep: boolean, room: number) => void] {
  const [width, setWidth] = useState<number | null>(storedWidth);
  /// `room`: the width of the conversation and the panel together.
  const set = useCallback((px: number, keep: boolean, room: number) => {
    const max = Math.max(MIN_SIDE, room - MIN_LOG);
    const w = Math.round(Math.min(max, Math.max(MIN_SIDE, px)));
    setWidth(w);
    if (keep) localStorage.setItem(WIDTH_KEY, String(w));
  }, []);
  return [width, set];
}

/// The handle between the conversation and the side panel: dragged (or moved with the arrow
/// keys), it sets the panel's width.
function Splitter({ width, aside, onWidth }: { width: number | null; aside: () => HTMLElement | null; onWidth: (px: number, keep: boolean, room: number) => void }) {
  const current = () => aside()?.getBoundingClientRect().width ?? width ?? 352;
  const room = () => aside()?.parentElement?.getBoundingClientRect().width ?? window.innerWidth;
  return (
    <div
      class="splitter"
      role="separator"
      aria-orientation="vertical"
      aria-label="Resize the side panel"
      aria-valuenow={Math.round(current())}
      aria-valuemin={MIN_SIDE}
      tabIndex={0}
      onPointerDown={(e) => {
        e.preventDefault();
        const handle = e.currentTarget as HTMLElement;
        const startX = e.clientX;
        const start = current();
        handle.setPointerCapture(e.pointerId);
        const move = (ev: PointerEvent) => onWidth(start + (startX - ev.clientX), false, room());
        const up = (ev: PointerEvent) => {
          onWidth(start + (startX - ev.clientX), true, room());
          handle.removeEventListener("pointermove", move);
          handle.removeEventListener("pointerup", up);
        };
        handle.addEventListener("pointermove", move);
        handle.addEventListener("pointerup", up);
      }}
      onKeyDown={(e) => {
        if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
          e.preventDefault();
          onWidth(current() + (e.key === "ArrowLeft" ? 32 : -32), true, room());
        }
      }}
    />
  );
}

export function SessionView({ id, onError }: { id: string; onError: (e: unknown) => void }) {
  const conv = useRef<Conversation>(empty());
  const [, tick] = useState(0);
  const [state, setState] = useState<StreamState>("connecting");
  const [info, setInfo] = useState<SessionInfo | null>(null);
  const [draft, setDraft] = useState("");
  const [renaming, setRenaming] = useState(false);
  const [title, setTitle] = useState("");
  const [tab, setTab] = useState<Tab>("session");
  const [selected, setSelected] = useState<number | null>(null);
  const results = useMemo(() => new Results(id), [id]);
  const preview = usePreview(id);
  const [sideWidth, setSideWidth] = useSideWidth();
  const asideRef = useRef<HTMLElement>(null);

  useEffect(() => {
    conv.current = empty();
    tick((n) => n + 1);
    const refresh = () =>
      api
        .get(id)
        .then(setInfo)
        .catch((e) => onError(e));
    refresh();
    let frame = 0;
    const stop = follow(
      id,
      (e) => {
        apply(conv.current, e);
        if (e.type === "conversation_restored") results.reset();
        if (e.type === "turn_ended" || e.type === "mode_changed") refresh();
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

  const c = conv.current;
  const send = async () => {
    const text = draft.trim();
    if (!text) return;
    try {
      await api.send(id, text);
      setDraft("");
    } catch (e: any) {
      onError(e);
    }
  };
  const abort = () => api.abort(id).catch((e) => onError(e));
  // Unknown until the session is read: never a wrong mode meanwhile.
  const mode = c.mode ?? info?.mode;
  const hasPreview = !!preview && (preview.available || preview.stage !== "stopped");
  const openChanges = useCallback((n: number) => {
    setSelected(n);
    setTab("changes");
  }, []);
  const messages = useMemo(() => {
    const m = new Map<string, string>();
    if (tab === "changes") for (const it of c.items) if (it.kind === "user") m.set(it.turn, it.text);
    return m;
  }, [tab, c.checkpoints, c.count]);
  const tabs: [Tab, string][] = [["session", "Activity"]];
  if (hasPreview) tabs.push(["preview", "Preview"]);
  tabs.push(["changes", "Changes"]);
  const current = tab === "preview" && !hasPreview ? "session" : tab;

  return (
    <div
      class="session"
      onKeyDown={(e) => {
        if (e.key === "Escape" && c.running) {
          e.preventDefault();
          abort();
        }
      }}
    >
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
                onError(e);
              }
            }}
          >
            <label for="title" class="visually-hidden">
              Session title
            </label>
            <input
              id="title"
              value={title}
              maxLength={200}
              required
              autofocus
              onInput={(e) => setTitle((e.target as HTMLInputElement).value)}
              onKeyDown={(e) => {
                if (e.key === "Escape") {
                  e.stopPropagation();
                  setRenaming(false);
                }
              }}
            />
            <button type="submit">Save</button>
            <button type="button" onClick={() => setRenaming(false)}>
              Cancel
            </button>
          </form>
        ) : (
          <>
            <h1>{info?.title || info?.root || id}</h1>
            <button
              class="small"
              onClick={() => {
                setTitle(info?.title || "");
                setRenaming(true);
              }}
            >
              Rename
            </button>
          </>
        )}
        <span class={`stream ${state}`} role="status" data-state={state}>
          {state === "live" ? "live" : state === "reconnecting" ? "reconnecting…" : state}
        </span>
        <label class="mode">
          Mode{" "}
          <select
            value={mode ?? ""}
            disabled={c.running || !mode}
            onChange={async (e) => {
              const next = (e.target as HTMLSelectElement).value;
              try {
                setInfo(await api.update(id, { mode: next }));
              } catch (err: any) {
                onError(err);
              }
            }}
          >
            <option value="build">build</option>
            <option value="plan">plan</option>
          </select>
        </label>
      </header>
      <div
        class={`body ${current === "preview" ? "wide" : ""}`}
        // Never so wide that the conversation has no room (a smaller window than when it was set).
        style={sideWidth ? { gridTemplateColumns: `minmax(0, 1fr) auto min(${sideWidth}px, calc(100% - ${MIN_LOG}px))` } : undefined}
      >
        <VirtualList
          class="log"
          role="log"
          aria-live="polite"
          aria-label="Conversation"
          tabIndex={0}
          data-events={c.count}
          data-last-event={c.lastId}
          data-gaps={c.gaps}
          data-running={c.running ? "yes" : "no"}
          items={c.thinking && c.running ? [...c.items.filter(shown), { kind: "thinking", ...c.thinking }] : c.items.filter(shown)}
          keyOf={keyOf}
          estimate={estimate}
          itemClass={itemClass}
          render={(it) => <ItemView session={id} item={it} results={results} onChanges={openChanges} />}
        />
        <Splitter width={sideWidth} aside={() => asideRef.current} onWidth={setSideWidth} />
        <aside ref={asideRef}>
          <div class="tabs" role="tablist" aria-label="Side panel">
            {tabs.map(([t, label]) => (
              <button key={t} role="tab" id={`tab-${t}`} aria-selected={current === t} aria-controls={`panel-${t}`} onClick={() => setTab(t)}>
                {label}
                {t === "preview" && preview && preview.errors.errors > 0 && <span class="badge">{preview.errors.errors}</span>}
              </button>
            ))}
          </div>
          <div role="tabpanel" id={`panel-${current}`} aria-labelledby={`tab-${current}`}>
            {current === "session" && (
              <>
                <Todos todos={c.todos} />
                <Processes session={id} />
              </>
            )}
            {current === "preview" && preview && <PreviewPane session={id} state={preview} />}
            {current === "changes" && <Changes session={id} epoch={c.checkpoints} selected={selected} onSelect={setSelected} messages={messages} />}
          </div>
        </aside>
      </div>
      <form
        class="composer"
        onSubmit={(ev) => {
          ev.preventDefault();
          send();
        }}
      >
        <label for="composer" class="visually-hidden">
          Message
        </label>
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
          <button type="button" class="stop" onClick={abort}>
            Stop
          </button>
        ) : (
          <button type="submit">Send</button>
        )}
      </form>
    </div>
  );
}
