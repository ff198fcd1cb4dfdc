// The inputs of a TFLite / LiteRT model, read from its flatbuffer by offsets (File.slice): Model.subgraphs[0] ->
// SubGraph.inputs -> Tensor {name, type, shape, shape_signature}. Table and field order: LiteRT's schema.fbs
// (Model: version 0, operator_codes 1, subgraphs 2; SubGraph: tensors 0, inputs 1; Tensor: shape 0, type 1,
// buffer 2, name 3, ..., shape_signature 7). Weight buffers are never read.
import { type ByteSource, FormatError, utf8, Window } from "./bytes";
import type { InputInfo, ModelInputs } from "./types";

// TensorType (schema.fbs)
const TFLITE_DTYPES = [
  "float32", "float16", "int32", "uint8", "int64", "string", "bool", "int16", "complex64", "int8", "float64",
  "complex128", "uint64", "resource", "variant", "uint32", "uint16", "int4", "bfloat16",
];

class Tables {
  constructor(readonly w: Window) {}

  /** position of field `i`'s value in table `t`, or 0 when absent */
  async field(t: number, i: number): Promise<number> {
    const vt = t - (await this.w.i32(t));
    const vtSize = await this.w.u16(vt);
    if (4 + 2 * i >= vtSize) return 0;
    const off = await this.w.u16(vt + 4 + 2 * i);
    return off ? t + off : 0;
  }

  /** the table, vector or string a reference field points to */
  async ref(t: number, i: number): Promise<number> {
    const p = await this.field(t, i);
    if (!p) return 0;
    const target = p + (await this.w.u32(p));
    if (target >= this.w.src.size) throw new FormatError(`offset out of range at byte ${p}`);
    return target;
  }

  async intVector(t: number, i: number): Promise<number[] | null> {
    const v = await this.ref(t, i);
    if (!v) return null;
    const n = await this.w.u32(v);
    const out: number[] = [];
    for (let k = 0; k < n; k++) out.push(await this.w.i32(v + 4 + 4 * k));
    return out;
  }

  async tableAt(vector: number, k: number): Promise<number> {
    const p = vector + 4 + 4 * k;
    return p + (await this.w.u32(p));
  }

  async string(t: number, i: number): Promise<string> {
    const s = await this.ref(t, i);
    if (!s) return "";
    return utf8.decode(await this.w.bytes(s + 4, await this.w.u32(s)));
  }
}

/** "TFL3" at bytes 4..8 */
export async function isTflite(src: ByteSource): Promise<boolean> {
  if (src.size < 8) return false;
  const b = await src.read(4, 4);
  return String.fromCharCode(...b) === "TFL3";
}

export async function readTfliteInputs(src: ByteSource): Promise<ModelInputs> {
  if (!(await isTflite(src))) throw new FormatError("not a TFLite model (no TFL3 identifier)");
  const w = new Window(src);
  const fb = new Tables(w);
  const model = await w.u32(0);
  const subgraphs = await fb.ref(model, 2);
  if (!subgraphs || (await w.u32(subgraphs)) === 0) throw new FormatError("the TFLite model has no subgraph");
  const main = await fb.tableAt(subgraphs, 0);
  const tensors = await fb.ref(main, 0);
  const nTensors = tensors ? await w.u32(tensors) : 0;
  const inputs: InputInfo[] = [];
  for (const idx of (await fb.intVector(main, 1)) ?? []) {
    if (idx < 0 || idx >= nTensors) throw new FormatError(`input tensor index ${idx} out of range`);
    const t = await fb.tableAt(tensors, idx);
    const typePos = await fb.field(t, 1);
    const type = typePos ? await w.u8(typePos) : 0;
    const shape = await fb.intVector(t, 0);
    const signature = await fb.intVector(t, 7);
    // shape_signature says which dims are dynamic (-1); shape holds the sizes the file was written with
    const dims = signature ?? shape;
    inputs.push({
      name: (await fb.string(t, 3)) || `input_${idx}`,
      dtype: TFLITE_DTYPES[type] ?? `type ${type}`,
      shape: dims ? dims.map((d) => (d < 0 ? null : d)) : null,
    });
  }
  return { format: "tflite", inputs, bytesRead: w.bytesRead };
}
