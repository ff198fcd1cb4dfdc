// Typed messages between GraphView (main thread) and layout.worker.ts.
//
// The worker owns the graph's first view: it gets the graph's JSON bytes (GET .../graph?format=columns, unparsed),
// parses them, builds the group hierarchy, lays out the groups to open first and sends that layout with what it
// takes to draw it (labels, types). Only then, when the page asks for it ("model"), does it send the node columns
// and the hierarchy the rest of the page needs (selection, tooltips, lasso, expanding): parsing and cloning them
// on the main thread cost seconds before the first drawing at 200,000 tasks.
import type { Hierarchy } from "./hierarchy";

export type ToWorker =
  | { type: "init"; req: number; json: ArrayBuffer }
  | { type: "layout"; req: number; expanded: string[] }
  | { type: "model" };

/** The node columns and the group hierarchy, sent once the first view is drawn. */
export interface GraphModel {
  type: "model";
  ids: string[];
  names: string[];
  types: string[];
  namespaces: string[];
  hier: Hierarchy;
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

export type FromWorker = LayoutResult | GraphModel | { type: "error"; req: number; message: string };

export const OP_W = 150;
export const OP_H = 26;
export const GROUP_W = 200;
export const GROUP_H = 42;
export const PAD = 14;
export const HEADER = 24;
