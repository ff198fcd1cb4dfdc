// The selection shared by the table, graph and timeline (linked selection). Its own module so the views do not
// import the page that renders them.
// "chart": a brush on the distributions; "diff": a row of a diff.
export type SelectSource = "table" | "graph" | "timeline" | "chart" | "diff";

export interface Selection {
  ids: ReadonlySet<string>;
  focus: string | null;
  source: SelectSource;
}

export const EMPTY_SELECTION: Selection = { ids: new Set(), focus: null, source: "table" };
