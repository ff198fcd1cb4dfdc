// Files chosen together, grouped into uploads: each ONNX model with its external data files.
import { describe, expect, it } from "vitest";
import { groupLabel, groupUploads } from "../src/uploadFiles";

const f = (name: string) => ({ name });
const names = (files: { name: string }[]) => files.map((x) => x.name);

describe("groupUploads", () => {
  it("puts a dynamo export's data file with its model, whatever it is called", () => {
    const g = groupUploads([f("model.onnx.data"), f("model.onnx")]);
    expect(g.errors).toEqual([]);
    expect(g.groups.map((x) => [x.model.name, names(x.data)])).toEqual([["model.onnx", ["model.onnx.data"]]]);
    expect(groupLabel(g.groups[0])).toBe("model.onnx + model.onnx.data");
    expect(groupUploads([f("net.onnx"), f("weights.bin")]).groups[0].data).toEqual([f("weights.bin")]);
  });

  it("matches data files to several models by name, and says when it cannot", () => {
    const g = groupUploads([f("a.onnx"), f("ab.onnx"), f("ab.onnx.data"), f("a.data"), f("cnn.tflite")]);
    expect(g.errors).toEqual([]);
    expect(g.groups.map((x) => [x.model.name, names(x.data)])).toEqual([
      ["a.onnx", ["a.data"]], ["ab.onnx", ["ab.onnx.data"]], ["cnn.tflite", []]]);
    const bad = groupUploads([f("a.onnx"), f("b.onnx"), f("weights.bin")]);
    expect(bad.errors).toHaveLength(1);
    expect(bad.errors[0]).toContain("weights.bin: which model");
  });

  it("refuses a data file without a model", () => {
    const g = groupUploads([f("model.onnx.data")]);
    expect(g.groups).toEqual([]);
    expect(g.errors[0]).toContain("model.onnx.data is not a model file");
    expect(groupUploads([f("cnn.tflite"), f("x.bin")]).errors[0]).toContain("x.bin is not a model file");
  });
});
