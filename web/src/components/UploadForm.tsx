import { useRef, useState } from "react";
import { api, ApiError } from "../api/client";
import type { Model } from "../api/types";
import { type InputRow, rowsFor, toRequest } from "../inputs/editor";
import { readFileInputs, type ReadResult } from "../inputs/read";
import { fmtBytes } from "../format";
import { groupLabel, groupUploads, type UploadGroup } from "../uploadFiles";
import { InputEditor } from "./InputEditor";

interface PendingUpload {
  key: number;
  name: string;
  fraction: number;
  error: string | null;
}

interface Chosen {
  file: File;
  data: File[]; // its external data files (ONNX), sent with it
  read: ReadResult | null;
  rows: InputRow[];
}

/** Drop or choose a model file, an ONNX model with its external data file(s) too; the model's inputs are read here in
 * the browser (ONNX, TFLite: the model file only) so the user can set shapes and values before uploading. Several
 * models dropped at once are uploaded with default inputs, each with its data files. */
export function UploadForm({ onUploaded }: { onUploaded: (m: Model) => void }) {
  const [uploads, setUploads] = useState<PendingUpload[]>([]);
  const [drag, setDrag] = useState(false);
  const [chosen, setChosen] = useState<Chosen | null>(null);
  const [chooseErrors, setChooseErrors] = useState<string[]>([]);
  const input = useRef<HTMLInputElement>(null);
  const dataInput = useRef<HTMLInputElement>(null);
  const seq = useRef(0);

  const send = async (group: UploadGroup, fields: { inputs?: Record<string, number[]>; input_values?: Record<string, number> } = {}) => {
    const key = ++seq.current;
    setUploads((u) => [...u, { key, name: groupLabel(group), fraction: 0, error: null }]);
    try {
      const progress = (f: number) => setUploads((u) => u.map((x) => (x.key === key ? { ...x, fraction: f } : x)));
      const m = await api.upload(group.model, progress, fields, group.data);
      setUploads((u) => u.filter((x) => x.key !== key));
      onUploaded(m);
    } catch (e) {
      const msg = e instanceof ApiError ? e.message : String(e);
      setUploads((u) => u.map((x) => (x.key === key ? { ...x, error: msg } : x)));
    }
  };

  const choose = (files: FileList | File[]) => {
    const { groups, errors } = groupUploads(Array.from(files));
    setChooseErrors(errors);
    if (errors.length) return setChosen(null);
    if (groups.length !== 1) {
      setChosen(null);
      groups.forEach((g) => send(g));
      return;
    }
    const { model: file, data } = groups[0];
    setChosen({ file, data, read: null, rows: [] });
    // The quick parse reads the model file only: its inputs, never the weights in the data files.
    readFileInputs(file, file.name).then(
      (read) => setChosen((c) => (c?.file === file ? { ...c, read, rows: read.ok ? rowsFor(read.model.inputs) : [] } : c)),
      (e) => setChosen((c) => (c?.file === file ? { ...c, read: { ok: false, reason: `Could not read the inputs here (${(e as Error).message}).` }, rows: [] } : c)),
    );
  };
  const addData = (files: FileList) => {
    const added = Array.from(files); // now: the input is cleared before React runs the update
    setChosen((c) => c && { ...c, data: [...c.data.filter((d) => !added.some((f) => f.name === d.name)), ...added] });
  };
  const isOnnx = chosen?.file.name.toLowerCase().endsWith(".onnx") ?? false;

  const req = chosen ? toRequest(chosen.rows) : null;
  return (
    <section
      className={`dropzone ${drag ? "drag" : ""}`}
      onDragOver={(e) => (e.preventDefault(), setDrag(true))}
      onDragLeave={() => setDrag(false)}
      onDrop={(e) => {
        e.preventDefault();
        setDrag(false);
        if (e.dataTransfer.files.length) choose(e.dataTransfer.files);
      }}
      aria-label="Upload a model"
    >
      {!chosen && (
        <>
          <p>Drop a model file here (ONNX with its .data file if it has one, TFLite, Core ML, PyTorch) or</p>
          <button onClick={() => input.current?.click()}>Choose files…</button>
        </>
      )}
      <input
        ref={input}
        type="file"
        data-testid="upload-input"
        aria-label="Model file and its data files"
        multiple
        hidden
        onChange={(e) => {
          if (e.target.files?.length) choose(e.target.files);
          e.target.value = "";
        }}
      />
      {chooseErrors.length > 0 && (
        <ul className="error input-errors" role="alert" data-testid="choose-errors">
          {chooseErrors.map((m) => <li key={m}>{m}</li>)}
        </ul>
      )}
      {chosen && (
        <form className="upload-form" data-testid="upload-form" data-read={chosen.read ? (chosen.read.ok ? "ok" : "later") : "reading"}
          onSubmit={(e) => {
            e.preventDefault();
            if (!req || req.errors.length) return;
            send({ model: chosen.file, data: chosen.data }, { inputs: req.inputs, input_values: req.input_values });
            setChosen(null);
          }}>
          <div className="upload-head">
            <b>{chosen.file.name}</b> <span className="muted">{fmtBytes(chosen.file.size)}</span>
            {chosen.data.map((d) => (
              <span key={d.name} className="data-file" data-testid="upload-data-file">
                {" + "}<b>{d.name}</b> <span className="muted">{fmtBytes(d.size)}</span>
                <button type="button" className="link" aria-label={`Remove ${d.name}`}
                  onClick={() => setChosen((c) => c && { ...c, data: c.data.filter((x) => x !== d) })}>×</button>
              </span>
            ))}
            {chosen.read?.ok && (
              <span className="muted small-text" data-testid="inputs-read-bytes">
                {chosen.read.model.format.toUpperCase()} · {chosen.read.model.inputs.length} input{chosen.read.model.inputs.length === 1 ? "" : "s"} read from {fmtBytes(chosen.read.model.bytesRead)}
              </span>
            )}
          </div>
          {!chosen.read && <p className="muted">Reading the model's inputs…</p>}
          {chosen.read && !chosen.read.ok && <p className="muted" data-testid="inputs-later">{chosen.read.reason} You can still set shapes by input name.</p>}
          {chosen.read && (
            <>
              <InputEditor rows={chosen.rows} onChange={(rows) => setChosen((c) => c && { ...c, rows })} allowAdd={!chosen.read.ok} />
              <p className="muted small-text">Leave free dims and values blank for the defaults (batch-like dims 1; the server picks the rest and says which input to set if the model cannot run).</p>
            </>
          )}
          {req && req.errors.length > 0 && (
            <ul className="error input-errors" role="alert" data-testid="input-errors">
              {req.errors.map((m) => <li key={m}>{m}</li>)}
            </ul>
          )}
          {isOnnx && (
            <p className="muted small-text">
              Weights in an external data file (torch.onnx.export with dynamo writes <code>{chosen.file.name}.data</code>)? Add it under the name the model gives it:{" "}
              <button type="button" className="link" data-testid="upload-add-data" onClick={() => dataInput.current?.click()}>Add data file…</button>
              <input ref={dataInput} type="file" multiple hidden data-testid="upload-data-input" aria-label="External data files"
                onChange={(e) => {
                  if (e.target.files?.length) addData(e.target.files);
                  e.target.value = "";
                }} />
            </p>
          )}
          <div className="modal-actions">
            <button type="button" onClick={() => setChosen(null)}>Cancel</button>
            <button className="primary" type="submit" data-testid="upload-submit" disabled={!chosen.read || !!req?.errors.length}>Upload and analyse</button>
          </div>
        </form>
      )}
      {uploads.map((u) => (
        <div key={u.key} className="upload" data-testid="upload">
          <span>{u.name}</span>
          {u.error ? (
            <p className="error" role="alert" data-testid="upload-error">
              Upload of {u.name} failed: {u.error}
              <button className="link" onClick={() => setUploads((x) => x.filter((y) => y.key !== u.key))}>
                Dismiss
              </button>
            </p>
          ) : (
            <progress max={1} value={u.fraction} aria-label={`Uploading ${u.name}`} />
          )}
        </div>
      ))}
    </section>
  );
}
