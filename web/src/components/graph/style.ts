/** How each drawn item of the graph looks: colour (metric or unit), dimmed by the table's filter, optimized; and
 * where the selected ones are (the selection is its own layer: graph/highlight.ts). Pure functions over the layout's
 * typed arrays. */
import { typeColor } from "../../format";
import { DIM, DIV, lerpColor, SEQ, type UnitLegend } from "../../graph/coloring";
import { type Highlight, SEL_GROW } from "../../graph/highlight";
import type { LayoutResult } from "../../graph/messages";

export const OP_SIZE = 9;
export const GROUP_SIZE = 15;
/** selections up to this many drawn items show every label; a brush over thousands would bury the graph in text */
export const LABELLED_SELECTION = 50;

/** Where drawn item k (an op, then the collapsed groups) sits in layout units (x, y down) and its size: ops left of
 * their layout point, a collapsed group at the left end of its box, where its label has room. */
export function itemPoint(L: LayoutResult, k: number): [number, number, number] {
  if (k < L.ops.length) return [L.opXY[2 * k] - 60, L.opXY[2 * k + 1], OP_SIZE];
  const c = L.collapsed[k - L.ops.length];
  return [c.x - c.w / 2 + 20, c.y, GROUP_SIZE];
}

/** What a drawn node carries; its colour, size and marks come from the Style of its item `k` (styleNode). */
export interface NodeAttrs {
  x: number;
  y: number;
  size: number;
  label: string;
  kind: "op" | "group";
  op?: number;
  group?: string;
  /** index into [...layout.ops, ...layout.collapsed] */
  k: number;
  pinLabel?: boolean;
  color?: string;
  forceLabel?: boolean;
}

/** Per drawn item: colour (metric or unit), dimmed by the table's filter, optimized. Not the selection: selecting
 * never restyles sigma's nodes. */
export interface Style {
  color: string[];
  dim: Uint8Array;
  opt: Uint8Array;
  /** pinned labels would overlap at this zoom (a short pane fitted to the whole graph): let sigma's label grid
   * choose which to show instead */
  crowded?: boolean;
}

/** The closest vertical spacing, in layout units, of two collapsed groups' labels in the same column (each label
 * starts at the group's left end, as itemPoint puts it): with less than a label's height between them on screen,
 * pinned labels overlap. Infinity with fewer than two groups. O(groups²), for the few groups whose labels are pinned. */
export function labelGap(L: LayoutResult): number {
  let gap = Infinity;
  const n = L.collapsed.length;
  for (let a = 0; a < n; a++) {
    const [xa, ya] = itemPoint(L, L.ops.length + a);
    for (let b = a + 1; b < n; b++) {
      const [xb, yb] = itemPoint(L, L.ops.length + b);
      if (Math.abs(xa - xb) < 160) gap = Math.min(gap, Math.abs(ya - yb));
    }
  }
  return gap;
}

/** sigma's node reducer (it hands us a copy of the attributes). */
export function styleNode(st: Style | null, a: NodeAttrs): NodeAttrs {
  if (!st || a.k >= st.dim.length) return a;
  const k = a.k;
  a.color = st.dim[k] ? DIM : st.color[k];
  a.forceLabel = !!a.pinLabel && !st.crowded;
  if (st.opt[k]) a.label = `◆ ${a.label}`;
  return a;
}

/** What colours the items: a metric's values (null: op type), its scale, the units' colours, the filter, overrides. */
export interface ColourInputs {
  metric: { values: ArrayLike<number>; min: number; max: number } | null;
  diverging: boolean;
  units: { colors: string[]; legend: UnitLegend } | null;
  filtered: ReadonlySet<string> | null;
  overridden: ArrayLike<boolean | number> | undefined;
  /** table row of each graph node, -1 where it has none */
  toTable: ArrayLike<number> | null;
}

