// The selection shared by the table, graph and timeline (linked selection). Its own module so the views do not
// import the page that renders them.
// "chart": a brush on the distributions; "diff": a row of a diff.
export type SelectSource = "table" | "graph" | "timeline" | "chart" | "diff";

export interface Selection {
  ids: ReadonlySet<string>;
  focus: string | null;
  source: SelectSource;
  /** the same selection as a mask over the page's task list (execution order, as /ops lists them), built once per
   * change: the views that draw every task (graph, timeline, chart) read it instead of looking 50,000 ids up each */
  mask?: Uint8Array;
}

export const EMPTY_SELECTION: Selection = { ids: new Set(), focus: null, source: "table" };

/** The mask of `ids` over a task list of `n` tasks (`rowOf`: task id -> position). */
export function selectionMask(ids: Iterable<string>, rowOf: { get(id: string): number | undefined }, n: number): Uint8Array {
  const m = new Uint8Array(n);
  for (const id of ids) {
    const k = rowOf.get(id);
    if (k !== undefined) m[k] = 1;
  }
  return m;
}

/** The selection's mask when it covers a list of `n` tasks, else null (a caller then looks its ids up). */
export const maskFor = (s: Selection, n: number): Uint8Array | null => (s.mask && s.mask.length === n ? s.mask : null);
