// "Solve for a budget": the server's budget solver (simulator/solver/) proposes per-op changes; the user
// reviews one proposal as a per-op diff and applies it as overrides (the header then shows the same totals).
import { useMemo, useState } from "react";
import { ApiError, api } from "../api/client";
import { type Budget, type Objective, type Proposal, type Solution, solver } from "../api/solver";
import type { AnalysisState, Op, OpOptions } from "../api/types";
import { fmtBytes, fmtMs } from "../format";
import type { Totals } from "../totals";
import { Modal, cls, signed } from "./Dialogs";

const OBJECTIVE_TEXT: Record<Objective, string> = {
  fewest_changes: "Fewest ops changed",
  most_float: "Most layers kept float",
  least_size: "Smallest size",
};

const LIMITS: { key: keyof Budget; label: string; unit: string; scale: number }[] = [
  { key: "latency_ms", label: "Latency", unit: "ms", scale: 1 },
  { key: "fps", label: "or frame rate", unit: "fps", scale: 1 },
  { key: "peak_memory_bytes", label: "Peak memory", unit: "MB", scale: 1e6 },
  { key: "size_bytes", label: "Size", unit: "MB", scale: 1e6 },
  { key: "memory_power_mw", label: "Memory power", unit: "mW", scale: 1 },
];

const TOTAL_ROWS: { key: keyof Totals; label: string; fmt: (v: number) => string }[] = [
  { key: "latency_ms", label: "Latency", fmt: (v) => `${fmtMs(v)} ms` },
  { key: "peak_memory_bytes", label: "Peak memory", fmt: fmtBytes },
  { key: "size_bytes", label: "Size", fmt: fmtBytes },
  { key: "memory_power_mw", label: "Memory power", fmt: (v) => `${v.toFixed(1)} mW` },
];

