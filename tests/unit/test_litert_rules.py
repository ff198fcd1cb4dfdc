"""Which combos the LiteRT exporter writes (compiler/optimize/litert_rules.py), and how the option table marks them
on LiteRT targets (simulator/exportable.mark_tflite): the same rule the exporter refuses by. Pure."""

from __future__ import annotations

import pytest

from compiler.optimize.litert_rules import combo_reason
from compiler.vocabulary.options import BULK_PRESETS, all_combos, parse_preset
from simulator.costs import Work
from simulator.exportable import mark_tflite


def _work(kind: str, kernel: float) -> Work:
    return Work(kind, 1e6, 2e6, 1e4, 1e4, kernel, 8 if kernel else 0, 0.0, 0.0, False, True)


@pytest.mark.parametrize("combo", ["fp32/fp32/fp32/0", "fp16/fp16/fp16/0", "fp32/fp32/int8/0", "fp32/fp32/int4/0",
                                   "int8/int8/int8/0", "int8/int8/-/0", "fp16/fp32/fp32/0"])
def test_written(combo: str) -> None:
    i, o, k, s = combo.split("/")
    assert combo_reason(i, o, k, int(s)) is None


@pytest.mark.parametrize("combo,says", [
    ("fp32/fp32/lut4/0", "palettization or pruning"),
    ("fp32/fp32/fp32/50", "palettization or pruning"),
    ("fp32/int8/int8/0", "one side only"),
    ("int8/fp32/-/0", "one side only"),
    ("int8/int8/int4/0", "int8 weights only"),
])
def test_refused_in_one_sentence(combo: str, says: str) -> None:
    i, o, k, s = combo.split("/")
    why = combo_reason(i, o, k, int(s))
    assert why is not None and says in why and combo in why and "\n" not in why


def test_option_table_marks_what_the_litert_exporter_refuses() -> None:
    presets = [parse_preset(p) for p in BULK_PRESETS]
    bulk: dict[str, object] = {}
    works = [_work("conv", 864.0), _work("elementwise", 0.0)]
    per_task = mark_tflite(works, presets, bulk)
    marked = {p.name: ok for p, ok in zip(presets, bulk["exportable"])}  # type: ignore[call-overload]
    for name in ("fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights"):
        assert marked[name], name
    refused = [n for n, ok in marked.items() if not ok]
    assert refused and all(n.startswith(("palettize", "prune")) or "+" in n for n in refused)
    assert all(not marked[n] for n in marked if n.startswith(("palettize", "prune")))
    reasons = dict(zip(marked, bulk["export_reasons"]))  # type: ignore[call-overload]
    assert "palettization or pruning" in reasons["palettize-4bit"] and reasons["fp32"] is None
    # Per task: a conv's combos against the rule; a weightless op's 9 all but the one-sided int8 ones.
    conv = dict(zip((c.name for c in all_combos(True)), per_task[0].tolist()))
    assert conv["int8/int8/int8/0"] and conv["fp32/fp32/int4/0"] and not conv["fp32/fp32/lut4/0"]
    assert not conv["fp32/fp32/int8/50"] and not conv["fp32/int8/int8/0"]
    assert per_task[1].tolist().count(True) == 9 - 4


def test_call_once_is_no_work_per_inference() -> None:
    # TFLite's CALL_ONCE runs its init subgraph on the first invoke only (microWakeWord's state): it was a task of no
    # work that the corpus counted as silently zero once its share of the run passed 5 us.
    from compiler.graph import Node
    from simulator.costs import FOLDED
    from simulator.tflite_ops import tflite_works
    from tests.simulator.helpers import act, graph

    g = graph([Node("init", "init", "CALL_ONCE", inputs=[], outputs=[]),
               Node("relu", "relu", "RELU", inputs=["x"], outputs=["y"])],
              [act("x", [1, 16]), act("y", [1, 16])], ["x"], ["y"])
    works, folded, _ = tflite_works(g)
    assert works[0] is FOLDED and "init" in folded
    assert works[1] is not FOLDED and works[1].out_elements == 16
