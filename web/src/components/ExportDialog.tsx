import { useEffect, useState } from "react";
import { ApiError, collab, exportsApi } from "../api/client";
import type { AnalysisState, ExportFigures, ExportRecord, OpOptions, OptionTable } from "../api/types";
import { fmtBytes, fmtMs, fmtPct } from "../format";
import { Modal } from "./Dialogs";

const HOST_TARGETS = new Set(["ort-cpu/host", "litert-cpu/host"]);
/** a label without its own "predicted: " / "measured: " lead, which the dialog writes itself */
const bare = (label: string) => label.replace(/^(predicted|measured):\s*/i, "");

export const stateText = (s: AnalysisState) => {
  const n = Object.keys(s.overrides).length;
  return `${s.target} · ${s.model_wide}${n ? ` + ${n} op override${n > 1 ? "s" : ""}` : ""}`;
};

/** Why the exporter cannot write this state (from the option table's exportability), or null. */
export function exportBlocked(table: OptionTable, perOp: Record<string, OpOptions>, state: AnalysisState): string | null {
  if (table.exporter === null) return `Nothing can be exported for this model on ${state.target}.`;
  const p = table.presets.findIndex((x) => x.name === state.model_wide);
  if (p >= 0 && table.exportable?.[p] === false) return `${state.model_wide}: ${table.export_reasons?.[p] ?? "the exporter cannot write this option for this model."}`;
  for (const [op, combo] of Object.entries(state.overrides)) {
    const o = perOp[op];
    const k = o?.combos.indexOf(combo) ?? -1;
    if (o && k >= 0 && o.exportable?.[k] === false) return `The override ${combo} on ${op} cannot be exported for this model.`;
  }
  return null;
}

const sameState = (a: AnalysisState, b: AnalysisState) =>
  a.target === b.target && a.model_wide === b.model_wide && JSON.stringify(Object.entries(a.overrides).sort()) === JSON.stringify(Object.entries(b.overrides).sort());

function Row({ label, pred, meas, fmt, metric, compare = true, help }: { label: string; pred: number | null | undefined; meas: number | null | undefined; fmt: (v: number) => string; metric: string; compare?: boolean; help?: string }) {
  const err = compare && pred != null && meas != null && pred > 0 ? meas / pred - 1 : null;
  return (
    <tr data-metric={metric} title={help}>
      <td>{label}</td>
      <td className="num" data-testid={`export-predicted-${metric}`} data-value={pred ?? ""}>{pred != null ? fmt(pred) : "–"}</td>
      <td className="num" data-testid={`export-measured-${metric}`} data-value={meas ?? ""}>{meas != null ? fmt(meas) : "–"}</td>
      <td className="num muted" title="measured against predicted">{err != null ? fmtPct(err) : ""}</td>
    </tr>
  );
}

/** Predicted next to measured for one export. */
export function ExportResult({ e }: { e: ExportRecord }) {
  const p: ExportFigures = e.predicted ?? {}, m: ExportFigures = e.measured ?? {};
  const ms = (v: number) => `${fmtMs(v)} ms`;
  return (
    <div className="export-result" data-testid="export-result" data-status={e.status}>
      <table className="opts">
        <thead><tr><th></th><th className="num">Predicted</th><th className="num">Measured here</th><th className="num">Δ</th></tr></thead>
        <tbody>
          <Row label="Latency" metric="latency" pred={p.latency_ms} meas={m.latency_ms} fmt={ms} />
          <Row label="File size" metric="size" pred={p.size_bytes} meas={m.size_bytes ?? e.size_bytes} fmt={fmtBytes} />
          <Row label="Peak memory" metric="peak" pred={p.peak_memory_bytes} meas={m.peak_memory_bytes} fmt={fmtBytes} compare={false}
            help="Predicted: weights plus the largest working set of one task. Measured: the rise in the process's resident memory, which includes the runtime's own buffers, so the two are not compared." />
        </tbody>
      </table>
      <p className="muted small-text">
        {p.label && <>predicted: {bare(p.label)}. </>}
        {e.measured ? <>measured: {bare(m.label ?? "on this server")}.</> : HOST_TARGETS.has(e.state.target) ? "Not measured." : `${e.state.target.split("/")[0]} does not run on this server: only the file size is measured.`}
        {m.noise?.noisy && <> <span className="badge badge-noisy" data-testid="export-noisy">noisy</span> {m.noise.reason || "the runs were spread widely"}: take the measured latency with care.</>}
      </p>
      {e.notes.length > 0 && (
        <div className="notes" data-testid="export-notes">{e.notes.map((n) => <p key={n} className="note">{n}</p>)}</div>
      )}
    </div>
  );
}

const STAGES: Record<string, string> = {
  queued: "Waiting for a worker", predict: "Predicting its figures", export: "Writing the file", check: "Checking that it loads",
  measure: "Measuring it here", store: "Storing it",
};

function Progress({ e, since }: { e: ExportRecord; since: number }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 500);
    return () => clearInterval(t);
  }, []);
  const secs = Math.max(0, (now - since) / 1000);
  return (
    <div className="export-progress" data-testid="export-progress" aria-live="polite">
      {e.progress != null ? <progress max={100} value={e.progress} /> : <progress />}
      <span>{e.status === "queued" ? "Waiting for a worker" : (e.stage && STAGES[e.stage]) || "Building, checking and measuring the file"}… {secs.toFixed(0)} s</span>
    </div>
  );
}

