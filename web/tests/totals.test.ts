import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { OpOptions, OptionTable } from "../src/api/types";
import { baseTotals, computeTotals, evaluate, floatGraphTerms, parseCombo, perInferenceMs, perInferenceStateMs } from "../src/totals";

type Fixture = { table: OptionTable; per_op: Record<string, OpOptions> };
const load = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8")) as Fixture;
const expectedUrl = new URL("./fixtures/totals_expected.json", import.meta.url);
const fixture = load("option_table_small.json");
// ort-qnn/snapdragon-8g3 (tests/browser/ep_fixture.py): conv1 -> relu1 -> nms (CPU EP only) -> conv2 -> relu2
const EP = "option_table_ep.json";
// the same sweep with a float-graph run cost on the HTP (constants.float_graph_ms): overrides switch its term
const FG = "option_table_fg.json";
// ort-cpu/host, conv1 -> relu1 -> flat -> fc (Gemm): the peak's runtime terms (decoded, prepacked, load copy, arena)
const MEM = "option_table_mem.json";
const FIXTURES: Record<string, Fixture> = { "option_table_small.json": fixture, [EP]: load(EP), [FG]: load(FG), [MEM]: load(MEM) };

interface ExpectedState {
  name: string;
  /** fixture file; absent: option_table_small.json */
  fixture?: string;
  state: { model_wide: string; overrides: Record<string, string> };
  totals: Record<string, number>;
}

const STATES: Omit<ExpectedState, "totals">[] = [
  ...fixture.table.presets.map((p) => ({ name: `preset ${p.name}`, state: { model_wide: p.name, overrides: {} } })),
  { name: "int8-static + t2 fp32 lut4 pruned (conversions around t2)", state: { model_wide: "int8-static", overrides: { t2: "fp32/fp32/lut4/50" } } },
  { name: "fp32 + t1 int8 in/out, t6 int4 weights", state: { model_wide: "fp32", overrides: { t1: "int8/int8/int8/0", t6: "fp32/fp32/int4/0" } } },
  { name: "fp16 + mixed formats on t1,t2,t3", state: { model_wide: "fp16", overrides: { t1: "fp16/int8/lut8/50", t2: "int8/fp32/int8/0", t3: "fp32/fp16/-/0" } } },
  { name: "prune-50+int8-static + t3 back to fp32", state: { model_wide: "prune-50+int8-static", overrides: { t3: "fp32/fp32/-/0" } } },
  // unit changes on an EP target: partition crossings come and go with the overrides
  ...["fp32", "fp16", "int8-static"].map((p) => ({ name: `ep preset ${p}`, fixture: EP, state: { model_wide: p, overrides: {} } })),
  { name: "ep fp16 + relu1 fp32 (to the CPU: one crossing added, nms's paid crossing removed)", fixture: EP, state: { model_wide: "fp16", overrides: { relu1: "fp32/fp32/-/0" } } },
  { name: "ep fp16 + relu2 fp32 (HTP -> CPU crossing added)", fixture: EP, state: { model_wide: "fp16", overrides: { relu2: "fp32/fp32/-/0" } } },
  { name: "ep fp16 + nms as the preset (its row pays no crossing; the rule does)", fixture: EP, state: { model_wide: "fp16", overrides: { nms: "fp16/fp16/-/0" } } },
  { name: "ep fp32 + relu1 fp16 (onto the HTP: two crossings)", fixture: EP, state: { model_wide: "fp32", overrides: { relu1: "fp16/fp16/-/0" } } },
  { name: "ep int8-static + relu1 int8/fp32 on the CPU, relu2 fp16", fixture: EP, state: { model_wide: "int8-static", overrides: { relu1: "int8/fp32/-/0", relu2: "fp16/fp16/-/0" } } },
  // the float-graph term: paid while an op runs float on the HTP
  ...["fp32", "fp16", "int8-static"].map((p) => ({ name: `fg preset ${p}`, fixture: FG, state: { model_wide: p, overrides: {} } })),
  { name: "fg int8-static + relu2 fp16 on the HTP (the term comes on)", fixture: FG, state: { model_wide: "int8-static", overrides: { relu2: "fp16/fp16/-/0" } } },
  { name: "fg int8-static + nms fp32 (float on the CPU: no term)", fixture: FG, state: { model_wide: "int8-static", overrides: { nms: "fp32/fp32/-/0" } } },
  { name: "fg int8-static + relu1 int8/fp16 (float out only: no term)", fixture: FG, state: { model_wide: "int8-static", overrides: { relu1: "int8/fp16/-/0" } } },
  // peak memory on ORT CPU: fp16 and palettized kernels held at fp32, fc's fp32 weights prepacked, int8 ones not
  ...["fp32", "fp16", "int8-dynamic", "palettize-4bit", "prune-50+int8-static"].map((p) => ({ name: `mem preset ${p}`, fixture: MEM, state: { model_wide: p, overrides: {} } })),
  { name: "mem int8-static + fc palettized (decoded and prepacked)", fixture: MEM, state: { model_wide: "int8-static", overrides: { fc: "fp32/fp32/lut4/0" } } },
  { name: "mem fp32 + fc int8 weights (packed at int8), conv1 fp16", fixture: MEM, state: { model_wide: "fp32", overrides: { fc: "fp32/fp32/int8/0", conv1: "fp32/fp32/fp16/0" } } },
  // int8 kernels on ORT CPU: QLinearConv packs its filter and works in an int32 / im2col scratch; ConvInteger packs
  // nothing and works in the input's uint8 copy, an int32 output and its im2col buffer
  { name: "mem preset int8-static (QLinearConv packed, its scratch in the arena)", fixture: MEM, state: { model_wide: "int8-static", overrides: {} } },
  { name: "mem fp32 + conv1 int8-static, fc int8-dynamic", fixture: MEM, state: { model_wide: "fp32", overrides: { conv1: "int8/int8/int8/0", fc: "fp32/fp32/int8/0" } } },
  { name: "mem int8-static + conv1 int8-dynamic (not packed, the dynamic scratch)", fixture: MEM, state: { model_wide: "int8-static", overrides: { conv1: "fp32/fp32/int8/0" } } },
];

