import { useEffect, useMemo, useRef, useState } from "react";
import type { AnalysisState, OpOptions, OptionTable } from "../api/types";
import { fmtBytes, fmtMs, fmtPct, labelText } from "../format";
import { type Totals, computeTotals } from "../totals";

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

export const cls = (d: number) => (d < -1e-12 ? "better" : d > 1e-12 ? "worse" : "muted");
export const signed = (d: number, f: (x: number) => string) => (d === 0 ? "0" : `${d > 0 ? "+" : "−"}${f(Math.abs(d))}`);

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
        return { pr, t, fallbacks, k };
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
            {rows.map(({ pr, t, fallbacks, k }) => (
              <tr key={pr.name} className={chosen === pr.name ? "chosen" : ""} onClick={() => setChosen(pr.name)} data-preset={pr.name} data-latency={t.latency_ms} data-exportable={p.table.exportable?.[k] ?? true}>
                <td><input type="radio" name="preset" aria-label={pr.name} checked={chosen === pr.name} onChange={() => setChosen(pr.name)} /></td>
                <td title={pr.description}>
                  <b>{pr.name}</b>
                  {p.table.exportable?.[k] === false && (
                    <span className="badge badge-noexport" data-testid="not-exportable" title={p.table.export_reasons?.[k] ?? "The exporter cannot write this option for this model; an export with it is refused."}>not exportable</span>
                  )}
                  <div className="muted small-text">{pr.description}</div>
                </td>
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
