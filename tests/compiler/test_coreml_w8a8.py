"""W8A8 Core ML exports of a `.pt2` (compiler.optimize.coreml_w8a8): activation ranges measured on the torch program,
quantize / dequantize pairs inserted by coremltools' own passes, and the written package checked and predicted as
written."""

from __future__ import annotations

import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from compiler.errors import ModelRunError

torch = pytest.importorskip("torch")
pytest.importorskip("coremltools")


class _Net(torch.nn.Module):  # type: ignore[misc]
    """Conv + BatchNorm + ReLU, a depthwise conv + ReLU6, a residual add, a max pool, SiLU (mul: not quantized),
    global pool and a Linear: each kind coremltools' passes quantize, and some they leave float."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        # (the pointwise conv and the Linear hold more than 2048 weights: coremltools compresses those only)
        self.c1, self.b1 = nn.Conv2d(3, 48, 3, padding=1), nn.BatchNorm2d(48)
        self.dw, self.pw = nn.Conv2d(48, 48, 3, padding=1, groups=48), nn.Conv2d(48, 48, 1)
        self.pool, self.fc = nn.MaxPool2d(2), nn.Linear(48, 128)

    def forward(self, x: Any) -> Any:
        y = torch.relu(self.b1(self.c1(x)))
        z = self.pw(torch.nn.functional.relu6(self.dw(y))) + y
        z = self.pool(z)
        z = torch.nn.functional.silu(z)
        return self.fc(z.mean(dim=(2, 3)))


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Any]:
    from compiler.backends import coreml
    from compiler.frontends import pt2

    d = tmp_path_factory.mktemp("w8a8")
    src = d / "net.pt2"
    torch.export.save(torch.export.export(_Net().eval(), (torch.randn(1, 3, 16, 16),)), src)
    compiled, package = coreml.compile(src, d, pt2.load(src))
    assert package is not None, compiled.metadata.get("note")
    return src, package, compiled


@pytest.fixture(scope="module")
def w8a8(converted: tuple[Path, Path, Any], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The int8-static export of the converted program (a W8A8 export costs seconds): two tests read it."""
    from compiler.optimize.coreml_export import export_coreml_file

    src, package, compiled = converted
    out = tmp_path_factory.mktemp("w8a8-out") / "w8a8.mlpackage.zip"
    res = export_coreml_file(package, out, "int8-static", {}, compiled, pt2=src, input_shapes={"x": [1, 3, 16, 16]})
    return out, res


def _ops(package: Path) -> list[tuple[str, str]]:
    import coremltools as ct

    with zipfile.ZipFile(package) as z:
        z.extractall(package.parent / "unzipped")
    ml = ct.models.MLModel(str(next((package.parent / "unzipped").glob("*.mlpackage"))), skip_model_load=True)
    return [(op.type, op.attributes["name"].immediateValue.tensor.strings.values[0])
            for fn in ml.get_spec().mlProgram.functions.values() for b in fn.block_specializations.values()
            for op in b.operations if "name" in op.attributes]


def test_pt2_int8_static_writes_w8a8_that_loads_back(converted: tuple[Path, Path, Any], w8a8: tuple[Path, Any],
                                                    tmp_path: Path) -> None:
    from compiler.optimize.coreml_export import export_coreml_file

    src, package, compiled = converted
    out, res = w8a8
    kinds = Counter(t for t, _ in _ops(out))
    # Every conv (3), the linear, the add and the max pool read an int8 input: at least one dequantize each, and
    # the quantize ops coremltools pairs with them (shared between neighbours after pair elimination).
    assert kinds["dequantize"] >= 6 and kinds["quantize"] >= 4, kinds
    assert kinds["constexpr_affine_dequantize"] + kinds["constexpr_blockwise_shift_scale"] >= 2, kinds
    assert any("int8 activations on 6 conv / linear / add / pool ops" in n for n in res.notes), res.notes
    assert not any("weights only" in n for n in res.notes)
    weights_only = export_coreml_file(package, tmp_path / "w8.mlpackage.zip", "int8-dynamic", {}, compiled, pt2=src)
    assert Counter(t for t, _ in _ops(tmp_path / "w8.mlpackage.zip"))["dequantize"] == 0
    # Q/DQ ops add a scale and a few hundred bytes of spec each, no weights
    assert weights_only.size_bytes < res.size_bytes < weights_only.size_bytes + 400 * (kinds["quantize"] +
                                                                                         kinds["dequantize"])


def test_without_a_torch_program_int8_static_stays_weights_only(converted: tuple[Path, Path, Any],
                                                                 tmp_path: Path) -> None:
    from compiler.optimize.coreml_export import export_coreml_file

    _, package, compiled = converted
    out = tmp_path / "up.mlpackage.zip"
    res = export_coreml_file(package, out, "int8-static", {}, compiled)
    assert Counter(t for t, _ in _ops(out))["dequantize"] == 0
    assert any(n.startswith("int8 weights only") for n in res.notes)


def test_per_op_override_quantizes_that_op_only(converted: tuple[Path, Path, Any], tmp_path: Path) -> None:
    from compiler.optimize.coreml_export import export_coreml_file

    src, package, compiled = converted
    conv = next(n for n in compiled.nodes if n.op_type == "conv")
    res = export_coreml_file(package, tmp_path / "one.mlpackage.zip", "fp16", {conv.id: "int8-static"}, compiled,
                             pt2=src, input_shapes={"x": [1, 3, 16, 16]})
    assert any("int8 activations on 1 conv" in n for n in res.notes), res.notes
    assert set(res.weights.values()) == {"fp16/fp16/fp16/0"}  # the overridden conv holds < 2048 weights


