import { useEffect, useMemo, useRef, useState } from "react";
import type { AnalysisState, OpOptions, OptionTable } from "../api/types";
import { fmtBytes, fmtMs, fmtPct, labelText } from "../format";
import { type Evaluation, type Totals, computeTotals, parseCombo } from "../totals";

/** A dialog: focus moves into it (the first field, else the first control), Escape and a backdrop click
 * close it, and focus returns where it was. `narrow` for forms. */
export function Modal({ title, onClose, children, testid, narrow = false }: { title: string; onClose: () => void; children: React.ReactNode; testid: string; narrow?: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const prev = document.activeElement as HTMLElement | null;
    const root = ref.current;
    (root?.querySelector<HTMLElement>("input, select, textarea") ?? root?.querySelector<HTMLElement>("button:not(.link)"))?.focus();
    const key = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", key);
    return () => (window.removeEventListener("keydown", key), prev?.focus());
  }, [onClose]);
  return (
    <div className="modal-backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div className={narrow ? "modal modal-narrow" : "modal"} role="dialog" aria-modal="true" aria-label={title} ref={ref} data-testid={testid}>
        <div className="modal-head">
          <h2>{title}</h2>
          <button className="link" onClick={onClose} aria-label="Close">✕</button>
        </div>
        {children}
      </div>
    </div>
  );
}

const cls = (d: number) => (d < -1e-12 ? "better" : d > 1e-12 ? "worse" : "muted");
const signed = (d: number, f: (x: number) => string) => (d === 0 ? "0" : `${d > 0 ? "+" : "−"}${f(Math.abs(d))}`);

