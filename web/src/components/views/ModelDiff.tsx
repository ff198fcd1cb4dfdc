// This model against another version of the network: ops matched on the server (compiler/matching.py), totals and
// per-op deltas listed here, and the Δ time handed to the page (onCompare) for the table's column and the graph.
import { useEffect, useMemo, useState } from "react";
import { api, diffsApi } from "../../api/client";
import type { Model, ModelDiff as Diff, ModelDiffRow } from "../../api/types";
import { fmtBytes, fmtCount, fmtMs } from "../../format";
import type { SelectSource } from "../../selection";
import { type Compare, compareOf } from "../../views/compare";

interface Props {
  modelId: string;
  target: string | null;
  onCompare: (c: Compare | null) => void;
  onSelect: (ids: string[], focus: string | null, source: SelectSource) => void;
}

type Show = "changed" | "all" | "added" | "removed";
const LIMIT = 400;

const d = (x: [number | null, number | null]) => (x[1] ?? 0) - (x[0] ?? 0);
const signed = (s: string, v: number) => (v > 0 ? "+" : "") + s;
const cls = (v: number) => (Math.abs(v) < 1e-12 ? "muted" : v < 0 ? "better" : "worse");

export function ModelDiff({ modelId, target, onCompare, onSelect }: Props) {
  const [models, setModels] = useState<Model[]>([]);
  const [other, setOther] = useState("");
  const [diff, setDiff] = useState<Diff | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [show, setShow] = useState<Show>("changed");

  useEffect(() => {
    const ac = new AbortController();
    Promise.all([api.listModels(ac.signal, "mine"), api.listModels(ac.signal, "shared").catch(() => ({ models: [] }))]).then(
      ([a, b]) => setModels([...a.models, ...b.models].filter((m) => m.id !== modelId && m.status === "ready")),
      () => undefined,
    );
    return () => ac.abort();
  }, [modelId]);

  useEffect(() => {
    if (!other || !target) return;
    const ac = new AbortController();
    setBusy(true);
    setError(null);
    diffsApi.model(modelId, other, target, ac.signal).then(
      (x) => (setDiff(x), onCompare(compareOf(x)), setBusy(false)),
      (e) => !ac.signal.aborted && (setDiff(null), onCompare(null), setError(e.message), setBusy(false)),
    );
    return () => ac.abort();
  }, [modelId, other, target, onCompare]);

  const rows = useMemo(() => {
    if (!diff) return [];
    const keep = (r: ModelDiffRow) =>
      show === "all" ? true : show === "added" ? r.how === "added" : show === "removed" ? r.how === "removed" : r.how === "added" || r.how === "removed" || Math.abs(d(r.latency_ms)) > 0 || d(r.macs) !== 0;
    return diff.ops.filter(keep).sort((x, y) => Math.abs(d(y.latency_ms)) - Math.abs(d(x.latency_ms)));
  }, [diff, show]);

  // whether a total was measured here or predicted, for both models (the header shows both kinds of peak memory)
  const sourceOf = (m: readonly (boolean | null | undefined)[]) =>
    m.length !== 2 || m.some((x) => x == null) ? "" : m[0] && m[1] ? " (measured)" : !m[0] && !m[1] ? " (predicted)" : ` (${m[0] ? "measured" : "predicted"} / ${m[1] ? "measured" : "predicted"})`;
  const stop = () => (setOther(""), setDiff(null), onCompare(null));
  const T = diff?.totals;
  return (
    <div className="diff-view" data-testid="model-diff">
      <div className="dist-tools">
        <label>
          Compare with{" "}
          <select value={other} onChange={(e) => setOther(e.target.value)} data-testid="diff-model">
            <option value="">choose a model…</option>
            {models.map((m) => (<option key={m.id} value={m.id}>{m.name}</option>))}
          </select>
        </label>
        {busy && <span className="muted">matching ops…</span>}
        {diff && (
          <>
            <span className="muted small-text" data-testid="diff-counts">
              {diff.target} · matched {(diff.counts.name + diff.counts.structure + diff.counts.order).toLocaleString()} (by name {diff.counts.name}, structure {diff.counts.structure}, order {diff.counts.order}) · {diff.counts.added} only in {diff.b.name} · {diff.counts.removed} only here
            </span>
            <label>
              Show{" "}
              <select value={show} onChange={(e) => setShow(e.target.value as Show)} data-testid="diff-show">
                <option value="changed">changed</option>
                <option value="all">all</option>
                <option value="added">only in {diff.b.name}</option>
                <option value="removed">only in this model</option>
              </select>
            </label>
            <button className="small" onClick={stop}>Stop comparing</button>
          </>
        )}
      </div>
      {error && <p className="error" role="alert">{error}</p>}
      {!diff && !error && !busy && <p className="muted pad">Pick another model analysed for {target ?? "this target"} (another version of this network): its ops are matched to these by name, namespace and structure, the table gets a Δ column and the graph a “Δ vs other model” colouring.</p>}
      {diff && T && (
        <div className="diff-body">
          <table className="diff-totals" data-testid="model-diff-totals">
            <thead><tr><th /><th title={`this model: ${diff.a.name}`}>this ({diff.a.name})</th><th title={diff.b.name}>{diff.b.name}</th><th>Δ</th></tr></thead>
            <tbody>
              {([
                ["latency_ms", `Latency${sourceOf([diff.measured?.a, diff.measured?.b])}`, (v: number) => `${fmtMs(v)} ms`],
                ["macs", "MACs", fmtCount],
                ["weight_bytes", "Weights", fmtBytes],
                ["peak_memory_bytes", `Peak memory${sourceOf(T.peak_memory_bytes.measured ?? [])}`, fmtBytes],
                ["tasks", "Tasks", (v: number) => v.toLocaleString()],
              ] as const).map(([k, label, f]) => {
                const t = T[k];
                return (
                  <tr key={k} data-metric={k} data-delta={t.delta ?? ""}>
                    <th>{label}</th>
                    <td className="num">{t.a == null ? "–" : f(t.a)}</td>
                    <td className="num">{t.b == null ? "–" : f(t.b)}</td>
                    <td className="num">{t.delta == null ? "–" : <span className={cls(t.delta)}>{t.delta > 0 ? "+" : ""}{f(t.delta)}</span>}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <div className="diff-list">
            <table>
              <thead><tr><th>Task</th><th>Type</th><th>match</th><th>this (ms)</th><th>other (ms)</th><th>Δ (ms)</th><th>Δ MACs</th></tr></thead>
              <tbody>
                {rows.slice(0, LIMIT).map((r) => (
                  <tr key={`${r.a}|${r.b}`} data-testid="model-diff-row" data-a={r.a ?? ""} data-b={r.b ?? ""} data-how={r.how}
                    className={r.a ? "clickable" : ""} onClick={() => r.a && onSelect([r.a], r.a, "diff")}>
                    <td title={[r.name || r.b || r.a, r.a_name ? `here: ${r.a_name}` : r.namespace].filter(Boolean).join("\n")}>{r.name || r.b || r.a}{r.a_name && <span className="muted"> (here {r.a_name})</span>}</td>
                    <td>{r.type}</td>
                    <td><span className={`chip-how how-${r.how}`}>{r.how === "added" ? "only there" : r.how === "removed" ? "only here" : r.how}</span></td>
                    <td className="num">{r.latency_ms[0] == null ? "–" : fmtMs(r.latency_ms[0])}</td>
                    <td className="num">{r.latency_ms[1] == null ? "–" : fmtMs(r.latency_ms[1])}</td>
                    <td className="num"><span className={cls(d(r.latency_ms))}>{signed(fmtMs(d(r.latency_ms)), d(r.latency_ms))}</span></td>
                    <td className="num">{d(r.macs) ? (d(r.macs) < 0 ? "−" : "+") + fmtCount(Math.abs(d(r.macs))) : "0"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {rows.length > LIMIT && <p className="muted small-text">Largest {LIMIT} of {rows.length.toLocaleString()} by |Δ time|; the table and graph show all of them.</p>}
          </div>
        </div>
      )}
    </div>
  );
}