function Diff({ p, start, names }: { p: Proposal; start: Totals; names: Map<string, string> }) {
  return (
    <div data-testid="solve-diff">
      <table className="opts" data-testid="solve-totals">
        <thead><tr><th>Total</th><th className="num">now</th><th className="num">proposed</th><th className="num">change</th></tr></thead>
        <tbody>
          {TOTAL_ROWS.map((r) => (
            <tr key={r.key} data-metric={r.key}>
              <td>{r.label}</td>
              <td className="num">{r.fmt(start[r.key])}</td>
              <td className="num" data-testid={`solve-total-${r.key}`} data-value={p.totals[r.key]}>{r.fmt(p.totals[r.key])}</td>
              <td className={`num ${cls(p.totals[r.key] - start[r.key])}`}>{signed(p.totals[r.key] - start[r.key], r.fmt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="muted">{p.changes.length} op{p.changes.length === 1 ? "" : "s"} changed · {p.non_float_ops} op{p.non_float_ops === 1 ? "" : "s"} not float in the result</p>
      <div className="solve-changes" style={{ maxHeight: 320, overflow: "auto" }}>
        <table className="opts" data-testid="solve-changes">
          <thead><tr><th>Op</th><th>now</th><th>proposed</th><th className="num">Δ op time</th><th className="num">Δ weights</th></tr></thead>
          <tbody>
            {p.changes.map((c) => {
              const dt = c.after_metrics.latency_ms - c.before_metrics.latency_ms;
              const dw = c.after_metrics.weight_bytes - c.before_metrics.weight_bytes;
              return (
                <tr key={c.op} data-testid="solve-change" data-op={c.op} data-after={c.after}>
                  <td title={c.op}>{names.get(c.op) ?? c.op}</td>
                  <td><code>{c.before}</code>{c.unit_before !== c.unit_after ? ` (${c.unit_before})` : ""}</td>
                  <td><code>{c.after}</code>{c.unit_before !== c.unit_after ? ` (${c.unit_after})` : ""}</td>
                  <td className={`num ${cls(dt)}`}>{signed(dt, (v) => `${fmtMs(v)} ms`)}</td>
                  <td className={`num ${cls(dw)}`}>{signed(dw, fmtBytes)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <p className="muted">Op times are each op's own; conversions and partition crossings between ops are in the totals.</p>
    </div>
  );
}

export function SolveDialog(p: {
  modelId: string;
  state: AnalysisState;
  ops: Op[];
  selected: string[];
  onClose: () => void;
  onApply: (overrides: Record<string, string>, loaded: Record<string, OpOptions>) => void;
}) {
  const [form, setForm] = useState<Record<string, string>>({});
  const [keepSelected, setKeepSelected] = useState(false);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const [sol, setSol] = useState<Solution | null>(null);
  const [pick, setPick] = useState(0);
  const names = useMemo(() => new Map(p.ops.map((o) => [o.id, o.name || o.id])), [p.ops]);

  const budget = (): Budget => {
    const b: Budget = {};
    for (const l of LIMITS) {
      const v = form[l.key]?.trim();
      if (v) b[l.key] = Number(v) * l.scale;
    }
    return b;
  };
  const run = async () => {
    setBusy(true);
    setErr(null);
    setSol(null);
    try {
      setSol(await solver.solve(p.modelId, p.state, budget(), keepSelected ? p.selected : []));
      setPick(0);
    } catch (e) {
      setErr(e instanceof ApiError || e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  const apply = async (prop: Proposal) => {
    // The browser's totals rule reads each overridden op's per-op table: load those first.
    setBusy(true);
    try {
      const ids = Object.keys(prop.overrides);
      const loaded = await Promise.all(ids.map((op) => api.opOptions(p.modelId, op, p.state.target)));
      p.onApply(prop.overrides, Object.fromEntries(ids.map((op, k) => [op, loaded[k]])));
    } catch (e) {
      setErr(e instanceof Error ? e.message : String(e));
      setBusy(false);
    }
  };
  const shown = sol ? (sol.feasible ? sol.proposals[pick] : sol.closest) : null;
  return (
    <Modal title="Solve for a budget" onClose={p.onClose} testid="solve-dialog">
      <p className="muted">
        Limits on {p.state.target}, starting from {p.state.model_wide}
        {Object.keys(p.state.overrides).length ? ` + ${Object.keys(p.state.overrides).length} overrides` : ""}. Leave a
        field empty for no limit.
      </p>
      <form className="solve-form" style={{ display: "flex", flexWrap: "wrap", gap: "8px 16px", alignItems: "center" }} onSubmit={(e) => (e.preventDefault(), run())}>
        {LIMITS.map((l) => (
          <label key={l.key}>
            {l.label}{" "}
            <input type="number" min={0} step="any" className="narrow" value={form[l.key] ?? ""} data-testid={`solve-${l.key}`}
              aria-label={`${l.label} limit (${l.unit})`} onChange={(e) => setForm((f) => ({ ...f, [l.key]: e.target.value }))} /> {l.unit}
          </label>
        ))}
        <label className="check" title="The ops selected in the table or graph keep float activations and weights, unpruned">
          <input type="checkbox" checked={keepSelected} disabled={!p.selected.length} data-testid="solve-keep-float"
            onChange={(e) => setKeepSelected(e.target.checked)} /> Keep the {p.selected.length} selected op{p.selected.length === 1 ? "" : "s"} float
        </label>
        <button type="submit" disabled={busy} data-testid="solve-run">{busy && !sol ? "Solving…" : "Solve"}</button>
      </form>
      {err && <p className="error" role="alert" data-testid="solve-error">{err}</p>}
      {sol && !sol.feasible && (
        <p className="error" data-testid="solve-infeasible">
          No combination in the option table meets this budget. The closest found still exceeds: {sol.unmet.join(", ")}.
        </p>
      )}
      {sol?.feasible && (
        <div className="solve-tabs" role="tablist" data-testid="solve-proposals" data-seconds={sol.seconds}>
          {sol.proposals.map((x, k) => (
            <button key={k} role="tab" aria-selected={k === pick} className={k === pick ? "tab on" : "tab"} data-testid="solve-proposal"
              data-objectives={x.objectives.join(" ")} onClick={() => setPick(k)}>
              {x.objectives.map((o) => OBJECTIVE_TEXT[o]).join(" · ")}: {x.changes.length} change{x.changes.length === 1 ? "" : "s"}
            </button>
          ))}
        </div>
      )}
      {sol && shown && <Diff p={shown} start={sol.start} names={names} />}
      <div className="modal-actions">
        <button className="link" onClick={p.onClose}>Cancel</button>
        {sol?.feasible && shown && (
          <button disabled={busy} data-testid="solve-apply" onClick={() => apply(shown)}>
            Apply {shown.changes.length} change{shown.changes.length === 1 ? "" : "s"} as overrides
          </button>
        )}
      </div>
    </Modal>
  );
}
