import { describe, expect, it } from "vitest";
import { SEL_GROW } from "../src/graph/highlight";
import { GROUP_SIZE, highlightOf, itemStyle, LABELLED_SELECTION, OP_SIZE, optimizedRings, selectedItems, selectedNodes } from "../src/components/graph/style";
import type { LayoutResult } from "../src/graph/messages";

// three ops drawn as themselves (items 0-2) and two more inside one collapsed group (item 3)
const L = { ops: [0, 1, 2], opXY: Float64Array.from([100, 10, 100, 50, 100, 90]), collapsed: [{ id: "g", x: 300, y: 40, w: 200, h: 42 }], rep: [0, 1, 2, 3, 3] } as unknown as LayoutResult;
const idToNode = new Map(["a", "b", "c", "d", "e"].map((id, i) => [id, i]));

describe("graph item style", () => {
  it("draws a group selected when it holds a selected op, and highlights only ops drawn as themselves", () => {
    const ids = ["a", "b", "c", "d", "e"];
    const s = selectedItems(L, selectedNodes(["b", "d", "e", "nope"], idToNode, null, null), (i) => ids[i]);
    expect(Array.from(s.sel)).toEqual([0, 1, 0, 1]);
    expect(s.selCount).toBe(2);
    expect(s.hl).toEqual(["b"]);
  });

  it("reads the selection's mask over the task list through the task -> node map, as its ids would", () => {
    // the page's task list in another order than the graph's nodes, one task without a node
    const toNode = Int32Array.from([4, 3, 2, 1, 0, -1]);
    const mask = Uint8Array.from([1, 0, 1, 0, 0, 1]); // tasks e, c and one without a node
    expect(selectedNodes(["e", "c"], idToNode, mask, toNode)).toEqual([4, 2]);
    expect(selectedNodes(["e", "c"], idToNode, null, toNode)).toEqual([4, 2]);
  });

  it("puts the selection layer's items where sigma draws them, labelled only for a small selection", () => {
    const s = selectedItems(L, selectedNodes(["b", "d"], idToNode, null, null), String);
    const h = highlightOf(L, s.sel, s.selCount, (k) => `item ${k}`);
    // op b: its layout point shifted 60 left; the collapsed group at the left end of its box
    expect(Array.from(h.xyr)).toEqual([40, 50, OP_SIZE, 300 - 100 + 20, 40, GROUP_SIZE]);
    expect(h.labels).toEqual(["item 1", "item 3"]);
    const many = { ops: Int32Array.from({ length: LABELLED_SELECTION + 1 }, (_, i) => i), opXY: new Float64Array(2 * (LABELLED_SELECTION + 1)), collapsed: [] } as unknown as LayoutResult;
    const all = new Uint8Array(LABELLED_SELECTION + 1).fill(1);
    const big = highlightOf(many, all, all.length, () => "x");
    expect(big.xyr.length).toBe(3 * all.length);
    expect(big.labels).toBeNull();
  });

  it("rings optimized items around the selection's bigger disc", () => {
    const opt = Uint8Array.from([1, 0, 1, 0]);
    const rings = optimizedRings(L, opt, Uint8Array.from([0, 0, 1, 0]));
    expect(Array.from(rings)).toEqual([40, 10, OP_SIZE, 40, 90, OP_SIZE * SEL_GROW]);
  });

  it("dims what the table's filter leaves out and marks optimized ops on the item that draws them", () => {
    const st = itemStyle(L, ["a", "b", "c", "d", "e"], { metric: { values: [1, 2, 3, 4], min: 1, max: 4 }, diverging: false, units: null,
      filtered: new Set(["a", "e"]), overridden: [0, 0, 0, 0, 1], toTable: [0, 1, 2, 3, 4] });
    expect(Array.from(st.dim)).toEqual([0, 1, 1, 0]);
    expect(st.dimmed).toBe(2);
    expect(Array.from(st.opt)).toEqual([0, 0, 0, 1]);
    expect(new Set(st.color).size).toBe(4); // a sequential scale: each value its own colour
  });
});
