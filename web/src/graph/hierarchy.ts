// Group tree of the compiled graph: namespaces become groups; any group with too many direct items
// (and a model without namespaces) is split into automatic groups along execution order, aligned to the
// period of repeated blocks when the op types repeat. So no single layout gets more than MAX_ITEMS nodes.

export const ROOT = "";
export const MAX_ITEMS = 40;

export interface Group {
  id: string;
  /** namespace part, or for an automatic group its main task types ("Conv 6 · Add 2"); built without labels
   * (`labelAuto` false), an automatic group holds its range until labelGroup names it */
  label: string;
  /** automatic groups: the execution-order range they cover ("#12–#40") */
  range?: string;
  parent: string | null;
  groups: string[];
  ops: number[];
  first: number;
  count: number;
  depth: number;
  auto: boolean;
  /** position in Hierarchy.order */
  index: number;
}

export interface Hierarchy {
  groups: Map<string, Group>;
  /** direct parent group of each op */
  opParent: string[];
  /** every group, each after its parent (the graph's worker indexes groups by their position here) */
  order: Group[];
}

/** Smallest period p (2..64) with which the type sequence repeats for at least 90% of positions, else 0. */
export function detectPeriod(types: string[]): number {
  const n = types.length;
  if (n < 16) return 0;
  const sample = Math.min(n, 4000);
  for (let p = 2; p <= 64 && p * 3 <= n; p++) {
    let same = 0, total = 0;
    for (let i = 0; i + p < sample; i++) {
      total++;
      if (types[i] === types[i + p]) same++;
    }
    if (total && same / total >= 0.9) return p;
  }
  return 0;
}

/** The graph's node columns the hierarchy is built from (GraphColumns' fields). */
export interface NodeColumns {
  names: string[];
  types: string[];
  namespaces: string[];
}

/** A namespace part as a group's label. litert-torch writes each module as its class's dotted path and its
 * attribute ("torch.nn.modules.conv.Conv2d_reparam_conv", "timm.models.byobnet.MobileOneBlock_stem"): the label
 * keeps the class and attribute ("Conv2d_reparam_conv"; the group's tooltip has the whole path). Module paths
 * such as "features.0" or "layers.11" are kept whole. */
export function partLabel(part: string): string {
  const cut = part.lastIndexOf(".");
  if (cut <= 0 || !/^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)+$/.test(part)) return part;
  const last = part.slice(cut + 1);
  return /^_?[A-Z]/.test(last) ? last : part;
}

export function buildHierarchy(cols: NodeColumns, maxItems = MAX_ITEMS, labelAuto = true): Hierarchy {
  const groups = new Map<string, Group>();
  const mk = (id: string, parent: string | null, label: string, first: number, auto: boolean): Group => {
    const g: Group = { id, label, parent, groups: [], ops: [], first, count: 0, depth: parent === null ? 0 : groups.get(parent)!.depth + 1, auto, index: -1 };
    groups.set(id, g);
    if (parent !== null) groups.get(parent)!.groups.push(id);
    return g;
  };
  mk(ROOT, null, "model", 0, false);
  const n = cols.names.length;
  const opParent: string[] = new Array(n);
  /** the group of namespace `ns` (trimmed), made with its missing ancestors */
  const ensure = (ns: string, first: number): Group => {
    const g = groups.get(ns);
    if (g) return g;
    const cut = ns.lastIndexOf("/");
    const parent = cut < 0 ? groups.get(ROOT)! : ensure(ns.slice(0, cut), first);
    return mk(ns, parent.id, partLabel(ns.slice(cut + 1)), first, false);
  };
  // consecutive ops mostly share a namespace: trim and look it up once per run, not once per op; a namespace
  // without slashes at its ends is used as it is (a trimmed copy is a new string to hash at every look-up)
  let lastRaw: string | null = null, owner = groups.get(ROOT)!;
  for (let i = 0; i < n; i++) {
    const raw = cols.namespaces[i] || "";
    if (raw !== lastRaw) {
      lastRaw = raw;
      const ns = raw.charCodeAt(0) === 47 || raw.charCodeAt(raw.length - 1) === 47 ? raw.replace(/^\/+|\/+$/g, "") : raw;
      owner = ns ? ensure(ns, i) : groups.get(ROOT)!;
    }
    owner.ops.push(i);
    opParent[i] = owner.id;
  }

  // split crowded groups, top-down
  let autoSeq = 0;
  const queue = [ROOT];
  while (queue.length) {
    const g = groups.get(queue.pop()!)!;
    // only a crowded group's items are listed: building them for each of 50,000 small groups was most of the
    // 2-4 s this took at 200,000 tasks (allocation and its garbage collection)
    if (g.groups.length + g.ops.length > maxItems) {
      const items: { first: number; group?: string; op?: number }[] = [
        ...g.groups.map((id) => ({ first: groups.get(id)!.first, group: id })),
        ...g.ops.map((op) => ({ first: op, op })),
      ].sort((a, b) => a.first - b.first);
      let size = maxItems;
      while (Math.ceil(items.length / size) > maxItems) size *= maxItems;
      let chunk = Math.ceil(items.length / Math.ceil(items.length / size));
      if (g.groups.length === 0) {
        const p = detectPeriod(g.ops.map((i) => cols.types[i]));
        if (p > 1 && p <= chunk) chunk = Math.max(p, Math.floor(chunk / p) * p);
      }
      g.groups = [];
      g.ops = [];
      for (let k = 0; k < items.length; k += chunk) {
        const part = items.slice(k, k + chunk);
        const a = part[0].first;
        const lastItem = part[part.length - 1];
        const b = lastItem.op ?? lastItem.first;
        const sub = mk(`${g.id ? g.id + "/" : ""}\u00a7${autoSeq++}`, g.id, `#${a}–#${b}`, a, true);
        sub.range = `#${a}–#${b}`;
        for (const it of part) {
          if (it.group !== undefined) {
            sub.groups.push(it.group);
            const c = groups.get(it.group)!;
            c.parent = sub.id;
          } else {
            sub.ops.push(it.op!);
            opParent[it.op!] = sub.id;
          }
        }
      }
    }
    queue.push(...g.groups);
  }
  // depths and counts (children were re-parented, so recompute)
  const order: Group[] = [];
  const stack = [groups.get(ROOT)!];
  while (stack.length) {
    const g = stack.pop()!;
    g.depth = g.parent === null ? 0 : groups.get(g.parent)!.depth + 1;
    order.push(g);
    for (const c of g.groups) stack.push(groups.get(c)!);
  }
  for (let k = order.length - 1; k >= 0; k--) {
    const g = order[k];
    g.count = g.ops.length + g.groups.reduce((s, c) => s + groups.get(c)!.count, 0);
    let sorted = true;
    for (let k = 1; k < g.groups.length && sorted; k++) sorted = groups.get(g.groups[k - 1])!.first <= groups.get(g.groups[k])!.first;
    if (!sorted) g.groups.sort((a, b) => groups.get(a)!.first - groups.get(b)!.first);
  }
  order.forEach((g, k) => (g.index = k));
  if (labelAuto) for (const g of order) if (g.auto) g.label = describe(g, groups, cols);
  return { groups, opParent, order };
}

