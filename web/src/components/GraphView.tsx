import Graph from "graphology";
import { memo, useCallback, useEffect, useMemo, useRef, useState } from "react";
import Sigma from "sigma";
import {
  hideEdgesWhileMoving,
  MovingEdgeArrowProgram,
  MovingEdgeLineProgram,
  MovingNodeCircleProgram,
  MovingNodePointProgram,
  pickOnlyWhenStill,
} from "../graph/programs";
import type { OpsResponse, OptionTable } from "../api/types";
import { fmtBytes, fmtMs } from "../format";
import { ROOT } from "../graph/hierarchy";
import { LazyIndex, positionsIn } from "../positions";
import { type FromWorker, type GraphModel, groupTitle, type LayoutResult, opAncestors, type ToWorker, unpackModel, HEADER } from "../graph/messages";
import { drawOverlay as drawOverlay2d } from "../graph/overlay";
import { FIRST_REQ, type GraphSession } from "../graph/session";
import { opsInside, useLasso } from "./graph/lasso";
import { useMinimap } from "./graph/minimap";
import { fitTop as fitTopOf, minZoomRatio, type ZoomTarget, zoomTo as zoomToTarget } from "./graph/camera";
import { drawHighlight, type Highlight, NO_HIGHLIGHT } from "../graph/highlight";
import { watchLabelCrowding } from "./graph/crowding";
import { GROUP_SIZE, highlightOf, itemPoint, itemStyle, LABELLED_SELECTION, labelGap, type NodeAttrs, optimizedRings, selectedItems, selectedNodes, type Style, styleNode } from "./graph/style";
import { maskFor, type Selection, type SelectSource } from "../selection";
import type { Evaluation } from "../totals";
import { unitLabel } from "../units";
import type { GraphDebug } from "./graph/debug";
import { DIV, METRICS, type MetricKey, metricValues as metricValuesOf, SEL, SEQ, unitColoring as unitColoringOf, type UnitLegend } from "../graph/coloring";

interface Props {
  /** the graph's worker, which has the graph (graph/session.ts) */
  graph: GraphSession | null;
  ops: OpsResponse | null;
  evaluation: Evaluation | null;
  baseEvaluation: Evaluation | null;
  table: OptionTable | null;
  /** compute unit of each op now (table order), null where unknown */
  units: (string | null)[] | null;
  selection: Selection;
  filtered: ReadonlySet<string> | null;
  onSelect: (ids: string[], focus: string | null, source: SelectSource, additive?: boolean) => void;
  onLasso: (ids: ReadonlySet<string> | null) => void;
  onOptimize: (id: string) => void;
  /** called after each drawing of a new layout */
  onDrawn?: () => void;
  /** a model diff: Δ time per op id, offered (and chosen) as the "Δ time vs other model" colouring */
  compare?: { label: string; delta: ReadonlyMap<string, number> } | null;
}



/** `expanded` before the first view: the worker chooses the first view's groups and says which (messages.ts) */
const WORKER_CHOICE: ReadonlySet<string> = new Set([ROOT]);

