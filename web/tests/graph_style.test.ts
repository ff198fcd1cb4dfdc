import { describe, expect, it } from "vitest";
import { changedItems, itemStyle, LABELLED_SELECTION, selectedItems } from "../src/components/graph/style";
import type { LayoutResult } from "../src/graph/messages";

// three ops drawn as themselves (items 0-2) and two more inside one collapsed group (item 3)
const L = { ops: [0, 1, 2], collapsed: [{ id: "g" }], rep: [0, 1, 2, 3, 3] } as unknown as LayoutResult;
const idToNode = new Map(["a", "b", "c", "d", "e"].map((id, i) => [id, i]));

describe("graph item style", () => {
  it("draws a group selected when it holds a selected op, and highlights only ops drawn as themselves", () => {
    const s = selectedItems(L, ["b", "d", "e", "nope"], idToNode);
    expect(Array.from(s.sel)).toEqual([0, 1, 0, 1]);
    expect(s.selCount).toBe(2);
    expect(s.hl).toEqual(["b"]);
  });

  it("repaints only the items whose selection changed, and all selected ones when their labels switch", () => {
    const one = selectedItems(L, ["a"], idToNode), two = selectedItems(L, ["a", "c"], idToNode);
    expect(changedItems(one, two)).toEqual([2]);
    const many = { sel: new Uint8Array(LABELLED_SELECTION + 2).fill(1), selCount: LABELLED_SELECTION + 2 };
    const few = { sel: Uint8Array.from(many.sel.map((_, k) => (k < 2 ? 1 : 0))), selCount: 2 };
    expect(changedItems(many, few).length).toBe(LABELLED_SELECTION + 2); // 2 relabelled + the rest deselected
  });

  it("dims what the table's filter leaves out and marks optimized ops on the item that draws them", () => {
    const nodes = ["a", "b", "c", "d", "e"].map((id) => ({ id, type: "Conv" }));
    const st = itemStyle(L, nodes, { metric: { values: [1, 2, 3, 4], min: 1, max: 4 }, diverging: false, units: null,
      filtered: new Set(["a", "e"]), overridden: [0, 0, 0, 0, 1], toTable: [0, 1, 2, 3, 4] });
    expect(Array.from(st.dim)).toEqual([0, 1, 1, 0]);
    expect(st.dimmed).toBe(2);
    expect(Array.from(st.opt)).toEqual([0, 0, 0, 1]);
    expect(new Set(st.color).size).toBe(4); // a sequential scale: each value its own colour
  });
});