function tiny(): OptionTable {
  return {
    schema: 1, target: "x", label: { kind: "predicted", profile: "p", error_pct_median: 0, error_models: 0 },
    ops: ["a", "b"],
    presets: [
      { name: "fp32", input: "fp32", output: "fp32", kernel: "fp32", sparsity: 0, description: "" },
      { name: "int8-static", input: "int8", output: "int8", kernel: "int8", sparsity: 0, description: "" },
    ],
    metrics: { latency_ms: [[1, 0.5], [2, 1]], weight_bytes: [[100, 25], [0, 0]], activation_bytes: [[40, 10], [80, 20]], dram_bytes: [[1000, 300], [500, 100]] },
    supported: [[true, true], [true, false]],
    combos: [["fp32/fp32/fp32/0", "int8/int8/int8/0"], ["fp32/fp32/-/0", "fp32/fp32/-/0"]],
    edges: { src: [0], dst: [1], elements: [1000] },
    conversion: { fixed_ms: 0.5, ms_per_element: { "int8>fp32": 0.001, "fp32>int8": 0.002 } },
    constants: { dram_pj_per_byte: 10, size_overhead_bytes: 4 },
    base: { preset: "fp32", latency_ms: 3, peak_memory_bytes: 184, memory_power_mw: 0, size_bytes: 104 },
  };
}

