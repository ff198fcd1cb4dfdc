import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { api, ApiError } from "../api/client";
import { takeEarly } from "../api/prefetch";
import type { AnalysisState, Model, OpOptions, OpsResponse, OptionTable } from "../api/types";
import { ModelWideDialog } from "../components/Dialogs";
import { ExportDialog, exportBlocked } from "../components/ExportDialog";
import { Header, type Measured } from "../components/Header";
import { ModelFacts } from "../components/ModelFacts";
import { OpOptionsDialog } from "../components/OpOptionsDialog";
import { ResultDownloads } from "../components/ResultDownloads";
import { SolveDialog } from "../components/SolveDialog";
import { ReanalyseDialog } from "../components/ReanalyseDialog";
import { EMPTY_SELECTION, type SelectSource, type Selection, selectionMask } from "../selection";
import { useModel } from "./useModel";
import { displayName, OpTable, type Row } from "../components/OpTable";
import { Timeline } from "../components/Timeline";
import { labelText } from "../format";
import { evaluate, perInferenceMs, perInferenceStateMs } from "../totals";
import { unitLabel, unitsNow } from "../units";
import { StageList } from "./ModelList";
import { CollabBar } from "../components/CollabBar";
import { useSavedAnalysis } from "../collab";
import { NotFound } from "./NotFound";
import { navigate } from "../router";
import { SourcePanel } from "../components/SourcePanel";
import { ViewsPanel } from "../components/views/ViewsPanel";
import type { Compare } from "../views/compare";
import { GraphSession } from "../graph/session";
import { LazyIndex, positionsIn } from "../positions";

// fetched as this module loads, in parallel with the model's own requests
const graphViewModule = import("../components/GraphView");
const GraphView = lazy(() => graphViewModule);

interface Filters {
  text: string;
  type: string;
  minLatency: string;
}

