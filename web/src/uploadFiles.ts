// Files chosen or dropped together, grouped into uploads: each model with the external data files it keeps its
// weights in (torch's dynamo exporter writes `model.onnx` + `model.onnx.data`). The server checks that the model
// names exactly these files and merges them (compiler/external_data.py); here we only decide what goes with what.

/** Endings of the model files the server reads; any other file chosen with an ONNX model is one of its data files. */
const MODEL_ENDINGS = [".onnx", ".tflite", ".lite", ".pt2", ".mlmodel", ".mlpackage.zip", ".zip"];

export interface UploadGroup<F extends { name: string } = File> {
  model: F;
  data: F[];
}

export interface Grouped<F extends { name: string } = File> {
  groups: UploadGroup<F>[];
  errors: string[];
}

const isModel = (name: string) => MODEL_ENDINGS.some((e) => name.toLowerCase().endsWith(e));
const isOnnx = (name: string) => name.toLowerCase().endsWith(".onnx");
const stem = (name: string) => name.replace(/\.onnx$/i, "");

/** The ONNX model a data file belongs to: the only one chosen, else the one whose name (or name without `.onnx`)
 * starts the data file's name, longest first (`a.onnx.data` and `a.data` go with `a.onnx`). */
function ownerOf<F extends { name: string }>(data: F, onnx: F[]): F | null {
  if (onnx.length === 1) return onnx[0];
  const fits = onnx.filter((m) => data.name.startsWith(m.name) || data.name.startsWith(`${stem(m.name)}.`));
  fits.sort((a, b) => b.name.length - a.name.length);
  return fits[0] ?? null;
}

/** Group the files; a data file that no ONNX model chosen with it can own is an error that says what to choose. */
export function groupUploads<F extends { name: string }>(files: F[]): Grouped<F> {
  const models = files.filter((f) => isModel(f.name));
  const onnx = models.filter((f) => isOnnx(f.name));
  const groups = models.map((model) => ({ model, data: [] as F[] }));
  const errors: string[] = [];
  for (const f of files.filter((x) => !isModel(x.name))) {
    const owner = ownerOf(f, onnx);
    if (owner) groups.find((g) => g.model === owner)!.data.push(f);
    else if (onnx.length === 0)
      errors.push(`${f.name} is not a model file. Choose the model (.onnx, .tflite, .pt2, .mlmodel, .mlpackage.zip), with its external data file if it has one.`);
    else errors.push(`${f.name}: which model is it the data file of? Name it after its model (e.g. ${onnx[0].name}.data), or upload the models one at a time.`);
  }
  return { groups, errors };
}

/** "model.onnx + model.onnx.data": how an upload is named while it is sent. */
export const groupLabel = (g: UploadGroup<{ name: string }>) => [g.model, ...g.data].map((f) => f.name).join(" + ");
