import {
  type ColumnDef,
  type SortingState,
  type VisibilityState,
  getCoreRowModel,
  useReactTable,
} from "@tanstack/react-table";
import { useVirtualizer } from "@tanstack/react-virtual";
import { memo, useEffect, useMemo, useRef, useState } from "react";
import type { Op } from "../api/types";
import { fmtBytes, fmtCount, fmtMs } from "../format";

/** One table row: a compiled task with its values in the current optimization state. */
export interface Row {
  i: number;
  op: Op;
  pred_ms: number;
  delta_ms: number;
  conv_ms: number;
  combo: string;
  /** compute unit now (label), e.g. "CPU" for a fallback */
  unit: string;
  optimized: boolean;
  /** on the first task: the per-inference time the totals add besides the tasks' own (not in its figures) */
  fixed_ms?: number;
}

/** What the first task's note says about the per-inference time kept out of its figures. */
export function fixedNote(ms: number): string {
  return `Not in this task's figures: ${fmtMs(ms)} ms per inference outside the tasks' own times (the runtime's fixed cost `
    + "and, where measured, time between kernels and other load). The totals include it; the timeline shows it first.";
}

interface ColMeta {
  label: string;
  help: string;
  width: number;
  numeric?: boolean;
}

const meta = (label: string, width: number, help: string, numeric = false): ColMeta => ({ label, help, width, numeric });

// The name column comes first and stays in view when the table scrolls sideways (sticky); it takes the width
// the other columns leave, at least its own.
export const COLUMN_HELP: Record<string, ColMeta> = {
  name: meta("Name", 170, "Name of the compiled task (fused ops share one task); ◆ marks tasks whose option you changed. Optimize lists every option of the task."),
  index: meta("#", 50, "Position in execution order.", true),
  type: meta("Type", 96, "Kind of compiled task, e.g. FusedConv = convolution with its activation fused in."),
  namespace: meta("Namespace", 140, "Where the task sits in the model's module hierarchy."),
  latency_ms: meta("Time (ms)", 104, "Time of this task on the target, unoptimized: where it runs here, the median of its runs under the runtime's profiler, which adds its own cost to every task and, on a busy machine, the task's wait for the CPU (Now takes both off); elsewhere predicted. The bar shows its share of the model.", true),
  p25_ms: meta("p25 (ms)", 80, "25th percentile of the measured time: a quarter of the runs were faster.", true),
  p75_ms: meta("p75 (ms)", 80, "75th percentile of the measured time: three quarters of the runs were faster.", true),
  share: meta("Share", 66, "Fraction of the whole model's time spent in this task.", true),
  pred_ms: meta("Now (ms)", 76, "Time of this task with the optimization you chose (model-wide and per-op), as the header adds it up; unoptimized on a target that runs here, the measured time less the profiler's own cost per task (and, on a busy machine, less the wait for the CPU).", true),
  delta_ms: meta("Δ (ms)", 72, "Change of this task's predicted time compared with the unoptimized model. Negative is faster.", true),
  conv_ms: meta("Conv. (ms)", 80, "Time spent converting inputs to this task's format because a neighbour uses a different number format.", true),
  combo: meta("Formats", 112, "Number formats now: input / output / weights / % of weights pruned."),
  unit: meta("Unit", 76, "Compute unit the task runs on now (NPU, GPU, CPU); CPU on an accelerator target is a fallback."),
  macs: meta("MACs", 80, "Multiply-accumulate operations: how much arithmetic the task does.", true),
  weight_bytes: meta("Weights", 84, "Bytes of weights (parameters) this task reads, unoptimized.", true),
  activation_bytes: meta("Activations", 92, "Bytes of input and output tensors this task reads and writes, unoptimized.", true),
  compare: meta("Δ other", 84, "Model diff (ms): this task's time in the other model minus its time here (matched by name, namespace and structure); a task missing there counts as removed.", true),
};

/** What a 1440 px screen's table pane shows without scrolling sideways; the rest is one click away (Columns). */
const DEFAULT_HIDDEN: VisibilityState = {
  index: false, namespace: false, p25_ms: false, p75_ms: false, share: false, conv_ms: false, macs: false, weight_bytes: false, activation_bytes: false, compare: false,
};

/** Runs per inference of a control-flow body task: "×8" for a Loop body, "not run" for a branch not taken. */
function runsChip(n: number | undefined) {
  if (n === undefined || n === 1) return null;
  return n === 0 ? (
    <span className="chip-runs off" title="Not run: a branch not taken at these inputs">not run</span>
  ) : (
    <span className="chip-runs" title={`Runs ${n} times per inference (its time covers all of them)`}>×{n}</span>
  );
}

