import { memo, useCallback, useEffect, useMemo, useRef, useState } from "react";
import type { Op } from "../api/types";
import { fmtMs, typeColor } from "../format";
import { maskFor, type Selection } from "../selection";
import { selectedRuns } from "./selectionRuns";

interface Props {
  ops: Op[];
  latency: Float64Array;
  conversion: Float64Array;
  /** per-inference time outside the tasks' own (runtime fixed cost, measured time between kernels), drawn first */
  fixedMs?: number;
  selection: Selection;
  filtered: ReadonlySet<string> | null;
  onSelect: (ids: string[], focus: string) => void;
}

const H = 92;

/** Tasks in execution order on one time axis (predicted times of the current state; conversions in grey before each task). */
export const Timeline = memo(function Timeline({ ops, latency, conversion, fixedMs = 0, selection, filtered, onSelect }: Props) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const wrap = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(800);
  const [hover, setHover] = useState<{ x: number; k: number } | null>(null);
  // starts[k] = start time of the conversions in front of task k; task itself begins at starts[k] + conversion[k]
  const starts = useMemo(() => {
    const s = new Float64Array(ops.length + 1);
    s[0] = fixedMs;
    for (let k = 0; k < ops.length; k++) s[k + 1] = s[k] + conversion[k] + latency[k];
    return s;
  }, [ops, latency, conversion, fixedMs]);
  const total = starts[ops.length] || 1;
  const [view, setView] = useState<[number, number]>([0, total]);
  useEffect(() => setView([0, total]), [total]);
  const byId = useMemo(() => new Map(ops.map((o, k) => [o.id, k])), [ops]);

  useEffect(() => {
    const ro = new ResizeObserver(() => wrap.current && setWidth(wrap.current.clientWidth));
    if (wrap.current) ro.observe(wrap.current);
    return () => ro.disconnect();
  }, []);

  // follow selections made elsewhere
  useEffect(() => {
    if (selection.source === "timeline" || !selection.focus) return;
    const k = byId.get(selection.focus);
    if (k === undefined) return;
    const [a, b] = view;
    if (starts[k] < a || starts[k + 1] > b) {
      const span = Math.max(b - a, (starts[k + 1] - starts[k]) * 8);
      const c = (starts[k] + starts[k + 1]) / 2;
      setView([Math.max(0, c - span / 2), Math.min(total, c + span / 2)]);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [selection.focus, selection.source]);

  const toX = useCallback((t: number) => ((t - view[0]) / (view[1] - view[0])) * width, [view, width]);
  const find = useCallback(
    (x: number) => {
      const t = view[0] + (x / width) * (view[1] - view[0]);
      let lo = 0, hi = ops.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid] <= t) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    },
    [view, width, ops.length, starts],
  );

  // Selected tasks as a mask over execution order, built in O(selection) when the selection changes: drawing
  // then never looks ids up, and a brush over 40,000 tasks is outlined as a few runs, not 40,000 rectangles.
  const selMask = useMemo(() => {
    const given = maskFor(selection, ops.length); // the page's mask is over this same list (/ops order)
    if (given) return given;
    const m = new Uint8Array(ops.length);
    for (const id of selection.ids) {
      const k = byId.get(id);
      if (k !== undefined) m[k] = 1;
    }
    return m;
  }, [ops, byId, selection]);
  const dimMask = useMemo(() => {
    if (!filtered) return null;
    const m = new Uint8Array(ops.length);
    for (let k = 0; k < ops.length; k++) m[k] = filtered.has(ops[k].id) ? 0 : 1;
    return m;
  }, [ops, filtered]);

  // The bars and the axis are drawn once per view into an offscreen canvas; a selection change copies it and
  // strokes the selection on top (at 50,000 tasks the bars are most of the drawing).
  const base = useMemo(() => document.createElement("canvas"), []);
  const paintRef = useRef<() => void>(() => {});
  useEffect(() => {
    const c = base;
    const dpr = window.devicePixelRatio || 1;
    c.width = width * dpr;
    c.height = H * dpr;
    const g = c.getContext("2d")!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#14161c";
    g.fillRect(0, 0, width, H);
    const k0 = find(0);
    const k1 = find(width);
    const y = 18, h = 46;
    let lastPx = -1;
    if (fixedMs > 0 && view[0] < fixedMs) {
      const x1 = toX(fixedMs);
      g.fillStyle = "#2a2e38";
      g.fillRect(toX(0), y, x1 - toX(0), h);
      g.strokeStyle = "#555b6b";
      g.setLineDash([4, 3]);
      g.strokeRect(toX(0) + 0.5, y + 0.5, x1 - toX(0) - 1, h - 1);
      g.setLineDash([]);
      const text = `per inference, outside the tasks: ${fmtMs(fixedMs)} ms`;
      g.font = "11px system-ui, sans-serif";
      if (g.measureText(text).width + 12 < x1 - Math.max(0, toX(0))) {
        g.fillStyle = "#aab";
        g.fillText(text, Math.max(0, toX(0)) + 6, y + h / 2 + 4);
      }
    }
    for (let k = k0; k <= k1; k++) {
      const x0 = toX(starts[k]);
      const xc = toX(starts[k] + conversion[k]);
      const x1 = toX(starts[k + 1]);
      if (Math.floor(x1) === lastPx && x1 - x0 < 1) continue; // many tasks per pixel: the selection's outline shows them
      lastPx = Math.floor(x1);
      if (conversion[k] > 0) {
        g.fillStyle = "#666";
        g.fillRect(x0, y + 8, Math.max(0.5, xc - x0), h - 16);
      }
      g.globalAlpha = dimMask?.[k] ? 0.2 : 1;
      g.fillStyle = typeColor(ops[k].type);
      g.fillRect(xc, y, Math.max(1, x1 - xc - (x1 - xc > 3 ? 1 : 0)), h);
      g.globalAlpha = 1;
    }
    // axis
    g.fillStyle = "#aab";
    g.font = "11px system-ui, sans-serif";
    const span = view[1] - view[0];
    const step = Math.pow(10, Math.floor(Math.log10(span / 6)));
    const st = span / step > 30 ? step * 5 : span / step > 12 ? step * 2 : step;
    for (let t = Math.ceil(view[0] / st) * st; t <= view[1]; t += st) {
      const x = toX(t);
      g.fillRect(x, H - 22, 1, 4);
      g.fillText(`${fmtMs(t)} ms`, x + 2, H - 8);
    }
    paintRef.current();
  }, [base, width, view, ops, starts, conversion, dimMask, toX, find, fixedMs]);

  paintRef.current = () => {
    const c = canvas.current;
    if (!c || !base.width) return;
    const dpr = window.devicePixelRatio || 1;
    if (c.width !== base.width || c.height !== base.height) (c.width = base.width), (c.height = base.height);
    const g = c.getContext("2d")!;
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.drawImage(base, 0, 0);
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const k0 = find(0);
    const k1 = find(width);
    const y = 18, h = 46;
    // selection on top, each task at least 3px wide; selected neighbours closer than a pixel merge into one run
    g.strokeStyle = "#ffcc00";
    g.lineWidth = 2;
    g.beginPath();
    for (const [a, b] of selectedRuns(selMask, k0, k1, (k) => [toX(starts[k] + conversion[k]), toX(starts[k + 1])])) g.rect(a, y - 3, b - a, h + 6);
    g.stroke();
  };
  useEffect(() => paintRef.current(), [selMask]);

  const inFixed = (x: number) => fixedMs > 0 && view[0] + (x / width) * (view[1] - view[0]) < fixedMs;
  const drag = useRef<{ x: number; v: [number, number]; moved: boolean } | null>(null);
  return (
    <section className="timeline" aria-label="Timeline" ref={wrap} data-testid="timeline">
      <canvas
        ref={canvas}
        style={{ width, height: H }}
        role="img"
        aria-label={`Timeline of ${ops.length} tasks, ${fmtMs(total)} ms in total. Click a bar to select its task.`}
        onWheel={(e) => {
          const r = e.currentTarget.getBoundingClientRect();
          const t = view[0] + ((e.clientX - r.left) / width) * (view[1] - view[0]);
          const f = Math.exp(e.deltaY * 0.002);
          const a = Math.max(0, t - (t - view[0]) * f), b = Math.min(total, t + (view[1] - t) * f);
          if (b - a > 1e-9) setView([a, b]);
        }}
        onPointerDown={(e) => (drag.current = { x: e.clientX, v: view, moved: false })}
        onPointerMove={(e) => {
          const r = e.currentTarget.getBoundingClientRect();
          const x = e.clientX - r.left;
          setHover({ x, k: inFixed(x) ? -1 : find(x) });
          const d = drag.current;
          if (!d || !(e.buttons & 1)) return;
          const dt = ((d.x - e.clientX) / width) * (d.v[1] - d.v[0]);
          if (Math.abs(d.x - e.clientX) > 3) d.moved = true;
          const span = d.v[1] - d.v[0];
          const a = Math.min(Math.max(0, d.v[0] + dt), total - span);
          setView([a, a + span]);
        }}
        onPointerLeave={() => setHover(null)}
        onPointerUp={(e) => {
          const d = drag.current;
          drag.current = null;
          if (d?.moved) return;
          const r = e.currentTarget.getBoundingClientRect();
          if (inFixed(e.clientX - r.left)) return;
          const k = find(e.clientX - r.left);
          if (ops[k]) onSelect([ops[k].id], ops[k].id);
        }}
        onDoubleClick={() => setView([0, total])}
      />
      {hover && hover.k === -1 && (
        <div className="tl-tip" data-testid="timeline-fixed-tip" style={{ left: Math.min(hover.x + 10, width - 260) }}>
          {fmtMs(fixedMs)} ms per inference outside the tasks' own times: the runtime's fixed cost and, where measured,
          time between kernels and other load (in the latency, in no task)
        </div>
      )}
      {hover && ops[hover.k] && (
        <div className="tl-tip" style={{ left: Math.min(hover.x + 10, width - 260) }}>
          #{ops[hover.k].index} {ops[hover.k].name} · {ops[hover.k].type} · {fmtMs(latency[hover.k])} ms
          {conversion[hover.k] > 0 ? ` (+${fmtMs(conversion[hover.k])} ms conversion)` : ""}
        </div>
      )}
    </section>
  );
});
