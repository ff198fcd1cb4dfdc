// Lasso selection on the graph: a free-hand polygon drawn on a canvas over sigma; the ops inside it (a collapsed
// group inside it counts with all its ops) are selected and filter the table.
import type Graph from "graphology";
import { useRef } from "react";
import type Sigma from "sigma";
import { SEL } from "../../graph/coloring";

type Pt = { x: number; y: number };

function inside(pts: Pt[], x: number, y: number): boolean {
  let r = false;
  for (let i = 0, j = pts.length - 1; i < pts.length; j = i++) {
    const a = pts[i], b = pts[j];
    if (a.y > y !== b.y > y && x < ((b.x - a.x) * (y - a.y)) / (b.y - a.y) + a.x) r = !r;
  }
  return r;
}

/** Ids of the ops drawn inside the polygon `pts` (viewport pixels); a collapsed group counts with the ops it stands
 * for (`rep`: each op's drawn item, the layout's). */
export function opsInside(pts: Pt[], g: Graph, s: Sigma, rep: Int32Array, opIds: readonly string[]): string[] {
  const ids: string[] = [];
  const groups = new Set<number>();
  g.forEachNode((_key, a) => {
    const v = s.graphToViewport({ x: a.x, y: a.y });
    if (!inside(pts, v.x, v.y)) return;
    if (a.kind === "op") ids.push(opIds[a.op]);
    else groups.add(a.k);
  });
  if (groups.size) for (let i = 0; i < rep.length; i++) if (groups.has(rep[i])) ids.push(opIds[i]);
  return ids;
}

export function useLasso(onDone: (pts: Pt[]) => void) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const pts = useRef<Pt[] | null>(null);
  const down = (e: React.PointerEvent<HTMLCanvasElement>) => {
    const r = e.currentTarget.getBoundingClientRect();
    pts.current = [{ x: e.clientX - r.left, y: e.clientY - r.top }];
    e.currentTarget.setPointerCapture(e.pointerId);
  };
  const move = (e: React.PointerEvent<HTMLCanvasElement>) => {
    const p = pts.current, c = canvas.current;
    if (!p || !c) return;
    const r = c.getBoundingClientRect();
    p.push({ x: e.clientX - r.left, y: e.clientY - r.top });
    c.width = r.width;
    c.height = r.height;
    const g = c.getContext("2d")!;
    g.strokeStyle = SEL;
    g.fillStyle = "rgba(255,204,0,0.08)";
    g.setLineDash([5, 4]);
    g.beginPath();
    p.forEach((pt, k) => (k ? g.lineTo(pt.x, pt.y) : g.moveTo(pt.x, pt.y)));
    g.closePath();
    g.fill();
    g.stroke();
  };
  const up = () => {
    const p = pts.current, c = canvas.current;
    pts.current = null;
    if (c) c.getContext("2d")!.clearRect(0, 0, c.width, c.height);
    if (p && p.length >= 3) onDone(p);
  };
  return { canvas, down, move, up };
}
