// Windowing for long tables: only the rows inside the scrolled viewport (plus a margin) are rendered, and two
// spacer rows stand for the rest, so a list of 1,000 sandboxes costs the DOM of a few dozen. Rows have one height,
// measured from the first rendered row (the CSS keeps rows on one line).
import { useLayoutEffect, useState } from "preact/hooks";

type ElementRef = { readonly current: HTMLElement | null };

const OVERSCAN = 8;
const DEFAULT_ROW_PX = 41;

export interface RowWindow {
  start: number;
  end: number;
  /** Heights of the spacer rows above and below the rendered ones. */
  before: number;
  after: number;
  onScroll: () => void;
}

export function useVirtualRows(count: number, scroller: ElementRef, body: ElementRef): RowWindow {
  const [scrollTop, setScrollTop] = useState(0);
  const [viewport, setViewport] = useState(800);
  const [rowPx, setRowPx] = useState(DEFAULT_ROW_PX);
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return undefined;
    const observer = new ResizeObserver(() => setViewport(el.clientHeight));
    observer.observe(el);
    setViewport(el.clientHeight);
    return () => observer.disconnect();
  }, []);
  useLayoutEffect(() => {
    const row = body.current?.querySelector<HTMLElement>("tr[data-sandbox-id]");
    const h = row?.getBoundingClientRect().height;
    if (h && Math.abs(h - rowPx) > 0.5) setRowPx(h);
  });
  const start = Math.max(0, Math.floor(scrollTop / rowPx) - OVERSCAN);
  const end = Math.min(count, Math.ceil((scrollTop + viewport) / rowPx) + OVERSCAN);
  return {
    start,
    end,
    before: start * rowPx,
    after: Math.max(0, (count - end) * rowPx),
    onScroll: () => setScrollTop(scroller.current?.scrollTop ?? 0),
  };
}
