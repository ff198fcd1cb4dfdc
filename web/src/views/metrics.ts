// Per-task metrics for the distributions and the scatter, their bins, and brushed ranges back to task ids.
// Pure functions over the table's rows, so the chart component only draws (tests/views.test.ts).
import type { Row } from "../components/OpTable";

export type ChartMetric = "latency" | "now" | "delta" | "share" | "weights" | "activations" | "macs" | "intensity";

export const CHART_METRICS: { key: ChartMetric; label: string; unit: "ms" | "B" | "" | "%"; signed?: boolean }[] = [
  { key: "latency", label: "Time (ms), unoptimized", unit: "ms" },
  { key: "now", label: "Time now (ms)", unit: "ms" },
  { key: "delta", label: "Δ time now vs unoptimized (ms)", unit: "ms", signed: true },
  { key: "share", label: "Share of the model's time", unit: "%" },
  { key: "weights", label: "Weight bytes (size)", unit: "B" },
  { key: "activations", label: "Activation bytes", unit: "B" },
  { key: "macs", label: "MACs", unit: "" },
  { key: "intensity", label: "Arithmetic intensity (MACs / byte)", unit: "" },
];

export function metricOf(r: Row, key: ChartMetric): number {
  switch (key) {
    case "latency": return r.op.latency_ms;
    case "now": return r.pred_ms;
    case "delta": return r.delta_ms;
    case "share": return r.op.share * 100;
    case "weights": return r.op.weight_bytes;
    case "activations": return r.op.activation_bytes;
    case "macs": return r.op.macs;
    case "intensity": {
      // bytes the task moves: its weights and its activations (as the cost model's roofline reads them)
      const b = r.op.weight_bytes + r.op.activation_bytes;
      return b > 0 ? r.op.macs / b : NaN;
    }
  }
}

/** The plotted value of every row: log10 of the metric on a log axis (rows <= 0 get NaN: not plotted). */
export function column(rows: readonly Row[], key: ChartMetric, log: boolean): Float64Array {
  const out = new Float64Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const v = metricOf(rows[i], key);
    out[i] = log ? (v > 0 ? Math.log10(v) : NaN) : Number.isFinite(v) ? v : NaN;
  }
  return out;
}

/** Log axis by default where the positive values span over three decades (MACs, bytes), never for signed ones. */
export function wantsLog(rows: readonly Row[], key: ChartMetric): boolean {
  if (CHART_METRICS.find((m) => m.key === key)?.signed) return false;
  let lo = Infinity, hi = 0;
  for (const r of rows) {
    const v = metricOf(r, key);
    if (v > 0) (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
  }
  return hi > 0 && hi / lo > 1000;
}

export interface Histogram {
  /** bin k covers [edges[k], edges[k + 1]) (the last bin includes its right edge), in plotted units */
  edges: number[];
  counts: number[];
  /** bin of each row, -1 where the value is not plotted */
  binOf: Int32Array;
  /** rows not plotted (NaN: zero on a log axis, or undefined) */
  missing: number;
}

export function histogram(values: Float64Array, bins: number): Histogram {
  let lo = Infinity, hi = -Infinity, missing = 0;
  for (const v of values) {
    if (Number.isNaN(v)) missing++;
    else (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
  }
  if (lo === Infinity) return { edges: [0, 1], counts: [0], binOf: new Int32Array(values.length).fill(-1), missing };
  if (hi === lo) (lo -= 0.5), (hi += 0.5);
  const w = (hi - lo) / bins;
  const edges = Array.from({ length: bins + 1 }, (_, k) => lo + k * w);
  const counts = new Array<number>(bins).fill(0);
  const binOf = new Int32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (Number.isNaN(v)) {
      binOf[i] = -1;
      continue;
    }
    const k = Math.min(bins - 1, Math.floor((v - lo) / w));
    binOf[i] = k;
    counts[k]++;
  }
  return { edges, counts, binOf, missing };
}

/** A brushed set of rows: their ids, and the slowest (measured time) as the focus. */
export interface Brushed {
  ids: string[];
  focus: string | null;
}

function brushed(rows: readonly Row[], hit: (i: number) => boolean): Brushed {
  const ids: string[] = [];
  let focus: string | null = null, best = -Infinity;
  for (let i = 0; i < rows.length; i++) {
    if (!hit(i)) continue;
    const op = rows[i].op;
    ids.push(op.id);
    if (op.latency_ms > best) (best = op.latency_ms), (focus = op.id);
  }
  return { ids, focus };
}

/** Rows whose bin is within [first, last] (a brushed range of bars). */
export function idsInBins(rows: readonly Row[], h: Histogram, first: number, last: number): Brushed {
  return brushed(rows, (i) => h.binOf[i] >= first && h.binOf[i] <= last);
}

/** Rows whose plotted point lies in the rectangle (a brushed area of the scatter). */
export function idsInRect(rows: readonly Row[], xs: Float64Array, ys: Float64Array, x0: number, x1: number, y0: number, y1: number): Brushed {
  return brushed(rows, (i) => xs[i] >= x0 && xs[i] <= x1 && ys[i] >= y0 && ys[i] <= y1);
}

/** Whether row i is selected: the selection's mask over the rows where it has one, else its ids. */
export function selectedTest(rows: readonly Row[], ids: ReadonlySet<string>, mask: Uint8Array | null): (i: number) => boolean {
  return mask ? (i) => mask[i] === 1 : (i) => ids.has(rows[i].op.id);
}

/** Selected rows per bin, for the highlight of a selection made elsewhere. */
export function selectedPerBin(rows: readonly Row[], h: Histogram, ids: ReadonlySet<string>, mask: Uint8Array | null = null): number[] {
  const out = new Array<number>(h.counts.length).fill(0);
  if (!ids.size) return out;
  const sel = selectedTest(rows, ids, mask);
  for (let i = 0; i < rows.length; i++) if (h.binOf[i] >= 0 && sel(i)) out[h.binOf[i]]++;
  return out;
}

/** Categories for the scatter's colours: the most common values first, the rest as "other". */
export function categories(rows: readonly Row[], by: "unit" | "type", max = 9): { names: string[]; of: Int32Array } {
  const count = new Map<string, number>();
  for (const r of rows) {
    const k = by === "unit" ? r.unit || "?" : r.op.type;
    count.set(k, (count.get(k) ?? 0) + 1);
  }
  const sorted = [...count].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([k]) => k);
  const names = sorted.length > max ? [...sorted.slice(0, max - 1), "other"] : sorted;
  const idx = new Map(names.map((n, k) => [n, k]));
  const of = new Int32Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const k = by === "unit" ? rows[i].unit || "?" : rows[i].op.type;
    of[i] = idx.get(k) ?? names.length - 1;
  }
  return { names, of };
}
