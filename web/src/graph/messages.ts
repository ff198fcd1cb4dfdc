// Typed messages between GraphView (main thread) and layout.worker.ts.

export interface SerializedGroup {
  id: string;
  parent: string | null;
  groups: string[];
  ops: number[];
}

export type ToWorker =
  | { type: "init"; groups: SerializedGroup[]; opParent: string[]; src: Int32Array; dst: Int32Array; opCount: number }
  | { type: "layout"; req: number; expanded: string[] };

/** Positions are in layout units, y down. Boxes are top-left + size; ops and collapsed groups are centers. */
export interface LayoutResult {
  type: "layout";
  req: number;
  ms: number;
  /** visible ops: op index and center */
  ops: Int32Array;
  opXY: Float64Array;
  /** collapsed groups drawn as one node */
  collapsed: { id: string; x: number; y: number; w: number; h: number }[];
  /** expanded groups drawn as boxes (root excluded) */
  boxes: { id: string; x: number; y: number; w: number; h: number }[];
  /** for each op, index into [...ops, ...collapsed] of what represents it */
  rep: Int32Array;
  /** visible edges as pairs of indices into [...ops, ...collapsed] */
  edges: Int32Array;
  width: number;
  height: number;
  groupsLaidOut: number;
}

export type FromWorker = LayoutResult | { type: "error"; req: number; message: string };

export const OP_W = 150;
export const OP_H = 26;
export const GROUP_W = 200;
export const GROUP_H = 42;
export const PAD = 14;
export const HEADER = 24;
