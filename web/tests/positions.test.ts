import { describe, expect, it } from "vitest";
import { opAncestors, pack, unpackModel } from "../src/graph/messages";
import { buildHierarchy } from "../src/graph/hierarchy";
import { LazyIndex, positionsIn } from "../src/positions";

describe("positionsIn", () => {
  it("is the identity when both lists hold the same ids in order, else looks them up", () => {
    expect([...positionsIn(["a", "b", "c"], ["a", "b", "c"])]).toEqual([0, 1, 2]);
    expect([...positionsIn(["a", "b", "c"], ["c", "x", "a"])]).toEqual([2, -1, 0]);
    expect([...positionsIn(["a", "b"], ["a", "b", "c"])]).toEqual([0, 1, -1]);
    expect(new LazyIndex(["a", "b"]).get("b")).toBe(1);
    expect(new LazyIndex(["a", "b"]).get("z")).toBeUndefined();
  });
});

describe("the graph's model message", () => {
  it("packs string columns into one string unless a value holds the separator", () => {
    const cols = ["a/b", "", "c d"];
    expect(typeof pack(cols)).toBe("string");
    const odd = ["x\u0001y", "z"];
    expect(pack(odd)).toBe(odd);
    expect(pack([])).toEqual([]);
    const m = unpackModel({ type: "model", ids: pack(cols), names: pack(odd), types: pack([]), namespaces: pack(cols), groups: pack([""]), groupParent: new Int32Array([-1]), opGroup: new Int32Array(3) });
    expect(m.ids).toEqual(cols);
    expect(m.names).toEqual(odd);
    expect(m.types).toEqual([]);
  });

  it("gives an op's groups from the root down, as the hierarchy has them", () => {
    const names = ["a/b/x", "a/b/y", "a/z", "w"], types = ["Conv", "Add", "Conv", "Add"];
    const h = buildHierarchy({ names, types, namespaces: ["a/b", "a/b", "a", ""] });
    const groups = { ids: h.order.map((g) => g.id), parent: Int32Array.from(h.order, (g) => (g.parent === null ? -1 : h.groups.get(g.parent)!.index)), opGroup: Int32Array.from(h.opParent, (id) => h.groups.get(id)!.index) };
    expect(opAncestors(groups, 0)).toEqual(["a", "a/b"]);
    expect(opAncestors(groups, 2)).toEqual(["a"]);
    expect(opAncestors(groups, 3)).toEqual([]);
    // every group after its parent
    h.order.forEach((g, k) => g.parent !== null && expect(h.groups.get(g.parent)!.index).toBeLessThan(k));
  });
});