describe("totals rule on a hand-computed table", () => {
  it("base", () => {
    const t = baseTotals(tiny());
    expect(t.latency_ms).toBe(3);
    expect(t.fps).toBe(1000 / 3);
    expect(t.size_bytes).toBe(104);
    expect(t.peak_memory_bytes).toBe(184);
    // 1500 bytes * 10 pJ = 15000 pJ = 1.5e-5 mJ over 3 ms = 5e-6 W = 5e-3 mW
    expect(t.memory_power_mw).toBeCloseTo(0.005, 15);
  });
  it("model-wide preset with a fallback adds one conversion", () => {
    const e = evaluate(tiny(), {}, { model_wide: "int8-static", overrides: {} });
    // a int8 out -> b fp32 in: 0.5 + 1000 * 0.001 = 1.5 ms; bytes 1000 * (1 + 4)
    expect(e.totals.latency_ms).toBe(0.5 + 1 + 1.5);
    expect(e.conversion_in_ms[1]).toBe(1.5);
    expect(e.totals.size_bytes).toBe(29);
    expect(e.totals.peak_memory_bytes).toBe(29 + 20);
    expect(e.totals.memory_power_mw).toBe(((400 + 5000) * 10 * 1e-9) / 3 * 1e3);
  });
  it("override comes from the per-op table", () => {
    const perOp: Record<string, OpOptions> = {
      b: { op: "b", combos: ["fp32/fp32/-/0", "int8/fp32/-/0"], supported: [true, true], latency_ms: [2, 0.25], weight_bytes: [0, 0], activation_bytes: [80, 50], dram_bytes: [500, 200], notes: [] },
    };
    const e = evaluate(tiny(), perOp, { model_wide: "int8-static", overrides: { b: "int8/fp32/-/0" } });
    expect(e.totals.latency_ms).toBe(0.75);
    expect(e.overridden[1]).toBe(1);
    expect(e.combo[1]).toBe("int8/fp32/-/0");
  });
  it("an override that moves an op to another unit pays the crossings of its edges", () => {
    // fp32: a and b on the GPU; b's int8/fp32 row falls back to the CPU. int8-static: b on the CPU, and its
    // bulk row pays the crossing of a's int8 output (0.1 ms + 2000 B / 1e6 B/s = 2.1 ms) on top of 1 ms.
    const base = tiny();
    const t: OptionTable = {
      ...base, metrics: { ...base.metrics, latency_ms: [[1, 0.5], [2, 3.1]] },
      units: [["gpu", "gpu"], ["gpu", "cpu"]], unit_names: ["gpu", "cpu"], crossing: { fixed_s: 1e-4, bytes_per_s: 1e6 },
    };
    const perOp: Record<string, OpOptions> = {
      a: { op: "a", combos: ["fp32/fp32/fp32/0", "int8/int8/int8/0"], supported: [true, true], latency_ms: [1, 0.5], weight_bytes: [100, 25], activation_bytes: [40, 10], dram_bytes: [1000, 300], unit: [1, 0], notes: [] },
      b: { op: "b", combos: ["fp32/fp32/-/0", "int8/fp32/-/0"], supported: [true, true], latency_ms: [2, 0.25], weight_bytes: [0, 0], activation_bytes: [80, 50], dram_bytes: [500, 200], unit: [0, 1], notes: [] },
    };
    const plain = evaluate(t, perOp, { model_wide: "fp32", overrides: {} });
    expect(plain.totals.latency_ms).toBe(3);
    const cpu = evaluate(t, perOp, { model_wide: "fp32", overrides: { b: "int8/fp32/-/0" } });
    expect(cpu.unit).toEqual(["gpu", "cpu"]);
    // a -> b: fp32>int8 conversion 0.5 + 1000 * 0.002 = 2.5 ms; crossing of a's fp32 output: 0.1 ms + 8000 B / 1e6 B/s = 8.1 ms
    expect(cpu.totals.latency_ms).toBeCloseTo(1 + 0.25 + 2.5 + 8.1, 12);
    expect(cpu.totals.memory_power_mw).toBeCloseTo(((1000 + 200 + 1000 * 5 + 8000) * 10 * 1e-9) / cpu.totals.latency_ms * 1e3, 15);
    // back on the GPU: no crossing, the preset's totals exactly
    expect(evaluate(t, perOp, { model_wide: "fp32", overrides: { b: "fp32/fp32/-/0" } }).totals).toEqual(plain.totals);
    // int8-static with a moved to b's CPU: the crossing b's bulk row pays comes off
    const joined = evaluate(t, perOp, { model_wide: "int8-static", overrides: { a: "fp32/fp32/fp32/0" } });
    expect(joined.unit).toEqual(["cpu", "cpu"]);
    expect(joined.totals.latency_ms).toBeCloseTo(1 + 3.1 - 2.1, 12);
  });
  it("errors name what is missing", () => {
    expect(() => computeTotals(tiny(), {}, { model_wide: "nope", overrides: {} })).toThrow(/unknown preset "nope"/);
    expect(() => computeTotals(tiny(), {}, { model_wide: "fp32", overrides: { a: "int8/int8/int8/0" } })).toThrow(/per-op options of a/);
    expect(parseCombo("int8/int8/lut4/50")).toEqual({ input: "int8", output: "int8", kernel: "lut4", sparsity: 50 });
  });
});