export function ModelPage({ id, analysisId = null }: { id: string; analysisId?: string | null }) {
  const { model, error: modelError, missing, restart } = useModel(id);
  const [error, setError] = useState<string | null>(null);
  const [target, setTarget] = useState<string | null>(null);
  const [ops, setOps] = useState<OpsResponse | null>(null);
  const [table, setTable] = useState<OptionTable | null>(null);
  /** /ops and /options downloading (unparsed) for `target` */
  const [tableText, setTableText] = useState<{ target: string; texts: Promise<string>[]; signal: AbortSignal } | null>(null);
  /** the graph's worker, given the graph's JSON as it arrives (it parses it and lays out the first view) */
  const [graph, setGraph] = useState<GraphSession | null>(null);
  const [perOp, setPerOp] = useState<Record<string, OpOptions>>({});
  const [hist, setHist] = useState<{ cur: AnalysisState | null; past: AnalysisState[] }>({ cur: null, past: [] });
  const analysis = hist.cur;
  const history = hist.past;
  const [sel, setSel] = useState<Selection>(EMPTY_SELECTION);
  const [filters, setFilters] = useState<Filters>({ text: "", type: "", minLatency: "" });
  const [lasso, setLasso] = useState<ReadonlySet<string> | null>(null);
  const [dialog, setDialog] = useState<{ kind: "model" | "export" | "reanalyse" | "solve" } | { kind: "op"; op: string } | null>(null);
  const [opErr, setOpErr] = useState<string | null>(null);
  const [showTimeline, setShowTimeline] = useState(true);
  const [compare, setCompare] = useState<Compare | null>(null);
  // The graph is drawn before the table's data is parsed: parsing tens of MB of ops and option tables on the
  // main thread would otherwise delay the first drawn graph by seconds on big models.
  const [graphDrawn, setGraphDrawn] = useState(false);
  const onGraphDrawn = useCallback(() => setGraphDrawn(true), []);

  const ready = model?.status === "ready";
  // A re-analysis replaces every result: nothing of the previous one may stay in a view, cache or dialog.
  useEffect(() => {
    if (ready) return;
    setGraph(null);
    setTableText(null);
    setOps(null);
    setTable(null);
    setPerOp({});
    setHist({ cur: null, past: [] });
    setSel(EMPTY_SELECTION);
    setLasso(null);
    setDialog((d) => (d?.kind === "reanalyse" ? d : null));
    setError(null);
  }, [ready]);
  const onQueued = useCallback((m: Model) => (setDialog(null), restart(m)), [restart]);
  // Results replaced under the page (someone re-analysed it meanwhile): load the model and its new results again.
  const [generation, setGeneration] = useState(0);
  const failed = useCallback(
    (e: Error, what = "") => {
      if (!(e instanceof ApiError && e.code === "results_replaced")) return setError(what + e.message);
      setGraph(null);
      setOps(null);
      setTable(null);
      setPerOp({});
      setDialog(null);
      if (model) restart(model);
      setGeneration((g) => g + 1);
    },
    [model, restart],
  );
  useEffect(() => {
    if (ready && model && !target) setTarget(model.targets[0] ?? null);
  }, [ready, model, target]);

  useEffect(() => {
    if (!ready) return;
    const ac = new AbortController();
    setGraphDrawn(false);
    let session: GraphSession | null = null;
    takeEarly(`graph:${id}`, () => api.graphBytes(id, ac.signal)).then(
      (g) => !ac.signal.aborted && setGraph((session = new GraphSession(g))),
      (e) => !ac.signal.aborted && failed(e, "graph: "),
    );
    return () => (ac.abort(), session?.close());
  }, [id, ready, generation]);

  // The table's data (/ops and /options: 200 MB of JSON at 200,000 tasks) downloads from the worker's first layout
  // on, while the page draws it, and is parsed once the graph is drawn: downloaded only then, it left the table
  // seconds more behind the first view; downloaded while the worker lays the graph out, it slowed the worker
  // (the graph's parse and hierarchy took 1.3-2x as long on this 2-core host).
  useEffect(() => {
    if (!ready || !target || !graph) return;
    const ac = new AbortController();
    const started = graph.firstLayout.then(() => api.tableText(id, target, ac.signal));
    const texts = [0, 1].map((k) => started.then((t) => t[k]));
    texts.forEach((t) => t.catch(() => undefined)); // reported by the effect below, once the graph is drawn
    setTableText({ target, texts, signal: ac.signal });
    return () => ac.abort();
  }, [id, ready, target, generation, graph]);
  useEffect(() => {
    if (!tableText || !graphDrawn) return;
    const { target, texts, signal } = tableText;
    let stop = false;
    setOps(null);
    setTable(null);
    setPerOp({});
    // each document is parsed as soon as it is in (the other may still be downloading)
    const [opsDoc, tableDoc] = texts.map((t) => t.then((text) => (stop || signal.aborted ? null : JSON.parse(text))));
    Promise.all([opsDoc as Promise<OpsResponse | null>, tableDoc as Promise<OptionTable | null>]).then(
      ([o, t]) => {
        if (stop || signal.aborted || !o || !t) return;
        performance.mark("edgescope:table-data");
        setOps(o);
        setTable(t);
        setHist((h) => ({
          cur: { target, model_wide: h.cur && t.presets.some((p) => p.name === h.cur!.model_wide) ? h.cur.model_wide : t.base.preset, overrides: {} },
          past: [],
        }));
      },
      (e) => !stop && !signal.aborted && failed(e),
    );
    return () => void (stop = true);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [tableText, graphDrawn]);

  const evaluation = useMemo(() => (table && analysis ? evaluate(table, perOp, analysis) : null), [table, perOp, analysis]);
  const baseEval = useMemo(() => (table ? evaluate(table, {}, { model_wide: table.base.preset, overrides: {} }) : null), [table]);
  // The totals' per-inference terms (runtime fixed cost, measured time outside the tasks, a unit's float-graph run
  // cost in this state): no task's, shown apart.
  const fixedMs = useMemo(() => (table ? (evaluation ? perInferenceStateMs(table, evaluation) : perInferenceMs(table)) : 0), [table, evaluation]);
  const units = useMemo(() => (table && evaluation && analysis ? unitsNow(table, evaluation, analysis.model_wide) : null), [table, evaluation, analysis]);

  const rows: Row[] = useMemo(() => {
    if (!ops || !evaluation || !baseEval || !table) return [];
    // the option table is in execution order like /ops; map by id to be safe
    const pos = positionsIn(table.ops, ops.ops.map((o) => o.id));
    return ops.ops.map((op, i) => {
      const k = pos[i] >= 0 ? pos[i] : i;
      return {
        i,
        op,
        pred_ms: evaluation.latency_ms[k],
        delta_ms: evaluation.latency_ms[k] - baseEval.latency_ms[k],
        conv_ms: evaluation.conversion_in_ms[k],
        combo: evaluation.combo[k],
        unit: unitLabel(units?.[k] ?? null),
        optimized: evaluation.overridden[k] === 1,
        // the first row points at the per-inference time the totals add (the timeline draws it first)
        ...(k === 0 && fixedMs > 0 ? { fixed_ms: fixedMs } : {}),
      };
    });
  }, [ops, evaluation, baseEval, table, units, fixedMs]);

  const maxLatency = useMemo(() => rows.reduce((m, r) => Math.max(m, r.op.latency_ms), 0), [rows]);
  const types = useMemo(() => Array.from(new Set(ops?.ops.map((o) => o.type) ?? [])).sort(), [ops]);

  const filterActive = !!(filters.text || filters.type || filters.minLatency || lasso);
  const filtered = useMemo(() => {
    if (!filterActive) return rows;
    const text = filters.text.trim().toLowerCase();
    const min = filters.minLatency === "" ? -Infinity : Number(filters.minLatency);
    return rows.filter(
      (r) =>
        (!lasso || lasso.has(r.op.id)) &&
        (!filters.type || r.op.type === filters.type) &&
        !(r.pred_ms <= min) &&
        (!text || displayName(r.op).toLowerCase().includes(text) || r.op.id.toLowerCase() === text || r.op.type.toLowerCase().includes(text)),
    );
  }, [rows, filters, lasso, filterActive]);
  const filteredIds = useMemo(() => (filterActive ? new Set(filtered.map((r) => r.op.id)) : null), [filtered, filterActive]);

  // task id -> position in /ops: each selection carries its mask over the task list (selection.ts)
  const rowOfNow = useMemo(() => ({ map: new LazyIndex(ops?.ops.map((o) => o.id) ?? []), n: ops?.ops.length ?? 0 }), [ops]);
  const rowOf = useRef(rowOfNow);
  rowOf.current = rowOfNow;
  const select = useCallback((ids: string[], focus: string | null, source: SelectSource, additive = false) => {
    setSel((s) => {
      let n: Set<string>;
      if (!additive) n = new Set(ids);
      else {
        n = new Set(s.ids);
        for (const x of ids) n.has(x) ? n.delete(x) : n.add(x);
      }
      return { ids: n, focus, source, mask: selectionMask(n, rowOf.current.map, rowOf.current.n) };
    });
  }, []);
  const opName = useCallback((op: string) => { const o = ops?.ops.find((x) => x.id === op); return o ? displayName(o) : op; }, [ops]);
  const onTableSelect = useCallback((ids: string[], focus: string | null, add: boolean) => select(ids, focus, "table", add), [select]);
  const onTimelineSelect = useCallback((ids: string[], focus: string | null) => select(ids, focus, "timeline"), [select]);

  const applySaved = useCallback((state: AnalysisState, loaded: Record<string, OpOptions>) => {
    setPerOp((p) => ({ ...p, ...loaded }));
    setHist({ cur: state, past: [] });
  }, []);
  const saved = useSavedAnalysis({ modelId: id, analysisId, targets: model?.targets ?? null, table, target, setTarget, state: analysis, apply: applySaved });
  const { readOnly, onBlocked } = saved;
  // someone else's saved analysis is read-only: edits are refused (the bar offers Fork)
  const push = useCallback(
    (next: AnalysisState) => (readOnly ? onBlocked() : setHist((h) => ({ cur: next, past: h.cur ? [...h.past, h.cur] : h.past }))),
    [readOnly, onBlocked],
  );
  const undo = useCallback(() => setHist((h) => (h.past.length ? { cur: h.past[h.past.length - 1], past: h.past.slice(0, -1) } : h)), []);
  const reset = useCallback(() => {
    if (table && target) push({ target, model_wide: table.base.preset, overrides: {} });
  }, [table, target, push]);

  useEffect(() => {
    const k = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.key === "z" && !(e.target instanceof HTMLInputElement)) (e.preventDefault(), undo());
    };
    window.addEventListener("keydown", k);
    return () => window.removeEventListener("keydown", k);
  }, [undo]);

  const openOp = useCallback(
    (op: string) => {
      setDialog({ kind: "op", op });
      setOpErr(null);
      if (!perOp[op] && target)
        api.opOptions(id, op, target).then(
          (o) => setPerOp((p) => ({ ...p, [op]: o })),
          (e) => setOpErr(e.message),
        );
    },
    [id, target, perOp],
  );

  if (missing) return <NotFound status={missing} what="model" />;
  if (saved.missing && model) return <NotFound status={saved.missing} what="analysis" modelId={id} />;
  const pageError = modelError ?? error;
  if (pageError) return <main className="page"><p className="error" role="alert">{pageError}</p></main>;
  if (!model) return <main className="page"><p className="muted">Loading…</p></main>;
  const canReanalyse = model.your_role === "owner" || model.your_role === "editor";
  if (model.status !== "ready")
    return (
      <main className="page" data-testid="model-pending" data-status={model.status}>
        <p><a href="/" onClick={(e) => (e.preventDefault(), navigate("/"))}>Edgescope</a></p>
        <h1>{model.name}</h1>
        <p>{model.status === "failed" ? "Processing failed." : "Processing…"}</p>
        <StageList model={model} />
        {model.error && <p className="error" role="alert" data-testid="model-error">{model.error}</p>}
        <ModelFacts model={model} ops={null} canReanalyse={canReanalyse && model.status === "failed"} onReanalyse={() => setDialog({ kind: "reanalyse" })} />
        {dialog?.kind === "reanalyse" && <ReanalyseDialog model={model} onClose={() => setDialog(null)} onQueued={onQueued} />}
      </main>
    );

  const unoptimized = !!analysis && !!table && analysis.model_wide === table.base.preset && Object.keys(analysis.overrides).length === 0;
  const selId = sel.focus ?? (sel.ids.size === 1 ? [...sel.ids][0] : null);
  const selOp = selId ? ops?.ops.find((o) => o.id === selId) ?? null : null;
  const focusOp = dialog?.kind === "op" ? ops?.ops.find((o) => o.id === dialog.op) : null;
  const summary = model.summary?.targets.find((t) => t.target === target) ?? null;
  const measured: Measured = {
    latency: !!ops?.measured && table?.label.baseline !== "predicted",
    label: ops?.label ?? summary?.label ?? "",
    wholeModelMs: ops?.measured ? ops.latency_ms : null,
    p90Ms: ops?.latency_p90_ms ?? (summary?.measured ? summary.latency_p90_ms : null),
    peakBytes: ops?.peak_memory_bytes ?? (summary?.measured ? summary.peak_memory_bytes : null),
    noisy: !!(ops?.noise ?? summary?.noise)?.noisy,
    spread: (ops?.noise ?? summary?.noise)?.spread ?? null,
    noiseReason: (ops?.noise ?? summary?.noise)?.reason ?? null,
  };

  return (
    <div className="model-page" data-testid="model-page" data-ready={!!evaluation}>
      <Header
        model={model}
        target={target ?? ""}
        onTarget={setTarget}
        totals={evaluation?.totals ?? null}
        base={baseEval?.totals ?? null}
        unoptimized={unoptimized}
        measured={measured}
        predictedLabel={table ? labelText(table.label) : ""}
        fixedMs={fixedMs}
        optimizedCount={analysis ? Object.keys(analysis.overrides).length : 0}
        modelWide={analysis?.model_wide ?? ""}
        canUndo={history.length > 0}
        onUndo={undo}
        onReset={reset}
        onOptimize={() => setDialog({ kind: "model" })}
        onExport={() => setDialog({ kind: "export" })}
      />
      <CollabBar model={model} saved={saved} canSave={!!evaluation} />
      <ModelFacts model={model} ops={ops} canReanalyse={canReanalyse} onReanalyse={() => setDialog({ kind: "reanalyse" })} />
      <div className="toolbar" role="search">
        <input
          type="search"
          placeholder="Search name, id or type"
          aria-label="Search tasks by name, id or type"
          value={filters.text}
          data-testid="search"
          onChange={(e) => setFilters((f) => ({ ...f, text: e.target.value }))}
        />
        <label>
          Type{" "}
          <select value={filters.type} onChange={(e) => setFilters((f) => ({ ...f, type: e.target.value }))} data-testid="filter-type">
            <option value="">all</option>
            {types.map((t) => (<option key={t} value={t}>{t}</option>))}
          </select>
        </label>
        <label>
          Time &gt;{" "}
          <input type="number" min={0} step={0.01} className="narrow" value={filters.minLatency} aria-label="Only tasks slower than (ms)" data-testid="filter-latency"
            onChange={(e) => setFilters((f) => ({ ...f, minLatency: e.target.value }))} /> ms
        </label>
        {lasso && (
          <span className="chip" data-testid="lasso-chip">
            lasso: {lasso.size} tasks <button className="link" onClick={() => setLasso(null)} aria-label="Clear lasso filter">✕</button>
          </span>
        )}
        {filterActive && <button className="link" onClick={() => (setFilters({ text: "", type: "", minLatency: "" }), setLasso(null))}>Clear filters</button>}
        <span className="spacer" />
        {target && <ResultDownloads modelId={id} target={target} format={model.format} onSolve={() => setDialog({ kind: "solve" })}
          state={analysis} analysisId={saved.current && !saved.dirty ? saved.current.id : null} base={table?.base.preset} />}
        <label className="check"><input type="checkbox" checked={showTimeline} onChange={(e) => setShowTimeline(e.target.checked)} /> Timeline</label>
      </div>
      <div className="panes">
        <section className="pane pane-table" aria-label="Table">
          {ops && evaluation ? (
            <OpTable rows={rows} only={filteredIds} maxLatency={maxLatency} selected={sel.ids} focus={sel.focus} focusFromElsewhere={sel.source !== "table"} onSelect={onTableSelect} onOptimize={openOp} multiUnit={(table?.unit_names?.length ?? 0) > 1} compare={compare} />
          ) : (
            <p className="muted pad">Loading tasks…</p>
          )}
        </section>
        <section className="pane pane-graph" aria-label="Graph">
          <Suspense fallback={<div className="graph-root" data-state="loading" data-nodes="0" data-testid="graph" />}>
            <GraphView
              graph={graph}
              ops={ops}
              evaluation={evaluation}
              baseEvaluation={baseEval}
              table={table}
              units={units}
              selection={sel}
              filtered={filteredIds}
              onSelect={select}
              onLasso={setLasso}
              onOptimize={openOp}
              onDrawn={onGraphDrawn}
              compare={compare}
            />
          </Suspense>
        </section>
      </div>
      <SourcePanel modelId={id} op={selOp} />
      <ViewsPanel modelId={id} target={target} rows={rows} table={table} selection={sel} onSelect={select}
        current={saved.current} revision={saved.revision} opName={opName} onCompare={setCompare} />
      {showTimeline && ops && evaluation && (
        <Timeline ops={ops.ops} latency={evaluation.latency_ms} fixedMs={fixedMs} conversion={evaluation.conversion_in_ms} selection={sel} filtered={filteredIds} onSelect={onTimelineSelect} />
      )}
      {dialog?.kind === "model" && table && analysis && baseEval && (
        <ModelWideDialog
          table={table}
          perOp={perOp}
          state={analysis}
          base={baseEval.totals}
          onClose={() => setDialog(null)}
          onApply={(preset, keep) => (push({ ...analysis, model_wide: preset, overrides: keep ? analysis.overrides : {} }), setDialog(null))}
        />
      )}
      {dialog?.kind === "reanalyse" && <ReanalyseDialog model={model} onClose={() => setDialog(null)} onQueued={onQueued} />}
      {dialog?.kind === "solve" && analysis && ops && (
        <SolveDialog modelId={id} state={analysis} ops={ops.ops} selected={[...sel.ids]} onClose={() => setDialog(null)}
          onApply={(overrides, loaded) => (setPerOp((x) => ({ ...x, ...loaded })), push({ ...analysis, overrides }), setDialog(null))} />
      )}
      {dialog?.kind === "export" && analysis && (
        <ExportDialog modelId={id} state={analysis} analysisId={saved.current && !saved.dirty ? saved.current.id : null}
          blocked={table ? exportBlocked(table, perOp, analysis) : null} onClose={() => setDialog(null)} />
      )}
      {dialog?.kind === "op" && table && analysis && evaluation && (
        <OpOptionsDialog
          table={table}
          opId={dialog.op}
          opName={focusOp ? displayName(focusOp) : dialog.op}
          options={perOp[dialog.op] ?? null}
          error={opErr}
          perOp={perOp}
          state={analysis}
          evaluation={evaluation}
          onClose={() => setDialog(null)}
          onApply={(combo) => {
            const o = { ...analysis.overrides };
            if (combo === null) delete o[dialog.op];
            else o[dialog.op] = combo;
            push({ ...analysis, overrides: o });
            setDialog(null);
          }}
        />
      )}
    </div>
  );
}
