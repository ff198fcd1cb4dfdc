"""Writes web/tests/fixtures/option_table_ep.json: a real sweep on an execution-provider target, where overrides
move ops between the HTP and the CPU EP (partition crossings), and option_table_fg.json: the same sweep with a
float-graph run cost on the HTP (`float_graph_run_s`, at the 0.25 ms the LiteRT QNN profiles fit), whose term
overrides switch on and off. Run: `python -m tests.browser.ep_fixture`, then `cd web && UPDATE_FIXTURES=1 npm test`
to recompute the expected totals with the TypeScript rule. option_table_mem.json (`python -m tests.browser.ep_fixture
mem`): a real ort-cpu/host sweep whose peak memory has the runtime's terms (simulator/peak_memory.py): weights
decoded at load (fp16, palettized), MLAS's prepacked Gemm weights, the load copy and the arena, int8 packing and
scratch, and a recurrent op's activation cap (set on conv1)."""

from __future__ import annotations

import json
from pathlib import Path

from compiler.graph import Graph, Node
from simulator.sweep import sweep
from tests.simulator.helpers import act, conv_gemm, graph, weight

TARGET = "ort-qnn/snapdragon-8g3"
OVERRIDABLE = ("relu1", "nms", "relu2")
OUT = Path(__file__).resolve().parents[2] / "web" / "tests" / "fixtures" / "option_table_ep.json"
OUT_FG = OUT.with_name("option_table_fg.json")
OUT_MEM = OUT.with_name("option_table_mem.json")
MEM_OVERRIDABLE = ("conv1", "fc")
FLOAT_GRAPH_S = 2.5e-4


def model() -> Graph:
    """conv1 -> relu1 -> nms (CPU EP only) -> conv2 -> relu2, 8 channels of 8 x 8."""
    conv = lambda i, x, y: Node(f"conv{i}", f"conv{i}", "Conv", inputs=[x, f"w{i}"], outputs=[y],  # noqa: E731
                                attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]})
    nodes = [conv(1, "x", "a"), Node("relu1", "relu1", "Relu", inputs=["a"], outputs=["b"]),
             Node("nms", "nms", "NonMaxSuppression", inputs=["b"], outputs=["c"]), conv(2, "c", "d"),
             Node("relu2", "relu2", "Relu", inputs=["d"], outputs=["y"])]
    values = [act(v, [1, 8, 8, 8]) for v in ("x", "a", "b", "c", "d", "y")]
    return graph(nodes, values + [weight("w1", [8, 8, 3, 3]), weight("w2", [8, 8, 3, 3])], ["x"], ["y"])


def main_mem() -> None:
    r = sweep(conv_gemm(), "ort-cpu/host")
    # conv1 capped as a recurrent op's activation figure is (activation_caps), so both rules' cap is in the agreement
    p = [x["name"] for x in r.bulk["presets"]].index("fp32")
    r.bulk["constants"]["activation_caps"] = [[0, 0.5 * r.bulk["metrics"]["activation_bytes"][0][p]]]
    per_op = {row["op"]: row for row in r.per_op if row["op"] in MEM_OVERRIDABLE}
    OUT_MEM.write_text(json.dumps({"table": r.bulk, "per_op": per_op}, separators=(",", ":")) + "\n")
    print(f"wrote {OUT_MEM} ({OUT_MEM.stat().st_size} bytes)")


def main() -> None:
    from compiler.vocabulary.targets import get_target
    from simulator.profiles import load_profile

    t = get_target(TARGET)
    fg = load_profile(t.profile, t.backend).with_overrides({"units": {"htp": {"float_graph_run_s": FLOAT_GRAPH_S}}})
    for out, r in ((OUT, sweep(model(), TARGET)), (OUT_FG, sweep(model(), TARGET, hardware=fg))):
        # The per-op rows of the ops the agreement states override (the convs' 405 combos would triple the file).
        per_op = {row["op"]: row for row in r.per_op if row["op"] in OVERRIDABLE}
        out.write_text(json.dumps({"table": r.bulk, "per_op": per_op}, separators=(",", ":")) + "\n")
        print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    import sys

    main_mem() if sys.argv[1:] == ["mem"] else main()
