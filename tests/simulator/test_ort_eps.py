"""ONNX Runtime CoreML EP and NNAPI EP predicted on the A17 Pro / Pixel 8 profiles: ops the EP's published
list lacks fall back to the CPU EP, and each crossing between the two partitions adds its cost."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontends import onnx as onnx_frontend
from compiler.vocabulary.targets import EP_TARGETS_PENDING
from simulator.profiles import ProfileError, load_profile, parse_profile
from simulator.sweep import sweep

EPS = [("ort-coreml/apple-a17", {"ane", "gpu"}), ("ort-nnapi/pixel-8", {"gpu"})]


def _conv_graph(tmp_path: Path, middle: str | None) -> Path:
    """x -> Conv -> <middle> -> Conv -> y (middle None: Conv -> Relu -> Conv, all supported)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32), f"w{i}") for i in (1, 2)]
    mid_op, mid_domain = ("Relu", "") if middle is None else (middle, "com.example")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node(mid_op, ["a"], ["b"], name="mid", domain=mid_domain),
             helper.make_node("Conv", ["b", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], inits,
                          value_info=[helper.make_tensor_value_info(v, TensorProto.FLOAT, [1, 8, 16, 16])
                                      for v in ("a", "b")])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("com.example", 1)] if middle else [])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=opsets), path)
    return path


def _col(r, name: str) -> int:  # type: ignore[no-untyped-def]
    return [p["name"] for p in r.bulk["presets"]].index(name)


@pytest.mark.parametrize("target,accel", EPS)
def test_unsupported_op_falls_back_to_the_cpu_ep_and_pays_two_crossings(tmp_path: Path, target: str,
                                                                        accel: set[str]) -> None:
    t = EP_TARGETS_PENDING[target]
    hw = load_profile(t.profile, t.backend)
    custom = sweep(onnx_frontend.load(_conv_graph(tmp_path, "MyCustomOp")), t)
    (tmp_path / "m.onnx").unlink()
    plain = sweep(onnx_frontend.load(_conv_graph(tmp_path, None)), t)
    assert custom.bulk["unit_names"] == [u.name for u in hw.units] and custom.bulk["unit_names"][-1] == "cpu"
    p = _col(custom, t.float_format)  # the backend's own float format
    units = [row[p] for row in custom.bulk["units"]]
    assert units[0] in accel and units[2] in accel and units[1] == "cpu"
    assert all(row[p] in accel for row in plain.bulk["units"])  # Conv -> Relu -> Conv: one partition
    # CPU -> accelerator crossing charged to conv2, accelerator -> CPU to the custom op: at least the fixed
    # crossing cost each, on top of what the same op costs without a crossing.
    lat_c, lat_p = custom.bulk["metrics"]["latency_ms"], plain.bulk["metrics"]["latency_ms"]
    crossing_ms = hw.partition_crossing_s * 1e3
    assert lat_c[2][p] >= lat_p[2][p] + crossing_ms
    assert lat_c[1][p] >= crossing_ms
    assert custom.bulk["metrics"]["dram_bytes"][2][p] > plain.bulk["metrics"]["dram_bytes"][2][p]


@pytest.mark.parametrize("target,accel", EPS)
def test_fully_supported_chain_has_no_crossing(tmp_path: Path, target: str, accel: set[str]) -> None:
    t = EP_TARGETS_PENDING[target]
    r = sweep(onnx_frontend.load(_conv_graph(tmp_path, None)), t)
    hw = load_profile(t.profile, t.backend)
    for p in range(len(r.bulk["presets"])):
        placed = [row[p] for row in r.bulk["units"]]
        if len(set(placed)) == 1 and placed[0] in accel:
            # No crossing: each op's latency equals its own per-op prediction for the resolved combo.
            for i, row in enumerate(r.bulk["combos"]):
                per = r.per_op[i]
                assert r.bulk["metrics"]["latency_ms"][i][p] == pytest.approx(
                    per["latency_ms"][per["combos"].index(row[p])])
    assert hw.partition_crossing_s > 0
    assert all(row[_col(r, t.float_format)] in accel for row in r.bulk["units"])


def test_ep_op_lists_come_from_the_yaml_with_a_source() -> None:
    a17 = load_profile("apple-a17", "ort-coreml")
    ane, gpu, cpu = a17.units
    assert "NonMaxSuppression" not in gpu.ops and "Flatten" not in gpu.ops and cpu.ops is None  # type: ignore[operator]
    assert ane.ops <= gpu.ops and "Conv" in ane.ops  # type: ignore[operator]
    for name, backend in (("apple-a17", "ort-coreml"), ("pixel-8", "ort-nnapi")):
        ep = load_profile(name).execution_providers[backend]
        assert "microsoft/onnxruntime" in ep["ops_source"]
    # Other backends of the same device are untouched.
    assert load_profile("apple-a17", "coreml") is load_profile("apple-a17")
    with pytest.raises(ProfileError, match="ops_source"):
        parse_profile({**_minimal(), "execution_providers": {"x": {"ops": ["Conv"], "units": {}, "fallback": "cpu"}}})
    with pytest.raises(ProfileError, match="fallback"):
        parse_profile({**_minimal(), "execution_providers": {"x": {"ops": ["Conv"], "ops_source": "s",
                                                                  "units": {}, "fallback": "npu"}}})


def _minimal() -> dict:  # type: ignore[type-arg]
    import yaml

    from simulator.profiles import HARDWARE_DIR
    return dict(yaml.safe_load((HARDWARE_DIR / "rpi5.yaml").read_text()))
