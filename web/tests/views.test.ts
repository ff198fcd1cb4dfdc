import { describe, expect, it } from "vitest";
import type { ModelDiff, Op } from "../src/api/types";
import type { Row } from "../src/components/OpTable";
import { selectionMask } from "../src/selection";
import { compareOf } from "../src/views/compare";
import { categories, column, histogram, idsInBins, idsInRect, metricOf, selectedPerBin, wantsLog } from "../src/views/metrics";

const row = (i: number, o: Partial<Op>, extra: Partial<Row> = {}): Row => ({
  i,
  op: { id: `t${i}`, index: i, name: `n${i}`, type: "Conv", namespace: "", latency_ms: 1, p25_ms: 1, p75_ms: 1, share: 0.1, measured: true, macs: 1000, weight_bytes: 10, activation_bytes: 90, source_nodes: [], inputs: [], outputs: [], ...o },
  pred_ms: o.latency_ms ?? 1, delta_ms: 0, conv_ms: 0, combo: "fp32/fp32/fp32/0", unit: "CPU", optimized: false, ...extra,
});

describe("distributions", () => {
  const rows = [row(0, { latency_ms: 0.5, macs: 0 }), row(1, { latency_ms: 1.5, macs: 10 }), row(2, { latency_ms: 2.5, macs: 1e6 }), row(3, { latency_ms: 4.5, macs: 1e7, type: "Add" }, { unit: "GPU" })];

  it("bins values and maps a brushed bin range back to tasks", () => {
    const h = histogram(column(rows, "latency", false), 4); // [0.5, 1.5, 2.5, 3.5, 4.5]
    expect(h.edges).toEqual([0.5, 1.5, 2.5, 3.5, 4.5]);
    expect(h.counts).toEqual([1, 1, 1, 1]); // 4.5 falls in the last bin, its right edge included
    expect(idsInBins(rows, h, 1, 2)).toEqual({ ids: ["t1", "t2"], focus: "t2" }); // the slowest gets the focus
    expect(selectedPerBin(rows, h, new Set(["t3", "t0"]))).toEqual([1, 0, 0, 1]);
    // the page's mask over the same rows gives the same counts without looking ids up
    expect(selectedPerBin(rows, h, new Set(["t3", "t0"]), selectionMask(["t3", "t0"], new Map(rows.map((r, k) => [r.op.id, k])), 4))).toEqual([1, 0, 0, 1]);
  });

  it("plots log10 on a log axis and leaves zeros out", () => {
    expect(wantsLog(rows, "macs")).toBe(true);
    expect(wantsLog(rows, "latency")).toBe(false);
    expect(wantsLog(rows, "delta")).toBe(false); // signed: never log
    const c = column(rows, "macs", true);
    expect(Number.isNaN(c[0])).toBe(true);
    expect(c[2]).toBeCloseTo(6);
    expect(histogram(c, 3).missing).toBe(1);
  });

  it("selects the tasks inside a brushed rectangle of the scatter", () => {
    const xs = column(rows, "macs", true), ys = column(rows, "latency", false);
    expect(idsInRect(rows, xs, ys, 0.5, 6.5, 1, 3)).toEqual({ ids: ["t1", "t2"], focus: "t2" });
    expect(idsInRect(rows, xs, ys, 9, 10, 1, 3)).toEqual({ ids: [], focus: null });
  });

  it("arithmetic intensity is MACs per byte moved; share in percent", () => {
    expect(metricOf(rows[2], "intensity")).toBe(1e6 / 100);
    expect(metricOf(rows[0], "share")).toBeCloseTo(10);
    expect(Number.isNaN(metricOf(row(9, { weight_bytes: 0, activation_bytes: 0 }), "intensity"))).toBe(true);
  });

  it("colours by the most common categories", () => {
    const c = categories(rows, "unit");
    expect(c.names).toEqual(["CPU", "GPU"]);
    expect(Array.from(c.of)).toEqual([0, 0, 0, 1]);
    expect(categories(rows, "type", 1).names).toEqual(["other"]);
  });
});

describe("model diff", () => {
  it("keys Δ time by this model's op ids; removed ops count as their time saved", () => {
    const d = {
      b: { id: "m2", name: "v2.onnx" },
      ops: [
        { a: "t0", b: "u0", how: "name", latency_ms: [1, 1.5] },
        { a: "t1", b: null, how: "removed", latency_ms: [2, null] },
        { a: null, b: "u9", how: "added", latency_ms: [null, 3] },
      ],
    } as unknown as ModelDiff;
    const c = compareOf(d);
    expect(c.label).toBe("vs v2.onnx");
    expect([...c.delta]).toEqual([["t0", 0.5], ["t1", -2]]);
    expect(c.how.get("t1")).toBe("removed");
  });
});
