// A saved analysis against its parent, another analysis of the model or the unoptimized model: which options
// changed and what each did to the totals (computed by the server's totals rule: GET .../analyses/<id>/diff).
import { useEffect, useState } from "react";
import { collab, diffsApi } from "../../api/client";
import type { Analysis, AnalysisDiff as Diff, DiffTotals } from "../../api/types";
import { fmtBytes, fmtMs, fmtPct } from "../../format";
import type { SelectSource } from "../../selection";

interface Props {
  modelId: string;
  /** the analysis open on the page, if a saved one is */
  current: Analysis | null;
  /** bumps when analyses are saved or forked */
  revision: number;
  opName: (id: string) => string;
  onSelect: (ids: string[], focus: string | null, source: SelectSource) => void;
}

const ROWS: { key: keyof DiffTotals; label: string; fmt: (v: number) => string }[] = [
  { key: "latency_ms", label: "Latency", fmt: (v) => `${fmtMs(v)} ms` },
  { key: "size_bytes", label: "Size", fmt: fmtBytes },
  { key: "peak_memory_bytes", label: "Peak memory", fmt: fmtBytes },
  { key: "memory_power_mw", label: "Memory power", fmt: (v) => `${v.toFixed(1)} mW` },
];

const signed = (s: string, v: number) => (v > 0 ? "+" : "") + s;
const cls = (v: number, lowerIsBetter = true) => (Math.abs(v) < 1e-12 ? "muted" : (v < 0) === lowerIsBetter ? "better" : "worse");

function Delta({ k, v, base }: { k: keyof DiffTotals; v: number; base: number }) {
  const r = ROWS.find((x) => x.key === k)!;
  return (
    <span className={cls(v)}>
      {signed(r.fmt(v), v)} <span className="small-text">({fmtPct(base ? v / base : 0)})</span>
    </span>
  );
}

export function AnalysisDiff({ modelId, current, revision, opName, onSelect }: Props) {
  const [analyses, setAnalyses] = useState<Analysis[]>([]);
  const [subject, setSubject] = useState<string>(current?.id ?? "");
  const [against, setAgainst] = useState<string>(""); // "": its parent
  const [diff, setDiff] = useState<Diff | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const ac = new AbortController();
    collab.analyses(modelId, ac.signal).then((r) => setAnalyses(r.analyses), () => undefined);
    return () => ac.abort();
  }, [modelId, revision]);
  useEffect(() => {
    if (current) setSubject(current.id);
  }, [current?.id]); // eslint-disable-line react-hooks/exhaustive-deps
  const chosen = analyses.find((a) => a.id === subject) ?? null;

  useEffect(() => {
    if (!subject) return setDiff(null);
    const ac = new AbortController();
    setError(null);
    diffsApi.analysis(modelId, subject, against || undefined, ac.signal).then(setDiff, (e) => !ac.signal.aborted && (setDiff(null), setError(e.message)));
    return () => ac.abort();
  }, [modelId, subject, against, revision]);

  if (!analyses.length)
    return <p className="muted pad" data-testid="analysis-diff-empty">No saved analyses of this model yet: save one (Save as…) to compare it with its parent or another.</p>;
  const parent = chosen?.parent_id ? analyses.find((a) => a.id === chosen.parent_id) : null;
  return (
    <div className="diff-view" data-testid="analysis-diff">
      <div className="dist-tools">
        <label>
          Analysis{" "}
          <select value={subject} onChange={(e) => setSubject(e.target.value)} data-testid="diff-subject">
            <option value="" disabled>choose…</option>
            {analyses.map((a) => (<option key={a.id} value={a.id}>{a.name}</option>))}
          </select>
        </label>
        <label>
          against{" "}
          <select value={against} onChange={(e) => setAgainst(e.target.value)} data-testid="diff-against">
            <option value="">{parent ? `its parent (${parent.name})` : "its parent (none: unoptimized)"}</option>
            <option value="base">the unoptimized model</option>
            {analyses.filter((a) => a.id !== subject).map((a) => (<option key={a.id} value={a.id}>{a.name}</option>))}
          </select>
        </label>
        {diff && <span className="muted small-text">{diff.target} · {diff.changes.length} change{diff.changes.length === 1 ? "" : "s"} · predicted by the totals rule</span>}
      </div>
      {error && <p className="error" role="alert">{error}</p>}
      {diff && (
        <div className="diff-body">
          <table className="diff-totals" data-testid="analysis-diff-totals">
            <thead><tr><th /><th>{diff.against.name}</th><th>{diff.analysis.name}</th><th>Δ</th></tr></thead>
            <tbody>
              {ROWS.map((r) => (
                <tr key={r.key} data-metric={r.key} data-delta={diff.delta[r.key]}>
                  <th>{r.label}</th>
                  <td className="num">{r.fmt(diff.before[r.key])}</td>
                  <td className="num">{r.fmt(diff.after[r.key])}</td>
                  <td className="num"><Delta k={r.key} v={diff.delta[r.key]} base={diff.before[r.key]} /></td>
                </tr>
              ))}
            </tbody>
          </table>
          <div className="diff-list">
            <table>
              <thead><tr><th>Change</th><th>from</th><th>to</th><th title="This change alone, applied to the state compared against">Latency alone</th><th>Size alone</th></tr></thead>
              <tbody>
                {diff.changes.map((c) => (
                  <tr key={c.op ?? "*"} data-testid="analysis-change" data-op={c.op ?? ""} className={c.op ? "clickable" : ""}
                    onClick={() => c.op && onSelect([c.op], c.op, "diff")}>
                    <td>{c.kind === "model_wide" ? <b>model-wide option</b> : opName(c.op!)}</td>
                    <td className="mono">{c.before ?? <span className="muted">{c.kind === "override" ? "model-wide" : ""}</span>}</td>
                    <td className="mono">{c.after ?? <span className="muted">model-wide</span>}</td>
                    <td className="num">{c.alone ? <Delta k="latency_ms" v={c.alone.latency_ms} base={diff.before.latency_ms} /> : "–"}</td>
                    <td className="num">{c.alone ? <Delta k="size_bytes" v={c.alone.size_bytes} base={diff.before.size_bytes} /> : "–"}</td>
                  </tr>
                ))}
                {!diff.changes.length && <tr><td colSpan={5} className="muted">Same options: nothing changed.</td></tr>}
              </tbody>
            </table>
            {diff.changes.length > 1 && <p className="muted small-text">Options interact through the conversions between neighbours: the changes alone need not add up to Δ.</p>}
          </div>
        </div>
      )}
    </div>
  );
}