def test_check_refuses_an_op_without_int8_input(converted: tuple[Path, Path, Any], tmp_path: Path) -> None:
    import coremltools as ct

    from compiler.optimize.choices import resolve_option
    from compiler.optimize.coreml_export import check_package, export_coreml_file

    _, package, compiled = converted
    out = tmp_path / "fp16.mlpackage.zip"
    export_coreml_file(package, out, "fp16", {}, compiled)
    with zipfile.ZipFile(out) as z:
        z.extractall(tmp_path / "x")
    folder = next((tmp_path / "x").glob("*.mlpackage"))
    spec = ct.models.MLModel(str(folder), skip_model_load=True).get_spec()
    conv = next(op for fn in spec.mlProgram.functions.values() for b in fn.block_specializations.values()
                for op in b.operations if op.type == "conv")
    name = conv.attributes["name"].immediateValue.tensor.strings.values[0]
    fp16 = resolve_option("fp16", "fp16", True)
    with pytest.raises(ModelRunError, match=f"{name} has no int8 input"):
        check_package(folder, {}, [name])
    check_package(folder, {}, [])
    assert fp16.combo.input == "fp16"


def test_tiny_and_huge_ranges_stay_representable_in_fp16() -> None:
    from compiler.optimize.coreml_w8a8 import _MIN_ABS, _stat

    assert _stat(1e-9, 2e-9) == {"rmin": 0.0, "rmax": _MIN_ABS}  # scale would round to 0 in fp16
    assert _stat(-1e6, 3.0) == {"rmin": -65504.0, "rmax": 3.0}
    assert _stat(0.5, 2.0) == {"rmin": 0.0, "rmax": 2.0}  # ranges include 0, as the quantizer's do


def test_option_table_predicts_the_written_w8a8(converted: tuple[Path, Path, Any], w8a8: tuple[Path, Any]) -> None:
    """int8-static on the converted program: the tasks predicted with int8 activations are exactly the ops the
    written package gives an int8 input (plus the activations fused after them); the rest are predicted fp16,
    with the reason."""
    from simulator.sweep import sweep

    _, _, compiled = converted
    r = sweep(compiled, "coreml/apple-a17", presets_only=["int8-static"])
    p = [x["name"] for x in r.bulk["presets"]].index("int8-static")
    combos = {nd.id: (nd.op_type, r.bulk["combos"][i][p]) for i, nd in enumerate(compiled.nodes)}
    int8 = {tid for tid, (_, c) in combos.items() if c.startswith("int8/")}
    assert {combos[t][0] for t in int8} == {"conv", "relu", "relu6", "add", "max_pool", "linear"}
    floats = {op for op, c in combos.values() if c.startswith("fp16/")}
    assert {"silu", "reduce_mean"} <= floats
    silu = next(i for i, nd in enumerate(compiled.nodes) if nd.op_type == "silu")
    assert any("coremltools quantizes activations around conv, linear, add and pools only" in n
               for n in r.per_op[silu]["notes"])
    out, _ = w8a8
    import coremltools as ct

    from compiler.optimize.coreml_w8a8 import ops_without_dequantized_input

    kinds = {name: t for t, name in _ops(out)}  # (extracts the package beside it, under "unzipped")
    spec = ct.models.MLModel(str(next((out.parent / "unzipped").glob("*.mlpackage"))), skip_model_load=True).get_spec()
    every = [n for n, t in kinds.items() if t in ("conv", "linear", "add", "max_pool", "reduce_mean")]
    float_in = set(ops_without_dequantized_input(spec, every))
    written = Counter(kinds[n] for n in every if n not in float_in)
    assert written == Counter(combos[t][0] for t in int8 if combos[t][0] not in ("relu", "relu6"))
    assert {kinds[n] for n in float_in} == {"reduce_mean"}  # reads the fp16 silu (mul) output


def test_converted_package_size_is_predicted_from_its_own_overhead(converted: tuple[Path, Path, Any],
                                                                   tmp_path: Path) -> None:
    """A .pt2's Core ML exports compress the package Edgescope converted, so the bytes beyond the weights are that
    package's (stored, as its exports are), not the .pt2's (its serialized graph and sample inputs): the fp16 file
    is predicted within 2%. With the .pt2's overhead this small net's file was predicted at several times its size;
    with a deflated package, 37% under."""
    from compiler.optimize.coreml_export import export_coreml_file
    from simulator.sweep import sweep
    from simulator.totals import totals

    src, package, compiled = converted
    assert int(compiled.metadata["file_size_bytes"]) == package.stat().st_size
    with zipfile.ZipFile(package) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
    r = sweep(compiled, "coreml/apple-a17", presets_only=["fp16"])
    out = tmp_path / "fp16.mlpackage.zip"
    export_coreml_file(package, out, "fp16", {}, compiled, pt2=src, input_shapes={"x": [1, 3, 16, 16]})
    predicted = totals(r.bulk, r.per_op, "fp16", {})["size_bytes"]
    assert abs(predicted / out.stat().st_size - 1) < 0.02, (predicted, out.stat().st_size)
