/// <reference lib="webworker" />
// Layered layout (dagre) per expanded group, cached; a group's layout only depends on the sizes of its items,
// so expanding or collapsing one group re-lays out that group's ancestors, not its siblings.
import dagre from "@dagrejs/dagre";
import { type FromWorker, type SerializedGroup, type ToWorker, GROUP_H, GROUP_W, HEADER, OP_H, OP_W, PAD } from "./messages";

interface Local {
  key: string;
  w: number;
  h: number;
  /** item key -> center relative to the group's content origin */
  pos: Map<string, { x: number; y: number; w: number; h: number }>;
}

let groups = new Map<string, SerializedGroup>();
let opParent: string[] = [];
let depth = new Map<string, number>();
/** item-level edges owned by each group (their lowest common ancestor) */
let edgesByGroup = new Map<string, Set<string>>();
let src: Int32Array = new Int32Array(0);
let dst: Int32Array = new Int32Array(0);
let opCount = 0;
const cache = new Map<string, Local>();

const opKey = (i: number) => `o${i}`;
const groupKey = (id: string) => `g${id}`;

function init(m: Extract<ToWorker, { type: "init" }>) {
  groups = new Map(m.groups.map((g) => [g.id, g]));
  opParent = m.opParent;
  src = m.src;
  dst = m.dst;
  opCount = m.opCount;
  cache.clear();
  depth = new Map();
  const d = (id: string): number => {
    const v = depth.get(id);
    if (v !== undefined) return v;
    const p = groups.get(id)!.parent;
    const r = p === null ? 0 : d(p) + 1;
    depth.set(id, r);
    return r;
  };
  for (const id of groups.keys()) d(id);
  edgesByGroup = new Map();
  for (let e = 0; e < src.length; e++) {
    let a = opParent[src[e]], b = opParent[dst[e]];
    let ia = opKey(src[e]), ib = opKey(dst[e]);
    while (depth.get(a)! > depth.get(b)!) (ia = groupKey(a), (a = groups.get(a)!.parent!));
    while (depth.get(b)! > depth.get(a)!) (ib = groupKey(b), (b = groups.get(b)!.parent!));
    while (a !== b) {
      ia = groupKey(a);
      a = groups.get(a)!.parent!;
      ib = groupKey(b);
      b = groups.get(b)!.parent!;
    }
    if (ia === ib) continue;
    let s = edgesByGroup.get(a);
    if (!s) edgesByGroup.set(a, (s = new Set()));
    s.add(`${ia}\n${ib}`);
  }
}

let laidOut = 0;

/**
 * Fast path for the common case of a chain or a residual block: when longest-path layering puts every item
 * on its own rank, the layered layout is a single column, so skip dagre (a few ms per call).
 */
function stackIfSingleFile(sizes: { key: string; w: number; h: number }[], edges: Set<string> | undefined): Omit<Local, "key"> | null {
  const idx = new Map(sizes.map((s, k) => [s.key, k]));
  const n = sizes.length;
  const succ: number[][] = Array.from({ length: n }, () => []);
  const indeg = new Int32Array(n);
  for (const e of edges ?? []) {
    const [a, b] = e.split("\n");
    const i = idx.get(a)!, j = idx.get(b)!;
    succ[i].push(j);
    indeg[j]++;
  }
  const rank = new Int32Array(n);
  const queue: number[] = [];
  for (let i = 0; i < n; i++) if (indeg[i] === 0) queue.push(i);
  let seen = 0;
  while (queue.length) {
    const i = queue.shift()!;
    seen++;
    for (const j of succ[i]) {
      rank[j] = Math.max(rank[j], rank[i] + 1);
      if (--indeg[j] === 0) queue.push(j);
    }
  }
  if (seen !== n) return null; // cycle: let dagre handle it
  const byRank = new Int32Array(n).fill(-1);
  for (let i = 0; i < n; i++) {
    if (byRank[rank[i]] !== -1) return null;
    byRank[rank[i]] = i;
  }
  let w = 0;
  for (const s of sizes) w = Math.max(w, s.w);
  const pos = new Map<string, { x: number; y: number; w: number; h: number }>();
  let y = 0;
  for (let r = 0; r < n; r++) {
    const s = sizes[byRank[r]];
    pos.set(s.key, { x: w / 2, y: y + s.h / 2, w: s.w, h: s.h });
    y += s.h + 30;
  }
  return { w: Math.max(w, GROUP_W), h: Math.max(0, y - 30), pos };
}

