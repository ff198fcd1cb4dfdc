// The input editor's state and the request it makes: `inputs` (name -> full shape) and `input_values`
// (name -> number), as POST /api/models and POST /api/models/<id>/reanalyze take them.
import type { InputInfo } from "./types";

export interface InputRow {
  name: string;
  dtype: string;
  /** declared shape (null: rank unknown, typed as text) */
  declared: (number | string | null)[] | null;
  /** the user's text per declared dim ("" = the server's default); unused for fixed dims */
  dims: string[];
  /** shape as text ("1x3x224x224") when the rank is unknown */
  shapeText: string;
  value: string;
}

export interface InputRequest {
  inputs: Record<string, number[]>;
  input_values: Record<string, number>;
  errors: string[];
}

/** Rows for the declared inputs, pre-filled from shapes and values used before (e.g. a model's last analysis). */
export function rowsFor(declared: InputInfo[], shapes: Record<string, number[]> = {}, values: Record<string, number> = {}): InputRow[] {
  const rows = declared.map((d) => {
    const used = shapes[d.name];
    const fits = used && d.shape && used.length === d.shape.length;
    return {
      name: d.name,
      dtype: d.dtype,
      declared: d.shape,
      dims: d.shape ? d.shape.map((x, k) => (typeof x === "number" ? String(x) : fits ? String(used[k]) : "")) : [],
      shapeText: !d.shape && used ? used.join("x") : "",
      value: values[d.name] !== undefined ? String(values[d.name]) : "",
    };
  });
  // shapes and values set for names the file does not declare (read on the server): keep them editable
  for (const name of new Set([...Object.keys(shapes), ...Object.keys(values)])) {
    if (declared.some((d) => d.name === name)) continue;
    rows.push({ name, dtype: "", declared: null, dims: [], shapeText: shapes[name]?.join("x") ?? "", value: values[name] !== undefined ? String(values[name]) : "" });
  }
  return rows;
}

/** Set symbolic dim `dimName` everywhere it appears (the same name is the same size in every input). */
export function setNamedDim(rows: InputRow[], dimName: string, text: string): InputRow[] {
  return rows.map((r) => (r.declared?.includes(dimName) ? { ...r, dims: r.dims.map((v, k) => (r.declared![k] === dimName ? text : v)) } : r));
}

export function setDim(rows: InputRow[], row: number, k: number, text: string): InputRow[] {
  const d = rows[row].declared?.[k];
  if (typeof d === "string") return setNamedDim(rows, d, text);
  return rows.map((r, i) => (i === row ? { ...r, dims: r.dims.map((v, j) => (j === k ? text : v)) } : r));
}

/** A batch-like dim takes 1 when left blank, as the server does (compiler/inputs.py `is_batch_dim`). */
export function isBatchDim(name: string | null, axis: number): boolean {
  if (name === null || name === "" || name === "?") return axis === 0;
  return /^(batch(_?size)?|n|bs|b|num_batches|unk__0)$/i.test(name) || name.toLowerCase().includes("batch");
}

const posInt = (s: string) => /^\s*\d+\s*$/.test(s) && Number(s) > 0 && Number(s) <= 1 << 20;

export function toRequest(rows: InputRow[]): InputRequest {
  const out: InputRequest = { inputs: {}, input_values: {}, errors: [] };
  for (const r of rows) {
    if (!r.name.trim()) {
      if (r.shapeText.trim() || r.value.trim()) out.errors.push("An input without a name: give its name or clear the row.");
      continue;
    }
    if (r.declared) {
      const free = r.declared.map((d, k) => (typeof d === "number" ? null : k)).filter((k): k is number => k !== null);
      const filled = free.filter((k) => r.dims[k].trim() !== "");
      const bad = filled.filter((k) => !posInt(r.dims[k]));
      // blank batch-like dims of an input whose other dims are set take 1, like the server's default
      const size = (k: number) => (r.dims[k].trim() === "" && isBatchDim(r.declared![k] as string | null, k) ? 1 : Number(r.dims[k]));
      const missing = free.filter((k) => r.dims[k].trim() === "" && !isBatchDim(r.declared![k] as string | null, k));
      if (bad.length) out.errors.push(`${r.name}: ${bad.map((k) => `“${r.dims[k]}”`).join(", ")} is not a positive whole number.`);
      else if (filled.length && missing.length) {
        out.errors.push(`${r.name}: set ${missing.map((k) => r.declared![k] ?? `dim ${k}`).join(", ")} too, or leave every free dim blank for the defaults.`);
      } else if (filled.length) out.inputs[r.name] = r.declared.map((d, k) => (typeof d === "number" ? d : size(k)));
    } else if (r.shapeText.trim()) {
      const parts = r.shapeText.trim().split(/\s*[x×,]\s*/);
      if (parts.every(posInt)) out.inputs[r.name] = parts.map(Number);
      else out.errors.push(`${r.name}: write the shape as sizes separated by x, e.g. 1x3x224x224.`);
    }
    if (r.value.trim()) {
      const v = Number(r.value);
      if (Number.isFinite(v)) out.input_values[r.name] = v;
      else out.errors.push(`${r.name}: the value “${r.value}” is not a number.`);
    }
  }
  return out;
}

/** "1×3×H×W"-style text of a declared shape, symbolic names kept. */
export function shapeText(shape: (number | string | null)[] | null): string {
  return shape ? `[${shape.map((d) => (d === null ? "?" : String(d))).join(", ")}]` : "rank unknown";
}
