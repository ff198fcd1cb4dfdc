// The panel under the graph and table: distributions with brushing, and the two diffs. Collapsed to its tabs
// until one is opened; the chart library loads only then.
import { lazy, Suspense, useMemo, useState } from "react";
import type { Analysis, OptionTable } from "../../api/types";
import { unitNames } from "../../units";
import type { Selection, SelectSource } from "../../selection";
import type { Compare } from "../../views/compare";
import type { Row } from "../OpTable";
import { AnalysisDiff } from "./AnalysisDiff";
import { ModelDiff } from "./ModelDiff";

const Distributions = lazy(() => import("./Distributions"));

type Tab = "charts" | "analysis" | "model";
const TABS: { key: Tab; label: string; help: string }[] = [
  { key: "charts", label: "Distributions", help: "Histograms and scatter plots of per-task metrics; drag to select tasks" },
  { key: "analysis", label: "Analysis diff", help: "A saved analysis against its parent or another: what each changed option did to the totals" },
  { key: "model", label: "Model diff", help: "This model against another version of the network, op by op" },
];

interface Props {
  modelId: string;
  target: string | null;
  rows: Row[];
  table: OptionTable | null;
  selection: Selection;
  onSelect: (ids: string[], focus: string | null, source: SelectSource) => void;
  current: Analysis | null;
  revision: number;
  opName: (id: string) => string;
  onCompare: (c: Compare | null) => void;
}

export function ViewsPanel(p: Props) {
  const [tab, setTab] = useState<Tab | null>(null);
  const units = useMemo(() => (p.table ? unitNames(p.table) : []), [p.table]);
  // a model diff stays mounted (and keeps colouring the graph) while another tab is open
  const [modelSeen, setModelSeen] = useState(false);
  const open = (t: Tab) => (setTab((x) => (x === t ? null : t)), t === "model" && setModelSeen(true));
  return (
    <section className={`views ${tab ? "open" : ""}`} aria-label="Distributions and diffs" data-testid="views" data-tab={tab ?? ""}>
      <div className="views-tabs" role="tablist">
        {TABS.map((t) => (
          <button key={t.key} role="tab" aria-selected={tab === t.key} className={`small ${tab === t.key ? "on" : ""}`} title={t.help}
            onClick={() => open(t.key)} data-testid={`views-${t.key}`}>
            {t.label}
          </button>
        ))}
        {tab && <button className="link" onClick={() => setTab(null)} aria-label="Close the panel">✕</button>}
      </div>
      {tab === "charts" && (
        <Suspense fallback={<p className="muted pad">Loading charts…</p>}>
          {p.rows.length ? <Distributions rows={p.rows} unitNames={units} selection={p.selection} onSelect={p.onSelect} /> : <p className="muted pad">Loading tasks…</p>}
        </Suspense>
      )}
      {tab === "analysis" && <AnalysisDiff modelId={p.modelId} current={p.current} revision={p.revision} opName={p.opName} onSelect={p.onSelect} />}
      {modelSeen && (
        <div hidden={tab !== "model"}>
          <ModelDiff modelId={p.modelId} target={p.target} onCompare={p.onCompare} onSelect={p.onSelect} />
        </div>
      )}
    </section>
  );
}
