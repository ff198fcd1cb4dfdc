/// <reference lib="webworker" />
// The graph's worker: it parses the graph's JSON, builds the group hierarchy, and lays out expanded groups with a
// layered layout (dagre) per group, cached; a group's layout only depends on the sizes of its items, so expanding
// or collapsing one group re-lays out that group's ancestors, not its siblings. The first view is chosen and laid
// out here, before the page sees any of the graph (see messages.ts).
import dagre from "@dagrejs/dagre";
import type { GraphColumns } from "../api/types";
import { buildHierarchy, type Hierarchy, initialExpanded, labelGroup, ROOT } from "./hierarchy";
import { type BoxItem, type CollapsedItem, type FromWorker, type GraphModelMessage, GROUP_H, GROUP_W, HEADER, OP_H, OP_W, pack, PAD, type ToWorker } from "./messages";

interface Local {
  key: string;
  w: number;
  h: number;
  /** item key -> center relative to the group's content origin */
  pos: Map<string, { x: number; y: number; w: number; h: number }>;
}

let cols: GraphColumns | null = null;
let hier: Hierarchy | null = null;
let opCount = 0;
/** no string of the graph holds the model message's separator (messages.ts pack) */
let sepFree = false;
// Groups as small integers (Hierarchy.order's, index into gIds), so the per-edge and per-op walks below are array reads, not string
// hashing: at 200,000 tasks the string version took 1.6 s before the first layout.
let gIds: string[] = [];
let gParent = new Int32Array(0);
let gDepth = new Int32Array(0);
let opParent = new Int32Array(0);
/** item-level edges owned by each group (their lowest common ancestor), as pairs of item numbers (an op is its
 * index, a group opCount + its group index), with repeats: a group's are told apart when it is laid out */
let edgesByGroup: number[][] = [];
let src: Int32Array = new Int32Array(0);
let dst: Int32Array = new Int32Array(0);
const cache = new Map<string, Local>();

const itemKey = (it: number) => (it < opCount ? `o${it}` : `g${gIds[it - opCount]}`);
const opKey = (i: number) => `o${i}`;
const groupKey = (id: string) => `g${id}`;

/** where the first view's time went in here (ms), for the benchmark */
let phases: Record<string, number> = {};

function init(json: ArrayBuffer) {
  let t = performance.now();
  const lap = (name: string) => {
    const now = performance.now();
    phases[name] = Math.round(now - t);
    t = now;
  };
  phases = {};
  const text = new TextDecoder().decode(json);
  sepFree = !text.includes("\\u0001");
  cols = JSON.parse(text) as GraphColumns;
  lap("parse");
  hier = buildHierarchy(cols, undefined, false);
  lap("hierarchy");
  opCount = cols.ids.length;
  src = Int32Array.from(cols.src);
  dst = Int32Array.from(cols.dst);
  cache.clear();
  // groups numbered as the hierarchy orders them, each after its parent
  const order = hier.order;
  gIds = order.map((g) => g.id);
  gParent = Int32Array.from(order, (g) => (g.parent === null ? -1 : hier!.groups.get(g.parent)!.index));
  gDepth = Int32Array.from(order, (g) => g.depth);
  opParent = new Int32Array(opCount);
  // consecutive ops mostly share their group: one look-up per run
  let last: string | null = null, lastK = 0;
  for (let i = 0; i < opCount; i++) {
    const p = hier.opParent[i];
    if (p !== last) (last = p), (lastK = hier.groups.get(p)!.index);
    opParent[i] = lastK;
  }
  edgesByGroup = Array.from({ length: gIds.length }, () => []);
  for (let e = 0; e < src.length; e++) {
    let a = opParent[src[e]], b = opParent[dst[e]];
    let ia = src[e], ib = dst[e];
    while (gDepth[a] > gDepth[b]) (ia = opCount + a), (a = gParent[a]);
    while (gDepth[b] > gDepth[a]) (ib = opCount + b), (b = gParent[b]);
    while (a !== b) {
      ia = opCount + a;
      a = gParent[a];
      ib = opCount + b;
      b = gParent[b];
    }
    if (ia !== ib) edgesByGroup[a].push(ia, ib);
  }
  lap("index");
}

let laidOut = 0;

/**
 * Fast path for the common case of a chain or a residual block: when longest-path layering puts every item
 * on its own rank, the layered layout is a single column, so skip dagre (a few ms per call).
 */
