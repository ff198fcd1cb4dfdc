/** One declared model input as read from the file: a dim is a number (fixed), a name (symbolic, e.g. "batch"),
 * or null (dynamic without a name, e.g. TFLite's -1). `shape` is null when the rank is unknown. */
export interface InputInfo {
  name: string;
  dtype: string;
  shape: (number | string | null)[] | null;
}

export interface ModelInputs {
  format: "onnx" | "tflite";
  inputs: InputInfo[];
  /** bytes read from the file to find them (the weights are skipped) */
  bytesRead: number;
}
