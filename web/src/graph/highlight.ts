// The selection drawn as a layer of its own: a 2D canvas over sigma's WebGL canvases. A selection change redraws
// this canvas only; sigma's buffers and its WebGL drawing stay as they are. Without a GPU every sigma render of a
// 50,000-node graph cost 100-150 ms (the browser reads each WebGL canvas back at the frame's commit and waits for
// the whole software drawing), and a brush that restyled 40,000 nodes paid it over four frames.
// Drawn after every sigma frame as well (the camera moved), so its cost follows what is on screen: off-screen items
// are skipped and items under a few pixels are drawn as one dot per 3 px cell.
import type { View } from "./overlay";

/** The selected drawn items: x, y (layout units, y down) and node radius (layout units), three numbers each. */
export interface Highlight {
  xyr: Float64Array;
  /** labels drawn beside the items (a small selection), else null */
  labels: string[] | null;
}

export const NO_HIGHLIGHT: Highlight = { xyr: new Float64Array(0), labels: null };

/** a selected node is drawn this much bigger than itself, in the selection's colour */
export const SEL_GROW = 1.6;
/** below this radius a node is a dot */
const DOT_PX = 2;
const CELL = 3;

/** Draw the selection; returns how many items were drawn (on screen). */
export function drawHighlight(g: CanvasRenderingContext2D, v: View, h: Highlight, color: string): number {
  g.clearRect(0, 0, v.width, v.height);
  const n = h.xyr.length / 3;
  if (!n) return 0;
  const discs = new Path2D(), dots = new Path2D();
  const cols = Math.ceil(v.width / CELL) + 1;
  let cells: Uint8Array | null = null; // allocated on the first dot only
  const labelled: { text: string; x: number; y: number }[] = [];
  let drawn = 0;
  for (let j = 0; j < n; j++) {
    const x = v.ox + v.kx * h.xyr[3 * j], y = v.oy + v.ky * h.xyr[3 * j + 1], r = v.kx * h.xyr[3 * j + 2] * SEL_GROW;
    const m = r + 2;
    if (x < -m || y < -m || x > v.width + m || y > v.height + m) continue;
    drawn++;
    if (r < DOT_PX) {
      cells ??= new Uint8Array(cols * (Math.ceil(v.height / CELL) + 1));
      const c = Math.floor(Math.max(0, y) / CELL) * cols + Math.floor(Math.max(0, x) / CELL);
      if (cells[c]) continue;
      cells[c] = 1;
      dots.rect(x - 1.5, y - 1.5, 3, 3);
    } else {
      discs.moveTo(x + r, y);
      discs.arc(x, y, r, 0, 2 * Math.PI);
    }
    if (h.labels) labelled.push({ text: h.labels[j], x: x + Math.max(r, 3) + 4, y });
  }
  g.fillStyle = color;
  g.fill(discs);
  g.fill(dots);
  if (labelled.length) {
    g.font = "12px system-ui, sans-serif";
    g.textBaseline = "middle";
    for (const t of labelled) {
      const w = g.measureText(t.text).width;
      g.fillStyle = "rgba(15,17,22,0.85)";
      g.fillRect(t.x - 2, t.y - 8, w + 4, 16);
      g.fillStyle = "#e8ebf2";
      g.fillText(t.text, t.x, t.y);
    }
    g.textBaseline = "alphabetic";
  }
  return drawn;
}
