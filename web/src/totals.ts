// The totals rule of docs/option-table.md, evaluated in the browser.
// Must agree to the last digit with simulator/totals.py, so every sum runs in the documented order
// (ops in execution order, then edges in table order) with plain float64 `+=`, starting at 0.
import type { AnalysisState, Crossing, OpOptions, OptionTable } from "./api/types";

/** Bytes per element of an activation format (conversion traffic). */
export const ACTIVATION_BYTES: Readonly<Record<string, number>> = { fp32: 4, fp16: 2, int8: 1 };

export interface Combo {
  input: string;
  output: string;
  kernel: string;
  sparsity: number;
}

export function parseCombo(combo: string): Combo {
  const parts = combo.split("/");
  if (parts.length !== 4) throw new Error(`bad combo "${combo}" (expected in/out/kernel/sparsity)`);
  return { input: parts[0], output: parts[1], kernel: parts[2], sparsity: Number(parts[3]) };
}

export interface Totals {
  latency_ms: number;
  fps: number;
  size_bytes: number;
  peak_memory_bytes: number;
  memory_power_mw: number;
}

/** Per-op result of evaluating a state: the chosen metrics plus conversion costs on incoming edges. */
export interface Evaluation {
  totals: Totals;
  combo: string[];
  latency_ms: Float64Array;
  weight_bytes: Float64Array;
  activation_bytes: Float64Array;
  dram_bytes: Float64Array;
  /** Sum of conversion latency on the op's incoming edges (for the table; not used in the totals sums). */
  conversion_in_ms: Float64Array;
  overridden: Uint8Array;
  /** Compute unit of every op in this state (an override's from its per-op row); null if the table has none. */
  unit: (string | null)[];
}

export function presetIndex(table: OptionTable, name: string): number {
  const p = table.presets.findIndex((x) => x.name === name);
  if (p < 0) throw new Error(`unknown preset "${name}" (known: ${table.presets.map((x) => x.name).join(", ")})`);
  return p;
}

/** Conversion latency of one edge whose producer writes `out` and consumer reads `inp`. */
export function conversionMs(table: OptionTable, out: string, inp: string, elements: number): number {
  const key = `${out}>${inp}`;
  const rate = table.conversion.ms_per_element[key];
  if (rate === undefined) throw new Error(`no conversion rate for ${key}`);
  return table.conversion.fixed_ms + elements * rate;
}

/** One partition crossing moving `bytes` (the mirror of simulator/crossings.py crossing_ms: the same formula). */
export function crossingMs(crossing: Crossing, bytes: number): number {
  return (crossing.fixed_s + bytes / crossing.bytes_per_s) * 1e3;
}

function activationBytes(fmt: string): number {
  const b = ACTIVATION_BYTES[fmt];
  if (b === undefined) throw new Error(`unknown activation format "${fmt}"`);
  return b;
}

/**
 * Evaluate `state` on the bulk table. `perOp` holds the per-op tables of every overridden op
 * (`GET /api/models/<id>/ops/<op>/options`).
 */