const labelled = new WeakSet<Group>();

/** An automatic group's label, made when first asked for: the graph's worker names only the groups it draws
 * (naming all of them walked every task once per level of automatic groups: 250 ms of the first view at 200,000). */
export function labelGroup(h: Hierarchy, id: string, cols: NodeColumns): Group {
  const g = h.groups.get(id)!;
  if (g.auto && !labelled.has(g)) {
    g.label = describe(g, h.groups, cols);
    labelled.add(g);
  }
  return g;
}

/** A label for an automatic group, so a flat graph's first view reads as blocks: its most frequent task types
 * with counts ("FusedConv 6 · Add 2"), or the common name prefix of its tasks when they share one. */
function describe(g: Group, groups: Map<string, Group>, cols: NodeColumns): string {
  // the first 200 names first: when they share a prefix the types are not counted (a top-level block of a
  // 200,000-task model holds a third of its tasks)
  const names: string[] = [];
  const firstNames = (x: Group): boolean => {
    for (const i of x.ops) if (names.push(cols.names[i]) >= 200) return true;
    return x.groups.some((c) => firstNames(groups.get(c)!));
  };
  firstNames(g);
  const prefix = commonPrefix(names);
  if (prefix.length >= 3) return prefix;
  const counts = new Map<string, number>();
  const walk = (x: Group) => {
    for (const i of x.ops) counts.set(cols.types[i], (counts.get(cols.types[i]) ?? 0) + 1);
    for (const c of x.groups) walk(groups.get(c)!);
  };
  walk(g);
  const top = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const shown = top.slice(0, 2).map(([t, n]) => (n > 1 ? `${t} ${n}` : t));
  return top.length > 2 ? `${shown.join(" · ")} · …` : shown.join(" · ");
}

/** Longest common prefix of names, cut back to a separator ("/", ".", "_", ":"); "" when there is none. */
export function commonPrefix(names: string[]): string {
  if (names.length < 2) return "";
  let p = names[0];
  for (const n of names) {
    let k = 0;
    while (k < p.length && k < n.length && p[k] === n[k]) k++;
    p = p.slice(0, k);
    if (!p) return "";
  }
  const cut = Math.max(p.lastIndexOf("/"), p.lastIndexOf("."), p.lastIndexOf("_"), p.lastIndexOf(":"));
  return cut > 0 ? p.slice(0, cut).replace(/^\/+/, "") : "";
}

/** Groups to open first: the top level, then breadth-first while the drawn node count stays within `budget`.
 * Automatic blocks stay closed: a flat graph opens as its labelled blocks, an overview rather than the first 40 ops. */
export function initialExpanded(h: Hierarchy, budget = 60): Set<string> {
  const out = new Set([ROOT]);
  const items = (id: string) => {
    const g = h.groups.get(id)!;
    return g.groups.length + g.ops.length;
  };
  let visible = items(ROOT);
  const queue = [...h.groups.get(ROOT)!.groups];
  while (queue.length) {
    const id = queue.shift()!;
    if (h.groups.get(id)!.auto) continue;
    const n = items(id);
    if (visible - 1 + n > budget) continue;
    out.add(id);
    visible += n - 1;
    queue.push(...h.groups.get(id)!.groups);
  }
  return out;
}
