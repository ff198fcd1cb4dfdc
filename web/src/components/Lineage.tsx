import { useEffect, useState } from "react";
import { collab } from "../api/client";
import type { AnalysisTree, Lineage as LineageData } from "../api/types";
import { AnalysisLink, Author, when } from "./AnalysesPanel";

function Forks({ nodes, current }: { nodes: AnalysisTree[]; current: string }) {
  if (!nodes.length) return null;
  return (
    <ul className="lineage-forks">
      {nodes.map((f) => (
        <li key={f.id} data-analysis-id={f.id} data-testid="lineage-fork">
          <AnalysisLink a={f} current={current} /> <span className="small-text"><Author a={f} /> <span className="muted">· {when(f.created_at)}</span></span>
          <Forks nodes={f.forks} current={current} />
        </li>
      ))}
    </ul>
  );
}

/** Where an analysis came from (its parent chain) and every fork made of it, as links. */
export function Lineage({ modelId, analysisId, revision }: { modelId: string; analysisId: string; revision: number }) {
  const [data, setData] = useState<LineageData | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const ac = new AbortController();
    collab.lineage(modelId, analysisId, ac.signal).then(
      (d) => (setData(d), setError(null)),
      (e) => !ac.signal.aborted && setError((e as Error).message),
    );
    return () => ac.abort();
  }, [modelId, analysisId, revision]);
  if (error) return <p className="error" role="alert">Could not load the lineage: {error}</p>;
  if (!data || data.analysis.id !== analysisId) return <p className="muted">Loading…</p>;
  const chain = [...data.parents].reverse();
  const a = data.analysis;
  return (
    <div className="lineage" data-testid="lineage">
      <h4>Forked from</h4>
      {chain.length ? (
        <ol className="lineage-parents" data-testid="lineage-parents">
          {chain.map((p) => (
            <li key={p.id} data-analysis-id={p.id}>
              <AnalysisLink a={p} /> <span className="small-text"><Author a={p} /></span>
            </li>
          ))}
        </ol>
      ) : (
        <p className="muted small-text">Nothing: this is an original analysis.</p>
      )}
      <div className="lineage-self">
        <strong>{a.name}</strong> <span className="small-text"><Author a={a} /> <span className="muted">· {when(a.created_at)}</span></span>
      </div>
      <h4>Forks ({countForks(a)})</h4>
      {a.forks.length ? <div data-testid="lineage-forks"><Forks nodes={a.forks} current={analysisId} /></div> : <p className="muted small-text">No forks yet.</p>}
    </div>
  );
}

function countForks(t: AnalysisTree): number {
  return t.forks.reduce((n, f) => n + 1 + countForks(f), 0);
}