function layoutGroup(id: string, expanded: Set<string>): Local {
  const g = groups.get(id)!;
  const sizes: { key: string; w: number; h: number }[] = [];
  for (const c of g.groups) {
    if (expanded.has(c)) {
      const sub = layoutGroup(c, expanded);
      sizes.push({ key: groupKey(c), w: sub.w + 2 * PAD, h: sub.h + 2 * PAD + HEADER });
    } else sizes.push({ key: groupKey(c), w: GROUP_W, h: GROUP_H });
  }
  for (const o of g.ops) sizes.push({ key: opKey(o), w: OP_W, h: OP_H });
  const sig = sizes.map((s) => (s.w === OP_W || s.w === GROUP_W ? "" : `${s.key}:${s.w}x${s.h}`)).join(",");
  const hit = cache.get(id);
  if (hit && hit.key === sig) return hit;
  laidOut++;
  const stacked = stackIfSingleFile(sizes, edgesByGroup.get(id));
  if (stacked) {
    cache.set(id, { ...stacked, key: sig });
    return cache.get(id)!;
  }
  const dg = new dagre.graphlib.Graph({ multigraph: false });
  dg.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 30, marginx: 0, marginy: 0 });
  dg.setDefaultEdgeLabel(() => ({}));
  for (const s of sizes) dg.setNode(s.key, { width: s.w, height: s.h });
  for (const e of edgesByGroup.get(id) ?? []) {
    const [a, b] = e.split("\n");
    dg.setEdge(a, b);
  }
  dagre.layout(dg);
  const pos = new Map<string, { x: number; y: number; w: number; h: number }>();
  for (const s of sizes) {
    const n = dg.node(s.key);
    pos.set(s.key, { x: n.x, y: n.y, w: s.w, h: s.h });
  }
  const gg = dg.graph();
  const res: Local = { key: sig, w: Math.max(gg.width ?? 0, GROUP_W), h: gg.height ?? 0, pos };
  cache.set(id, res);
  return res;
}

function layout(req: number, expandedList: string[]): FromWorker {
  const t0 = performance.now();
  laidOut = 0;
  const expanded = new Set(expandedList);
  expanded.add("");
  const root = layoutGroup("", expanded);
  const opsOut: number[] = [];
  const opXY: number[] = [];
  const collapsed: { id: string; x: number; y: number; w: number; h: number }[] = [];
  const boxes: { id: string; x: number; y: number; w: number; h: number }[] = [];
  const place = (id: string, ox: number, oy: number) => {
    const g = groups.get(id)!;
    const loc = layoutGroup(id, expanded);
    for (const c of g.groups) {
      const p = loc.pos.get(groupKey(c))!;
      const x = ox + p.x - p.w / 2, y = oy + p.y - p.h / 2;
      if (expanded.has(c)) {
        boxes.push({ id: c, x, y, w: p.w, h: p.h });
        place(c, x + PAD, y + PAD + HEADER);
      } else collapsed.push({ id: c, x: ox + p.x, y: oy + p.y, w: p.w, h: p.h });
    }
    for (const o of g.ops) {
      const p = loc.pos.get(opKey(o))!;
      opsOut.push(o);
      opXY.push(ox + p.x, oy + p.y);
    }
  };
  place("", 0, 0);
  // representative of each op: its highest collapsed ancestor, else itself
  const index = new Map<string, number>();
  opsOut.forEach((o, k) => index.set(opKey(o), k));
  collapsed.forEach((c, k) => index.set(groupKey(c.id), opsOut.length + k));
  const rep = new Int32Array(opCount).fill(-1);
  for (let i = 0; i < opCount; i++) {
    let g: string | null = opParent[i];
    let top: string | null = null;
    while (g !== null && g !== "") {
      if (!expanded.has(g)) top = g;
      g = groups.get(g)!.parent;
    }
    rep[i] = top === null ? index.get(opKey(i))! : index.get(groupKey(top))!;
  }
  const seen = new Set<number>();
  const edges: number[] = [];
  const n = opsOut.length + collapsed.length;
  for (let e = 0; e < src.length; e++) {
    const a = rep[src[e]], b = rep[dst[e]];
    if (a === b || a < 0 || b < 0) continue;
    const k = a * n + b;
    if (seen.has(k)) continue;
    seen.add(k);
    edges.push(a, b);
  }
  return {
    type: "layout",
    req,
    ms: performance.now() - t0,
    ops: Int32Array.from(opsOut),
    opXY: Float64Array.from(opXY),
    collapsed,
    boxes,
    rep,
    edges: Int32Array.from(edges),
    width: root.w,
    height: root.h,
    groupsLaidOut: laidOut,
  };
}

self.onmessage = (ev: MessageEvent<ToWorker>) => {
  const m = ev.data;
  if (m.type === "init") init(m);
  else if (m.type === "layout") {
    try {
      const r = layout(m.req, m.expanded);
      (self as unknown as Worker).postMessage(r);
    } catch (e) {
      (self as unknown as Worker).postMessage({ type: "error", req: m.req, message: String(e) } satisfies FromWorker);
    }
  }
};
