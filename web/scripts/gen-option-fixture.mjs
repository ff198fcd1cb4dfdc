// Generates tests/fixtures/option_table_small.json: a small option table (schema 1, docs/option-table.md)
// with a branch, weightless ops, fallbacks and per-op tables. Deterministic (seeded).
// Usage: node scripts/gen-option-fixture.mjs   then   UPDATE_FIXTURES=1 npm test   (rewrites totals_expected.json)
import { writeFileSync } from "node:fs";

let seed = 20261130;
function rnd() {
  // mulberry32
  seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const ACT = ["fp32", "fp16", "int8"];
const KERNELS = ["fp32", "fp16", "int8", "int4", "lut2", "lut4", "lut8"];
const KBITS = { fp32: 32, fp16: 16, int8: 8, int4: 4, lut2: 2, lut4: 4, lut8: 8, "-": 0 };
const ABYTES = { fp32: 4, fp16: 2, int8: 1 };
const presets = [
  ["fp32", "fp32", "fp32", "fp32", 0, "No optimization (the unoptimized model)."],
  ["fp16", "fp16", "fp16", "fp16", 0, "Half precision activations and weights."],
  ["int8-dynamic", "fp32", "fp32", "int8", 0, "int8 weights, activations quantized on the fly."],
  ["int8-static", "int8", "int8", "int8", 0, "int8 weights and activations (calibrated)."],
  ["int4-weights", "fp32", "fp32", "int4", 0, "4-bit weights, float activations."],
  ["palettize-4bit", "fp32", "fp32", "lut4", 0, "Weights palettized to a 16-entry look-up table."],
  ["prune-50", "fp32", "fp32", "fp32", 50, "Half of the weights pruned (unstructured)."],
  ["prune-50+int8-static", "int8", "int8", "int8", 50, "Pruned 50% then int8 static quantization."],
].map(([name, input, output, kernel, sparsity, description]) => ({ name, input, output, kernel, sparsity, description }));

// ops: [id, type, weighted, elementsOut, baseLatency, weights(fp32 bytes)]
const ops = [
  ["t0", "FusedConv", true, 401408, 0.2113, 3456],
  ["t1", "DepthwiseConv", true, 401408, 0.1337, 1152],
  ["t2", "FusedConv", true, 200704, 0.3021, 16384],
  ["t3", "Add", false, 200704, 0.0417, 0],
  ["t4", "FusedConv", true, 100352, 0.2789, 73728],
  ["t5", "GlobalAveragePool", false, 1280, 0.0123, 0],
  ["t6", "Gemm", true, 1000, 0.0911, 5124000],
];
// t0 -> t1 -> t2 -> t3, t0 -> t3 (skip), t3 -> t4 -> t5 -> t6
const edges = { src: [0, 1, 2, 0, 3, 4, 5], dst: [1, 2, 3, 3, 4, 5, 6], elements: [401408, 401408, 200704, 401408, 200704, 100352, 1280] };

function metricsFor(op, input, output, kernel, sparsity) {
  const [, , weighted, elems, base, w32] = op;
  const jitter = 0.9 + rnd() * 0.2;
  const actScale = (ABYTES[input] + ABYTES[output]) / 8;
  const kScale = weighted ? KBITS[kernel] / 32 : 0;
  const density = 1 - sparsity / 100;
  const lat = base * (0.35 + 0.4 * actScale + (weighted ? 0.25 * (0.5 + kScale) * (0.6 + 0.4 * density) : 0.25)) * jitter;
  const wb = weighted ? Math.ceil(w32 * kScale * density) + (kernel.startsWith("lut") ? 4 * 2 ** KBITS[kernel] : 0) : 0;
  const ab = elems * ABYTES[input] + elems * ABYTES[output];
  const dram = wb + ab + Math.floor(elems * 0.37);
  return { latency_ms: Number(lat.toPrecision(12)), weight_bytes: wb, activation_bytes: ab, dram_bytes: dram };
}

const metrics = { latency_ms: [], weight_bytes: [], activation_bytes: [], dram_bytes: [] };
const supported = [];
const combos = [];
for (const op of ops) {
  const row = { latency_ms: [], weight_bytes: [], activation_bytes: [], dram_bytes: [] };
  const sup = [];
  const cmb = [];
  for (const p of presets) {
    const weighted = op[2];
    const kernel = weighted ? p.kernel : "-";
    const sparsity = weighted ? p.sparsity : 0;
    // weightless ops cannot take int4/lut kernels or sparsity: they fall back to the preset's activations
    const ok = weighted || (p.kernel === p.input && p.sparsity === 0) || p.name === "int8-dynamic";
    const input = ok || p.name.startsWith("prune") ? p.input : "fp32";
    const output = ok || p.name.startsWith("prune") ? p.output : "fp32";
    const m = metricsFor(op, input, output, kernel, sparsity);
    for (const k of Object.keys(row)) row[k].push(m[k]);
    sup.push(ok);
    cmb.push(`${input}/${output}/${kernel}/${sparsity}`);
  }
  for (const k of Object.keys(row)) metrics[k].push(row[k]);
  supported.push(sup);
  combos.push(cmb);
}

const msPerElement = {};
for (const a of ACT) for (const b of ACT) if (a !== b) msPerElement[`${a}>${b}`] = Number((1e-7 * (0.8 + rnd() * 0.6)).toPrecision(6));

// per-op tables for the ops the expected states override
const perOp = {};
for (const idx of [1, 2, 3, 6]) {
  const op = ops[idx];
  const t = { op: op[0], combos: [], supported: [], latency_ms: [], weight_bytes: [], activation_bytes: [], dram_bytes: [], notes: [] };
  for (const i of ACT) for (const o of ACT) {
    const ks = op[2] ? KERNELS : ["-"];
    const ss = op[2] ? [0, 50] : [0];
    for (const k of ks) for (const s of ss) {
      const m = metricsFor(op, i, o, k, s);
      t.combos.push(`${i}/${o}/${k}/${s}`);
      t.supported.push(!(op[1] === "DepthwiseConv" && k.startsWith("lut")));
      for (const key of ["latency_ms", "weight_bytes", "activation_bytes", "dram_bytes"]) t[key].push(m[key]);
    }
  }
  if (op[1] === "DepthwiseConv") t.notes.push("Palettized depthwise kernels are emulated (dequantized at load).");
  perOp[op[0]] = t;
}
// the per-op table must agree with the bulk table on the preset combos it shares
for (const [id, t] of Object.entries(perOp)) {
  const i = ops.findIndex((o) => o[0] === id);
  combos[i].forEach((c, p) => {
    const k = t.combos.indexOf(c);
    if (k >= 0) for (const key of ["latency_ms", "weight_bytes", "activation_bytes", "dram_bytes"]) metrics[key][i][p] = t[key][k];
  });
}

const table = {
  schema: 1,
  target: "ort-cpu/host",
  label: { kind: "predicted", profile: "host-cpu", error_pct_median: 7.2, error_models: 14 },
  ops: ops.map((o) => o[0]),
  presets,
  metrics,
  supported,
  combos,
  edges,
  conversion: { fixed_ms: 0.002, ms_per_element: msPerElement },
  constants: { dram_pj_per_byte: 20.0, size_overhead_bytes: 4096 },
  base: { preset: "fp32", latency_ms: 0, peak_memory_bytes: 0, memory_power_mw: 0, size_bytes: 0 },
};

const out = new URL("../tests/fixtures/option_table_small.json", import.meta.url);
writeFileSync(out, JSON.stringify({ table, per_op: perOp }, null, 1) + "\n");
console.log(`wrote ${out.pathname}`);
