// Toolbar actions around the results of one target: the budget solver's dialog and downloads in other tools'
// formats (the op table as CSV, one metric as Model Explorer node data).
import { useState } from "react";
import { NODE_DATA_METRICS, solver } from "../api/solver";

export function ResultDownloads({ modelId, target, format, onSolve }: { modelId: string; target: string; format: string; onSolve: () => void }) {
  const [metric, setMetric] = useState("latency_ms");
  const explorer = format === "onnx" || format === "tflite";
  return (
    <span className="result-downloads" style={{ display: "inline-flex", gap: 8, alignItems: "center" }}>
      <button onClick={onSolve} data-testid="open-solve" title="Find the fewest per-op changes that meet a latency, memory, size or power budget">
        Solve for a budget…
      </button>
      <a href={solver.csvUrl(modelId, target)} download data-testid="download-csv" title="The op table of this target as CSV">CSV</a>
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