export default memo(function GraphView(p: Props) {
  const root = useRef<HTMLDivElement>(null);
  const container = useRef<HTMLDivElement>(null);
  const boxesCanvas = useRef<HTMLCanvasElement>(null);
  const highlightCanvas = useRef<HTMLCanvasElement>(null);
  const sigmaRef = useRef<Sigma | null>(null);
  const graphRef = useRef<Graph | null>(null);
  const workerRef = useRef<GraphSession | null>(null);
  const layoutRef = useRef<LayoutResult | null>(null);
  const reqRef = useRef(0);
  const styleRef = useRef<Style | null>(null);
  const labelGapRef = useRef(Infinity);
  const crowdCheckRef = useRef<() => void>(() => {});
  /** the selection: which drawn items hold a selected op, and the layer that draws them (graph/highlight.ts) */
  const selRef = useRef<Uint8Array | null>(null);
  const hlRef = useRef<Highlight>(NO_HIGHLIGHT);
  /** optimized tasks' rings for the overlay: x, y (layout units, y down), node size; set by applyStyle */
  const halos = useRef(new Float64Array(0));
  const pendingZoom = useRef<ZoomTarget | "fit" | null>("fit");
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(WORKER_CHOICE);
  const [layout, setLayout] = useState<LayoutResult | null>(null);
  const [metric, setMetric] = useState<MetricKey>("latency");
  // a model diff opened: colour by it; closed: back to time
  useEffect(() => setMetric((m) => (p.compare ? "compare" : m === "compare" ? "latency" : m)), [p.compare]);
  const [lassoMode, setLassoMode] = useState(false);
  const [showMinimap, setShowMinimap] = useState(true);
  const [tip, setTip] = useState<{ x: number; y: number; html: React.ReactNode } | null>(null);
  const [layoutMs, setLayoutMs] = useState(0);
  /** the node columns and the group hierarchy, from the worker once the first view is drawn (messages.ts) */
  const [model, setModel] = useState<GraphModel | null>(null);
  /** the first view's layout is here (the worker chose its groups): later changes of `expanded` are laid out */
  const firstExpanded = useRef<ReadonlySet<string> | null>(null);
  const modelAsked = useRef(false);
  const pendingExpandAll = useRef(false);

  const setState = (s: "loading" | "layout" | "rendered", nodes?: number) => {
    const el = root.current;
    if (!el) return;
    el.dataset.state = s;
    if (nodes !== undefined) el.dataset.nodes = String(nodes);
  };

  const tree = model?.groups ?? null;
  const idToNode = useMemo(() => new LazyIndex(model?.ids ?? []), [model]);
  const opIds = useMemo(() => p.ops?.ops.map((o) => o.id) ?? null, [p.ops]);
  // the page's task list (/ops order, which the selection's mask covers) -> graph node
  const taskToNode = useMemo(() => (model && opIds ? positionsIn(model.ids, opIds) : null), [model, opIds]);
  // graph node index -> option-table index (metrics)
  const toTable = useMemo(() => (model && p.table ? positionsIn(p.table.ops, model.ids) : null), [model, p.table]);
  const opsByTable = useMemo(() => {
    if (!p.ops || !opIds || !p.table) return null;
    const pos = positionsIn(opIds, p.table.ops);
    return p.table.ops.map((_, k) => p.ops!.ops[pos[k]]);
  }, [p.ops, opIds, p.table]);

  // ---- worker ----
  // The worker parses the graph, builds its hierarchy and lays out the first view; the page gets the node columns
  // and the hierarchy after that view is drawn (messages.ts).
  useEffect(() => {
    const w = p.graph;
    if (!w) return;
    workerRef.current = w;
    firstExpanded.current = null;
    modelAsked.current = false;
    setModel(null);
    setExpanded(WORKER_CHOICE);
    setState("layout");
    reqRef.current = FIRST_REQ;
    w.listen((r: FromWorker) => {
      if (r.type === "error") return console.error("graph worker failed:", r.message);
      if (r.type === "model") {
        if (root.current) root.current.dataset.model = "ready";
        return setModel(unpackModel(r));
      }
      if (r.req !== reqRef.current) return; // superseded
      if (r.expanded) {
        if (root.current && r.phases) root.current.dataset.phases = JSON.stringify(r.phases);
        const first = new Set(r.expanded);
        firstExpanded.current = first;
        setExpanded(first);
      }
      layoutRef.current = r;
      setLayoutMs(r.ms);
      setLayout(r);
    });
    return () => {
      w.listen(null);
      if (workerRef.current === w) workerRef.current = null;
    };
  }, [p.graph]);

  useEffect(() => {
    // before the first view there is nothing to re-lay out; the first view itself was laid out with the graph
    // (this runs in the commit that attached the worker too, with `expanded` still WORKER_CHOICE)
    if (!workerRef.current || expanded === WORKER_CHOICE || expanded === firstExpanded.current) return;
    setState("layout");
    const req = ++reqRef.current;
    workerRef.current.post({ type: "layout", req, expanded: Array.from(expanded) } satisfies ToWorker);
  }, [expanded]);

  // "Expand all" asked for before the hierarchy arrived (a test or the benchmark right after the first view)
  useEffect(() => {
    if (tree && pendingExpandAll.current) {
      pendingExpandAll.current = false;
      setExpanded(new Set(tree.ids));
    }
  }, [tree]);
  const expandAll = useCallback(() => {
    if (tree) setExpanded(new Set(tree.ids));
    else pendingExpandAll.current = true;
  }, [tree]);

  // ---- sigma ----
  useEffect(() => {
    if (!container.current) return;
    const g = new Graph({ multi: false, type: "directed" });
    graphRef.current = g;
    const s = new Sigma(g, container.current, {
      itemSizesReference: "positions",
      zoomToSizeRatioFunction: (r) => r,
      defaultEdgeType: "arrow",
      defaultEdgeColor: "#59607a",
      labelColor: { color: "#e8ebf2" },
      labelSize: 12,
      labelRenderedSizeThreshold: 4,
      labelDensity: 1,
      // the reducer applies colour, dimming and marks from typed arrays (see styleNode); the selection is drawn
      // on a layer of its own and never repaints sigma's nodes
      nodeReducer: (_key, a) => styleNode(styleRef.current, a as NodeAttrs),
      minCameraRatio: 0.002,
      maxCameraRatio: 4,
      stagePadding: 20,
      allowInvalidContainer: true,
      nodeProgramClasses: { circle: MovingNodeCircleProgram, point: MovingNodePointProgram },
      edgeProgramClasses: { arrow: MovingEdgeArrowProgram, line: MovingEdgeLineProgram },
    });
    pickOnlyWhenStill(s);
    sigmaRef.current = s;
    const crowding = watchLabelCrowding(s, () => styleRef.current, () => labelGapRef.current, () => root.current);
    crowdCheckRef.current = crowding.check;
    return () => {
      crowding.off();
      s.kill();
      sigmaRef.current = null;
    };
  }, []);

  // build the drawn graph from a layout
  const keyOfIndex = useCallback((k: number, L: LayoutResult) => (k < L.ops.length ? `o${L.ops[k]}` : `g${L.collapsed[k - L.ops.length].id}`), []);
  useEffect(() => {
    const s = sigmaRef.current;
    if (!layout || !s) return;
    // Big drawings use one-vertex point sprites and plain lines: 10x cheaper than quads where WebGL is software.
    const big = layout.ops.length + layout.collapsed.length > 500;
    // Every setSetting re-indexes the whole graph sigma holds: change settings while it holds an empty one.
    s.setGraph(new Graph({ multi: false, type: "directed" }));
    s.setSetting("defaultNodeType", big ? "point" : "circle");
    s.setSetting("defaultEdgeType", big ? "line" : "arrow");
    // sigma picks label candidates over the whole graph's grid each frame: O(nodes) when zoomed in
    s.setSetting("hideLabelsOnMove", big);
    s.setSetting("minCameraRatio", minZoomRatio(s, Math.max(layout.width + 80, layout.height, 200)));
    // The new graph is built while no renderer listens to it (sigma handled each added node and edge as an
    // event, then recoloured and re-indexed all of them again: most of the 7-14 s of a 50,000-node expansion).
    const g = new Graph({ multi: false, type: "directed" });
    // a first view of labelled blocks shows every block's label (sigma's label grid would drop some)
    const few = layout.ops.length + layout.collapsed.length <= 80;
    labelGapRef.current = few ? labelGap(layout) : Infinity;
    for (let k = 0; k < layout.ops.length; k++) {
      const i = layout.ops[k];
      const [x, y, size] = itemPoint(layout, k);
      g.addNode(`o${i}`, { x, y: -y, size, label: layout.opLabels[k], kind: "op", op: i, k } satisfies NodeAttrs);
    }
    layout.collapsed.forEach((c, j) => {
      const [x, y] = itemPoint(layout, layout.ops.length + j);
      g.addNode(`g${c.id}`, { x, y: -y, size: GROUP_SIZE, label: groupTitle(c), kind: "group", group: c.id, k: layout.ops.length + j, pinLabel: few } satisfies NodeAttrs);
    });
    // the worker sends each drawn edge once (no self loops, no duplicates): no key generator, no hasEdge
    for (let e = 0; e < layout.edges.length; e += 2) {
      g.addDirectedEdgeWithKey(e >> 1, keyOfIndex(layout.edges[e], layout), keyOfIndex(layout.edges[e + 1], layout), { size: 1.2 });
    }
    // software-rendered WebGL struggles with tens of thousands of edges while moving
    hideEdgesWhileMoving(s, g.size > 8000);
    s.setCustomBBox({ x: [-80, Math.max(layout.width, 200)], y: [-Math.max(layout.height, 200), 0] });
    graphRef.current = g;
    styleRef.current = baseStyle(layout);
    styleRef.current.crowded = false;
    if (root.current) root.current.dataset.labelsCrowded = "false";
    applySelection(layout, g);
    const z = pendingZoom.current;
    pendingZoom.current = null;
    let done = false;
    const onRender = () => {
      if (done) return;
      done = true;
      s.off("afterRender", onRender);
      setState("rendered", g.order);
      performance.mark("edgescope:graph-drawn");
      // the first view is on screen: now the page may take the node columns and the hierarchy
      if (!modelAsked.current && workerRef.current) {
        modelAsked.current = true;
        workerRef.current.post({ type: "model" } satisfies ToWorker);
      }
      propsRef.current.onDrawn?.();
    };
    s.on("afterRender", onRender);
    s.setGraph(g); // one indexation and one render
    applyStyle(styleRef.current);
    drawMinimapBase();
    if (z === "fit") fitTop(layout);
    else if (z) zoomTo(z);
    crowdCheckRef.current();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [layout]);

  // ---- colors / highlight ----
  const metricValues = useCallback(
    () => (layoutRef.current ? metricValuesOf(layoutRef.current, metric, p.evaluation, p.baseEvaluation, toTable, opsByTable, p.compare?.delta ?? null) : null),
    [p.evaluation, p.baseEvaluation, toTable, metric, opsByTable, p.compare],
  );
  const unitColoring = useCallback(
    () => (layoutRef.current && metric === "unit" ? unitColoringOf(layoutRef.current, p.units, p.table, toTable) : null),
    [p.units, p.table, toTable, metric],
  );

  const [legend, setLegend] = useState<{ min: number; max: number } | null>(null);
  const [unitLegend, setUnitLegend] = useState<UnitLegend | null>(null);
  /** Colour, dimming and optimized mark of every drawn item (metric, filter, overrides); sets the legends. */
  const baseStyle = useCallback(
    (L: LayoutResult): Style => {
      const mv = metricValues();
      const uc = unitColoring();
      const m = METRICS.find((x) => x.key === metric)!;
      const st = itemStyle(L, model?.ids ?? null, { metric: mv, diverging: !!m.diverging, units: uc, filtered: p.filtered, overridden: p.evaluation?.overridden, toTable });
      setLegend(mv ? { min: m.diverging ? -st.absMax : mv.min, max: m.diverging ? st.absMax : mv.max } : null);
      setUnitLegend(uc?.legend ?? null);
      if (root.current) root.current.dataset.dimmed = String(st.dimmed);
      return { color: st.color, dim: st.dim, opt: st.opt, crowded: styleRef.current?.crowded };
    },
    [model, metricValues, unitColoring, metric, p.filtered, p.evaluation, toTable],
  );
  /** The selection as a layer of its own (graph/highlight.ts): which drawn items hold a selected op (a collapsed
   * group holding one is drawn selected), drawn over sigma's canvases. O(selection + drawn items); sigma's nodes and
   * its WebGL drawing are left alone. */
  const applySelection = (L: LayoutResult, g: Graph) => {
    const chosen = selectedNodes(p.selection.ids, idToNode, taskToNode ? maskFor(p.selection, taskToNode.length) : null, taskToNode);
    const ids = model?.ids ?? [];
    const { sel, selCount, hl } = selectedItems(L, chosen, (i) => ids[i]);
    const el = root.current;
    if (el) {
      el.dataset.highlighted = hl.join(",");
      el.dataset.selected = p.selection.focus ?? "";
    }
    selRef.current = sel;
    hlRef.current = highlightOf(L, sel, selCount, (k) => String(g.getNodeAttribute(keyOfIndex(k, L), "label")));
    // the boxes' layer holds the rings of optimized items, which grow with the selection: redrawn only if any
    const rings = halos.current.length;
    applyStyle(styleRef.current);
    if (rings || halos.current.length) drawOverlay();
    else drawSelection();
  };

  /** Repaint every drawn item from styleRef without re-indexing the graph: sigma re-runs the reducer and rewrites
   * its buffers; the label grid and the edges stay as they are. */
  const paintAll = () => {
    const s = sigmaRef.current;
    if (!s || !graphRef.current) return;
    try {
      s.refresh({ partialGraph: { nodes: graphRef.current.nodes() }, skipIndexation: true, schedule: true });
    } catch {
      s.refresh({ schedule: true }); // not indexed yet: the scheduled full refresh paints them
    }
  };
  /** Rings of optimized items (drawn on the overlay), which grow with the selection. */
  const applyStyle = (st: Style | null) => {
    const L = layoutRef.current;
    if (st && L) halos.current = optimizedRings(L, st.opt, selRef.current);
  };

  useEffect(() => {
    const L = layoutRef.current;
    if (!L || !graphRef.current || styleRef.current?.dim.length !== L.ops.length + L.collapsed.length) return;
    styleRef.current = baseStyle(L);
    applyStyle(styleRef.current);
    paintAll();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [baseStyle]);

  useEffect(() => {
    const L = layoutRef.current, g = graphRef.current;
    if (!L || !g || styleRef.current?.dim.length !== L.ops.length + L.collapsed.length) return;
    applySelection(L, g);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [p.selection, idToNode, taskToNode, model]);

  // ---- camera ----
  /** Whole graph if it is compact; a tall chain is shown from its top at a readable scale. */
  const fitTop = useCallback((L: LayoutResult) => sigmaRef.current && fitTopOf(sigmaRef.current, L), []);
  const zoomTo = useCallback((z: ZoomTarget) => {
    const s = sigmaRef.current, g = graphRef.current, L = layoutRef.current;
    if (s && g && L) zoomToTarget(s, g, L, z);
  }, []);

  // follow selections made in the table / timeline: expand ancestors, then zoom
  useEffect(() => {
    // a brush over many tasks is shown where it lies: flying to one of them would hide the pattern (and re-draw
    // 50,000 nodes each frame of the flight)
    if (p.selection.source === "graph" || !p.selection.focus || !tree || p.selection.ids.size > LABELLED_SELECTION) return;
    const i = idToNode.get(p.selection.focus);
    if (i === undefined) return;
    const need = opAncestors(tree, i).filter((gid) => !expanded.has(gid));
    if (need.length) {
      pendingZoom.current = { kind: "op", op: i };
      setExpanded((e) => new Set([...e, ...need]));
    } else zoomTo({ kind: "op", op: i });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [p.selection.focus, p.selection.source, tree]);

  // ---- events ----
  const propsRef = useRef(p);
  propsRef.current = p;
  useEffect(() => {
    const s = sigmaRef.current;
    if (!s) return;
    const ids = model?.ids;
    const clickNode = ({ node, event }: { node: string; event: { original: MouseEvent | TouchEvent } }) => {
      const a = graphRef.current!.getNodeAttributes(node);
      if (a.kind === "group") {
        pendingZoom.current = { kind: "box", id: a.group };
        setExpanded((e) => new Set([...e, a.group]));
      } else if (ids) {
        const add = (event.original as MouseEvent).ctrlKey || (event.original as MouseEvent).metaKey || (event.original as MouseEvent).shiftKey;
        propsRef.current.onSelect([ids[a.op!]], ids[a.op!], "graph", add);
      }
    };
    const dbl = ({ node, preventSigmaDefault }: { node: string; preventSigmaDefault: () => void }) => {
      preventSigmaDefault();
      const a = graphRef.current!.getNodeAttributes(node);
      if (a.kind === "op" && ids) propsRef.current.onOptimize(ids[a.op!]);
    };
    const clickStage = ({ event }: { event: { x: number; y: number } }) => {
      // a click on an expanded group's title bar collapses it
      const L = layoutRef.current;
      if (!L) return;
      const pt = s.viewportToGraph({ x: event.x, y: event.y });
      const y = -pt.y;
      let best: { id: string; depth: number } | null = null;
      for (const b of L.boxes) {
        if (pt.x >= b.x && pt.x <= b.x + b.w && y >= b.y && y <= b.y + HEADER) {
          if (!best || b.depth > best.depth) best = { id: b.id, depth: b.depth };
        }
      }
      if (best) {
        const id = best.id;
        setExpanded((e) => new Set([...e].filter((x) => x !== id && !x.startsWith(id + "/"))));
      }
    };
    const enter = ({ node, event }: { node: string; event: { x: number; y: number } }) => {
      const a = graphRef.current!.getNodeAttributes(node);
      const pp = propsRef.current;
      if (a.kind === "op") {
        if (!model) return setTip({ x: event.x, y: event.y, html: <b>{a.label}</b> });
        const n = { id: model.ids[a.op!], name: model.names[a.op!], type: model.types[a.op!], namespace: model.namespaces[a.op!] };
        const k = toTable?.[a.op!] ?? -1;
        const ev = pp.evaluation;
        const op = k >= 0 ? opsByTable?.[k] : undefined;
        setTip({
          x: event.x, y: event.y,
          html: (
            <>
              <b>{n.name}</b><br />
              {n.type} · {n.id}{n.namespace ? ` · ${n.namespace}` : ""}<br />
              {op && <>measured {fmtMs(op.latency_ms)} ms · </>}
              {ev && k >= 0 && <>now {fmtMs(ev.latency_ms[k])} ms · {ev.combo[k]}{pp.units ? ` · ${unitLabel(pp.units[k])}` : ""}{ev.conversion_in_ms[k] > 0 ? ` · +${fmtMs(ev.conversion_in_ms[k])} ms conversion` : ""}</>}
              {op && <><br />weights {fmtBytes(op.weight_bytes)} · activations {fmtBytes(op.activation_bytes)}</>}
              <br /><span className="muted">click: select · double-click: optimize</span>
            </>
          ),
        });
      } else {
        const L = layoutRef.current;
        const grp = L?.collapsed[a.k - L.ops.length];
        if (grp) setTip({ x: event.x, y: event.y, html: (<><b>{grp.title}</b>{grp.range ? ` ${grp.range}` : ""}<br />{grp.count} tasks · click to expand</>) });
      }
    };
    const leave = () => setTip(null);
    s.on("clickNode", clickNode);
    s.on("doubleClickNode", dbl);
    s.on("clickStage", clickStage);
    s.on("enterNode", enter);
    s.on("leaveNode", leave);
    const after = () => drawOverlay();
    s.on("afterRender", after);
    return () => {
      s.off("clickNode", clickNode);
      s.off("doubleClickNode", dbl);
      s.off("clickStage", clickStage);
      s.off("enterNode", enter);
      s.off("leaveNode", leave);
      s.off("afterRender", after);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [model, toTable, opsByTable]);

  // ---- overlay: group boxes + minimap viewport ----
  const overlayOn = useRef(true);
  /** The 2D layers drawn over and under sigma's canvases: the selection (over) and, unless `selectionOnly`, the
   * group boxes and rings (under). */
  const drawLayers = useCallback((selectionOnly: boolean) => {
    const s = sigmaRef.current, L = layoutRef.current;
    if (!s || !L) return;
    const { width, height } = s.getDimensions();
    const o = s.graphToViewport({ x: 0, y: 0 }), u = s.graphToViewport({ x: 1, y: -1 });
    const view = { ox: o.x, kx: u.x - o.x, oy: o.y, ky: u.y - o.y, width, height };
    const ctx = (c: HTMLCanvasElement | null) => {
      if (!c) return null;
      const dpr = window.devicePixelRatio || 1;
      if (c.width !== width * dpr) c.width = width * dpr;
      if (c.height !== height * dpr) c.height = height * dpr;
      const g = c.getContext("2d")!;
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      return g;
    };
    const hg = ctx(highlightCanvas.current);
    if (hg && root.current) root.current.dataset.highlightDrawn = String(drawHighlight(hg, view, hlRef.current, SEL));
    const g = overlayOn.current && !selectionOnly ? ctx(boxesCanvas.current) : null;
    if (!g) return;
    g.clearRect(0, 0, width, height);
    drawOverlay2d(g, view, L, halos.current, SEL);
    drawMinimapViewport();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  const drawOverlay = useCallback(() => drawLayers(false), [drawLayers]);
  const drawSelection = useCallback(() => drawLayers(true), [drawLayers]);

  const { canvas: minimap, drawBase: drawMinimapBase, drawViewport: drawMinimapViewport, onPointer: miniDrag, width: MW, height: MH } = useMinimap(sigmaRef, layoutRef);
  const { canvas: lassoCanvas, down: lassoDown, move: lassoMove, up: lassoUp } = useLasso((pts) => {
    const s = sigmaRef.current, g = graphRef.current;
    setLassoMode(false);
    if (!s || !g || !model || !layoutRef.current) return;
    const ids = opsInside(pts, g, s, layoutRef.current.rep, model.ids);
    if (!ids.length) return;
    p.onSelect(ids, null, "graph");
    p.onLasso(new Set(ids));
  });

  // ---- test / benchmark hooks ----
  useEffect(() => {
    const dbg: GraphDebug = {
      nodeViewport: (id) => {
        const s = sigmaRef.current, g = graphRef.current, i = idToNode.get(id);
        if (!s || !g || i === undefined || !g.hasNode(`o${i}`)) return null;
        const a = g.getNodeAttributes(`o${i}`);
        const v = s.graphToViewport({ x: a.x, y: a.y });
        const r = container.current!.getBoundingClientRect();
        return { x: v.x + r.left, y: v.y + r.top };
      },
      highlighted: () => (root.current?.dataset.highlighted ?? "").split(",").filter(Boolean),
      expandAll,
      visibleCount: () => graphRef.current?.order ?? 0,
      sigma: () => sigmaRef.current,
      setOverlay: (on) => (overlayOn.current = on),
      colorOf: (id) => {
        const g = graphRef.current, L = layoutRef.current, i = idToNode.get(id);
        if (!g || !L || i === undefined) return null;
        const key = keyOfIndex(L.rep[i], L);
        return g.hasNode(key) ? (sigmaRef.current?.getNodeDisplayData(key)?.color ?? null) : null;
      },
      cheap: (on: boolean) => {
        const s = sigmaRef.current!;
        s.setSetting("defaultNodeType", on ? "point" : "circle");
        s.setSetting("defaultEdgeType", on ? "line" : "arrow");
      },
      hideEdgesWhileMoving: (on: boolean) => sigmaRef.current && hideEdgesWhileMoving(sigmaRef.current, on),
      groupLabels: () => {
        const L = layoutRef.current;
        return L ? [...L.collapsed, ...L.boxes].map((c) => c.label) : [];
      },
    };
    (window as unknown as { edgescopeGraph: GraphDebug }).edgescopeGraph = dbg;
  }, [idToNode, expandAll]);

  useEffect(() => {
    if (!p.graph) setState("loading", 0);
  }, [p.graph]);

  const mdef = METRICS.find((x) => x.key === metric)!;
  const fmtLegend = (v: number) => (mdef.unit === "B" ? fmtBytes(v) : fmtMs(v));
  return (
    <div className="graph-root" ref={root} data-state="loading" data-nodes="0" data-testid="graph">
      <div className="graph-tools">
        <label>
          Color by{" "}
          <select value={metric} onChange={(e) => setMetric(e.target.value as MetricKey)} data-testid="color-metric">
            {METRICS.filter((m) => m.key !== "compare" || p.compare).map((m) => (<option key={m.key} value={m.key}>{m.key === "compare" && p.compare ? `Δ time ${p.compare.label}` : m.label}</option>))}
          </select>
        </label>
        <button className={`small ${lassoMode ? "on" : ""}`} aria-pressed={lassoMode} onClick={() => setLassoMode((x) => !x)} data-testid="lasso" title="Draw around tasks to select them and filter the table">
          Lasso
        </button>
        <button className="small" onClick={() => tree && ((pendingZoom.current = "fit"), setExpanded(new Set([ROOT])))} title="Collapse every group">Collapse all</button>
        <button className="small" onClick={() => ((pendingZoom.current = "fit"), expandAll())} data-testid="expand-all" title="Expand every group">Expand all</button>
        <button className="small" onClick={() => sigmaRef.current?.getCamera().animatedReset({ duration: 300 })}>Fit</button>
        <label className="check"><input type="checkbox" checked={showMinimap} onChange={(e) => setShowMinimap(e.target.checked)} /> Minimap</label>
        <span className="muted small-text" aria-live="polite">{layout ? `${layout.ops.length + layout.collapsed.length} nodes · layout ${layoutMs.toFixed(0)} ms` : "…"}</span>
      </div>
      <div className="graph-stage">
        <canvas ref={boxesCanvas} className="graph-boxes" aria-hidden="true" />
        <div ref={container} className="graph-sigma" role="img" aria-label="Compiled task graph. Click a group to expand it, click its title bar to collapse it." />
        <canvas ref={highlightCanvas} className="graph-highlight" aria-hidden="true" data-testid="graph-highlight" />
        <canvas
          ref={lassoCanvas}
          className="graph-lasso"
          style={{ pointerEvents: lassoMode ? "auto" : "none", cursor: lassoMode ? "crosshair" : undefined }}
          onPointerDown={lassoDown}
          onPointerMove={lassoMove}
          onPointerUp={lassoUp}
        />
        {showMinimap && (
          <canvas ref={minimap} className="minimap" width={MW} height={MH} aria-label="Minimap: drag to move the view" onPointerDown={miniDrag} onPointerMove={miniDrag} data-testid="minimap" />
        )}
        {legend && (
          <div className="legend" data-testid="legend">
            <span>{fmtLegend(legend.min)}</span>
            <span className="legend-bar" style={{ background: `linear-gradient(to right, ${(mdef.diverging ? DIV : SEQ).join(",")})` }} />
            <span>{fmtLegend(legend.max)}</span>
          </div>
        )}
        {!legend && metric === "type" && <div className="legend muted">colors: task type</div>}
        {unitLegend && (
          <div className="legend legend-units" data-testid="unit-legend">
            {unitLegend.map((u) => (
              <span key={u.unit} className="legend-unit" data-unit={u.unit} data-color={u.color} title={u.count ? `${u.count} tasks` : undefined}>
                <span className="swatch" style={{ background: u.color }} aria-hidden="true" />
                {u.label}{u.count ? ` ${u.count}` : ""}
              </span>
            ))}
          </div>
        )}
        {metric === "unit" && !p.units && p.table && <div className="legend muted">no compute units recorded for this target</div>}
        {tip && <div className="graph-tip" style={{ left: tip.x + 14, top: tip.y + 10 }}>{tip.html}</div>}
      </div>
    </div>
  );
});
