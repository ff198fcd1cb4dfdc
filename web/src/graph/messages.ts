// Typed messages between GraphView (main thread) and layout.worker.ts.
//
// The worker owns the graph's first view: it gets the graph's JSON bytes (GET .../graph?format=columns, unparsed),
// parses them, builds the group hierarchy, lays out the groups to open first and sends that layout with what it
// takes to draw it (labels, types). Only then, when the page asks for it ("model"), does it send the node columns
// and the group tree the rest of the page needs (selection, tooltips, lasso, expanding): parsing and cloning them
// on the main thread cost seconds before the first drawing at 200,000 tasks.
import { ROOT } from "./hierarchy";

export type ToWorker =
  | { type: "init"; req: number; json: ArrayBuffer }
  | { type: "layout"; req: number; expanded: string[] }
  | { type: "model" };

/** A string column as one string joined by SEP (or the array itself if a value holds SEP): cloning 200,000 strings
 * between threads took 100-200 ms per column at each end, one string and a split take ~10 ms. */
export type Packed = string | string[];
const SEP = "\u0001";
/** `sepFree`: known not to hold SEP (the graph's JSON text has no "\\u0001" escape, and JSON writes SEP no other way) */
export const pack = (xs: string[], sepFree = false): Packed => (xs.length && (sepFree || !xs.some((x) => x.includes(SEP))) ? xs.join(SEP) : xs);
const unpack = (p: Packed): string[] => (typeof p === "string" ? p.split(SEP) : p);

/** The node columns and the group tree as the worker sends them, once the first view is drawn. The group tree
 * as integer arrays (transferred): the hierarchy's Map of 68,000 group records took ~400 ms to clone. */
export interface GraphModelMessage {
  type: "model";
  ids: Packed;
  names: Packed;
  types: Packed;
  namespaces: Packed;
  /** group ids, each after its parent; groups[0] is the root */
  groups: Packed;
  groupParent: Int32Array;
  /** each op's direct parent group, as an index into groups */
  opGroup: Int32Array;
}

/** What the page keeps of the graph: node columns (graph node order) and the group tree. */
export interface GraphModel {
  ids: string[];
  names: string[];
  types: string[];
  namespaces: string[];
  groups: { ids: string[]; parent: Int32Array; opGroup: Int32Array };
}

export const unpackModel = (m: GraphModelMessage): GraphModel => ({
  ids: unpack(m.ids),
  names: unpack(m.names),
  types: unpack(m.types),
  namespaces: unpack(m.namespaces),
  groups: { ids: unpack(m.groups), parent: m.groupParent, opGroup: m.opGroup },
});

/** Groups from the root down to op `op`'s direct parent (root excluded). */
export function opAncestors(t: GraphModel["groups"], op: number): string[] {
  const out: string[] = [];
  for (let g = t.opGroup[op]; g >= 0 && t.ids[g] !== ROOT; g = t.parent[g]) out.push(t.ids[g]);
  return out.reverse();
}

/** What a drawn group shows: its label (namespace part, or an automatic group's task types), an automatic group's
 * execution-order range, and its task count. */
export interface GroupText {
  label: string;
  range?: string;
  count: number;
}

/** A collapsed group drawn as one node. */
export interface CollapsedItem extends GroupText {
  id: string;
  x: number;
  y: number;
  w: number;
  h: number;
  /** its tooltip's title: the namespace path, or an automatic group's label */
  title: string;
}

/** An expanded group drawn as a box, with its depth (nesting shade, title-bar hit test). */
export interface BoxItem extends GroupText {
  id: string;
  x: number;
  y: number;
  w: number;
  h: number;
  depth: number;
}

/** "label range (count)": a collapsed group's node label, an expanded group's title. */
export const groupTitle = (g: GroupText) => `${g.label}${g.range ? ` ${g.range}` : ""} (${g.count})`;

/** Positions are in layout units, y down. Boxes are top-left + size; ops and collapsed groups are centers. */
export interface LayoutResult {
  type: "layout";
  req: number;
  ms: number;
  /** visible ops: op index and center */
  ops: Int32Array;
  opXY: Float64Array;
  /** drawn ops' labels (last part of the name, else the id) and task types, in `ops` order */
  opLabels: string[];
  opTypes: string[];
  /** collapsed groups drawn as one node */
  collapsed: CollapsedItem[];
  /** expanded groups drawn as boxes (root excluded) */
  boxes: BoxItem[];
  /** the groups this layout opened, when the worker chose them (the first view) */
  expanded?: string[];
  /** the first view's time in the worker by phase (ms): parse, hierarchy, index, layout */
  phases?: Record<string, number>;
  /** for each op, index into [...ops, ...collapsed] of what represents it */
  rep: Int32Array;
  /** visible edges as pairs of indices into [...ops, ...collapsed] */
  edges: Int32Array;
  width: number;
  height: number;
  groupsLaidOut: number;
}

export type FromWorker = LayoutResult | GraphModelMessage | { type: "error"; req: number; message: string };

export const OP_W = 150;
export const OP_H = 26;
export const GROUP_W = 200;
export const GROUP_H = 42;
export const PAD = 14;
export const HEADER = 24;
