// A model diff as the table and graph show it: per-op Δ time (b − a) keyed by this model's op ids.
import type { ModelDiff } from "../api/types";

export interface Compare {
  /** "vs resnet34.onnx" */
  label: string;
  /** this model's op id -> Δ time in ms (other − this); an op missing from the other model: −its time */
  delta: ReadonlyMap<string, number>;
  /** this model's op id -> how it was matched */
  how: ReadonlyMap<string, string>;
}

export function compareOf(d: ModelDiff): Compare {
  const delta = new Map<string, number>();
  const how = new Map<string, string>();
  for (const r of d.ops) {
    if (!r.a) continue;
    delta.set(r.a, (r.latency_ms[1] ?? 0) - (r.latency_ms[0] ?? 0));
    how.set(r.a, r.how);
  }
  return { label: `vs ${d.b.name}`, delta, how };
}
