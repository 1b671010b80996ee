// A virtualised list: only the items in (or near) the scrolled view are in the DOM; the rest are
// two spacers whose heights come from each item's measured height (a ResizeObserver keeps them
// current as cards open and text streams in) or, until measured, an estimate. The list stays
// pinned to the bottom while the user has not scrolled up, keeps the item holding the focus
// rendered, and keeps the view still when an item above it changes height.

import type { ComponentChildren, JSX } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";

/// Pixels rendered above and below the view.
const OVERSCAN = 600;
/// Within this many pixels of the bottom the list follows new items.
const PIN_SLACK = 40;

interface Props<T> extends Omit<JSX.HTMLAttributes<HTMLDivElement>, "children" | "onScroll"> {
  items: T[];
  keyOf: (item: T) => string;
  estimate: (item: T) => number;
  render: (item: T) => ComponentChildren;
  itemClass: (item: T) => string;
}

/// The first index whose offset is above `y` (offsets ascending, offsets[0] = 0).
function indexAt(offsets: Float64Array, n: number, y: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (offsets[mid + 1] <= y) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/// One rendered item, observed for its height while it is in the DOM.
function Row({ k, cls, observer, children }: { k: string; cls: string; observer: ResizeObserver | null; children: ComponentChildren }) {
  const el = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    const node = el.current;
    if (!node || !observer) return;
    observer.observe(node);
    return () => observer.unobserve(node);
  }, [observer]);
  return (
    <div ref={el} data-key={k} class={cls}>
      {children}
    </div>
  );
}

export function VirtualList<T>({ items, keyOf, estimate, render, itemClass, ...attrs }: Props<T>) {
  const box = useRef<HTMLDivElement>(null);
  const heights = useRef(new Map<string, number>());
  const pinned = useRef(true);
  const focused = useRef<string | null>(null);
  const layout = useRef<{ keys: Map<string, number>; offsets: Float64Array }>({ keys: new Map(), offsets: new Float64Array(1) });
  const [view, setView] = useState({ top: 0, height: 800 });
  const [, remeasured] = useState(0);
  const frame = useRef(0);
  const observer = useRef<ResizeObserver | null>(null);
  if (!observer.current && typeof ResizeObserver !== "undefined")
    observer.current = new ResizeObserver((entries) => {
      const el = box.current;
      let changed = false;
      let shift = 0;
      for (const entry of entries) {
        const target = entry.target as HTMLElement;
        const key = target.dataset.key;
        if (!key || !target.isConnected) continue;
        const h = target.offsetHeight;
        const old = heights.current.get(key);
        if (old === h) continue;
        heights.current.set(key, h);
        changed = true;
        // An item above the view grew or shrank: move the view with it.
        const i = layout.current.keys.get(key);
        if (el && !pinned.current && i !== undefined && layout.current.offsets[i] < el.scrollTop) shift += h - (old ?? h);
      }
      if (el && shift) el.scrollTop += shift;
      if (changed) remeasured((n) => n + 1);
    });

  const schedule = (fn: () => void) => {
    if (frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      fn();
    });
  };
  const readView = () => {
    const el = box.current;
    if (!el) return;
    pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < PIN_SLACK;
    setView((v) => (v.top === el.scrollTop && v.height === el.clientHeight ? v : { top: el.scrollTop, height: el.clientHeight }));
  };

  useEffect(() => {
    const whole = new ResizeObserver(() => readView());
    if (box.current) whole.observe(box.current);
    return () => {
      observer.current?.disconnect();
      whole.disconnect();
      if (frame.current) cancelAnimationFrame(frame.current);
    };
  }, []);

  useLayoutEffect(() => {
    const el = box.current;
    if (el && pinned.current && el.scrollHeight - el.scrollTop - el.clientHeight > 1) el.scrollTop = el.scrollHeight;
  });

  const n = items.length;
  const offsets = new Float64Array(n + 1);
  const keys = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const key = keyOf(items[i]);
    keys.set(key, i);
    offsets[i + 1] = offsets[i] + (heights.current.get(key) ?? estimate(items[i]));
  }
  layout.current = { keys, offsets };
  // While pinned the view is the bottom, whatever the last scroll event said.
  const top = pinned.current ? Math.max(0, offsets[n] - view.height) : view.top;
  const from = indexAt(offsets, n, top - OVERSCAN);
  const to = Math.min(n, indexAt(offsets, n, top + view.height + OVERSCAN) + 1);
  const shown: number[] = [];
  const keep = focused.current === null ? undefined : keys.get(focused.current);
  if (keep !== undefined && keep < from) shown.push(keep);
  for (let i = from; i < to; i++) shown.push(i);
  if (keep !== undefined && keep >= to) shown.push(keep);

  const children: ComponentChildren[] = [];
  let at = 0;
  for (const i of shown) {
    if (offsets[i] > offsets[at]) children.push(<div key={`gap${at}`} aria-hidden="true" style={{ height: `${offsets[i] - offsets[at]}px` }} />);
    const item = items[i];
    const key = keyOf(item);
    children.push(
      <Row key={key} k={key} cls={itemClass(item)} observer={observer.current}>
        {render(item)}
      </Row>,
    );
    at = i + 1;
  }
  if (offsets[n] > offsets[at]) children.push(<div key="gap-end" aria-hidden="true" style={{ height: `${offsets[n] - offsets[at]}px` }} />);

  return (
    <div
      {...attrs}
      ref={box}
      data-rendered={shown.length}
      data-items={n}
      onScroll={() => schedule(readView)}
      onFocusIn={(e) => {
        const item = (e.target as HTMLElement).closest?.("[data-key]") as HTMLElement | null;
        focused.current = item?.dataset.key ?? null;
      }}
    >
      {children}
    </div>
  );
}
