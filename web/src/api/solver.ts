// Budget solver and result downloads (docs/api.md: POST /solve, GET /ops.csv, GET /model-explorer).
import { postJson } from "./client";
import type { AnalysisState } from "./types";
import type { Totals } from "../totals";

export interface Budget {
  latency_ms?: number;
  fps?: number;
  peak_memory_bytes?: number;
  size_bytes?: number;
  memory_power_mw?: number;
}

export type Objective = "fewest_changes" | "most_float" | "least_size";

export interface OpMetrics {
  latency_ms: number;
  weight_bytes: number;
  activation_bytes: number;
  dram_bytes: number;
}

export interface Change {
  op: string;
  before: string;
  after: string;
  before_overridden: boolean;
  unit_before: string;
  unit_after: string;
  before_metrics: OpMetrics;
  after_metrics: OpMetrics;
}

export interface Proposal {
  objectives: Objective[];
  overrides: Record<string, string>;
  totals: Totals;
  non_float_ops: number;
  changes: Change[];
}

export interface Solution {
  target: string;
  feasible: boolean;
  model_wide: string;
  budget: Budget;
  start: Totals;
  proposals: Proposal[];
  closest: Proposal | null;
  unmet: (keyof Budget)[];
  seconds: number;
}

const m = (id: string) => `/api/models/${encodeURIComponent(id)}`;

export const solver = {
  solve: (id: string, state: AnalysisState, budget: Budget, keepFloat: string[]) =>
    postJson<Solution>(`${m(id)}/solve`, { target: state.target, model_wide: state.model_wide, overrides: state.overrides, budget, keep_float: keepFloat }),
  /** The op table as CSV: of a saved analysis (`analysisId`), else of `state` unless it is the unoptimized one. */
  csvUrl: (id: string, target: string, state?: AnalysisState | null, analysisId?: string | null, base?: string) => {
    const q = new URLSearchParams({ target });
    if (analysisId) q.set("analysis", analysisId);
    else if (state && (Object.keys(state.overrides).length || state.model_wide !== base)) {
      q.set("model_wide", state.model_wide);
      q.set("overrides", JSON.stringify(state.overrides));
    }
    return `${m(id)}/ops.csv?${q}`;
  },
  modelExplorerUrl: (id: string, target: string, metric: string) =>
    `${m(id)}/model-explorer?target=${encodeURIComponent(target)}&metric=${encodeURIComponent(metric)}`,
};

export const NODE_DATA_METRICS: [string, string][] = [
  ["latency_ms", "latency"],
  ["share", "share of time"],
  ["macs", "MACs"],
  ["weight_bytes", "weight bytes"],
  ["activation_bytes", "activation bytes"],
];
