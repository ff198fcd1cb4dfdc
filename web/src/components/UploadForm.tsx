import { useRef, useState } from "react";
import { api, ApiError } from "../api/client";
import type { Model } from "../api/types";
import { type InputRow, rowsFor, toRequest } from "../inputs/editor";
import { readFileInputs, type ReadResult } from "../inputs/read";
import { fmtBytes } from "../format";
import { InputEditor } from "./InputEditor";

interface PendingUpload {
  key: number;
  name: string;
  fraction: number;
  error: string | null;
}

interface Chosen {
  file: File;
  read: ReadResult | null;
  rows: InputRow[];
}

/** Drop or choose a model file; its inputs are read here in the browser (ONNX, TFLite) so the user can set shapes
 * and values before uploading. Several files dropped at once are uploaded with default inputs. */
export function UploadForm({ onUploaded }: { onUploaded: (m: Model) => void }) {
  const [uploads, setUploads] = useState<PendingUpload[]>([]);
  const [drag, setDrag] = useState(false);
  const [chosen, setChosen] = useState<Chosen | null>(null);
  const input = useRef<HTMLInputElement>(null);
  const seq = useRef(0);

  const send = async (file: File, fields: { inputs?: Record<string, number[]>; input_values?: Record<string, number> } = {}) => {
    const key = ++seq.current;
    setUploads((u) => [...u, { key, name: file.name, fraction: 0, error: null }]);
    try {
      const m = await api.upload(file, (f) => setUploads((u) => u.map((x) => (x.key === key ? { ...x, fraction: f } : x))), fields);
      setUploads((u) => u.filter((x) => x.key !== key));
      onUploaded(m);
    } catch (e) {
      const msg = e instanceof ApiError ? e.message : String(e);
      setUploads((u) => u.map((x) => (x.key === key ? { ...x, error: msg } : x)));
    }
  };

  const choose = (files: FileList | File[]) => {
    const list = Array.from(files);
    if (list.length !== 1) {
      setChosen(null);
      list.forEach((f) => send(f));
      return;
    }
    const file = list[0];
    setChosen({ file, read: null, rows: [] });
    readFileInputs(file, file.name).then(
      (read) => setChosen((c) => (c?.file === file ? { file, read, rows: read.ok ? rowsFor(read.model.inputs) : [] } : c)),
      (e) => setChosen((c) => (c?.file === file ? { file, read: { ok: false, reason: `Could not read the inputs here (${(e as Error).message}).` }, rows: [] } : c)),
    );
  };

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
          <p>Drop a model file here (ONNX, TFLite, Core ML, PyTorch) or</p>
          <button onClick={() => input.current?.click()}>Choose a file…</button>
        </>
      )}
      <input
        ref={input}
        type="file"
        data-testid="upload-input"
        aria-label="Model file"
        hidden
        onChange={(e) => {
          if (e.target.files?.length) choose(e.target.files);
          e.target.value = "";
        }}
      />
      {chosen && (
        <form className="upload-form" data-testid="upload-form" data-read={chosen.read ? (chosen.read.ok ? "ok" : "later") : "reading"}
          onSubmit={(e) => {
            e.preventDefault();
            if (!req || req.errors.length) return;
            send(chosen.file, { inputs: req.inputs, input_values: req.input_values });
            setChosen(null);
          }}>
          <div className="upload-head">
            <b>{chosen.file.name}</b> <span className="muted">{fmtBytes(chosen.file.size)}</span>
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