/** A task's name as shown: formats without op names (TFLite) fall back to the task id, e.g. CONV_2D_3. */
export const displayName = (op: Pick<Op, "name" | "id">) => op.name || op.id;

interface Props {
  rows: Row[];
  /** ids to show (table filters and lasso); null shows every row. Filtering runs after sorting, so it is one pass. */
  only: ReadonlySet<string> | null;
  maxLatency: number;
  selected: ReadonlySet<string>;
  focus: string | null;
  focusFromElsewhere: boolean;
  onSelect: (ids: string[], focus: string | null, additive: boolean) => void;
  onOptimize: (id: string) => void;
  /** the target has several compute units: show the Unit column by default */
  multiUnit?: boolean;
  /** a model diff: Δ time per op id (other − this), shown in the "Δ other" column while set */
  compare?: { delta: ReadonlyMap<string, number>; how: ReadonlyMap<string, string> } | null;
}

const NO_ROWS: Row[] = [];
/** every row's height (px): the virtualizer's size and the focus scroll's offsets */
const ROW_H = 28;

/** Sort by the first sort column: numbers on a Float64Array of keys, strings with localeCompare; stable. */
function sortRows(rows: Row[], columns: ColumnDef<Row>[], sorting: SortingState): Row[] {
  if (!sorting.length) return rows;
  const { id, desc } = sorting[0];
  const col = columns.find((c) => c.id === id) as { accessorFn?: (r: Row, i: number) => unknown } | undefined;
  if (!col?.accessorFn) return rows;
  const n = rows.length;
  const idx = new Uint32Array(n);
  for (let i = 0; i < n; i++) idx[i] = i;
  const first = n ? col.accessorFn(rows[0], 0) : 0;
  const dir = desc ? -1 : 1;
  if (typeof first === "number") {
    const keys = new Float64Array(n);
    for (let i = 0; i < n; i++) keys[i] = col.accessorFn(rows[i], i) as number;
    idx.sort((a, b) => dir * (keys[a] - keys[b]) || a - b);
  } else {
    const keys = rows.map((r, i) => String(col.accessorFn!(r, i) ?? ""));
    const coll = new Intl.Collator(undefined, { numeric: true });
    idx.sort((a, b) => dir * coll.compare(keys[a], keys[b]) || a - b);
  }
  const out = new Array<Row>(n);
  for (let i = 0; i < n; i++) out[i] = rows[idx[i]];
  return out;
}

const num = (key: "latency_ms" | "p25_ms" | "p75_ms" | "macs" | "weight_bytes" | "activation_bytes" | "share") => (r: Row) => r.op[key];

type CompareProp = Props["compare"];