export function evaluate(
  table: OptionTable,
  perOp: Readonly<Record<string, OpOptions>>,
  state: Pick<AnalysisState, "model_wide" | "overrides">,
): Evaluation {
  const n = table.ops.length;
  const p = presetIndex(table, state.model_wide);
  const lat = new Float64Array(n);
  const wgt = new Float64Array(n);
  const act = new Float64Array(n);
  const dram = new Float64Array(n);
  const convIn = new Float64Array(n);
  const overridden = new Uint8Array(n);
  const combo: string[] = new Array(n);
  const inFmt: string[] = new Array(n);
  const outFmt: string[] = new Array(n);
  // Crossings need units: the preset's from the bulk table, an override's from its per-op row.
  const crossing = table.crossing ?? null; // null: one unit, or a table from before per-op units
  const unit: (string | null)[] = new Array(n);
  const m = table.metrics;
  for (let i = 0; i < n; i++) {
    const id = table.ops[i];
    const o = state.overrides[id];
    if (o !== undefined) {
      const t = perOp[id];
      if (!t) throw new Error(`per-op options of ${id} not loaded`);
      const k = t.combos.indexOf(o);
      if (k < 0) throw new Error(`op ${id} has no combo ${o}`);
      lat[i] = t.latency_ms[k];
      wgt[i] = t.weight_bytes[k];
      act[i] = t.activation_bytes[k];
      dram[i] = t.dram_bytes[k];
      combo[i] = o;
      overridden[i] = 1;
      if (t.unit !== undefined && table.unit_names) unit[i] = table.unit_names[t.unit[k]] ?? null;
      else if (crossing || table.constants.float_graph_ms) throw new Error(`per-op options of ${id} carry no units`);
      else unit[i] = null;
    } else {
      lat[i] = m.latency_ms[i][p];
      wgt[i] = m.weight_bytes[i][p];
      act[i] = m.activation_bytes[i][p];
      dram[i] = m.dram_bytes[i][p];
      combo[i] = table.combos[i][p];
      unit[i] = table.units?.[i][p] ?? null;
    }
    const c = parseCombo(combo[i]);
    inFmt[i] = c.input;
    outFmt[i] = c.output;
  }

  // 1. latency: the per-inference term, each unit's float-graph term, ops in order, then conversions in edge order.
  let latency = perInferenceMs(table);
  for (const g of floatGraphTerms(table, combo, unit, lat)) latency += g;
  for (let i = 0; i < n; i++) latency += lat[i];
  const es = table.edges.src;
  const ed = table.edges.dst;
  const el = table.edges.elements;
  // conversion bytes: their own sum in edge order, added to the ops' dram bytes at the end (rule 4)
  let convBytes = 0;
  for (let e = 0; e < es.length; e++) {
    const s = es[e];
    const d = ed[e];
    const out = outFmt[s];
    const inp = inFmt[d];
    if (out !== inp) {
      const c = conversionMs(table, out, inp, el[e]);
      latency += c;
      convIn[d] += c;
      convBytes += el[e] * (activationBytes(out) + activationBytes(inp));
    }
    if (crossing && table.units && (overridden[s] || overridden[d])) {
      // An un-overridden consumer's bulk row already pays the preset's crossing on this edge (`was`);
      // an override's row pays none. Charge the difference to the crossing of the current state (`now`).
      const now = unit[s] !== unit[d];
      const was = !overridden[d] && table.units[s][p] !== table.units[d][p];
      const nowB = now ? el[e] * activationBytes(out) * 2 : 0;
      const wasB = was ? el[e] * activationBytes(parseCombo(table.combos[s][p]).output) * 2 : 0;
      latency += (now ? crossingMs(crossing, nowB) : 0) - (was ? crossingMs(crossing, wasB) : 0);
      convBytes += nowB - wasB;
    }
  }
  let dramTotal = 0;
  for (let i = 0; i < n; i++) dramTotal += dram[i];
  dramTotal += convBytes;
  // 2. size
  let size = 0;
  for (let i = 0; i < n; i++) size += wgt[i];
  size = size + table.constants.size_overhead_bytes;
  // 3. peak memory
  // each op's share of the arena: arena_factor times its activations, plus, on an int8 kernel, its scratch (int8-static
  // where it reads int8 activations, int8-dynamic where float ones) (simulator/totals.py _scratch)
  const k = table.constants;
  // recurrent ops: their tensors in and out, not every step's traffic (activation_caps)
  const held = Float64Array.from(act);
  for (const [i, cap] of k.activation_caps ?? []) held[i] = Math.min(held[i], cap);
  const work = new Float64Array(n);
  for (let i = 0; i < n; i++) work[i] = held[i] * (k.arena_factor ?? 1) + 0;
  for (const [i, st, dyn] of k.int8_scratch ?? []) {
    const c = parseCombo(combo[i]);
    if (c.kernel === "int8") work[i] = held[i] * (k.arena_factor ?? 1) + (c.input === "int8" ? st : dyn);
  }
  let maxWork = 0;
  for (let i = 0; i < n; i++) if (i === 0 || work[i] > maxWork) maxWork = work[i];
  // the runtime's own copies of the weights (XNNPACK's packed buffers) beside the file's (simulator/totals.py)
  let weights = 0;
  for (let i = 0; i < n; i++) weights += wgt[i];
  // weights as the runtime holds them: the base preset's where it decodes the combo's kernel at load
  const res = residentWeightBytes(table, wgt, combo);
  let maxRes = 0;
  for (let i = 0; i < n; i++) if (i === 0 || res[i] > maxRes) maxRes = res[i];
  let decoded = 0;
  for (let i = 0; i < n; i++) decoded += res[i] - wgt[i];
  // the weights packed at load and kept (MLAS's MatMul / Gemm B, QLinearConv's filter), float and int8 kernels
  // apart, each in op order
  const kernels = k.prepacked_kernels ?? [];
  const packedOn = new Uint8Array(n);
  for (const i of k.prepacked_ops ?? []) packedOn[i] = kernels.includes(parseCombo(combo[i]).kernel) ? 1 : 0;
  for (const i of k.prepacked_int8_ops ?? []) {
    const c = parseCombo(combo[i]);
    if (c.input === "int8" && c.kernel === "int8") packedOn[i] = 1;
  }
  let packedFloat = 0;
  let packedInt8 = 0;
  for (let i = 0; i < n; i++) {
    if (!packedOn[i]) continue;
    if (parseCombo(combo[i]).kernel === "int8") packedInt8 += res[i];
    else packedFloat += res[i];
  }
  // then the larger of the load's peak (library pages at load, the copy of the largest weights) and the run's (the
  // runtime's own memory, the kept packed weights, the arena), and the decoded weights: simulator/totals.py's order
  const load = (k.load_copies ?? 0) * maxRes + (k.load_runtime_bytes ?? 0);
  const run = (k.runtime_bytes ?? 0) + (k.prepack_share ?? 0) * packedFloat
    + (k.prepack_share_int8 ?? k.prepack_share ?? 0) * packedInt8 + maxWork;
  const peak = size + weights * (k.weight_copies ?? 0) + (k.made_at_run_time_bytes ?? 0) + Math.max(load, run) + decoded;
  // 4. memory power, evaluated left to right: E * pj * 1e-9 / latency * 1e3
  const power = latency > 0 ? ((dramTotal * table.constants.dram_pj_per_byte * 1e-9) / latency) * 1e3 : 0;
  // 5. fps
  const fps = latency > 0 ? 1000 / latency : 0;
  return {
    totals: { latency_ms: latency, fps, size_bytes: size, peak_memory_bytes: peak, memory_power_mw: power },
    combo,
    latency_ms: lat,
    weight_bytes: wgt,
    activation_bytes: act,
    dram_bytes: dram,
    conversion_in_ms: convIn,
    overridden,
    unit,
  };
}