function stackIfSingleFile(sizes: { key: string; w: number; h: number }[], edges: string[]): Omit<Local, "key"> | null {
  const idx = new Map(sizes.map((s, k) => [s.key, k]));
  const n = sizes.length;
  const succ: number[][] = Array.from({ length: n }, () => []);
  const indeg = new Int32Array(n);
  for (let e = 0; e < edges.length; e += 2) {
    const i = idx.get(edges[e])!, j = idx.get(edges[e + 1])!;
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
  const g = hier!.groups.get(id)!;
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
  const edges: string[] = [];
  const pairs = edgesByGroup[g.index], seen = new Set<string>();
  for (let e = 0; e < pairs.length; e += 2) {
    const a = itemKey(pairs[e]), b = itemKey(pairs[e + 1]), k = `${a}\n${b}`;
    if (!seen.has(k)) (seen.add(k), edges.push(a, b));
  }
  const stacked = stackIfSingleFile(sizes, edges);
  if (stacked) {
    cache.set(id, { ...stacked, key: sig });
    return cache.get(id)!;
  }
  const dg = new dagre.graphlib.Graph({ multigraph: false });
  dg.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 30, marginx: 0, marginy: 0 });
  dg.setDefaultEdgeLabel(() => ({}));
  for (const s of sizes) dg.setNode(s.key, { width: s.w, height: s.h });
  for (let e = 0; e < edges.length; e += 2) dg.setEdge(edges[e], edges[e + 1]);
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

function layout(req: number, expandedList: string[], first: boolean): FromWorker {
  const t0 = performance.now();
  const H = hier!, C = cols!;
  laidOut = 0;
  const expanded = new Set(expandedList);
  expanded.add(ROOT);
  const root = layoutGroup(ROOT, expanded);
  const opsOut: number[] = [];
  const opXY: number[] = [];
  const collapsed: CollapsedItem[] = [];
  const boxes: BoxItem[] = [];
  const place = (id: string, ox: number, oy: number) => {
    const g = H.groups.get(id)!;
    const loc = layoutGroup(id, expanded);
    for (const c of g.groups) {
      const p = loc.pos.get(groupKey(c))!;
      const x = ox + p.x - p.w / 2, y = oy + p.y - p.h / 2;
      const grp = labelGroup(H, c, C);
      const text = { label: grp.label, range: grp.range, count: grp.count };
      if (expanded.has(c)) {
        boxes.push({ id: c, x, y, w: p.w, h: p.h, depth: grp.depth, ...text });
        place(c, x + PAD, y + PAD + HEADER);
      } else collapsed.push({ id: c, x: ox + p.x, y: oy + p.y, w: p.w, h: p.h, title: grp.auto ? grp.label : grp.id, ...text });
    }
    for (const o of g.ops) {
      const p = loc.pos.get(opKey(o))!;
      opsOut.push(o);
      opXY.push(ox + p.x, oy + p.y);
    }
  };
  place(ROOT, 0, 0);
  // representative of each op: its highest collapsed ancestor, else itself
  const open = new Uint8Array(gIds.length);
  for (const id of expanded) {
    const k = H.groups.get(id)?.index;
    if (k !== undefined) open[k] = 1;
  }
  const repOfGroup = new Int32Array(gIds.length).fill(-1);
  collapsed.forEach((c, k) => (repOfGroup[H.groups.get(c.id)!.index] = opsOut.length + k));
  // each group's highest collapsed ancestor (itself included), -1 if none: parents come before their children
  const top = new Int32Array(gIds.length).fill(-1);
  for (let g = 1; g < gIds.length; g++) top[g] = top[gParent[g]] >= 0 ? top[gParent[g]] : open[g] ? -1 : g;
  const rep = new Int32Array(opCount).fill(-1);
  opsOut.forEach((o, k) => (rep[o] = k));
  for (let i = 0; i < opCount; i++) if (top[opParent[i]] >= 0) rep[i] = repOfGroup[top[opParent[i]]];
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
    opLabels: opsOut.map((o) => C.names[o].split("/").pop() || C.ids[o]),
    opTypes: opsOut.map((o) => C.types[o]),
    collapsed,
    boxes,
    expanded: first ? expandedList : undefined,
    phases: first ? { ...phases, layout: Math.round(performance.now() - t0) } : undefined,
    rep,
    edges: Int32Array.from(edges),
    width: root.w,
    height: root.h,
    groupsLaidOut: laidOut,
  };
}

const post = (m: FromWorker, transfer: Transferable[] = []) => (self as unknown as Worker).postMessage(m, transfer);

self.onmessage = (ev: MessageEvent<ToWorker>) => {
  const m = ev.data;
  try {
    if (m.type === "init") {
      init(m.json);
      const r = layout(m.req, [...initialExpanded(hier!)], true);
      post(r, r.type === "layout" ? [r.rep.buffer, r.ops.buffer, r.opXY.buffer, r.edges.buffer] : []);
    } else if (m.type === "layout") {
      const r = layout(m.req, m.expanded, false);
      post(r, r.type === "layout" ? [r.rep.buffer, r.ops.buffer, r.opXY.buffer, r.edges.buffer] : []);
    } else if (m.type === "model") {
      const c = cols!;
      const r: GraphModelMessage = {
        type: "model", ids: pack(c.ids, sepFree), names: pack(c.names, sepFree), types: pack(c.types, sepFree),
        namespaces: pack(c.namespaces, sepFree), groups: pack(gIds, sepFree), groupParent: gParent.slice(), opGroup: opParent.slice(),
      };
      post(r, [r.groupParent.buffer, r.opGroup.buffer]);
    }
  } catch (e) {
    post({ type: "error", req: "req" in m ? m.req : -1, message: String(e) });
  }
};