function useColumns(maxLatency: number, onOptimize: (id: string) => void, compare: CompareProp): ColumnDef<Row>[] {
  return useMemo<ColumnDef<Row>[]>(
    () => [
      {
        id: "name",
        accessorFn: (r) => displayName(r.op),
        cell: (c) => (
          <span className="name-cell" style={c.row.original.op.parent ? { paddingLeft: 12 } : undefined}>
            {c.row.original.op.parent && <span className="muted" title={`inside ${c.row.original.op.parent}${c.row.original.op.branch ? ` (${c.row.original.op.branch})` : ""}`}>↳</span>}
            {c.row.original.optimized && <span className="mark" title="optimized (per-op override)" aria-label="optimized">◆</span>}
            <span className="cell-text" title={`${String(c.getValue())}${c.row.original.op.namespace ? `\n${c.row.original.op.namespace}` : ""}`}>{String(c.getValue())}</span>
            {runsChip(c.row.original.op.executions)}
            {c.row.original.op.work_unknown && (
              <span className="chip-runs unknown" data-testid="work-unknown-op" title="Work unknown: this task's MACs and bytes could not be resolved at the shapes used, so its predictions on other targets and options are unreliable">work ?</span>
            )}
            <button className="small row-optimize" onClick={(e) => (e.stopPropagation(), onOptimize(c.row.original.op.id))} aria-label={`Optimize ${displayName(c.row.original.op)}`}>
              Optimize
            </button>
          </span>
        ),
      },
      {
        id: "compare",
        accessorFn: (r) => compare?.delta.get(r.op.id) ?? 0,
        cell: (c) => {
          const v = c.getValue() as number;
          const how = compare?.how.get(c.row.original.op.id);
          if (how === "removed") return <span className="better" title="Not in the other model">only here</span>;
          return <span className={v < -1e-12 ? "better" : v > 1e-12 ? "worse" : "muted"} title={how ? `matched by ${how}` : undefined}>{v === 0 ? "0" : (v > 0 ? "+" : "") + fmtMs(v)}</span>;
        },
      },
      { id: "index", accessorFn: (r) => r.op.index },
      { id: "type", accessorFn: (r) => r.op.type },
      { id: "unit", accessorFn: (r) => r.unit },
      { id: "namespace", accessorFn: (r) => r.op.namespace },
      {
        id: "latency_ms",
        accessorFn: num("latency_ms"),
        cell: (c) => {
          const v = c.getValue() as number;
          return (
            <span className="spark">
              <span className="spark-bar" style={{ width: `${Math.max(1, (44 * v) / (maxLatency || 1))}px` }} aria-hidden="true" />
              {fmtMs(v)}
            </span>
          );
        },
      },
      { id: "p25_ms", accessorFn: num("p25_ms"), cell: (c) => fmtMs(c.getValue() as number) },
      { id: "p75_ms", accessorFn: num("p75_ms"), cell: (c) => fmtMs(c.getValue() as number) },
      { id: "share", accessorFn: num("share"), cell: (c) => `${((c.getValue() as number) * 100).toFixed(1)}%` },
      { id: "pred_ms", accessorFn: (r) => r.pred_ms, cell: (c) => {
        const fixed = c.row.original.fixed_ms;
        return fixed ? <span title={fixedNote(fixed)} data-testid="fixed-ms" data-value={fixed}>{fmtMs(c.getValue() as number)}<sup className="muted"> +</sup></span> : fmtMs(c.getValue() as number);
      } },
      {
        id: "delta_ms",
        accessorFn: (r) => r.delta_ms,
        cell: (c) => {
          const v = c.getValue() as number;
          return <span className={v < -1e-12 ? "better" : v > 1e-12 ? "worse" : "muted"}>{v === 0 ? "0" : (v > 0 ? "+" : "") + fmtMs(v)}</span>;
        },
      },
      { id: "conv_ms", accessorFn: (r) => r.conv_ms, cell: (c) => ((c.getValue() as number) ? <span className="worse">{fmtMs(c.getValue() as number)}</span> : <span className="muted">0</span>) },
      { id: "combo", accessorFn: (r) => r.combo },
      { id: "macs", accessorFn: num("macs"), cell: (c) => fmtCount(c.getValue() as number) },
      { id: "weight_bytes", accessorFn: num("weight_bytes"), cell: (c) => fmtBytes(c.getValue() as number) },
      { id: "activation_bytes", accessorFn: num("activation_bytes"), cell: (c) => fmtBytes(c.getValue() as number) },
    ],
    [maxLatency, onOptimize, compare],
  );
}

