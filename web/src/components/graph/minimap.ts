// The graph's minimap: the whole layout drawn small once per layout, the camera's view framed on top after each
// render, and a drag on it moving the camera.
import { type RefObject, useRef } from "react";
import type Sigma from "sigma";
import { SEL } from "../../graph/coloring";
import type { LayoutResult } from "../../graph/messages";

const MW = 200, MH = 140;

export function useMinimap(sigmaRef: RefObject<Sigma | null>, layoutRef: RefObject<LayoutResult | null>) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const base = useRef<HTMLCanvasElement | null>(null);
  const scale = () => {
    const L = layoutRef.current!;
    const sc = Math.min(MW / Math.max(L.width, 1), MH / Math.max(L.height, 1));
    return { sc, ox: (MW - L.width * sc) / 2, oy: (MH - L.height * sc) / 2 };
  };
  const drawBase = () => {
    const L = layoutRef.current;
    if (!L) return;
    const c = base.current ?? (base.current = document.createElement("canvas"));
    c.width = MW;
    c.height = MH;
    const g = c.getContext("2d")!;
    g.fillStyle = "#0f1116";
    g.fillRect(0, 0, MW, MH);
    const { sc, ox, oy } = scale();
    // one path for the boxes and one dot per occupied pixel for the ops: 50,000 fillRect calls took 70-200 ms of
    // each fully expanded drawing, for a 200 x 140 picture
    const boxes = new Path2D();
    for (const b of L.boxes) boxes.rect(ox + b.x * sc, oy + b.y * sc, b.w * sc, b.h * sc);
    g.strokeStyle = "rgba(150,160,200,0.5)";
    g.stroke(boxes);
    const seen = new Uint8Array(MW * MH);
    const dots = new Path2D();
    for (let k = 0; k < L.ops.length; k++) {
      const x = Math.floor(ox + L.opXY[2 * k] * sc), y = Math.floor(oy + L.opXY[2 * k + 1] * sc);
      if (x < 0 || y < 0 || x >= MW || y >= MH || seen[y * MW + x]) continue;
      seen[y * MW + x] = 1;
      dots.rect(x - 0.25, y - 0.25, 1.5, 1.5);
    }
    g.fillStyle = "#8a93b0";
    g.fill(dots);
    g.fillStyle = "#b9c0da";
    for (const b of L.collapsed) g.fillRect(ox + (b.x - b.w / 2) * sc, oy + (b.y - b.h / 2) * sc, Math.max(1.5, b.w * sc), Math.max(1.5, b.h * sc));
  };
  const drawViewport = () => {
    const c = canvas.current, s = sigmaRef.current, L = layoutRef.current;
    if (!c || !s || !L || !base.current) return;
    const g = c.getContext("2d")!;
    g.drawImage(base.current, 0, 0);
    const { width, height } = s.getDimensions();
    const a = s.viewportToGraph({ x: 0, y: 0 }), z = s.viewportToGraph({ x: width, y: height });
    const { sc, ox, oy } = scale();
    g.strokeStyle = SEL;
    g.lineWidth = 1.5;
    g.strokeRect(ox + a.x * sc, oy - a.y * sc, (z.x - a.x) * sc, (a.y - z.y) * sc);
  };
  const onPointer = (e: React.PointerEvent<HTMLCanvasElement>) => {
    if (!(e.buttons & 1) && e.type !== "pointerdown") return;
    const s = sigmaRef.current;
    if (!s || !layoutRef.current) return;
    const r = e.currentTarget.getBoundingClientRect();
    const { sc, ox, oy } = scale();
    const gx = (e.clientX - r.left - ox) / sc, gy = (e.clientY - r.top - oy) / sc;
    const f = s.viewportToFramedGraph(s.graphToViewport({ x: gx, y: -gy }));
    s.getCamera().setState({ x: f.x, y: f.y });
  };
  return { canvas, drawBase, drawViewport, onPointer, width: MW, height: MH };
}
