// Histogram of any per-task metric, or a scatter of two, drawn with ECharts on a canvas. Brushing a range
// selects those tasks in the table, graph and timeline (the shared selection); a selection made there is
// highlighted here. Loaded lazily (ECharts is ~400 kB): the page's first drawing does not wait for it.
import { BarChart, ScatterChart } from "echarts/charts";
import { GridComponent, TooltipComponent } from "echarts/components";
import * as echarts from "echarts/core";
import { CanvasRenderer } from "echarts/renderers";
import { memo, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { fmtBytes, fmtCount, fmtMs, typeColor } from "../../format";
import { maskFor, type Selection, type SelectSource } from "../../selection";
import { unitColor, unitLabel } from "../../units";
import type { Row } from "../OpTable";
import { CHART_METRICS, type ChartMetric, categories, column, histogram, idsInBins, idsInRect, selectedPerBin, selectedTest, wantsLog } from "../../views/metrics";

echarts.use([BarChart, ScatterChart, GridComponent, TooltipComponent, CanvasRenderer]);

interface Props {
  rows: Row[];
  /** the target's unit names, for the unit colours of the graph's "Compute unit" mode */
  unitNames: string[];
  selection: Selection;
  onSelect: (ids: string[], focus: string | null, source: SelectSource) => void;
}

const BINS = 40;
const SEL = "#ffcc00";
const AXIS = { axisLine: { lineStyle: { color: "#5a6072" } }, axisLabel: { color: "#9aa1b5" }, splitLine: { lineStyle: { color: "#2c303c" } } };

function fmtValue(key: ChartMetric, v: number): string {
  const unit = CHART_METRICS.find((m) => m.key === key)!.unit;
  if (unit === "ms") return fmtMs(v);
  if (unit === "B") return fmtBytes(v);
  if (unit === "%") return `${v.toPrecision(3)}%`;
  return key === "intensity" ? v.toPrecision(3) : fmtCount(v);
}
const plotted = (key: ChartMetric, log: boolean, v: number) => fmtValue(key, log ? 10 ** v : v);

export default memo(function Distributions({ rows, unitNames, selection, onSelect }: Props) {
  const [kind, setKind] = useState<"histogram" | "scatter">("histogram");
  const [xKey, setXKey] = useState<ChartMetric>("latency");
  const [yKey, setYKey] = useState<ChartMetric>("latency");
  const [colorBy, setColorBy] = useState<"unit" | "type">("type");
  const [logPref, setLogPref] = useState<Record<string, boolean>>({});
  // O(tasks) each: not re-run on every selection change
  const xAuto = useMemo(() => wantsLog(rows, xKey), [rows, xKey]);
  const yAuto = useMemo(() => wantsLog(rows, yKey), [rows, yKey]);
  const xLog = logPref[xKey] ?? xAuto;
  const yLog = logPref[yKey] ?? yAuto;
  const box = useRef<HTMLDivElement>(null);
  const chart = useRef<echarts.ECharts | null>(null);
  const [brushed, setBrushed] = useState(0);
  // selected tasks the chart shows (a task with no value on a log axis is not plotted), for the status line; kept
  // with the selection it was drawn for, so a new selection never shows the previous one's count
  const [shown, setShown] = useState<{ of: Selection | null; n: number }>({ of: null, n: 0 });
  const shownSel = shown.of === selection ? shown.n : null;

  const xs = useMemo(() => column(rows, xKey, xLog), [rows, xKey, xLog]);
  const ys = useMemo(() => (kind === "scatter" ? column(rows, yKey, yLog) : null), [rows, yKey, yLog, kind]);
  const hist = useMemo(() => (kind === "histogram" ? histogram(xs, BINS) : null), [xs, kind]);
  const cats = useMemo(() => (kind === "scatter" ? categories(rows, colorBy) : null), [rows, colorBy, kind]);

  // the table's Unit column holds labels ("CPU"); colours are keyed by unit name, as the graph's unit mode
  const catColor = useMemo(() => {
    const byLabel = new Map(unitNames.map((n) => [unitLabel(n), n]));
    return (name: string) => (name === "other" ? "#7b8199" : colorBy === "unit" ? unitColor(byLabel.get(name) ?? name.toLowerCase(), unitNames) : typeColor(name));
  }, [unitNames, colorBy]);

  // what a click maps back to; read by the chart's event handler (registered once)
  const live = useRef({ rows, xs, ys, hist, onSelect });
  live.current = { rows, xs, ys, hist, onSelect };

  useEffect(() => {
    const el = box.current!;
    const c = echarts.init(el, null, { renderer: "canvas" });
    chart.current = c;
    c.on("click", (p: unknown) => {
      const { value } = p as { value?: number[] };
      const { rows: R, onSelect: sel } = live.current;
      const i = value?.[2];
      if (i !== undefined && R[i]) sel([R[i].op.id], R[i].op.id, "chart");
    });
    const ro = new ResizeObserver(() => (c.resize(), drawRef.current()));
    ro.observe(el);
    (window as unknown as { edgescopeChart?: echarts.ECharts }).edgescopeChart = c;
    return () => {
      ro.disconnect();
      c.dispose();
      chart.current = null;
    };
  }, []);

  // the data: redrawn when the metric, the kind or the rows change
  useEffect(() => {
    const c = chart.current;
    if (!c) return;
    if (hist) {
      const labels = hist.counts.map((_, k) => `${plotted(xKey, xLog, hist.edges[k])} – ${plotted(xKey, xLog, hist.edges[k + 1])}`);
      c.setOption({
        animation: false,
        grid: { left: 50, right: 16, top: 14, bottom: 40 },
        tooltip: { trigger: "axis", axisPointer: { type: "shadow" } },
        xAxis: { type: "category", data: labels, ...AXIS, axisLabel: { color: "#9aa1b5", interval: 7, hideOverlap: true }, name: CHART_METRICS.find((m) => m.key === xKey)!.label + (xLog ? " (log)" : ""), nameLocation: "middle", nameGap: 26, nameTextStyle: { color: "#9aa1b5" } },
        yAxis: { type: "value", name: "tasks", ...AXIS, nameTextStyle: { color: "#9aa1b5" } },
        series: [
          { id: "all", type: "bar", name: "tasks", data: hist.counts, itemStyle: { color: "#4d7cc9" }, barCategoryGap: "8%", zlevel: 1 },
        ],
      }, { notMerge: true });
    } else if (cats && ys) {
      const per: number[][][] = cats.names.map(() => []);
      for (let i = 0; i < rows.length; i++) if (!Number.isNaN(xs[i]) && !Number.isNaN(ys[i])) per[cats.of[i]].push([xs[i], ys[i], i]);
      c.setOption({
        animation: false,
        grid: { left: 64, right: 24, top: 22, bottom: 40 },
        tooltip: {
          trigger: "item",
          formatter: (p: { value: number[] }) => {
            const r = live.current.rows[p.value[2]];
            return r ? `${r.op.name || r.op.id}<br/>${r.op.type} · ${r.unit}<br/>x ${plotted(xKey, xLog, p.value[0])}<br/>y ${plotted(yKey, yLog, p.value[1])}` : "";
          },
        },
        legend: undefined,
        xAxis: { type: "value", scale: true, boundaryGap: ["4%", "4%"], ...AXIS, name: CHART_METRICS.find((m) => m.key === xKey)!.label + (xLog ? " (log)" : ""), nameLocation: "middle", nameGap: 26, nameTextStyle: { color: "#9aa1b5" }, axisLabel: { color: "#9aa1b5", formatter: (v: number) => plotted(xKey, xLog, v) } },
        yAxis: { type: "value", scale: true, boundaryGap: ["6%", "6%"], ...AXIS, name: CHART_METRICS.find((m) => m.key === yKey)!.label + (yLog ? " (log)" : ""), nameTextStyle: { color: "#9aa1b5", align: "left" }, axisLabel: { color: "#9aa1b5", formatter: (v: number) => plotted(yKey, yLog, v) } },
        series: [
          ...cats.names.map((name, k) => ({ id: `c${k}`, type: "scatter", name, data: per[k], symbolSize: 4, large: true, largeThreshold: 2000, zlevel: 1, itemStyle: { color: catColor(name), opacity: 0.8 } })),
        ],
      }, { notMerge: true });
    }
    setBrushed(0);
    drawRef.current();
  }, [hist, cats, xs, ys, rows, xKey, yKey, xLog, yLog, catColor]);

  // A selection is drawn on a canvas of our own over the chart, mapped through the axes (affine: log values are
  // plotted as log10), so selecting never makes ECharts process its 50,000 points again.
  const overlay = useRef<HTMLCanvasElement>(null);
  const drawSelection = useCallback(() => {
    const c = chart.current, cv = overlay.current, el = box.current;
    if (!c || !cv || !el) return;
    const dpr = window.devicePixelRatio || 1;
    const w = el.clientWidth, h = el.clientHeight;
    if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) (cv.width = Math.round(w * dpr)), (cv.height = Math.round(h * dpr));
    const g = cv.getContext("2d")!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    g.fillStyle = SEL;
    const ids = selection.ids;
    // the rows are the page's task list: the selection's mask is over them
    const isSel = selectedTest(rows, ids, maskFor(selection, rows.length));
    let drawn = 0;
    const px = (x: number, y: number) => c.convertToPixel({ gridIndex: 0 }, [x, y]) as number[] | undefined;
    if (ids.size && hist) {
      const per = selectedPerBin(rows, hist, ids, maskFor(selection, rows.length));
      const a = px(0, 0), b = px(1, 0);
      if (a && b) {
        const bw = Math.abs(b[0] - a[0]) * 0.92;
        for (let k = 0; k < per.length; k++) {
          if (!per[k]) continue;
          const top = px(k, per[k])!;
          g.fillRect(top[0] - bw / 2, top[1], bw, a[1] - top[1]);
          drawn += per[k];
        }
      }
    } else if (ids.size && ys) {
      const o = px(0, 0), ex = px(1, 0), ey = px(0, 1);
      if (o && ex && ey) {
        const sx = ex[0] - o[0], sy = ey[1] - o[1];
        for (let i = 0; i < rows.length; i++) {
          if (!isSel(i) || Number.isNaN(xs[i]) || Number.isNaN(ys[i])) continue;
          g.fillRect(o[0] + xs[i] * sx - 2.5, o[1] + ys[i] * sy - 2.5, 5, 5);
          drawn++;
        }
      }
    }
    el.dataset.selected = String(ids.size);
    el.dataset.drawn = String(drawn);
    setShown((s) => (s.of === selection && s.n === drawn ? s : { of: selection, n: drawn }));
  }, [selection, hist, rows, xs, ys]);
  const drawRef = useRef(drawSelection);
  drawRef.current = drawSelection;

  useEffect(() => drawSelection(), [drawSelection]);

  // The brush is ours, not ECharts' (whose brush re-runs the visual encoding of every point on each move: p95
  // frame 420 ms at 50,000 tasks): a rectangle (the histogram: a range of bins, full height) dragged on a canvas of
  // its own; on release, its corners through the axes.
  const dragLayer = useRef<HTMLCanvasElement>(null);
  const drag = useRef<{ x0: number; y0: number; x1: number; y1: number } | null>(null);
  const paintDrag = () => {
    const cv = dragLayer.current, el = box.current, d = drag.current;
    if (!cv || !el) return;
    const dpr = window.devicePixelRatio || 1;
    if (cv.width !== Math.round(el.clientWidth * dpr)) (cv.width = Math.round(el.clientWidth * dpr)), (cv.height = Math.round(el.clientHeight * dpr));
    const g = cv.getContext("2d")!;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, el.clientWidth, el.clientHeight);
    if (!d) return;
    if (kind === "histogram") (d.y0 = 0), (d.y1 = el.clientHeight);
    g.fillStyle = "rgba(255,204,0,0.12)";
    g.strokeStyle = SEL;
    g.fillRect(Math.min(d.x0, d.x1), Math.min(d.y0, d.y1), Math.abs(d.x1 - d.x0), Math.abs(d.y1 - d.y0));
    g.strokeRect(Math.min(d.x0, d.x1) + 0.5, Math.min(d.y0, d.y1) + 0.5, Math.abs(d.x1 - d.x0), Math.abs(d.y1 - d.y0));
  };
  const local = (e: React.PointerEvent) => {
    const r = box.current!.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  };
  const brushDrag = {
    onPointerDown: (e: React.PointerEvent) => {
      if (e.button !== 0) return;
      const [x, y] = local(e);
      drag.current = { x0: x, y0: y, x1: x, y1: y };
      e.currentTarget.setPointerCapture(e.pointerId);
    },
    onPointerMove: (e: React.PointerEvent) => {
      if (!drag.current) return;
      [drag.current.x1, drag.current.y1] = local(e);
      paintDrag();
    },
    onPointerUp: (e: React.PointerEvent) => {
      const d = drag.current, c = chart.current;
      drag.current = null;
      paintDrag();
      if (!d || !c || Math.abs(d.x1 - d.x0) + (hist ? 0 : Math.abs(d.y1 - d.y0)) < 5) return; // a click: the chart's own
      const a = c.convertFromPixel({ gridIndex: 0 }, [Math.min(d.x0, d.x1), Math.max(d.y0, d.y1)]) as number[];
      const b = c.convertFromPixel({ gridIndex: 0 }, [Math.max(d.x0, d.x1), Math.min(d.y0, d.y1)]) as number[];
      // the histogram's x is the bin index (a category axis): bins whose centre the range covers, at least one
      // the slowest brushed task gets the focus
      const { ids, focus } = hist
        ? idsInBins(rows, hist, Math.max(0, Math.round(a[0])), Math.min(hist.counts.length - 1, Math.round(b[0])))
        : idsInRect(rows, xs, ys!, a[0], b[0], a[1], b[1]);
      setBrushed(ids.length);
      onSelect(ids, focus, "chart");
      e.preventDefault();
    },
  };

  const metricSelect = (value: ChartMetric, set: (k: ChartMetric) => void, label: string, testid: string) => (
    <label>
      {label}{" "}
      <select value={value} onChange={(e) => set(e.target.value as ChartMetric)} data-testid={testid}>
        {CHART_METRICS.map((m) => (<option key={m.key} value={m.key}>{m.label}</option>))}
      </select>
    </label>
  );
  const logBox = (key: ChartMetric, on: boolean) =>
    !CHART_METRICS.find((m) => m.key === key)!.signed && (
      <label className="check" title="Logarithmic axis (tasks at zero are not plotted)">
        <input type="checkbox" checked={on} onChange={(e) => setLogPref((p) => ({ ...p, [key]: e.target.checked }))} /> log
      </label>
    );
  const missing = useMemo(() => (hist ? hist.missing : ys ? xs.reduce((n, v, i) => n + (Number.isNaN(v) || Number.isNaN(ys[i]) ? 1 : 0), 0) : 0), [hist, xs, ys]);

  return (
    <div className="dist">
      <div className="dist-tools">
        <span className="seg" role="radiogroup" aria-label="Chart">
          <button className={`small ${kind === "histogram" ? "on" : ""}`} aria-pressed={kind === "histogram"} onClick={() => setKind("histogram")} data-testid="chart-histogram">Histogram</button>
          <button className={`small ${kind === "scatter" ? "on" : ""}`} aria-pressed={kind === "scatter"} onClick={() => setKind("scatter")} data-testid="chart-scatter">Scatter</button>
        </span>
        {metricSelect(xKey, setXKey, kind === "scatter" ? "x" : "Metric", "chart-x")}
        {logBox(xKey, xLog)}
        {kind === "scatter" && metricSelect(yKey, setYKey, "y", "chart-y")}
        {kind === "scatter" && logBox(yKey, yLog)}
        {kind === "scatter" && (
          <label>
            Colour{" "}
            <select value={colorBy} onChange={(e) => setColorBy(e.target.value as "unit" | "type")} data-testid="chart-color">
              <option value="type">by task type</option>
              <option value="unit">by compute unit</option>
            </select>
          </label>
        )}
        <span className="muted small-text">
          Drag across the chart to select tasks
          <span data-testid="chart-status">{!selection.ids.size ? "" : selection.source === "chart"
            ? ` · ${(brushed || selection.ids.size).toLocaleString()} brushed`
            : ` · ${selection.ids.size.toLocaleString()} selected elsewhere${shownSel === null ? "" : shownSel ? `: ${shownSel.toLocaleString()} shown here in yellow` : ": not plotted here"}`}</span>
          {missing ? ` · ${missing.toLocaleString()} not plotted (zero on a log axis, or no bytes)` : ""}
        </span>
        {kind === "scatter" && cats && (
          <span className="dist-legend">
            {cats.names.map((n) => (
              <span key={n}><i style={{ background: catColor(n) }} />{n}</span>
            ))}
          </span>
        )}
      </div>
      <div className="dist-chart-wrap" {...brushDrag}>
        <div ref={box} className="dist-chart" data-testid="chart" data-kind={kind} data-points={rows.length - missing} data-selected={selection.ids.size} />
        <canvas ref={overlay} className="dist-overlay" aria-hidden="true" />
        <canvas ref={dragLayer} className="dist-overlay" aria-hidden="true" />
      </div>
    </div>
  );
});
