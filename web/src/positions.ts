// Where each task of one list sits in another. The page holds the tasks in three lists (the graph's columns, /ops,
// the option table), mostly in one order; a Map of 200,000 ids cost 30-190 ms of the main thread each, and the
// page built five of them once the table's data arrived.

/** For each of `keys`, its position in `ids` (-1 where absent): the identity, checked in one pass, when both lists
 * hold the same ids in the same order, else through a Map. */
export function positionsIn(ids: readonly string[], keys: readonly string[]): Int32Array {
  const n = keys.length, out = new Int32Array(n);
  let same = n === ids.length;
  for (let k = 0; same && k < n; k++) same = keys[k] === ids[k];
  if (same) {
    for (let k = 0; k < n; k++) out[k] = k;
    return out;
  }
  const pos = new Map<string, number>();
  ids.forEach((id, k) => pos.set(id, k));
  for (let k = 0; k < n; k++) out[k] = pos.get(keys[k]) ?? -1;
  return out;
}

/** id -> position in `ids`, its Map built on the first look-up (a selection made elsewhere, a hover). */
export class LazyIndex {
  private map: Map<string, number> | null = null;
  constructor(private readonly ids: readonly string[]) {}
  get(id: string): number | undefined {
    if (!this.map) {
      this.map = new Map();
      this.ids.forEach((x, k) => this.map!.set(x, k));
    }
    return this.map.get(id);
  }
}
