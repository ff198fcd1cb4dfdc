import { useEffect, useState } from "react";
import { collab, exportsApi } from "../api/client";
import type { Analysis, ExportRecord } from "../api/types";
import { fmtBytes, fmtMs } from "../format";
import { analysisUrl } from "../collab";
import { navigate } from "../router";
import { useSession } from "../session";

export const when = (iso: string) => new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });

export function AnalysisLink({ a, current }: { a: Analysis; current?: string | null }) {
  const url = analysisUrl(a);
  if (a.id === current) return <strong className="analysis-name" aria-current="page">{a.name}</strong>;
  return (
    <a href={url} className="analysis-name" onClick={(e) => (e.preventDefault(), navigate(url))}>
      {a.name}
    </a>
  );
}

export function Author({ a }: { a: Analysis }) {
  const me = useSession().me?.user.id;
  return (
    <span className="muted" data-testid="analysis-author" title={a.owner.email}>
      {a.owner.id === me ? "you" : a.owner.name || a.owner.email}
    </span>
  );
}

/** Every saved analysis of the model, with who made it and when. */
export function AnalysesPanel({ modelId, current, revision, canDeleteAll }: { modelId: string; current: string | null; revision: number; canDeleteAll: boolean }) {
  const [list, setList] = useState<Analysis[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [bump, setBump] = useState(0);
  const [exports, setExports] = useState<ExportRecord[]>([]);
  useEffect(() => {
    const ac = new AbortController();
    collab.analyses(modelId, ac.signal).then(
      (r) => (setList(r.analyses), setError(null)),
      (e) => !ac.signal.aborted && setError((e as Error).message),
    );
    exportsApi.list(modelId, ac.signal).then((r) => setExports(r.exports), () => undefined);
    return () => ac.abort();
  }, [modelId, revision, bump]);
  const byId = new Map((list ?? []).map((a) => [a.id, a]));
  if (error) return <p className="error" role="alert">Could not load the analyses: {error}</p>;
  if (!list) return <p className="muted">Loading…</p>;
  if (!list.length) return <p className="muted" data-testid="no-analyses">No saved analyses yet. Optimize some ops, then "Save analysis".</p>;
  return (
    <ul className="analysis-list" data-testid="analysis-list">
      {[...list].reverse().map((a) => {
        const parent = a.parent_id ? byId.get(a.parent_id) : null;
        return (
          <li key={a.id} data-analysis-id={a.id} className={a.id === current ? "current" : ""}>
            <div>
              <AnalysisLink a={a} current={current} /> {a.can_edit ? "" : <span className="badge">read-only</span>}
            </div>
            <div className="small-text">
              <Author a={a} /> <span className="muted">· {when(a.created_at)}</span>
              {Date.parse(a.updated_at) - Date.parse(a.created_at) > 1000 && <span className="muted"> · saved {when(a.updated_at)}</span>}
            </div>
            {a.parent_id && <div className="small-text muted">fork of {parent ? parent.name : "a deleted analysis"}</div>}
            {a.notes && <div className="small-text notes-text">{a.notes}</div>}
            <AnalysisExports exports={exports.filter((e) => e.analysis_id === a.id)} />
            {(a.can_edit || canDeleteAll) && (
              <button
                className="link danger small-text"
                onClick={() => {
                  if (!confirm(`Delete the analysis "${a.name}"? Its forks stay.`)) return;
                  collab.deleteAnalysis(modelId, a.id).then(
                    () => (a.id === current ? navigate(`/m/${encodeURIComponent(modelId)}`) : setBump((b) => b + 1)),
                    (e) => setError((e as Error).message),
                  );
                }}
              >
                Delete
              </button>
            )}
          </li>
        );
      })}
    </ul>
  );
}

/** The files exported from one analysis, each with its predicted and measured latency and a download link. */
function AnalysisExports({ exports }: { exports: ExportRecord[] }) {
  if (!exports.length) return null;
  return (
    <ul className="analysis-exports small-text" data-testid="analysis-exports">
      {exports.map((e) => (
        <li key={e.id} data-export-id={e.id} data-status={e.status}>
          export {e.status === "ready" && e.download_url ? <a href={e.download_url} download={e.filename ?? undefined}>{e.filename}</a> : <span className={e.status === "failed" ? "worse" : "muted"} title={e.error ?? ""}>{e.status}</span>}
          {e.status === "ready" && (
            <span className="muted">
              {" "}· {e.predicted?.latency_ms != null ? `${fmtMs(e.predicted.latency_ms)} ms predicted` : ""}
              {e.measured?.latency_ms != null ? `, ${fmtMs(e.measured.latency_ms)} ms measured` : ""}
              {e.size_bytes != null ? ` · ${fmtBytes(e.size_bytes)}` : ""}
            </span>
          )}
        </li>
      ))}
    </ul>
  );
}