/** Colour, dimming and optimized mark of every drawn item, and the metric's symmetric scale for the legend. */
/** `ids`: each graph node's id (the filter is by id), null before the page has them (nothing is dimmed then). */
export function itemStyle(L: LayoutResult, ids: readonly string[] | null, c: ColourInputs) {
  const mv = c.metric;
  const absMax = mv ? Math.max(Math.abs(mv.min), Math.abs(mv.max)) || 1 : 1;
  const n = L.ops.length + L.collapsed.length;
  const inFilter = new Uint8Array(n), opt = new Uint8Array(n);
  for (let i = 0; i < L.rep.length; i++) {
    if (!c.filtered || !ids || c.filtered.has(ids[i])) inFilter[L.rep[i]] = 1;
    if (c.overridden && c.toTable && c.toTable[i] >= 0 && c.overridden[c.toTable[i]]) opt[L.rep[i]] = 1;
  }
  const color = new Array<string>(n);
  const dim = new Uint8Array(n);
  let dimmed = 0;
  for (let k = 0; k < n; k++) {
    if (c.units) color[k] = c.units.colors[k];
    else if (!mv) color[k] = k < L.ops.length ? typeColor(L.opTypes[k]) : "#7b8199";
    else if (c.diverging) color[k] = lerpColor(DIV, 0.5 + mv.values[k] / absMax / 2);
    else color[k] = lerpColor(SEQ, mv.max > 0 ? Math.sqrt(Math.max(0, mv.values[k]) / mv.max) : 0);
    if (c.filtered && !inFilter[k]) (dim[k] = 1), dimmed++;
  }
  return { color, dim, opt, dimmed, absMax };
}

/** Graph node indices of the selected ops: from the selection's mask over the page's task list (`toNode`: task
 * position -> node index, -1 for none) where it has one, else by looking its ids up. */
export function selectedNodes(ids: Iterable<string>, idToNode: { get(id: string): number | undefined }, mask: Uint8Array | null, toNode: Int32Array | null): number[] {
  const out: number[] = [];
  if (mask && toNode && mask.length === toNode.length) {
    for (let k = 0; k < mask.length; k++) if (mask[k] && toNode[k] >= 0) out.push(toNode[k]);
    return out;
  }
  for (const id of ids) {
    const i = idToNode.get(id);
    if (i !== undefined) out.push(i);
  }
  return out;
}

/** Which drawn items hold a selected op (graph node indices; a collapsed group holding one is drawn selected), and
 * the ids of selected ops drawn as themselves. O(selection). */
export function selectedItems(L: LayoutResult, selected: readonly number[], idOf: (i: number) => string) {
  const sel = new Uint8Array(L.ops.length + L.collapsed.length);
  let selCount = 0;
  const hl: string[] = [];
  for (const i of selected) {
    const k = L.rep[i];
    if (!sel[k]) (sel[k] = 1), selCount++;
    if (k < L.ops.length) hl.push(idOf(i));
  }
  return { sel, selCount, hl };
}

/** The selection layer's items: each selected drawn item's point and size, and its label when the selection is
 * small enough to label. O(drawn items), typed arrays only. */
export function highlightOf(L: LayoutResult, sel: Uint8Array, selCount: number, labelOf: (k: number) => string): Highlight {
  const xyr = new Float64Array(3 * selCount);
  const labels: string[] | null = selCount <= LABELLED_SELECTION ? [] : null;
  let j = 0;
  for (let k = 0; k < sel.length; k++) {
    if (!sel[k]) continue;
    if (k < L.ops.length) (xyr[3 * j] = L.opXY[2 * k] - 60), (xyr[3 * j + 1] = L.opXY[2 * k + 1]), (xyr[3 * j + 2] = OP_SIZE);
    else xyr.set(itemPoint(L, k), 3 * j);
    labels?.push(labelOf(k));
    j++;
  }
  return { xyr: xyr.subarray(0, 3 * j), labels };
}

/** Rings of optimized items for the overlay (x, y with y down, size), around the selection's bigger disc where
 * the item is selected. */
export function optimizedRings(L: LayoutResult, opt: Uint8Array, sel: Uint8Array | null): Float64Array<ArrayBuffer> {
  const rings: number[] = [];
  for (let k = 0; k < opt.length; k++) {
    if (!opt[k]) continue;
    const [x, y, r] = itemPoint(L, k);
    rings.push(x, y, r * (sel?.[k] ? SEL_GROW : 1));
  }
  return Float64Array.from(rings);
}
