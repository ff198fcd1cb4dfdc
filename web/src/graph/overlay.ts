// The 2D canvas drawn over sigma's WebGL after every frame: group boxes and halos of optimized tasks.
// It runs once per frame while the camera moves, so its cost must follow what is on screen, not the graph's size:
// boxes off screen or under a few pixels are skipped, and everything is batched into a few paths (one fill or
// stroke per style) because per-rectangle fillRect/strokeRect calls dominated frames with 10,000 groups.
import { groupTitle, HEADER, type LayoutResult } from "./messages";

/** Layout units (y down) to viewport pixels: the camera never rotates, so it is a scale and an offset per axis. */
export interface View {
  kx: number;
  ox: number;
  ky: number;
  oy: number;
  width: number;
  height: number;
}

const MIN_BOX_PX = 4;
const MIN_HEADER_PX = 9;

export function drawOverlay(
  g: CanvasRenderingContext2D,
  v: View,
  L: LayoutResult,
  halos: Float64Array,
  haloColor: string,
): void {
  const even = new Path2D(), odd = new Path2D(), outline = new Path2D(), headers = new Path2D();
  const titles: { text: string; x: number; y: number; w: number }[] = [];
  for (const b of L.boxes) {
    const x = v.ox + v.kx * b.x, y = v.oy + v.ky * b.y, w = v.kx * b.w, h = v.ky * b.h;
    if (x + w < 0 || x > v.width || y + h < 0 || y > v.height || w < MIN_BOX_PX || h < MIN_BOX_PX) continue;
    (b.depth % 2 ? odd : even).rect(x, y, w, h);
    outline.rect(x, y, w, h);
    const hh = v.ky * HEADER;
    if (hh > MIN_HEADER_PX) {
      headers.rect(x, y, w, hh);
      titles.push({ text: `▾ ${groupTitle(b)}`, x: x + 6, y: y + Math.min(hh - 4, 16), w: Math.max(0, w - 12) });
    }
  }
  const collapsed = new Path2D();
  for (const b of L.collapsed) {
    const w = v.kx * b.w, h = v.ky * b.h, x = v.ox + v.kx * b.x - w / 2, y = v.oy + v.ky * b.y - h / 2;
    if (x + w < 0 || x > v.width || y + h < 0 || y > v.height || w < 1 || h < 1) continue;
    collapsed.rect(x, y, w, h);
  }
  g.fillStyle = "rgba(90,100,140,0.14)";
  g.fill(even);
  g.fillStyle = "rgba(70,80,110,0.18)";
  g.fill(odd);
  g.fillStyle = "rgba(120,130,170,0.35)";
  g.fill(headers);
  g.strokeStyle = "rgba(150,160,200,0.5)";
  g.stroke(outline);
  g.fillStyle = "rgba(110,120,160,0.22)";
  g.fill(collapsed);
  g.strokeStyle = "rgba(170,180,220,0.7)";
  g.stroke(collapsed);
  g.font = "12px system-ui, sans-serif";
  g.fillStyle = "#dfe3ee";
  for (const t of titles) g.fillText(t.text, t.x, t.y, t.w);
  // optimized tasks: a ring behind the node; halos holds x, y (layout units) and radius (px) per task
  const rings = new Path2D();
  for (let k = 0; k < halos.length; k += 3) {
    const x = v.ox + v.kx * halos[k], y = v.oy + v.ky * halos[k + 1], r = Math.max(4, v.kx * halos[k + 2] + 4);
    if (x < -20 || y < -20 || x > v.width + 20 || y > v.height + 20) continue;
    rings.moveTo(x + r, y);
    rings.arc(x, y, r, 0, 2 * Math.PI);
  }
  g.strokeStyle = haloColor;
  g.lineWidth = 2;
  g.stroke(rings);
  g.lineWidth = 1;
}
