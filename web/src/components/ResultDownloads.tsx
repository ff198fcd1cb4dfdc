// Toolbar actions around the results of one target: the budget solver's dialog and downloads in other tools'
// formats (the op table as CSV, one metric as Model Explorer node data).
import { useState } from "react";
import { NODE_DATA_METRICS, solver } from "../api/solver";
import type { AnalysisState } from "../api/types";

export function ResultDownloads({ modelId, target, format, onSolve, state, analysisId, base }: {
  modelId: string; target: string; format: string; onSolve: () => void;
  /** the page's state (the CSV holds it), the saved analysis it is if unchanged, and the unoptimized preset */
  state?: AnalysisState | null; analysisId?: string | null; base?: string;
}) {
  const [metric, setMetric] = useState("latency_ms");
  const explorer = format === "onnx" || format === "tflite";
  return (
    <span className="result-downloads" style={{ display: "inline-flex", gap: 8, alignItems: "center" }}>
      <button onClick={onSolve} data-testid="open-solve" title="Find the fewest per-op changes that meet a latency, memory, size or power budget">
        Solve for a budget…
      </button>
      <a href={solver.csvUrl(modelId, target, state, analysisId, base)} download data-testid="download-csv"
        title="The op table of this target as CSV, under the options shown now (its first lines say which)">CSV</a>
      {explorer && (
        <span style={{ display: "inline-flex", gap: 4, alignItems: "center" }}>
          <a href={solver.modelExplorerUrl(modelId, target, metric)} download data-testid="download-model-explorer"
            title="Per-op figures as Model Explorer node data: open the model in Model Explorer and load this file as node data">
            Model Explorer
          </a>
          <select value={metric} onChange={(e) => setMetric(e.target.value)} aria-label="Metric for Model Explorer" data-testid="model-explorer-metric">
            {NODE_DATA_METRICS.map(([k, label]) => (<option key={k} value={k}>{label}</option>))}
          </select>
        </span>
      )}
    </span>
  );
}
