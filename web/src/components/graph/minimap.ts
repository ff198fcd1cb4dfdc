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
    g.strokeStyle = "rgba(150,160,200,0.5)";
    for (const b of L.boxes) g.strokeRect(ox + b.x * sc, oy + b.y * sc, b.w * sc, b.h * sc);
    g.fillStyle = "#8a93b0";
    for (let k = 0; k < L.ops.length; k++) g.fillRect(ox + L.opXY[2 * k] * sc - 0.5, oy + L.opXY[2 * k + 1] * sc - 0.5, 1.5, 1.5);
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