export function ModelWideDialog(p: {
  table: OptionTable;
  perOp: Record<string, OpOptions>;
  state: AnalysisState;
  base: Totals;
  onApply: (preset: string, keepOverrides: boolean) => void;
  onClose: () => void;
}) {
  const [keep, setKeep] = useState(true);
  const [chosen, setChosen] = useState(p.state.model_wide);
  const rows = useMemo(
    () =>
      p.table.presets.map((pr, k) => {
        const t = computeTotals(p.table, p.perOp, { model_wide: pr.name, overrides: keep ? p.state.overrides : {} });
        let fallbacks = 0;
        for (const s of p.table.supported) if (!s[k]) fallbacks++;
        return { pr, t, fallbacks };
      }),
    [p.table, p.perOp, p.state.overrides, keep],
  );
  const rel = (a: number, b: number) => a / b - 1;
  return (
    <Modal title="Optimize the whole model" onClose={p.onClose} testid="model-wide-dialog">
      <p className="muted">Predicted totals for each preset: {labelText(p.table.label)}. Changes are against the unoptimized model.</p>
      <label className="check">
        <input type="checkbox" checked={keep} onChange={(e) => setKeep(e.target.checked)} /> Keep my per-op choices
      </label>
      <div className="dialog-scroll">
        <table className="opts">
          <thead>
            <tr>
              <th></th><th>Preset</th><th className="num">Latency</th><th className="num">Size</th><th className="num">Peak memory</th><th className="num">Memory power</th><th className="num">Fallbacks</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(({ pr, t, fallbacks }) => (
              <tr key={pr.name} className={chosen === pr.name ? "chosen" : ""} onClick={() => setChosen(pr.name)} data-preset={pr.name} data-latency={t.latency_ms}>
                <td><input type="radio" name="preset" aria-label={pr.name} checked={chosen === pr.name} onChange={() => setChosen(pr.name)} /></td>
                <td title={pr.description}><b>{pr.name}</b><div className="muted small-text">{pr.description}</div></td>
                <td className="num">{fmtMs(t.latency_ms)} ms <span className={cls(t.latency_ms - p.base.latency_ms)}>{fmtPct(rel(t.latency_ms, p.base.latency_ms))}</span></td>
                <td className="num">{fmtBytes(t.size_bytes)} <span className={cls(t.size_bytes - p.base.size_bytes)}>{fmtPct(rel(t.size_bytes, p.base.size_bytes))}</span></td>
                <td className="num">{fmtBytes(t.peak_memory_bytes)} <span className={cls(t.peak_memory_bytes - p.base.peak_memory_bytes)}>{fmtPct(rel(t.peak_memory_bytes, p.base.peak_memory_bytes))}</span></td>
                <td className="num">{t.memory_power_mw.toFixed(2)} mW <span className={cls(t.memory_power_mw - p.base.memory_power_mw)}>{fmtPct(rel(t.memory_power_mw, p.base.memory_power_mw))}</span></td>
                <td className="num" title="Ops that cannot take this format and fall back">{fallbacks}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div className="modal-actions">
        <button onClick={p.onClose}>Cancel</button>
        <button className="primary" data-testid="apply-preset" onClick={() => p.onApply(chosen, keep)}>Apply {chosen}</button>
      </div>
    </Modal>
  );
}

export function OpOptionsDialog(p: {
  table: OptionTable;
  opId: string;
  opName: string;
  options: OpOptions | null;
  error: string | null;
  perOp: Record<string, OpOptions>;
  state: AnalysisState;
  evaluation: Evaluation;
  onApply: (combo: string | null) => void;
  onClose: () => void;
}) {
  const [kernel, setKernel] = useState("any");
  const [inp, setInp] = useState("any");
  const [out, setOut] = useState("any");
  const [sparsity, setSparsity] = useState("any");
  const [onlySupported, setOnlySupported] = useState(false);
  const i = p.table.ops.indexOf(p.opId);
  const o = p.options;
  const rows = useMemo(() => {
    if (!o) return [];
    const perOp = { ...p.perOp, [o.op]: o };
    const cur = p.evaluation;
    return o.combos.map((c, k) => {
      const total = computeTotals(p.table, perOp, { model_wide: p.state.model_wide, overrides: { ...p.state.overrides, [p.opId]: c } });
      return {
        combo: c,
        k,
        parts: parseCombo(c),
        supported: o.supported[k],
        lat: o.latency_ms[k],
        dLat: o.latency_ms[k] - cur.latency_ms[i],
        dMem: o.weight_bytes[k] + o.activation_bytes[k] - (cur.weight_bytes[i] + cur.activation_bytes[i]),
        dTotal: total.latency_ms - cur.totals.latency_ms,
        total: total.latency_ms,
      };
    });
  }, [o, p.perOp, p.table, p.state, p.evaluation, p.opId, i]);
  const { comboNotes, generalNotes } = useMemo(() => {
    const comboNotes = new Map<string, string>();
    const generalNotes: string[] = [];
    const known = new Set(o?.combos ?? []);
    for (const n of o?.notes ?? []) {
      const k = n.indexOf(": ");
      if (k > 0 && known.has(n.slice(0, k))) comboNotes.set(n.slice(0, k), n.slice(k + 2));
      else generalNotes.push(n);
    }
    return { comboNotes, generalNotes };
  }, [o]);
  const values = (key: "kernel" | "input" | "output" | "sparsity") => Array.from(new Set(rows.map((r) => String(r.parts[key]))));
  const shown = rows.filter(
    (r) =>
      (kernel === "any" || r.parts.kernel === kernel) &&
      (inp === "any" || r.parts.input === inp) &&
      (out === "any" || r.parts.output === out) &&
      (sparsity === "any" || String(r.parts.sparsity) === sparsity) &&
      (!onlySupported || r.supported),
  );
  const current = p.evaluation.combo[i];
  const sel = (label: string, v: string, set: (x: string) => void, key: "kernel" | "input" | "output" | "sparsity", testid: string) => (
    <label>
      {label}{" "}
      <select value={v} onChange={(e) => set(e.target.value)} data-testid={testid}>
        <option value="any">any</option>
        {values(key).map((x) => (<option key={x} value={x}>{x}</option>))}
      </select>
    </label>
  );
  return (
    <Modal title={`Options for ${p.opName}`} onClose={p.onClose} testid="op-dialog">
      {p.error && <p className="error" role="alert">{p.error}</p>}
      {!o && !p.error && <p className="muted">Loading options…</p>}
      {o && (
        <>
          <p className="muted">Now: <b>{current}</b>{p.state.overrides[p.opId] ? " (your choice)" : ` (from ${p.state.model_wide})`}. Changes are against now; “Model Δ” includes format conversions with neighbours.</p>
          {generalNotes.length > 0 && (
            <div className="notes" data-testid="op-notes">
              {generalNotes.map((n) => (<p key={n} className="note">{n}</p>))}
            </div>
          )}
          <div className="filters">
            {sel("Input", inp, setInp, "input", "filter-input")}
            {sel("Output", out, setOut, "output", "filter-output")}
            {sel("Weights", kernel, setKernel, "kernel", "filter-kernel")}
            {sel("Pruned %", sparsity, setSparsity, "sparsity", "filter-sparsity")}
            <label className="check"><input type="checkbox" checked={onlySupported} onChange={(e) => setOnlySupported(e.target.checked)} /> only supported</label>
            <span className="muted">{shown.length} of {rows.length}</span>
          </div>
          <div className="dialog-scroll">
            <table className="opts" data-testid="op-options">
              <thead>
                <tr><th>Input / output / weights / pruned</th><th className="num">Op time</th><th className="num">Op Δ</th><th className="num">Memory Δ</th><th className="num">Model Δ</th><th></th></tr>
              </thead>
              <tbody>
                {shown.map((r) => (
                  <tr key={r.combo} data-combo={r.combo} data-total-delta={r.dTotal} data-total={r.total} className={r.combo === current ? "chosen" : ""}>
                    <td title={comboNotes.get(r.combo)}>{r.combo}{comboNotes.has(r.combo) && <div className="muted small-text row-note">{comboNotes.get(r.combo)}</div>}{!r.supported && <span className="badge badge-warn" title={`Not supported as written on this target; runs as ${o.resolved?.[r.k] ?? "a fallback"}`}> runs as {o.resolved?.[r.k] ?? "fallback"}</span>}</td>
                    <td className="num">{fmtMs(r.lat)} ms</td>
                    <td className={`num ${cls(r.dLat)}`}>{signed(r.dLat, fmtMs)}</td>
                    <td className={`num ${cls(r.dMem)}`}>{signed(r.dMem, fmtBytes)}</td>
                    <td className={`num ${cls(r.dTotal)}`}>{signed(r.dTotal, fmtMs)} ms</td>
                    <td><button className="small" onClick={() => p.onApply(r.combo)} disabled={r.combo === current && !!p.state.overrides[p.opId]}>Apply</button></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <div className="modal-actions">
        {p.state.overrides[p.opId] && <button onClick={() => p.onApply(null)}>Use model-wide choice</button>}
        <button onClick={p.onClose}>Close</button>
      </div>
    </Modal>
  );
}