export const OpTable = memo(function OpTable({ rows, only, maxLatency, selected, focus, focusFromElsewhere, onSelect, onOptimize, multiUnit = false, compare = null }: Props) {
  const [sorting, setSorting] = useState<SortingState>([]);
  const [visibility, setVisibility] = useState<VisibilityState>(() => ({ ...DEFAULT_HIDDEN, unit: multiUnit }));
  const [chooser, setChooser] = useState(false);
  const columns = useColumns(maxLatency, onOptimize, compare);
  useEffect(() => setVisibility((v) => ({ ...v, compare: !!compare })), [compare]);
  // TanStack Table keeps the column model (visibility, sort state, headers); rows are sorted here on typed keys
  // and only the visible ones get cells, so 50,000 rows sort in tens of ms instead of building a row model.
  const table = useReactTable({
    data: NO_ROWS,
    columns,
    state: { sorting, columnVisibility: visibility },
    onSortingChange: setSorting,
    onColumnVisibilityChange: setVisibility,
    getCoreRowModel: getCoreRowModel(),
    manualSorting: true,
    sortDescFirst: true,
  });
  const sorted = useMemo(() => sortRows(rows, columns, sorting), [rows, columns, sorting]);
  const shown = useMemo(() => (only ? sorted.filter((r) => only.has(r.op.id)) : sorted), [sorted, only]);
  const model = { rows: shown };
  const visibleCols = table.getVisibleLeafColumns();
  const template = visibleCols.map((c) => (c.id === "name" ? `minmax(${COLUMN_HELP.name.width}px, 1fr)` : `${COLUMN_HELP[c.id].width}px`)).join(" ");
  const width = `max(100%, ${visibleCols.reduce((s, c) => s + COLUMN_HELP[c.id].width, 0)}px)`;
  const scroller = useRef<HTMLDivElement>(null);
  // useFlushSync: false lets a scroll's new rows render with the frame's other updates; TanStack's default re-renders
  // the table synchronously inside the scroll event (a second render of the rows when a selection scrolls to its focus)
  const virt = useVirtualizer({ count: model.rows.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_H, overscan: 12, useFlushSync: false });

  // bring the focused row into view when it was selected elsewhere (graph, timeline, chart). Rows have one fixed
  // height, so its offset is known: TanStack's scrollToIndex reads the scroll size back (a forced layout in the
  // middle of the commit that applies a selection) and checks it again on the following frames.
  useEffect(() => {
    const el = scroller.current;
    if (!focus || !focusFromElsewhere || !el) return;
    const k = model.rows.findIndex((r) => r.op.id === focus);
    const h = virt.scrollRect?.height ?? el.clientHeight;
    if (k >= 0) el.scrollTop = Math.max(0, k * ROW_H - h / 2 + ROW_H / 2);
  }, [focus, focusFromElsewhere, model.rows, virt]);

  const move = (d: number) => {
    const k = focus ? model.rows.findIndex((r) => r.op.id === focus) : -1;
    const n = Math.min(model.rows.length - 1, Math.max(0, k + d));
    if (model.rows[n]) {
      onSelect([model.rows[n].op.id], model.rows[n].op.id, false);
      virt.scrollToIndex(n);
    }
  };

  return (
    <div className="optable" data-testid="op-table" data-rows={model.rows.length}>
      <div className="optable-tools">
        <span className="muted" aria-live="polite">{model.rows.length.toLocaleString()} tasks</span>
        <div className="chooser">
          <button className="small" aria-expanded={chooser} onClick={() => setChooser((c) => !c)}>
            Columns
          </button>
          {chooser && (
            <div className="chooser-menu" role="menu">
              {table.getAllLeafColumns().filter((c) => COLUMN_HELP[c.id].label && (c.id !== "compare" || compare)).map((c) => (
                <label key={c.id} title={COLUMN_HELP[c.id].help} role="menuitemcheckbox" aria-checked={c.getIsVisible()}>
                  <input type="checkbox" checked={c.getIsVisible()} onChange={c.getToggleVisibilityHandler()} />
                  {COLUMN_HELP[c.id].label}
                  <span className="help">{COLUMN_HELP[c.id].help}</span>
                </label>
              ))}
            </div>
          )}
        </div>
      </div>
      <div
        className="optable-scroll"
        ref={scroller}
        tabIndex={0}
        role="grid"
        aria-label="Compiled tasks"
        aria-rowcount={model.rows.length + 1}
        onKeyDown={(e) => {
          if (e.key === "ArrowDown") (e.preventDefault(), move(1));
          else if (e.key === "ArrowUp") (e.preventDefault(), move(-1));
          else if (e.key === "PageDown") (e.preventDefault(), move(20));
          else if (e.key === "PageUp") (e.preventDefault(), move(-20));
          else if (e.key === "Enter" && focus) onOptimize(focus);
        }}
      >
        <div className="optable-head" role="row" style={{ gridTemplateColumns: template, width }}>
          {table.getHeaderGroups()[0].headers.map((h) => {
            const m = COLUMN_HELP[h.column.id];
            const s = h.column.getIsSorted();
            return (
              <div key={h.id} role="columnheader" aria-sort={s === "asc" ? "ascending" : s === "desc" ? "descending" : "none"} className={m.numeric ? "num" : ""} data-col={h.column.id}>
                {h.column.getCanSort() && m.label ? (
                  <button className="th" data-col={h.column.id} title={m.help} onClick={h.column.getToggleSortingHandler()}>
                    {m.label}
                    <span aria-hidden="true">{s === "asc" ? " ▲" : s === "desc" ? " ▼" : ""}</span>
                  </button>
                ) : (
                  <span title={m.help}>{m.label}</span>
                )}
              </div>
            );
          })}
        </div>
        <div style={{ height: virt.getTotalSize(), width, position: "relative" }}>
          {virt.getVirtualItems().map((v) => {
            const row = model.rows[v.index];
            const id = row.op.id;
            const sel = selected.has(id);
            return (
              <div
                key={id}
                role="row"
                aria-rowindex={v.index + 2}
                aria-selected={sel}
                data-op-id={id}
                className={`optable-row ${sel ? "selected" : ""} ${id === focus ? "focus" : ""} ${row.optimized ? "optimized" : ""}`}
                style={{ transform: `translateY(${v.start}px)`, gridTemplateColumns: template, width }}
                onClick={(e) => onSelect([id], id, e.ctrlKey || e.metaKey || e.shiftKey)}
              >
                {visibleCols.map((c) => {
                  const def = c.columnDef as { accessorFn?: (r: Row, i: number) => unknown; cell?: unknown };
                  const getValue = () => def.accessorFn?.(row, v.index);
                  const ctx = { getValue, renderValue: getValue, row: { original: row, id }, column: c };
                  return (
                    <div key={c.id} role="gridcell" className={COLUMN_HELP[c.id].numeric ? "num" : ""} data-col={c.id}>
                      {typeof def.cell === "function" ? (def.cell as (x: typeof ctx) => React.ReactNode)(ctx) : String(ctx.getValue() ?? "")}
                    </div>
                  );
                })}
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
});
