"""The browser's totals rule (web/src/totals.ts) and the server's (simulator/totals.py) on the same fixture.

web/tests/fixtures/totals_expected.json is written by the TypeScript implementation (`UPDATE_FIXTURES=1 npm test`);
here Python must reproduce every number exactly, and `npm test` (vitest) must pass.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path


WEB = Path(__file__).resolve().parents[2] / "web"
FIXTURES = WEB / "tests" / "fixtures"


def test_python_totals_equal_typescript_totals_to_the_last_digit() -> None:
    from simulator.totals import totals

    expected = json.loads((FIXTURES / "totals_expected.json").read_text())
    assert len(expected["states"]) >= 10
    # option_table_ep.json (an EP target) has states whose overrides move ops between units
    assert sum(s.get("fixture") == "option_table_ep.json" and bool(s["state"]["overrides"])
               for s in expected["states"]) >= 5
    # the EP fixture is a real sweep: its per-inference term (the runtime's fixed cost) is in both rules' sums
    assert json.loads((FIXTURES / "option_table_ep.json").read_text())["table"]["constants"]["per_inference_ms"] > 0
    for s in expected["states"]:
        fx = json.loads((FIXTURES / s.get("fixture", "option_table_small.json")).read_text())
        got = totals(fx["table"], fx["per_op"], s["state"]["model_wide"], s["state"]["overrides"])
        for key, want in s["totals"].items():
            assert got[key] == want, f"{s['name']}: {key} {got[key]!r} != {want!r}"


def test_the_float_graph_term_comes_and_goes_in_the_agreement_states() -> None:
    """option_table_fg.json (a real sweep with a float-graph run cost on the HTP): among the states both rules total,
    some pay the term (an op runs float on the HTP) and some do not, so the agreement covers the term's switch."""
    from simulator.totals import evaluate, float_graph_terms

    fx = json.loads((FIXTURES / "option_table_fg.json").read_text())
    assert fx["table"]["constants"]["float_graph_ms"] == {"htp": 0.25}
    terms = []
    for s in json.loads((FIXTURES / "totals_expected.json").read_text())["states"]:
        if s.get("fixture") == "option_table_fg.json":
            e = evaluate(fx["table"], fx["per_op"], s["state"]["model_wide"], s["state"]["overrides"])
            terms.append(float_graph_terms(fx["table"], e.combo, e.unit or [], e.latency_ms)[0])
    assert 0.25 in terms and 0.0 in terms and len(terms) >= 5


def test_npm_unit_tests_pass() -> None:
    assert shutil.which("npm") and (WEB / "node_modules").exists(), "web/node_modules not installed: run `make web`"
    r = subprocess.run(["npm", "test", "--silent"], cwd=WEB, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_browser_input_reader_agrees_with_onnx_on_real_architectures(tmp_path: Path) -> None:
    """web/src/inputs reads a torchvision export with dynamic axes as onnx does, and skips weights unread."""
    import corpus  # noqa: F401  (torchvision importable beside CPU torch)
    import numpy as np
    import onnx
    import torch
    import torchvision
    from onnx import TensorProto, helper, numpy_helper

    from tests.browser.input_fixtures import declared_inputs, write_fixtures

    write_fixtures(tmp_path)  # the shipped fixtures, written again: they must still read the same
    net = torchvision.models.mobilenet_v3_small(weights=None).eval()
    mobilenet = tmp_path / "mobilenet_v3_small_dynamic.onnx"
    torch.onnx.export(net, (torch.zeros(1, 3, 96, 96),), str(mobilenet), input_names=["pixels"], output_names=["logits"],
                      dynamic_axes={"pixels": {0: "batch", 2: "height", 3: "width"}}, dynamo=False)
    big = tmp_path / "big_weight.onnx"  # 8 MB of weights before the inputs: they must be skipped, not read
    w = numpy_helper.from_array(np.zeros((2048, 1024), np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "big",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2048])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1024])], [w])
    onnx.save(helper.make_model(g), str(big))
    expected = json.loads((tmp_path / "expected.json").read_text())
    expected += [{"file": mobilenet.name, "inputs": declared_inputs(mobilenet)},
                 {"file": big.name, "inputs": declared_inputs(big), "max_bytes_read": 256 * 1024}]
    assert expected[-2]["inputs"] == [{"name": "pixels", "dtype": "float32", "shape": ["batch", 3, "height", "width"]}]
    (tmp_path / "expected.json").write_text(json.dumps(expected))
    r = subprocess.run(["npx", "vitest", "run", "--reporter=verbose", "tests/inputs.test.ts"], cwd=WEB, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "EDGESCOPE_INPUT_FIXTURES": str(tmp_path)})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    for name in (mobilenet.name, big.name, "dynamic_dims.onnx"):
        assert f"reads the inputs of {name}" in r.stdout, r.stdout[-3000:]
