export function fmtMs(v: number): string {
  if (!Number.isFinite(v)) return "–";
  if (Math.abs(v) >= 100) return v.toFixed(1);
  if (Math.abs(v) >= 1) return v.toFixed(3);
  return v.toFixed(4);
}
export function fmtBytes(v: number): string {
  if (!Number.isFinite(v)) return "–";
  const a = Math.abs(v);
  if (a >= 1e9) return `${(v / 1e9).toFixed(2)} GB`;
  if (a >= 1e6) return `${(v / 1e6).toFixed(2)} MB`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(1)} kB`;
  return `${Math.round(v)} B`;
}
export function fmtCount(v: number): string {
  if (v >= 1e9) return `${(v / 1e9).toFixed(2)} G`;
  if (v >= 1e6) return `${(v / 1e6).toFixed(2)} M`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(1)} k`;
  return String(Math.round(v));
}
export function fmtPct(v: number): string {
  if (!Number.isFinite(v)) return "–";
  const s = (v * 100).toFixed(1);
  return `${v > 0 ? "+" : ""}${s}%`;
}
/** Stable color per op type. */
export function typeColor(type: string): string {
  let h = 0;
  for (let i = 0; i < type.length; i++) h = (h * 31 + type.charCodeAt(i)) >>> 0;
  return `hsl(${h % 360} 55% 55%)`;
}

import type { OptionLabel } from "./api/types";
export function labelText(l: OptionLabel): string {
  if (l.text) return l.text;
  const err = l.error_pct_median == null ? "error not measured yet" : `median error ${l.error_pct_median}% over ${l.error_models} models`;
  return `${l.kind} (${l.profile}${l.calibrated ? ", calibrated" : ""}; ${err}${l.baseline === "measured" ? `; fp32 baseline measured${l.measured_runtime ? ` with ${l.measured_runtime}` : ""}` : ""})`;
}