/** Export the current state: build the file in a worker, follow its progress, download it, and compare what was
 * measured here with what was predicted. Lists the model's exports, each with the analysis that made it. */
export function ExportDialog({ modelId, state, analysisId, blocked, onClose }: { modelId: string; state: AnalysisState; analysisId: string | null; blocked: string | null; onClose: () => void }) {
  const [list, setList] = useState<ExportRecord[] | null>(null);
  const [names, setNames] = useState<Record<string, string>>({});
  const [current, setCurrent] = useState<ExportRecord | null>(null);
  const [since, setSince] = useState(Date.now());
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const ac = new AbortController();
    exportsApi.list(modelId, ac.signal).then((r) => setList(r.exports), (e) => !ac.signal.aborted && setError(e.message));
    collab.analyses(modelId, ac.signal).then((r) => setNames(Object.fromEntries(r.analyses.map((a) => [a.id, a.name]))), () => undefined);
    return () => ac.abort();
  }, [modelId]);

  // follow the export being built
  const busy = current && (current.status === "queued" || current.status === "running");
  useEffect(() => {
    if (!current || !busy) return;
    const t = setTimeout(() => {
      exportsApi.get(modelId, current.id).then(
        (e) => {
          setCurrent(e);
          if (e.status === "ready" || e.status === "failed") setList((l) => [e, ...(l ?? []).filter((x) => x.id !== e.id)]);
        },
        (e) => setError(e.message),
      );
    }, 700);
    return () => clearTimeout(t);
  }, [modelId, current, busy]);

  const start = () => {
    setError(null);
    setSince(Date.now());
    exportsApi.create(modelId, state, analysisId).then(setCurrent, (e) => setError(e instanceof ApiError ? e.message : String(e)));
  };
  const previous = list?.find((e) => e.status === "ready" && sameState(e.state, state)) ?? null;

  return (
    <Modal title="Export the optimized model" onClose={onClose} testid="export-dialog">
      <p>
        <b data-testid="export-state">{stateText(state)}</b>
        {analysisId && names[analysisId] && <span className="muted"> · analysis “{names[analysisId]}”</span>}
      </p>
      <p className="muted small-text">
        The worker writes the file for the target's runtime, checks that it loads, and measures it here when the target runs on this server ({[...HOST_TARGETS].join(", ")}).
      </p>
      {error && <p className="error" role="alert" data-testid="export-error">{error}</p>}
      {blocked && !current && <p className="error" role="alert" data-testid="export-blocked">Not exportable: {blocked}</p>}
      {!current && (
        <div className="modal-actions left">
          <button className="primary" onClick={start} disabled={!!blocked} data-testid="export-start">Build the file</button>
          {previous && <span className="muted small-text">This state was exported before ({new Date(previous.created_at).toLocaleString()}); see below.</span>}
        </div>
      )}
      {current && busy && <Progress e={current} since={since} />}
      {current?.status === "failed" && <p className="error" role="alert" data-testid="export-failed">Export failed: {current.error}</p>}
      {current?.status === "ready" && (
        <>
          <ExportResult e={current} />
          <div className="modal-actions left">
            <a className="button primary" href={current.download_url ?? "#"} download={current.filename ?? undefined} data-testid="export-download">
              Download {current.filename} ({fmtBytes(current.size_bytes ?? 0)})
            </a>
          </div>
        </>
      )}
      <h3 className="collab-h3">Exports of this model</h3>
      {list === null ? (
        <p className="muted">Loading…</p>
      ) : list.length === 0 ? (
        <p className="muted">None yet.</p>
      ) : (
        <div className="dialog-scroll exports-list">
          <table className="opts" data-testid="exports-list">
            <thead>
              <tr><th>State</th><th>From analysis</th><th>Status</th><th className="num">Latency pred. / meas.</th><th className="num">Size pred. / file</th><th></th></tr>
            </thead>
            <tbody>
              {list.map((e) => (
                <tr key={e.id} data-export-id={e.id} data-status={e.status}>
                  <td>{stateText(e.state)}</td>
                  <td data-testid="export-analysis">{e.analysis_id ? names[e.analysis_id] ?? "(deleted analysis)" : <span className="muted">unsaved state</span>}</td>
                  <td>{e.status === "failed" ? <span className="worse" title={e.error ?? ""}>failed</span> : e.status}</td>
                  <td className="num">{e.predicted?.latency_ms != null ? fmtMs(e.predicted.latency_ms) : "–"} / {e.measured?.latency_ms != null ? fmtMs(e.measured.latency_ms) : "–"} ms</td>
                  <td className="num">{e.predicted?.size_bytes != null ? fmtBytes(e.predicted.size_bytes) : "–"} / {e.size_bytes != null ? fmtBytes(e.size_bytes) : "–"}</td>
                  <td>{e.download_url && <a href={e.download_url} download={e.filename ?? undefined}>download</a>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="modal-actions">
        <button onClick={onClose}>Close</button>
      </div>
    </Modal>
  );
}
