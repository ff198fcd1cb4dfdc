/** How each drawn item of the graph looks: colour (metric or unit), dimmed by the table's filter, optimized, selected.
 * Pure functions over the layout's typed arrays, so a selection change restyles only the items it touches. */
import { typeColor } from "../../format";
import { DIM, DIV, lerpColor, SEL, SEQ, type UnitLegend } from "../../graph/coloring";
import type { LayoutResult } from "../../graph/messages";

export const OP_SIZE = 9;
export const GROUP_SIZE = 15;
/** a selected node is drawn this much bigger */
export const SEL_GROW = 1.6;
/** selections up to this many drawn items show every label; a brush over thousands would bury the graph in text */
export const LABELLED_SELECTION = 50;

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

/** Per drawn item: colour (metric or unit), dimmed by the table's filter, optimized, selected. */
export interface Style {
  color: string[];
  dim: Uint8Array;
  opt: Uint8Array;
  sel: Uint8Array;
  selCount: number;
}

/** sigma's node reducer (it hands us a copy of the attributes). */
export function styleNode(st: Style | null, a: NodeAttrs): NodeAttrs {
  if (!st || a.k >= st.sel.length) return a;
  const k = a.k, selected = st.sel[k] === 1;
  a.color = selected ? SEL : st.dim[k] ? DIM : st.color[k];
  if (selected) a.size *= SEL_GROW;
  a.forceLabel = !!a.pinLabel || (selected && st.selCount <= LABELLED_SELECTION);
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
export function itemStyle(L: LayoutResult, nodes: { id: string; type: string }[], c: ColourInputs) {
  const mv = c.metric;
  const absMax = mv ? Math.max(Math.abs(mv.min), Math.abs(mv.max)) || 1 : 1;
  const n = L.ops.length + L.collapsed.length;
  const inFilter = new Uint8Array(n), opt = new Uint8Array(n);
  for (let i = 0; i < L.rep.length; i++) {
    if (!c.filtered || c.filtered.has(nodes[i].id)) inFilter[L.rep[i]] = 1;
    if (c.overridden && c.toTable && c.toTable[i] >= 0 && c.overridden[c.toTable[i]]) opt[L.rep[i]] = 1;
  }
  const color = new Array<string>(n);
  const dim = new Uint8Array(n);
  let dimmed = 0;
  for (let k = 0; k < n; k++) {
    if (c.units) color[k] = c.units.colors[k];
    else if (!mv) color[k] = k < L.ops.length ? typeColor(nodes[L.ops[k]].type) : "#7b8199";
    else if (c.diverging) color[k] = lerpColor(DIV, 0.5 + mv.values[k] / absMax / 2);
    else color[k] = lerpColor(SEQ, mv.max > 0 ? Math.sqrt(Math.max(0, mv.values[k]) / mv.max) : 0);
    if (c.filtered && !inFilter[k]) (dim[k] = 1), dimmed++;
  }
  return { color, dim, opt, dimmed, absMax };
}

/** Which drawn items hold a selected op (a collapsed group holding one is drawn selected), and the selected ops
 * drawn as themselves. O(selection). */
export function selectedItems(L: LayoutResult, ids: Iterable<string>, idToNode: ReadonlyMap<string, number>) {
  const sel = new Uint8Array(L.ops.length + L.collapsed.length);
  let selCount = 0;
  const hl: string[] = [];
  for (const id of ids) {
    const i = idToNode.get(id);
    if (i === undefined) continue;
    const k = L.rep[i];
    if (!sel[k]) (sel[k] = 1), selCount++;
    if (k < L.ops.length) hl.push(id);
  }
  return { sel, selCount, hl };
}

/** The items to repaint after a selection change: those whose state changed, and every selected one when the
 * selection crosses LABELLED_SELECTION (their labels switch on or off). */
export function changedItems(old: Pick<Style, "sel" | "selCount">, next: Pick<Style, "sel" | "selCount">): number[] {
  const labelsFlip = (old.selCount <= LABELLED_SELECTION) !== (next.selCount <= LABELLED_SELECTION);
  const changed: number[] = [];
  for (let k = 0; k < next.sel.length; k++) {
    if (old.sel[k] !== next.sel[k] || (labelsFlip && next.sel[k])) changed.push(k);
  }
  return changed;
}

/** Rings of optimized items for the overlay (x, y with y down, size), grown with the selection. */
export function optimizedRings(st: Style, attrsOf: (k: number) => NodeAttrs): Float64Array<ArrayBuffer> {
  const rings: number[] = [];
  for (let k = 0; k < st.opt.length; k++) {
    if (!st.opt[k]) continue;
    const a = attrsOf(k);
    rings.push(a.x, -a.y, a.size * (st.sel[k] ? SEL_GROW : 1));
  }
  return Float64Array.from(rings);
}
