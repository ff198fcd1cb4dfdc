// What colour each drawn node of the graph gets: a metric on a colour ramp, or the compute unit (categorical).
// Pure functions of the layout and the evaluated state; GraphView applies them to sigma's nodes.
import type { OpsResponse, OptionTable } from "../api/types";
import type { Evaluation } from "../totals";
import { MIXED_UNIT_COLOR, UNKNOWN_UNIT_COLOR, unitColor, unitLabel, unitNames } from "../units";
import type { LayoutResult } from "./messages";

export type MetricKey = "type" | "unit" | "latency" | "delta" | "measured" | "weights" | "activations" | "conversion" | "compare";
export const METRICS: { key: MetricKey; label: string; unit: "ms" | "B" | ""; diverging?: boolean }[] = [
  { key: "type", label: "Task type", unit: "" },
  { key: "unit", label: "Compute unit", unit: "" },
  { key: "latency", label: "Time now (ms)", unit: "ms" },
  { key: "delta", label: "Δ time vs unoptimized", unit: "ms", diverging: true },
  { key: "measured", label: "Measured time (ms)", unit: "ms" },
  { key: "weights", label: "Weight bytes now", unit: "B" },
  { key: "activations", label: "Activation bytes now", unit: "B" },
  { key: "conversion", label: "Conversion time (ms)", unit: "ms" },
  // offered while a model diff is open: Δ time of each task in the other model (src/views/compare.ts)
  { key: "compare", label: "Δ time vs other model", unit: "ms", diverging: true },
];

export const SEQ = ["#1d2b53", "#26547c", "#2a9d8f", "#8ab17d", "#e9c46a", "#f4a261", "#e76f51"];
export const DIV = ["#1a9850", "#91cf60", "#3a3f4b", "#fc8d59", "#d73027"];
export const SEL = "#ffcc00";
export const DIM = "#3c4150";

export function lerpColor(stops: string[], t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const a = parseInt(stops[i].slice(1), 16), b = parseInt(stops[i + 1].slice(1), 16);
  const ch = (s: number) => Math.round(((a >> s) & 255) * (1 - f) + ((b >> s) & 255) * f);
  return `#${((1 << 24) | (ch(16) << 16) | (ch(8) << 8) | ch(0)).toString(16).slice(1)}`;
}

export type UnitLegend = { unit: string; label: string; color: string; count: number }[];

/** Metric value of every drawn item (ops, then collapsed groups, which sum their ops). Null for categorical modes. */
export function metricValues(
  L: LayoutResult, metric: MetricKey, ev: Evaluation | null, base: Evaluation | null, toTable: Int32Array | null, opsByTable: OpsResponse["ops"] | null,
  compare: ReadonlyMap<string, number> | null = null,
): { values: Float64Array; min: number; max: number } | null {
  if (!ev || !base || !toTable || metric === "type" || metric === "unit") return null;
  const values = new Float64Array(L.ops.length + L.collapsed.length);
  for (let i = 0; i < L.rep.length; i++) {
    const k = toTable[i];
    if (k < 0) continue;
    let v = 0;
    switch (metric) {
      case "latency": v = ev.latency_ms[k]; break;
      case "delta": v = ev.latency_ms[k] - base.latency_ms[k]; break;
      case "measured": v = opsByTable?.[k]?.latency_ms ?? 0; break;
      case "weights": v = ev.weight_bytes[k]; break;
      case "activations": v = ev.activation_bytes[k]; break;
      case "conversion": v = ev.conversion_in_ms[k]; break;
      case "compare": v = compare?.get(opsByTable?.[k]?.id ?? "") ?? 0; break;
    }
    values[L.rep[i]] += v;
  }
  let min = Infinity, max = -Infinity;
  for (const v of values) (min = Math.min(min, v)), (max = Math.max(max, v));
  return { values, min, max };
}

/** Categorical colours by compute unit: a collapsed group whose ops run on different units is "mixed". */
export function unitColoring(L: LayoutResult, units: (string | null)[] | null, table: OptionTable | null, toTable: Int32Array | null): { colors: string[]; legend: UnitLegend } | null {
  if (!units || !table || !toTable) return null;
  const names = unitNames(table);
  const itemUnit: (string | null | undefined)[] = new Array(L.ops.length + L.collapsed.length);
  const mixed = new Uint8Array(itemUnit.length);
  const counts = new Map<string | null, number>();
  for (let i = 0; i < L.rep.length; i++) {
    const u = toTable[i] >= 0 ? units[toTable[i]] : null;
    counts.set(u, (counts.get(u) ?? 0) + 1);
    const k = L.rep[i];
    if (itemUnit[k] === undefined) itemUnit[k] = u;
    else if (itemUnit[k] !== u) mixed[k] = 1;
  }
  const color = (u: string | null | undefined) => (u ? unitColor(u, names) : UNKNOWN_UNIT_COLOR);
  const colors = Array.from(itemUnit, (u, k) => (mixed[k] ? MIXED_UNIT_COLOR : color(u)));
  const order = (u: string | null) => (u === null ? names.length : names.indexOf(u));
  const legend = [...counts].sort((a, b) => order(a[0]) - order(b[0])).map(([u, n]) => ({ unit: u ?? "unknown", label: unitLabel(u), color: color(u), count: n }));
  if (mixed.some((x) => x)) legend.push({ unit: "mixed", label: "mixed (collapsed group)", color: MIXED_UNIT_COLOR, count: 0 });
  return { colors, legend };
}
