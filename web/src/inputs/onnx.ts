// The inputs of an ONNX model, read from the protobuf wire format without a protobuf library: ModelProto.graph
// (field 7) -> GraphProto.input (11), minus the initializers (5), whose names are read and whose data is skipped by
// its length. Field numbers: onnx/onnx.proto (ModelProto, GraphProto, ValueInfoProto, TypeProto, TensorShapeProto).
import { type ByteSource, FormatError, utf8, Window } from "./bytes";
import type { InputInfo, ModelInputs } from "./types";

// TensorProto.DataType (onnx.proto)
const ONNX_DTYPES: Record<number, string> = {
  1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string", 9: "bool",
  10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128", 16: "bfloat16",
  17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1",
};

interface Field {
  field: number;
  wire: number;
  /** varint value (wire type 0) */
  value: number;
  /** start and end of the value's bytes (wire type 2: the payload) */
  start: number;
  end: number;
}

async function varint(w: Window, pos: number): Promise<{ value: number; next: number }> {
  await w.ensure(pos, Math.min(10, w.src.size - pos));
  let n = 0;
  while (n < 10 && w.at(pos + n) & 0x80) n++;
  if (n === 10) throw new FormatError(`bad varint at byte ${pos}`);
  let value = 0;
  if (n < 7) {
    for (let k = n; k >= 0; k--) value = value * 128 + (w.at(pos + k) & 0x7f);
  } else {
    // int64 beyond 2^49, e.g. a dim of -1 written as ten bytes
    let big = 0n;
    for (let k = n; k >= 0; k--) big = (big << 7n) | BigInt(w.at(pos + k) & 0x7f);
    value = Number(BigInt.asIntN(64, big));
  }
  return { value, next: pos + n + 1 };
}

/** The fields of the message in [start, end), in file order. */
async function* fields(w: Window, start: number, end: number): AsyncGenerator<Field> {
  let pos = start;
  while (pos < end) {
    const tag = await varint(w, pos);
    const field = Math.floor(tag.value / 8), wire = tag.value & 7;
    if (field === 0) throw new FormatError(`bad field number at byte ${pos}`);
    pos = tag.next;
    if (wire === 0) {
      const v = await varint(w, pos);
      yield { field, wire, value: v.value, start: pos, end: v.next };
      pos = v.next;
    } else if (wire === 2) {
      const len = await varint(w, pos);
      const s = len.next, e = s + len.value;
      if (len.value < 0 || e > end) throw new FormatError(`field ${field} at byte ${pos} runs past its message`);
      yield { field, wire, value: len.value, start: s, end: e };
      pos = e;
    } else if (wire === 1 || wire === 5) {
      const e = pos + (wire === 1 ? 8 : 4);
      yield { field, wire, value: 0, start: pos, end: e };
      pos = e;
    } else throw new FormatError(`unsupported wire type ${wire} at byte ${pos}`);
  }
  if (pos !== end) throw new FormatError("a message ends inside a field");
}

async function text(w: Window, f: Field): Promise<string> {
  return utf8.decode(await w.bytes(f.start, f.end - f.start));
}

async function tensorName(w: Window, f: Field): Promise<string | null> {
  // TensorProto.name is field 8; raw_data (9) comes after it and is skipped unread
  for await (const x of fields(w, f.start, f.end)) if (x.field === 8 && x.wire === 2) return text(w, x);
  return null;
}

async function dim(w: Window, f: Field): Promise<number | string | null> {
  // TensorShapeProto.Dimension: dim_value (1) or dim_param (2)
  for await (const x of fields(w, f.start, f.end)) {
    if (x.field === 1 && x.wire === 0) return x.value;
    if (x.field === 2 && x.wire === 2) return (await text(w, x)) || null;
  }
  return null;
}

async function valueInfo(w: Window, f: Field): Promise<InputInfo> {
  const out: InputInfo = { name: "", dtype: "unknown", shape: null };
  for await (const x of fields(w, f.start, f.end)) {
    if (x.field === 1 && x.wire === 2) out.name = await text(w, x);
    if (x.field !== 2 || x.wire !== 2) continue;
    // TypeProto: tensor_type (1), sequence_type (4), map_type (5), sparse_tensor_type (8), optional_type (9)
    for await (const t of fields(w, x.start, x.end)) {
      if (t.wire !== 2) continue;
      if (t.field === 4 || t.field === 5 || t.field === 9) out.dtype = { 4: "sequence", 5: "map", 9: "optional" }[t.field]!;
      if (t.field !== 1 && t.field !== 8) continue;
      for await (const tt of fields(w, t.start, t.end)) {
        if (tt.field === 1 && tt.wire === 0) out.dtype = ONNX_DTYPES[tt.value] ?? `type ${tt.value}`;
        if (tt.field === 2 && tt.wire === 2) {
          out.shape = [];
          for await (const d of fields(w, tt.start, tt.end)) if (d.field === 1 && d.wire === 2) out.shape.push(await dim(w, d));
        }
      }
    }
  }
  return out;
}

export async function readOnnxInputs(src: ByteSource): Promise<ModelInputs> {
  const w = new Window(src);
  let graph: Field | null = null;
  let sawIrVersion = false;
  for await (const f of fields(w, 0, src.size)) {
    if (f.field === 1 && f.wire === 0) sawIrVersion = true;
    if (f.field === 7 && f.wire === 2) graph = f;
  }
  if (!graph || !sawIrVersion) throw new FormatError("not an ONNX model (no ir_version or graph)");
  const initializers = new Set<string>();
  const declared: InputInfo[] = [];
  for await (const f of fields(w, graph.start, graph.end)) {
    if (f.wire !== 2) continue;
    if (f.field === 5) {
      const n = await tensorName(w, f);
      if (n) initializers.add(n);
    } else if (f.field === 15) {
      // SparseTensorProto.values (1) is a TensorProto carrying the name
      for await (const x of fields(w, f.start, f.end)) if (x.field === 1 && x.wire === 2) {
        const n = await tensorName(w, x);
        if (n) initializers.add(n);
      }
    } else if (f.field === 11) declared.push(await valueInfo(w, f));
  }
  // models from IR < 4 list their initializers among the inputs too: those are weights, not inputs
  return { format: "onnx", inputs: declared.filter((i) => !initializers.has(i.name)), bytesRead: w.bytesRead };
}
