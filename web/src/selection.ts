// The selection shared by the table, graph and timeline (linked selection). Its own module so the views do not
// import the page that renders them.
export type SelectSource = "table" | "graph" | "timeline";

export interface Selection {
  ids: ReadonlySet<string>;
  focus: string | null;
  source: SelectSource;
}

export const EMPTY_SELECTION: Selection = { ids: new Set(), focus: null, source: "table" };
