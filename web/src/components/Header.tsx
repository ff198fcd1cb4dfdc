import type { Model } from "../api/types";
import { fmtBytes, fmtPct } from "../format";
import { navigate } from "../router";
import type { Totals } from "../totals";

interface Props {
  model: Model;
  target: string;
  onTarget: (t: string) => void;
  totals: Totals | null;
  base: Totals | null;
  unoptimized: boolean;
  latencyMeasured: boolean;
  measuredLabel: string;
  predictedLabel: string;
  optimizedCount: number;
  modelWide: string;
  canUndo: boolean;
  onUndo: () => void;
  onReset: () => void;
  onOptimize: () => void;
}

interface TileProps {
  id: string;
  raw: number | null;
  label: string;
  help: string;
  value: string;
  change: number | null;
  lowerIsBetter: boolean;
  source: "measured" | "predicted";
  sourceHelp: string;
}

function Tile({ id, raw, label, help, value, change, lowerIsBetter, source, sourceHelp }: TileProps) {
  const good = change == null || Math.abs(change) < 1e-12 ? "" : (change < 0) === lowerIsBetter ? "better" : "worse";
  return (
    <div className="tile" data-metric={id} title={help}>
      <div className="tile-label">{label}</div>
      <div className="tile-value" data-testid={`total-${id}`} data-value={raw ?? ""}>{value}</div>
      <div className="tile-sub">
        <span className={`delta ${good}`} data-testid={`delta-${id}`}>{change == null ? "–" : fmtPct(change)}</span>
        <span className={`src src-${source}`} title={sourceHelp}>{source}</span>
      </div>
    </div>
  );
}

export function Header(p: Props) {
  const rel = (k: keyof Totals) => (p.totals && p.base ? p.totals[k] / p.base[k] - 1 : null);
  const t = p.totals;
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
        <Tile id="latency" raw={t ? t.latency_ms : null} label="Latency" help="Time for one inference (sum of tasks plus format conversions)."
          value={t ? `${t.latency_ms.toFixed(3)} ms` : "…"} change={rel("latency_ms")} lowerIsBetter
          source={p.unoptimized && p.latencyMeasured ? "measured" : "predicted"} sourceHelp={p.unoptimized && p.latencyMeasured ? p.measuredLabel : p.predictedLabel} />
        <Tile id="fps" raw={t ? t.fps : null} label="Throughput" help="Inferences per second, one after another (1000 / latency)."
          value={t ? `${t.fps.toFixed(1)} fps` : "…"} change={rel("fps")} lowerIsBetter={false}
          source={p.unoptimized && p.latencyMeasured ? "measured" : "predicted"} sourceHelp={p.predictedLabel} />
        <Tile id="peak" raw={t ? t.peak_memory_bytes : null} label="Peak memory" help="Weights plus the largest working set of one task."
          value={t ? fmtBytes(t.peak_memory_bytes) : "…"} change={rel("peak_memory_bytes")} lowerIsBetter source="predicted" sourceHelp={p.predictedLabel} />
        <Tile id="power" raw={t ? t.memory_power_mw : null} label="Memory power" help="Average power spent moving bytes to and from DRAM during one inference."
          value={t ? `${t.memory_power_mw.toFixed(2)} mW` : "…"} change={rel("memory_power_mw")} lowerIsBetter source="predicted" sourceHelp={p.predictedLabel} />
        <Tile id="size" raw={t ? t.size_bytes : null} label="Size" help="Bytes of the model file after optimization (weights plus overhead)."
          value={t ? fmtBytes(t.size_bytes) : "…"} change={rel("size_bytes")} lowerIsBetter source="predicted" sourceHelp={p.predictedLabel} />
      </div>
      <div className="hdr-actions">
        <div className="muted state-line" data-testid="state-line">
          {p.modelWide}
          {p.optimizedCount > 0 ? ` + ${p.optimizedCount} op override${p.optimizedCount > 1 ? "s" : ""}` : ""}
        </div>
        <button onClick={p.onOptimize} data-testid="optimize-model">Optimize model…</button>
        <button onClick={p.onUndo} disabled={!p.canUndo} data-testid="undo" aria-keyshortcuts="Control+Z">Undo</button>
        <button onClick={p.onReset} disabled={p.unoptimized} data-testid="reset">Reset</button>
      </div>
    </header>
  );
}
