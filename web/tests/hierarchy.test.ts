import { describe, expect, it } from "vitest";
import { buildHierarchy, labelGroup, partLabel } from "../src/graph/hierarchy";

/** n ops in blocks of 4 under a/b{k}, with some namespaces written with slashes at their ends, one namespace
 * coming back after others, and a run of ops without one: crowded enough to get automatic groups. */
function columns(n: number) {
  const names: string[] = [], types: string[] = [], namespaces: string[] = [];
  for (let i = 0; i < n; i++) {
    const ns = i >= n - 3 ? "" : i === n - 4 ? "a/b0" : `a/b${Math.floor(i / 4)}`;
    namespaces.push(i % 7 === 0 && ns ? `/${ns}/` : ns);
    types.push(["Conv", "Relu", "Conv", "Add"][i % 4]);
    names.push(`${ns}/${types[i]}_${i}`);
  }
  return { names, types, namespaces };
}

describe("buildHierarchy", () => {
  const cols = columns(6000);
  const h = buildHierarchy(cols);

  it("makes one group per namespace, trimmed, with the ops in execution order", () => {
    expect(h.groups.get("a/b0")!.ops).toEqual([0, 1, 2, 3, 5996]);
    expect(h.groups.has("/a/b7/")).toBe(false);
    expect(h.opParent[7]).toBe("a/b1");
    // the three ops without a namespace sit at the root, which holds no more than 40 items
    expect(h.groups.get("")!.ops).toEqual([5997, 5998, 5999]);
    expect(h.groups.get("")!.groups.length + 3).toBeLessThanOrEqual(40);
    expect(h.groups.get("")!.count).toBe(6000);
  });

  it("splits crowded groups into automatic ones along execution order", () => {
    const a = h.groups.get("a")!;
    expect(a.groups.length).toBeLessThanOrEqual(40);
    const autos = [...h.groups.values()].filter((g) => g.auto);
    expect(autos.length).toBeGreaterThan(30); // 1,500 block groups in about 40 ranges
    for (const g of autos) expect(g.label).not.toMatch(/^#/); // each named by its tasks or their common prefix
  });

  it("names automatic groups on demand with the labels it would have given them at once", () => {
    const lazy = buildHierarchy(cols, undefined, false);
    expect([...lazy.groups.keys()]).toEqual([...h.groups.keys()]);
    expect(lazy.opParent).toEqual(h.opParent);
    for (const [id, g] of h.groups) {
      expect(lazy.groups.get(id)!.count).toBe(g.count);
      expect(labelGroup(lazy, id, cols).label).toBe(g.label);
    }
  });
});

describe("group labels", () => {
  it("keep a TFLite module's class and attribute, not its dotted path; module paths stay whole", () => {
    expect(partLabel("torch.nn.modules.conv.Conv2d_reparam_conv")).toBe("Conv2d_reparam_conv");
    expect(partLabel("timm.models.byobnet.MobileOneBlock_stem")).toBe("MobileOneBlock_stem");
    expect(partLabel("corpus.builders._Logits")).toBe("_Logits");
    for (const p of ["features.0", "layers.11", "block.0.2", "m", "self_attn", "model.layers"]) expect(partLabel(p)).toBe(p);
    const h = buildHierarchy({
      names: ["TRANSPOSE_0", "CONV_2D_1"], types: ["TRANSPOSE", "CONV_2D"],
      namespaces: ["corpus.builders._Logits/timm.models.byobnet.ByobNet_m", "corpus.builders._Logits/timm.models.byobnet.ByobNet_m/torch.nn.modules.conv.Conv2d_reparam_conv"],
    });
    const g = h.groups.get("corpus.builders._Logits/timm.models.byobnet.ByobNet_m/torch.nn.modules.conv.Conv2d_reparam_conv")!;
    expect(g.label).toBe("Conv2d_reparam_conv");
    expect(h.groups.get("corpus.builders._Logits/timm.models.byobnet.ByobNet_m")!.label).toBe("ByobNet_m");
  });
});
