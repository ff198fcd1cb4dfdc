"""Option names: presets, combos, combinations and the errors users see."""

from __future__ import annotations

import pytest

from compiler.vocabulary.options import BULK_PRESETS, OptionError, all_combos, parse_combo, parse_preset
from compiler.vocabulary.targets import UnknownTarget, default_targets, get_target, list_targets


def test_presets_resolve_per_backend_float() -> None:
    p = parse_preset("int4-weights")
    assert p.resolve("fp32", True).name == "fp32/fp32/int4/0"
    assert p.resolve("fp16", True).name == "fp16/fp16/int4/0"  # Core ML's float is fp16
    assert p.resolve("fp16", False).name == "fp16/fp16/-/0"
    assert parse_preset("int8-static").resolve("fp32", True).name == "int8/int8/int8/0"


def test_prune_combines_with_one_compression_in_any_order() -> None:
    a = parse_preset("prune-50+int8-static")
    b = parse_preset("int8-static+prune-50")
    assert a.name == b.name == "prune-50+int8-static"
    assert a.resolve("fp32", True).name == "int8/int8/int8/50"
    assert parse_preset("prune-90").resolve("fp16", True).name == "fp16/fp16/fp16/90"


@pytest.mark.parametrize("name,fragment", [
    ("int9-static", "unknown option 'int9-static'"),
    ("int8-static+int4-weights", "both set the weight format"),
    ("prune-25+prune-50", "two sparsities"),
    ("", "empty option name"),
])
def test_bad_presets(name: str, fragment: str) -> None:
    with pytest.raises(OptionError, match=fragment):
        parse_preset(name)


@pytest.mark.parametrize("combo,fragment", [
    ("int8/int8/int8", "not a combo"),
    ("lut4/fp32/fp32/0", "input format 'lut4' \\(a weight format\\)"),
    ("fp32/fp32/int3/0", "kernel format 'int3' is unknown"),
    ("fp32/fp32/fp32/33", "sparsity 33 is not offered"),
    ("fp32/fp32/fp32/x", "sparsity 'x' is not a number"),
])
def test_bad_combos(combo: str, fragment: str) -> None:
    with pytest.raises(OptionError, match=fragment):
        parse_combo(combo)


def test_weightless_op_refuses_a_kernel_format() -> None:
    with pytest.raises(OptionError, match="has no weights"):
        parse_combo("int8/int8/int8/0", has_kernel=False)
    assert parse_combo("int8/int8/-/0", has_kernel=False).kernel == "-"


def test_combo_tables() -> None:
    assert len(all_combos(True)) == 3 * 3 * 9 * 5
    assert len(all_combos(False)) == 9
    assert len(set(BULK_PRESETS)) == len(BULK_PRESETS)
    for name in BULK_PRESETS:
        parse_preset(name)  # every bulk preset is a valid option name


def test_targets_registry() -> None:
    assert list_targets()[0] == "ort-cpu/host"
    assert {"coreml/apple-a17", "ort-qnn/snapdragon-8g3", "litert/pixel-8", "ort-xnnpack/rpi5"} <= set(list_targets())
    assert default_targets("onnx")[0] == "ort-cpu/host"
    assert get_target("coreml/apple-a17").float_format == "fp16"
    with pytest.raises(UnknownTarget, match="known targets"):
        get_target("tpu/v5")
    assert issubclass(UnknownTarget, OptionError)
