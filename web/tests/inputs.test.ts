// The browser's input reader (src/inputs/) against what onnx and LiteRT's schema read from the same files
// (tests/browser/input_fixtures.py writes fixtures/inputs/expected.json; with EDGESCOPE_INPUT_FIXTURES set, the
// directory it names holds more models, e.g. torchvision exports with dynamic axes, written by the Python test).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bufferSource } from "../src/inputs/bytes";
import { rowsFor, setDim, toRequest } from "../src/inputs/editor";
import { readInputs } from "../src/inputs/read";

interface Expected {
  file: string;
  inputs: { name: string; dtype: string; shape: (number | string | null)[] | null }[];
  max_bytes_read?: number;
}

function check(dir: string) {
  const expected = JSON.parse(readFileSync(join(dir, "expected.json"), "utf8")) as Expected[];
  for (const e of expected) {
    it(`reads the inputs of ${e.file}`, async () => {
      const bytes = new Uint8Array(readFileSync(join(dir, e.file)));
      const r = await readInputs(e.file, bufferSource(bytes));
      if (!r.ok) throw new Error(r.reason);
      expect(r.model.inputs).toEqual(e.inputs);
      if (e.max_bytes_read !== undefined) expect(r.model.bytesRead).toBeLessThanOrEqual(e.max_bytes_read);
    });
  }
}

describe("shipped fixtures", () => check(join(__dirname, "fixtures", "inputs")));
if (process.env.EDGESCOPE_INPUT_FIXTURES) describe("models written by the Python test", () => check(process.env.EDGESCOPE_INPUT_FIXTURES!));

describe("files the browser does not parse", () => {
  it("says Core ML and PyTorch inputs are read after upload", async () => {
    const r = await readInputs("model.pt2", bufferSource(new Uint8Array([0x50, 0x4b, 3, 4, 0, 0, 0, 0])));
    expect(r).toEqual({ ok: false, reason: "This format's inputs are read on the server after upload." });
  });
  it("refuses a file that is not a model without throwing", async () => {
    const r = await readInputs("notes.onnx", bufferSource(new TextEncoder().encode("this is not a model at all\n".repeat(10))));
    expect(r.ok).toBe(false);
  });
  it("refuses a truncated ONNX file", async () => {
    const bytes = new Uint8Array(readFileSync(join(__dirname, "fixtures", "inputs", "dynamic_dims.onnx")));
    const r = await readInputs("cut.onnx", bufferSource(bytes.subarray(0, bytes.length - 100)));
    expect(r.ok).toBe(false);
  });
});

describe("input editor", () => {
  const declared = [
    { name: "input_ids", dtype: "int64", shape: ["batch", "seq"] },
    { name: "mask", dtype: "bool", shape: ["batch", "seq"] },
    { name: "sr", dtype: "int64", shape: [] },
  ];
  it("sends nothing for the defaults", () => {
    expect(toRequest(rowsFor(declared))).toEqual({ inputs: {}, input_values: {}, errors: [] });
  });
  it("sets a symbolic dim in every input that has it", () => {
    let rows = rowsFor(declared);
    rows = setDim(rows, 0, 0, "1");
    rows = setDim(rows, 1, 1, "48");
    rows = rows.map((r) => (r.name === "sr" ? { ...r, value: "16000" } : r));
    expect(toRequest(rows)).toEqual({ inputs: { input_ids: [1, 48], mask: [1, 48] }, input_values: { sr: 16000 }, errors: [] });
  });
  it("asks for every free dim of an input but a batch-like one, or none", () => {
    expect(toRequest(setDim(rowsFor(declared), 0, 1, "48"))).toEqual({ inputs: { input_ids: [1, 48], mask: [1, 48] }, input_values: {}, errors: [] });
    const rows = setDim(rowsFor(declared), 0, 0, "2");
    expect(toRequest(rows).errors).toEqual(["input_ids: set seq too, or leave every free dim blank for the defaults.", "mask: set seq too, or leave every free dim blank for the defaults."]);
    expect(toRequest(setDim(rowsFor(declared), 0, 0, "0")).errors[0]).toContain("not a positive whole number");
  });
  it("pre-fills from the shapes and values used", () => {
    const rows = rowsFor(declared, { input_ids: [2, 64], mask: [2, 64], extra: [3] }, { sr: 8000 });
    expect(toRequest(rows)).toEqual({ inputs: { input_ids: [2, 64], mask: [2, 64], extra: [3] }, input_values: { sr: 8000 }, errors: [] });
  });
  it("reads a typed shape for inputs of unknown rank", () => {
    const rows = [{ name: "x", dtype: "", declared: null, dims: [], shapeText: "1x3 x 224×224", value: "" }];
    expect(toRequest(rows).inputs).toEqual({ x: [1, 3, 224, 224] });
    expect(toRequest([{ ...rows[0], shapeText: "1x?x3" }]).errors).toHaveLength(1);
  });
});
