import { describe, expect, it } from "vitest";
import type { OptionTable } from "../src/api/types";
import type { Evaluation } from "../src/totals";
import { unitColor, unitLabel, unitNames, unitsNow } from "../src/units";

// two ops, two presets; op b falls back to the CPU under fp16
const table = {
  ops: ["a", "b"],
  presets: [{ name: "fp32" }, { name: "fp16" }],
  combos: [["fp32/fp32/fp32/0", "fp16/fp16/fp16/0"], ["fp32/fp32/-/0", "fp32/fp32/-/0"]],
  units: [["gpu", "ane"], ["gpu", "cpu"]],
  unit_names: ["ane", "gpu", "cpu"],
} as unknown as OptionTable;
const ev = (combo: string[], overridden: number[]) => ({ combo, overridden: Uint8Array.from(overridden) }) as unknown as Evaluation;

describe("unitsNow", () => {
  it("takes the model-wide preset's unit", () => {
    expect(unitsNow(table, ev(["fp16/fp16/fp16/0", "fp32/fp32/-/0"], [0, 0]), "fp16")).toEqual(["ane", "cpu"]);
  });
  it("gives an override the unit of a preset with the same combo, else unknown", () => {
    expect(unitsNow(table, ev(["fp32/fp32/fp32/0", "int8/int8/-/0"], [1, 1]), "fp16")).toEqual(["gpu", null]);
  });
  it("takes an override's unit from its per-op row when the evaluation has it", () => {
    const known = { ...ev(["fp32/fp32/fp32/0", "int8/int8/-/0"], [1, 1]), unit: ["gpu", "cpu"] } as unknown as Evaluation;
    expect(unitsNow(table, known, "fp16")).toEqual(["gpu", "cpu"]);
  });
  it("is null for a table without units", () => {
    expect(unitsNow({ ...table, units: undefined }, ev(["x", "y"], [0, 0]), "fp32")).toBeNull();
  });
});

describe("unit colours", () => {
  it("shows the CPU fallback in its own colour and names units for people", () => {
    expect(unitColor("cpu", table.unit_names!)).not.toBe(unitColor("ane", table.unit_names!));
    expect(unitLabel("cpu")).toBe("CPU");
    expect(unitLabel(null)).toBe("unknown");
    expect(unitNames({ ...table, unit_names: undefined })).toEqual(["gpu", "ane", "cpu"]);
  });
});
