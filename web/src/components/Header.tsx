import type { Model } from "../api/types";
import { fmtBytes, fmtMs, fmtPct } from "../format";
import { navigate } from "../router";
import type { Totals } from "../totals";

/** What the page knows was measured on this machine for the unoptimized model on this target. */
export interface Measured {
  /** per-task fp32 times are measured medians (so the unoptimized latency total is measured) */
  latency: boolean;
  label: string;
  /** whole-model median and p90 of un-profiled runs */
  wholeModelMs: number | null;
  p90Ms: number | null;
  peakBytes: number | null;
  /** wide spread between runs: the measurement was noisy */
  noisy: boolean;
  spread: number | null;
  /** why the measurement was marked noisy (e.g. other load on the machine) */
  noiseReason: string | null;
}

interface Props {
  model: Model;
  target: string;
  onTarget: (t: string) => void;
  totals: Totals | null;
  base: Totals | null;
  unoptimized: boolean;
  measured: Measured;
  predictedLabel: string;
  /** per-inference time outside the tasks' own (in the latency, not in any task's figure) */
  fixedMs: number;
  optimizedCount: number;
  modelWide: string;
  canUndo: boolean;
  onUndo: () => void;
  onReset: () => void;
  onOptimize: () => void;
  onExport: () => void;
}

interface TileProps {
  id: string;
  raw: number | null;
  label: string;
  help: string;
  value: string;
  change: number | null;
  lowerIsBetter: boolean;
  measured: boolean;
  sourceLabel: string;
  extra?: React.ReactNode;
}

/** "measured: onnxruntime …": the source, then its label, which often starts with the same word already. */
export function sourceText(source: "measured" | "predicted", label: string): string {
  return label.toLowerCase().startsWith(`${source}:`) ? label : `${source}: ${label}`;
}

/** One total. Its badge and its tooltip come from the same `measured` and `sourceLabel`, so they cannot disagree. */
function Tile({ id, raw, label, help, value, change, lowerIsBetter, measured, sourceLabel, extra }: TileProps) {
  const good = change == null || Math.abs(change) < 1e-12 ? "" : (change < 0) === lowerIsBetter ? "better" : "worse";
  const source = measured ? "measured" : "predicted";
  return (
    <div className="tile" data-metric={id} data-source={source} title={`${help}\n${sourceText(source, sourceLabel)}`}>
      <div className="tile-label">{label}</div>
      <div className="tile-value" data-testid={`total-${id}`} data-value={raw ?? ""}>{value}</div>
      <div className="tile-sub">
        <span className={`delta ${good}`} data-testid={`delta-${id}`}>{change == null ? "–" : fmtPct(change)}</span>
        <span className={`src src-${source}`} data-testid={`src-${id}`} title={sourceText(source, sourceLabel)}>{source}</span>
      </div>
      {extra && <div className="tile-extra">{extra}</div>}
    </div>
  );
}

