import type Sigma from "sigma";

/** What the graph view exposes as `window.edgescopeGraph`, for the browser tests and benchmarks/ui.py to read and
 * drive the drawing (positions, highlight, colours) without parsing canvas pixels. */
export interface GraphDebug {
  nodeViewport(id: string): { x: number; y: number } | null;
  highlighted(): string[];
  expandAll(): void;
  visibleCount(): number;
  sigma(): Sigma | null;
  setOverlay(on: boolean): void;
  /** colour of the drawn node that stands for op `id` (itself, or its collapsed group); a selection is drawn over it, on its own layer */
  colorOf(id: string): string | null;
  cheap(on: boolean): void;
  /** skip edges while the camera moves, as graphs over 8,000 edges do (to test that path on a small model) */
  hideEdgesWhileMoving(on: boolean): void;
  /** labels of the groups drawn now (collapsed nodes and expanded boxes) */
  groupLabels(): string[];
}
