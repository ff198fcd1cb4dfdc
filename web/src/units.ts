// The compute unit each task runs on in the current state, and the colours the graph gives units.
import type { OptionTable } from "./api/types";
import type { Evaluation } from "./totals";

/** Fixed colours so a unit looks the same on every target; CPU (the fallback) is the alarm colour. */
const UNIT_STYLE: Readonly<Record<string, { label: string; color: string }>> = {
  ane: { label: "ANE (NPU)", color: "#2a9d8f" },
  htp: { label: "HTP (NPU)", color: "#2a9d8f" },
  npu: { label: "NPU", color: "#2a9d8f" },
  gpu: { label: "GPU", color: "#5b8def" },
  xnnpack: { label: "XNNPACK (CPU)", color: "#e9c46a" },
  cpu: { label: "CPU", color: "#e63946" },
};
const OTHER = ["#b388eb", "#8ab17d", "#f4a261"];
export const UNKNOWN_UNIT_COLOR = "#6b7080";
export const MIXED_UNIT_COLOR = "#c9cbd3";

export function unitColor(name: string, names: readonly string[]): string {
  return UNIT_STYLE[name]?.color ?? OTHER[Math.max(0, names.indexOf(name)) % OTHER.length];
}

export function unitLabel(name: string | null): string {
  return name === null ? "unknown" : UNIT_STYLE[name]?.label ?? name.toUpperCase();
}

/** Units of the table's target in placement order (the last is the fallback); older tables only have `units`. */
export function unitNames(table: OptionTable): string[] {
  if (table.unit_names) return table.unit_names;
  const seen = new Set<string>();
  for (const row of table.units ?? []) for (const u of row) seen.add(u);
  return [...seen];
}

/**
 * Unit of every op (table order) in an evaluated state, null where unknown; null for a table without units
 * (written before they were recorded). The model-wide preset's unit is in the bulk table and an override's
 * in its per-op row (`evaluate` reads both); per-op rows from before they carried units fall back to a preset
 * that resolves to the same combo on that op, and are unknown when none does.
 */
export function unitsNow(table: OptionTable, ev: Evaluation, modelWide: string): (string | null)[] | null {
  const units = table.units;
  const n = table.ops.length;
  if (!units) return null;
  const p = table.presets.findIndex((x) => x.name === modelWide);
  const out = new Array<string | null>(n);
  for (let i = 0; i < n; i++) {
    const known = ev.unit?.[i];
    if (known != null) {
      out[i] = known;
      continue;
    }
    if (!ev.overridden[i]) {
      out[i] = units[i][p] ?? null;
      continue;
    }
    const q = table.combos[i].indexOf(ev.combo[i]);
    out[i] = q >= 0 ? units[i][q] : null;
  }
  return out;
}
