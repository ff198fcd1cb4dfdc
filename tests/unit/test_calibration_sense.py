"""A jointly fitted path none of whose calibration cases runs it on this machine is left unfitted
(simulator.calibration_sense): its flat fit would settle at the search's lower bound (a Zen 3's convsmall.int8 at
1.6e-4 of the peak priced one LCNet-050 conv at 162 ms)."""

from __future__ import annotations

from compiler.graph import Graph
from simulator.calibration_sense import efficiency_moves, unpriced
from simulator.profiles import HardwareProfile, load_profile


def _predict(g: Graph, hw: HardwareProfile, preset: str) -> float:
    """A case of `g.name`'s key runs it when its name says so: then its time is 1 / the key's efficiency."""
    key = g.name.split("@")[0]
    return 1.0 + (1.0 / hw.units[0].efficiency.get(key, 1.0) if g.name.endswith("@runs") else 0.0)


def _graph(name: str) -> Graph:
    return Graph(name=name, format="onnx", nodes=[], values={}, inputs=[], outputs=[])


def test_a_key_whose_cases_run_its_path_is_priced_and_one_whose_cases_do_not_is_not() -> None:
    hw = load_profile("host-cpu", "ort-cpu")
    graphs = {n: _graph(n) for n in ("convsmall.int8@other", "convsmall.int8@other2", "conv.int8@runs",
                                      "conv.int8@other", "dwconv.fp32@runs")}
    cases = [{"case": n, "preset": "int8-static", "key": n.split("@")[0], "joint": not n.startswith("dwconv")}
             for n in graphs]
    assert efficiency_moves([(graphs["conv.int8@runs"], "int8-static")], hw, "conv.int8", _predict)
    assert not efficiency_moves([(graphs["convsmall.int8@other"], "int8-static")], hw, "convsmall.int8", _predict)
    # one case of a key running its path is enough; keys not fitted jointly are not asked about
    assert unpriced(graphs, cases, hw, _predict) == {"convsmall.int8"}
