import { useEffect, useState } from "react";
import { api, ApiError } from "../api/client";
import type { Model } from "../api/types";
import { type InputRow, rowsFor, toRequest } from "../inputs/editor";
import { readFileInputs } from "../inputs/read";
import { Modal } from "./Dialogs";
import { InputEditor } from "./InputEditor";

/** The shapes the last analysis used (or the ones planned or set for it, when it failed). */
export function shapesUsed(m: Model): Record<string, number[]> {
  const used = m.summary?.inputs;
  if (used && Object.keys(used).length) return used;
  const planned = Object.fromEntries((m.inputs ?? []).filter((i) => i.shape).map((i) => [i.name, i.shape!]));
  return Object.keys(planned).length ? planned : m.input_shapes ?? {};
}

/** The model's declared inputs: from the server when it has read them, else read here from the uploaded file. */
async function declaredInputs(m: Model, signal: AbortSignal): Promise<{ rows: InputRow[]; note: string | null }> {
  if (m.inputs?.length) {
    const declared = m.inputs.map((i) => ({ name: i.name, dtype: i.dtype, shape: i.declared }));
    return { rows: rowsFor(declared, shapesUsed(m), m.input_values), note: null };
  }
  if (m.format === "onnx" || m.format === "tflite") {
    const r = await fetch(`/api/models/${encodeURIComponent(m.id)}/download`, { signal });
    if (r.ok) {
      const read = await readFileInputs(await r.blob(), m.name);
      if (read.ok) return { rows: rowsFor(read.model.inputs, shapesUsed(m), m.input_values), note: null };
    }
  }
  return { rows: rowsFor([], shapesUsed(m), m.input_values), note: "This model's inputs are read on the server; set shapes by input name." };
}

export function ReanalyseDialog({ model, onClose, onQueued }: { model: Model; onClose: () => void; onQueued: (m: Model) => void }) {
  const [rows, setRows] = useState<InputRow[] | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    const ac = new AbortController();
    declaredInputs(model, ac.signal).then(
      (d) => (setRows(d.rows), setNote(d.note)),
      (e) => !ac.signal.aborted && (setRows(rowsFor([], shapesUsed(model), model.input_values)), setNote(`Could not read the inputs (${(e as Error).message}).`)),
    );
    return () => ac.abort();
  }, [model]);
  const req = rows ? toRequest(rows) : null;
  const submit = () => {
    if (!req || req.errors.length) return;
    setBusy(true);
    setError(null);
    api.reanalyze(model.id, { inputs: req.inputs, input_values: req.input_values }).then(onQueued, (e) => (setBusy(false), setError(e instanceof ApiError ? e.message : String(e))));
  };
  return (
    <Modal title="Re-analyse with other inputs" onClose={onClose} testid="reanalyse-dialog">
      <p className="muted">
        Set the shape of each input (free dims by name) and, where a model needs one, a value such as a sample rate. The whole
        analysis runs again with them; the results of this one are replaced when it is done.
      </p>
      {!rows && <p className="muted">Reading the model's inputs…</p>}
      {note && <p className="muted" data-testid="inputs-later">{note}</p>}
      {rows && <div className="dialog-scroll"><InputEditor rows={rows} onChange={setRows} allowAdd /></div>}
      {req && req.errors.length > 0 && (
        <ul className="error input-errors" role="alert" data-testid="input-errors">
          {req.errors.map((m) => <li key={m}>{m}</li>)}
        </ul>
      )}
      {error && <p className="error" role="alert" data-testid="reanalyse-error">{error}</p>}
      <div className="modal-actions">
        <button onClick={onClose}>Cancel</button>
        <button className="primary" data-testid="reanalyse-submit" disabled={!rows || busy || !!req?.errors.length} onClick={submit}>Re-analyse</button>
      </div>
    </Modal>
  );
}
