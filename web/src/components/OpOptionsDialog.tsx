import { useMemo, useState } from "react";
import type { AnalysisState, OpOptions, OptionTable } from "../api/types";
import { fmtBytes, fmtMs } from "../format";
import { type Evaluation, computeTotals, parseCombo } from "../totals";
import { unitLabel } from "../units";
import { cls, Modal, signed } from "./Dialogs";

type Part = "kernel" | "input" | "output" | "sparsity";

interface Outcome {
  /** the combo applied for this outcome: one that runs as written if there is one */
  combo: string;
  /** every combo (after the filters) with exactly this outcome */
  combos: string[];
  k: number;
  supported: boolean;
  exportable: boolean;
  lat: number;
  dLat: number;
  dMem: number;
  dTotal: number;
  total: number;
  note: string | undefined;
}

/** " on CPU" where a combo that falls back runs on another unit than the combo it runs as does when asked itself
 * (an accelerator refuses the asked form: the fallback goes to the CPU EP), so its time is not that combo's row. */
function fallbackUnit(o: OpOptions, k: number, table: OptionTable): string {
  const named = o.resolved ? o.combos.indexOf(o.resolved[k]) : -1;
  if (!o.unit || named < 0 || o.unit[named] === o.unit[k]) return "";
  return ` on ${unitLabel(table.unit_names?.[o.unit[k]] ?? null)}`;
}

function runsAsTitle(o: OpOptions, k: number, table: OptionTable): string {
  const as = o.resolved?.[k] ?? "a fallback";
  const on = fallbackUnit(o, k, table);
  return `Not supported as written on this target; runs as ${as}${on}`
    + (on ? `, not on ${unitLabel(table.unit_names?.[o.unit![o.combos.indexOf(as)]] ?? null)} where ${as} runs when chosen itself: hence its other time` : "");
}

/** Every option of one op, each distinct outcome once: many combos resolve to the same kernel (an unsupported
 * format falls back, a weight format is irrelevant to an op without weights), and showing each separately listed
 * hundreds of identical rows for one conv. */
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
  const [filter, setFilter] = useState<Record<Part, string>>({ kernel: "any", input: "any", output: "any", sparsity: "any" });
  const [onlySupported, setOnlySupported] = useState(false);
  const i = p.table.ops.indexOf(p.opId);
  const o = p.options;
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
        exportable: o.exportable?.[k] ?? true,
        lat: o.latency_ms[k],
        dLat: o.latency_ms[k] - cur.latency_ms[i],
        dMem: o.weight_bytes[k] + o.activation_bytes[k] - (cur.weight_bytes[i] + cur.activation_bytes[i]),
        dTotal: total.latency_ms - cur.totals.latency_ms,
        total: total.latency_ms,
        // what the op and the model do under this combo: a combo that falls back runs as another one and has its
        // outcome, so it is that outcome (the group names every combo that gives it)
        key: [o.latency_ms[k], o.weight_bytes[k], o.activation_bytes[k], o.dram_bytes[k], o.unit?.[k] ?? "", o.exportable?.[k] ?? true, total.latency_ms].join("|"),
      };
    });
  }, [o, p.perOp, p.table, p.state, p.evaluation, p.opId, i]);
  const values = (key: Part) => Array.from(new Set(rows.map((r) => String(r.parts[key]))));
  const shown = useMemo(
    () => rows.filter((r) => (Object.keys(filter) as Part[]).every((key) => filter[key] === "any" || String(r.parts[key]) === filter[key]) && (!onlySupported || r.supported)),
    [rows, filter, onlySupported],
  );
  const current = p.evaluation.combo[i];
  const outcomes = useMemo(() => {
    const byKey = new Map<string, Outcome>();
    for (const r of shown) {
      const g = byKey.get(r.key);
      if (g) g.combos.push(r.combo);
      else byKey.set(r.key, { combo: r.combo, combos: [r.combo], k: r.k, supported: r.supported, exportable: r.exportable, lat: r.lat, dLat: r.dLat, dMem: r.dMem, dTotal: r.dTotal, total: r.total, note: comboNotes.get(r.combo) });
    }
    // a group stands for itself by the combo in use now, else by one that runs as written
    const kOf = new Map(o?.combos.map((c, k) => [c, k]) ?? []);
    for (const g of byKey.values()) {
      const pick = g.combos.find((c) => c === current) ?? g.combos.find((c) => o?.supported[kOf.get(c)!]) ?? g.combos[0];
      g.combo = pick;
      g.k = kOf.get(pick)!;
      g.supported = o?.supported[g.k] ?? true;
      g.note = comboNotes.get(pick);
    }
    return [...byKey.values()].sort((a, b) => a.dTotal - b.dTotal);
  }, [shown, current, o, comboNotes]);
  const sel = (label: string, key: Part) => (
    <label>
      {label}{" "}
      <select value={filter[key]} onChange={(e) => setFilter((f) => ({ ...f, [key]: e.target.value }))} data-testid={`filter-${key}`}>
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
          <p className="muted">Now: <b>{current}</b>{p.state.overrides[p.opId] ? " (your choice)" : ` (from ${p.state.model_wide})`}. Changes are against now; “Model Δ” includes format conversions with neighbours. Combinations with the same result are listed once.</p>
          {generalNotes.length > 0 && (
            <div className="notes" data-testid="op-notes">
              {generalNotes.map((n) => (<p key={n} className="note">{n}</p>))}
            </div>
          )}
          <div className="filters">
            {sel("Input", "input")}
            {sel("Output", "output")}
            {sel("Weights", "kernel")}
            {sel("Pruned %", "sparsity")}
            <label className="check"><input type="checkbox" checked={onlySupported} onChange={(e) => setOnlySupported(e.target.checked)} /> only supported</label>
            <span className="muted" data-testid="outcome-count" data-outcomes={outcomes.length} data-combos={shown.length}>
              {outcomes.length} distinct outcome{outcomes.length === 1 ? "" : "s"} of {shown.length} combination{shown.length === 1 ? "" : "s"}
            </span>
          </div>
          <div className="dialog-scroll">
            <table className="opts" data-testid="op-options">
              <thead>
                <tr><th>Input / output / weights / pruned</th><th className="num">Op time</th><th className="num">Op Δ</th><th className="num">Memory Δ</th><th className="num">Model Δ</th><th></th></tr>
              </thead>
              <tbody>
                {outcomes.map((r) => (
                  <tr key={r.combo} data-combo={r.combo} data-combos={r.combos.length} data-total-delta={r.dTotal} data-total={r.total} data-exportable={r.exportable} className={r.combos.includes(current) ? "chosen" : ""}>
                    <td title={r.note}>
                      {r.combo}
                      {r.combos.length > 1 && (
                        <span className="muted small-text same-as" title={r.combos.filter((c) => c !== r.combo).join("\n")}> and {r.combos.length - 1} more with the same result</span>
                      )}
                      {r.note && <div className="muted small-text row-note">{r.note}</div>}
                      {!r.supported && <span className="badge badge-warn" data-testid="runs-as" title={runsAsTitle(o, r.k, p.table)}> runs as {o.resolved?.[r.k] ?? "fallback"}{fallbackUnit(o, r.k, p.table)}</span>}
                      {!r.exportable && <span className="badge badge-noexport" title="The exporter cannot write this option for this model: it is shown for comparison, and an export with it is refused">not exportable</span>}
                    </td>
                    <td className="num">{fmtMs(r.lat)} ms</td>
                    <td className={`num ${cls(r.dLat)}`}>{signed(r.dLat, fmtMs)} ms</td>
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