describe("totals rule on tests/fixtures/option_table_small.json", () => {
  const fx = (s: { fixture?: string }) => FIXTURES[s.fixture ?? "option_table_small.json"];
  const computed: ExpectedState[] = STATES.map((s) => ({ ...s, totals: { ...computeTotals(fx(s).table, fx(s).per_op, s.state) } }));
  if (process.env.UPDATE_FIXTURES) {
    writeFileSync(expectedUrl, JSON.stringify({
      about: "Totals of docs/option-table.md for states of option_table_small.json (and of `fixture` where named), computed by web/src/totals.ts. " +
        "Python (simulator/totals.py) must reproduce every number exactly (float64, plain left-to-right sums: ops in order, then edges).",
      fixture: "option_table_small.json",
      states: computed,
    }, null, 1) + "\n");
  }
  const expected = JSON.parse(readFileSync(expectedUrl, "utf8")) as { states: ExpectedState[] };
  it("covers the same states", () => {
    expect(expected.states.map((s) => s.name)).toEqual(STATES.map((s) => s.name));
  });
  for (const [k, s] of computed.entries()) {
    it(`matches to the last digit: ${s.name}`, () => {
      expect(expected.states[k].state).toEqual(s.state);
      for (const key of ["latency_ms", "fps", "size_bytes", "peak_memory_bytes", "memory_power_mw"]) {
        expect(Object.is(s.totals[key], expected.states[k].totals[key]), `${key}: ${s.totals[key]} vs ${expected.states[k].totals[key]}`).toBe(true);
      }
    });
  }
  it("overrides that cause conversions change latency", () => {
    const a = computeTotals(fixture.table, fixture.per_op, { model_wide: "int8-static", overrides: {} });
    const b = evaluate(fixture.table, fixture.per_op, STATES.find((s) => s.name.startsWith("int8-static +"))!.state);
    expect(b.conversion_in_ms[2]).toBeGreaterThan(0);
    expect(b.conversion_in_ms[3]).toBeGreaterThan(0);
    expect(b.totals.latency_ms).not.toBe(a.latency_ms);
  });
});

