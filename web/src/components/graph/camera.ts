/** The graph's camera: the closest zoom allowed, the first view of a layout, and zooming to an op or a box. */
import type Graph from "graphology";
import type Sigma from "sigma";
import type { LayoutResult } from "../../graph/messages";

/** at the closest zoom, pixels per layout unit: an op (150 x 26 units) spans 300 px, its label in 12 px text */
export const CLOSEST_PX_PER_UNIT = 2;

export type ZoomTarget = { kind: "op"; op: number } | { kind: "box"; id: string };

/** The smallest camera ratio for a drawing of this extent: the closest zoom reaches CLOSEST_PX_PER_UNIT whatever the
 * graph's size (at ratio 1 the bounding box fits the view). A fixed 0.002 left a fully expanded 50,000-node graph,
 * millions of units tall, at a tenth of a pixel per unit: edges and boxes but no nodes or labels. */
export function minZoomRatio(s: Sigma, extent: number): number {
  const { width, height } = s.getDimensions();
  const px = Math.max(100, Math.min(width, height));
  return Math.min(0.002, px / (extent * CLOSEST_PX_PER_UNIT));
}

/** Whole graph if it is compact; a tall chain is shown from its top at a readable scale. */
export function fitTop(s: Sigma, L: LayoutResult): void {
  const ext = Math.max(L.width, L.height, 200);
  const r = Math.min(1, Math.max(0.01, (1.4 * Math.max(L.width, 600)) / ext));
  const cy = Math.min(L.height / 2, (r * ext) / 2);
  const f = s.viewportToFramedGraph(s.graphToViewport({ x: L.width / 2, y: -cy }));
  s.getCamera().setState({ x: f.x, y: f.y, ratio: r, angle: 0 });
}

/** drawings over this many nodes jump to a target instead of flying: without a GPU each frame of a flight re-draws
 * every node (about 100 ms a frame at 50,000), so a 350 ms flight was a few long frames after each table click */
export const FLY_MAX_NODES = 8000;

/** Move to an op (at a readable scale) or to a box (framed with a margin): animated, or at once on big drawings. */
export function zoomTo(s: Sigma, g: Graph, L: LayoutResult, z: ZoomTarget): void {
  const ext = Math.max(L.width, L.height, 1);
  const cam = s.getCamera();
  const go = (to: { x: number; y: number; ratio: number }) => (g.order > FLY_MAX_NODES ? cam.setState(to) : cam.animate(to, { duration: 350 }));
  if (z.kind === "op") {
    const key = `o${z.op}`;
    if (!g.hasNode(key)) return;
    const d = s.getNodeDisplayData(key)!;
    go({ x: d.x, y: d.y, ratio: Math.min(1, 900 / ext) });
  } else {
    const b = L.boxes.find((x) => x.id === z.id);
    if (!b) return;
    const c = s.viewportToFramedGraph(s.graphToViewport({ x: b.x + b.w / 2, y: -(b.y + b.h / 2) }));
    go({ x: c.x, y: c.y, ratio: Math.min(1, (1.15 * Math.max(b.w, b.h)) / ext) });
  }
}