export function Header(p: Props) {
  const rel = (k: keyof Totals) => (p.totals && p.base ? p.totals[k] / p.base[k] - 1 : null);
  const t = p.totals;
  const m = p.measured;
  const timeMeasured = p.unoptimized && m.latency;
  const spread = m.spread != null ? `p90/median ${m.spread.toFixed(2)}` : "";
  const timeLabel = timeMeasured
    ? `${m.label}${m.wholeModelMs != null ? `; whole model ${m.wholeModelMs.toFixed(3)} ms median${m.p90Ms != null ? `, ${m.p90Ms.toFixed(3)} ms p90` : ""}` : ""}${m.noisy ? `; noisy measurement (${[m.noiseReason, spread].filter(Boolean).join("; ")})` : ""}`
    : p.predictedLabel;
  const noisyMark = timeMeasured && m.noisy && (
    <span className="badge badge-noisy" data-testid="noisy-mark" data-spread={m.spread ?? ""}
      title={`Noisy measurement: ${m.noiseReason ?? "the runs were spread widely"}${spread ? ` (${spread})` : ""}. Take this figure with care.`}>
      noisy{m.spread != null ? ` · spread ${m.spread.toFixed(2)}` : ""}
    </span>
  );
  return (
    <header className="model-header" aria-label="Model totals">
      <div className="hdr-left">
        <a href="/" onClick={(e) => (e.preventDefault(), navigate("/"))} className="home" aria-label="All models">
          Edgescope
        </a>
        <div className="hdr-name" title={p.model.name}>{p.model.name}</div>
        <label className="target">
          <span>Target</span>
          <select value={p.target} onChange={(e) => p.onTarget(e.target.value)} data-testid="target-select">
            {p.model.targets.map((t) => (
              <option key={t} value={t}>{t}</option>
            ))}
          </select>
        </label>
      </div>
      <div className="tiles" aria-live="polite">
        <Tile id="latency" raw={t ? t.latency_ms : null} label="Latency" help={`Time for one inference (sum of tasks plus format conversions${p.fixedMs > 0 ? `, plus ${fmtMs(p.fixedMs)} ms per inference outside the tasks: the runtime's fixed cost and, where measured, time between kernels` : ""}).`}
          value={t ? `${t.latency_ms.toFixed(3)} ms` : "…"} change={rel("latency_ms")} lowerIsBetter
          measured={timeMeasured} sourceLabel={timeLabel} extra={noisyMark} />
        <Tile id="fps" raw={t ? t.fps : null} label="Throughput" help="Inferences per second, one after another (1000 / latency)."
          value={t ? `${t.fps.toFixed(1)} fps` : "…"} change={rel("fps")} lowerIsBetter={false}
          measured={timeMeasured} sourceLabel={timeLabel} />
        <Tile id="peak" raw={t ? t.peak_memory_bytes : null} label="Peak memory" help="Weights plus the largest working set of one task."
          value={t ? fmtBytes(t.peak_memory_bytes) : "…"} change={rel("peak_memory_bytes")} lowerIsBetter measured={false} sourceLabel={p.predictedLabel}
          extra={m.peakBytes != null && (
            <span className="measured-beside" data-testid="peak-measured" data-value={m.peakBytes} title={`Measured on this machine for the unoptimized model (rise in resident memory): ${m.label}`}>
              measured {fmtBytes(m.peakBytes)}
            </span>
          )} />
        <Tile id="power" raw={t ? t.memory_power_mw : null} label="Memory power" help="Average power spent moving bytes to and from DRAM during one inference."
          value={t ? `${t.memory_power_mw.toFixed(2)} mW` : "…"} change={rel("memory_power_mw")} lowerIsBetter measured={false} sourceLabel={p.predictedLabel} />
        <Tile id="size" raw={t ? t.size_bytes : null} label="Size" help="Bytes of the model file after optimization (weights plus overhead)."
          value={t ? fmtBytes(t.size_bytes) : "…"} change={rel("size_bytes")} lowerIsBetter measured={false} sourceLabel={p.predictedLabel} />
      </div>
      <div className="hdr-actions">
        <div className="muted state-line" data-testid="state-line">
          {p.modelWide}
          {p.optimizedCount > 0 ? ` + ${p.optimizedCount} op override${p.optimizedCount > 1 ? "s" : ""}` : ""}
        </div>
        <button onClick={p.onOptimize} data-testid="optimize-model">Optimize model…</button>
        <button onClick={p.onExport} data-testid="export-open" title="Build the optimized model file for this state, measure it here where the target runs, and download it">Export…</button>
        <button onClick={p.onUndo} disabled={!p.canUndo} data-testid="undo" aria-keyshortcuts="Control+Z">Undo</button>
        <button onClick={p.onReset} disabled={p.unoptimized} data-testid="reset">Reset</button>
      </div>
    </header>
  );
}