describe("the float-graph term", () => {
  it("is paid once while any op runs float on its unit, and only there", () => {
    const t: OptionTable = { ...tiny(), units: [["npu", "npu"], ["npu", "npu"]], unit_names: ["npu", "cpu"],
      constants: { ...tiny().constants, float_graph_ms: { npu: 0.3 } },
      conversion: { fixed_ms: 0.5, ms_per_element: { ...tiny().conversion.ms_per_element, "int8>fp16": 0.001, "fp16>fp32": 0.001 } } };
    const perOp: Record<string, OpOptions> = {
      b: { op: "b", combos: ["fp32/fp32/-/0", "int8/int8/-/0", "fp16/fp16/-/0", "int8/fp32/-/0"], supported: [true, true, true, true], latency_ms: [2, 1, 1.5, 0], weight_bytes: [0, 0, 0, 0], activation_bytes: [80, 20, 40, 0], dram_bytes: [500, 100, 250, 0], unit: [0, 0, 1, 0], notes: [] },
    };
    const f = evaluate(t, perOp, { model_wide: "fp32", overrides: {} });
    expect(floatGraphTerms(t, f.combo, f.unit, f.latency_ms)).toEqual([0.3]);
    expect(f.totals.latency_ms).toBe(0.3 + 1 + 2);
    expect(perInferenceStateMs(t, f)).toBe(0.3);
    // int8-static: b's bulk row is fp32 on the npu: still a float graph; b int8 too: none
    const mixed = evaluate(t, perOp, { model_wide: "int8-static", overrides: {} });
    expect(floatGraphTerms(t, mixed.combo, mixed.unit, mixed.latency_ms)).toEqual([0.3]);
    const q = evaluate(t, perOp, { model_wide: "int8-static", overrides: { b: "int8/int8/-/0" } });
    expect(floatGraphTerms(t, q.combo, q.unit, q.latency_ms)).toEqual([0]);
    expect(q.totals.latency_ms).toBe(0.5 + 1);
    // b float on the CPU: the npu's graph is int8
    const cpu = evaluate(t, perOp, { model_wide: "int8-static", overrides: { b: "fp16/fp16/-/0" } });
    expect(floatGraphTerms(t, cpu.combo, cpu.unit, cpu.latency_ms)).toEqual([0]);
    // an op that takes no time there (a constant folded at load: latency 0) runs nowhere: no term
    const folded = evaluate(t, { b: { ...perOp.b, combos: ["fp32/fp32/-/0", "int8/int8/-/0", "fp16/fp16/-/0", "fp32/fp16/-/0"] } },
      { model_wide: "int8-static", overrides: { b: "fp32/fp16/-/0" } });
    expect(floatGraphTerms(t, folded.combo, folded.unit, folded.latency_ms)).toEqual([0]);
    // a table without the constant: no term
    expect(floatGraphTerms(tiny(), f.combo, f.unit, f.latency_ms)).toEqual([]);
  });
  it("comes and goes with overrides on the real sweep", () => {
    const fg = FIXTURES[FG];
    const term = (s: { model_wide: string; overrides: Record<string, string> }) => {
      const e = evaluate(fg.table, fg.per_op, s);
      return floatGraphTerms(fg.table, e.combo, e.unit, e.latency_ms)[0];
    };
    expect(fg.table.constants.float_graph_ms).toEqual({ htp: 0.25 });
    expect(term({ model_wide: "fp16", overrides: {} })).toBe(0.25);
    expect(term({ model_wide: "int8-static", overrides: {} })).toBe(0);
    expect(term({ model_wide: "int8-static", overrides: { relu2: "fp16/fp16/-/0" } })).toBe(0.25);
    const a = computeTotals(fg.table, fg.per_op, { model_wide: "int8-static", overrides: {} });
    const b = computeTotals(FIXTURES[EP].table, FIXTURES[EP].per_op, { model_wide: "int8-static", overrides: {} });
    expect(a.latency_ms).toBe(b.latency_ms); // off: the table without the term's figures
  });
});

describe("the per-inference term", () => {
  it("is added to the latency once, in no op's figures", () => {
    const t = tiny();
    const withTerm: OptionTable = { ...t, constants: { ...t.constants, per_inference_ms: 0.25 } };
    const a = evaluate(t, {}, { model_wide: "fp32", overrides: {} });
    const b = evaluate(withTerm, {}, { model_wide: "fp32", overrides: {} });
    expect(perInferenceMs(withTerm)).toBe(0.25);
    expect(b.totals.latency_ms).toBe(0.25 + 1 + 2);
    expect(b.totals.latency_ms - a.totals.latency_ms).toBe(0.25);
    expect(Array.from(b.latency_ms)).toEqual(Array.from(a.latency_ms)); // op 0 keeps its own time
    expect(b.totals.size_bytes).toBe(a.totals.size_bytes);
    // a table without the term (the small fixture) adds nothing
    expect(perInferenceMs(fixture.table)).toBe(0);
  });
});
