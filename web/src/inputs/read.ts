// Which reader fits a chosen file: TFLite by its identifier, ONNX by its extension or by parsing as a ModelProto.
// Core ML and PyTorch files are not parsed here; their inputs are read by the server after upload.
import { type ByteSource, blobSource, FormatError } from "./bytes";
import { readOnnxInputs } from "./onnx";
import { isTflite, readTfliteInputs } from "./tflite";
import type { ModelInputs } from "./types";

export type ReadResult = { ok: true; model: ModelInputs } | { ok: false; reason: string };

const LATER = /\.(mlmodel|mlpackage|zip|pt2|pt|pth)$/i;

export async function readInputs(name: string, src: ByteSource): Promise<ReadResult> {
  try {
    if (await isTflite(src)) return { ok: true, model: await readTfliteInputs(src) };
    if (LATER.test(name)) return { ok: false, reason: "This format's inputs are read on the server after upload." };
    return { ok: true, model: await readOnnxInputs(src) };
  } catch (e) {
    if (e instanceof FormatError) {
      const onnx = /\.onnx$/i.test(name);
      return { ok: false, reason: onnx ? `Could not read the ONNX inputs here (${e.message}); the server reads them after upload.` : "Not an ONNX or TFLite file; its inputs are read on the server after upload." };
    }
    throw e;
  }
}

export const readFileInputs = (file: File | Blob, name: string) => readInputs(name, blobSource(file));