export function computeTotals(
  table: OptionTable,
  perOp: Readonly<Record<string, OpOptions>>,
  state: Pick<AnalysisState, "model_wide" | "overrides">,
): Totals {
  return evaluate(table, perOp, state).totals;
}

/** The totals rule's per-inference term: time per inference that is no task's (the runtime's fixed cost and, where
 * measured, the whole model's time outside its tasks). No op's latency includes it. */
export function perInferenceMs(table: OptionTable): number {
  return table.constants.per_inference_ms ?? 0; // as simulator/table_schema.py per_inference_ms
}

/** Float formats (compiler/vocabulary/formats.py FLOAT_FORMATS). */
const FLOAT_FORMATS: ReadonlySet<string> = new Set(["fp32", "fp16"]);

/** An op that reads and writes float activations (simulator/totals.py runs_float). */
export function runsFloat(combo: string): boolean {
  const c = parseCombo(combo);
  return FLOAT_FORMATS.has(c.input) && FLOAT_FORMATS.has(c.output);
}

/** The totals rule's float-graph terms of a state (simulator/totals.py float_graph_terms), one per unit of
 * `constants.float_graph_ms` in its order: the unit's fixed cost per run of a float graph if an op of the state runs
 * on it with float activations in and out and takes time there (latency > 0: a constant folded at load runs nowhere),
 * else 0. */
export function floatGraphTerms(table: OptionTable, combo: readonly string[], unit: readonly (string | null)[],
  latency: ArrayLike<number>): number[] {
  const fg = table.constants.float_graph_ms;
  if (!fg) return [];
  const on = new Set<string>();
  for (let i = 0; i < combo.length; i++) {
    const u = unit[i];
    if (u !== null && u in fg && latency[i] > 0 && runsFloat(combo[i])) on.add(u);
  }
  return Object.entries(fg).map(([u, ms]) => (on.has(u) ? ms : 0));
}

/** The time per inference outside the tasks in a state: the per-inference term and the float-graph terms. */
export function perInferenceStateMs(table: OptionTable, e: Pick<Evaluation, "combo" | "unit" | "latency_ms">): number {
  let ms = perInferenceMs(table);
  for (const g of floatGraphTerms(table, e.combo, e.unit, e.latency_ms)) ms += g;
  return ms;
}

/** Totals of the unoptimized model (the table's base preset, no overrides). */
export function baseTotals(table: OptionTable): Totals {
  return computeTotals(table, {}, { model_wide: table.base.preset, overrides: {} });
}

/** Each op's weights as the runtime holds them (simulator/totals.py resident_weight_bytes): preset
 * `decoded_at_load.preset`'s bytes where the kernel format of its combo is one of `decoded_at_load.kernels`, formats
 * the runtime decodes at load, else its own. */
export function residentWeightBytes(table: OptionTable, wgt: Float64Array, combo: readonly string[]): Float64Array {
  const decoded = table.constants.decoded_at_load;
  if (!decoded) return wgt;
  const p0 = presetIndex(table, decoded.preset);
  const res = new Float64Array(wgt.length);
  for (let i = 0; i < wgt.length; i++) {
    res[i] = decoded.kernels.includes(parseCombo(combo[i]).kernel) ? table.metrics.weight_bytes[i][p0] : wgt[i];
  }
  return res;
}
