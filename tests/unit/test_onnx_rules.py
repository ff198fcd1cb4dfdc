"""Which combos the ONNX exporter writes exactly (compiler/optimize/onnx_rules.py), and how the option table marks
them per task (simulator/exportable.py): pure, no ONNX Runtime."""

from __future__ import annotations

import pytest

from compiler.optimize.onnx_rules import as_written, combo_reason, left_float, preset_reason
from compiler.vocabulary.options import BULK_PRESETS, all_combos, parse_combo


@pytest.mark.parametrize("combo,op", [("fp32/fp32/fp32/50", "Conv"), ("fp16/fp16/fp16/0", "MatMul"),
                                      ("fp16/fp16/lut4/0", "Conv"), ("int8/int8/int8/25", "Gemm"),
                                      ("fp32/fp32/int8/0", "FusedConv"), ("fp32/fp32/int4/0", "MatMul"),
                                      ("fp32/fp32/lut2/90", "ConvTranspose"), ("int8/int8/-/0", "Relu")])
def test_written_exactly(combo: str, op: str) -> None:
    assert combo_reason(op, parse_combo(combo, combo.split("/")[2] != "-")) is None


@pytest.mark.parametrize("combo,op,says", [
    ("fp32/int8/int8/0", "Conv", "one activation format"),  # the crash of the browser test: static then dynamic
    ("fp16/int8/int8/0", "Conv", "one activation format"),
    ("int8/int8/fp32/0", "Conv", "int8 weights"),
    ("int8/int8/lut4/0", "MatMul", "int8 weights"),
    ("fp16/fp16/int8/0", "Conv", "fp16 weights"),
    ("fp32/fp32/fp16/0", "Conv", "fp16/fp16/fp16"),
    ("fp32/fp32/int8/0", "ConvTranspose", "Conv, MatMul and Gemm only"),
    ("fp32/fp16/-/0", "Relu", "one activation format"),
])
def test_refused_in_one_sentence(combo: str, op: str, says: str) -> None:
    why = combo_reason(op, parse_combo(combo, combo.split("/")[2] != "-"))
    assert why is not None and says in why and combo in why and "\n" not in why


def test_every_model_wide_preset_is_written_on_convs_and_matmuls() -> None:
    for p in BULK_PRESETS:
        for op in ("Conv", "MatMul", "Gemm"):
            assert preset_reason(p, op, True) is None, (p, op)
        assert preset_reason(p, "Relu", False) is None, p


def test_a_third_or_less_of_a_convs_combos_are_exportable() -> None:
    ok = [c.name for c in all_combos(True) if combo_reason("Conv", c) is None]
    # 3 formats written in and out the same x their kernels, x 5 sparsities: fp32 (fp32, int8 dynamic, int4, 5
    # palettes), fp16 (fp16, 5 palettes), int8 (int8) = 15 x 5.
    assert len(ok) == 75 and "fp32/fp32/int8/90" in ok and "int8/int8/int8/0" in ok


def test_recurrent_ops_have_no_static_int8_file() -> None:
    """quantize_static leaves LSTM/GRU weights float (a 0.88 MB LSTM file against 0.23 MB predicted): an override
    asking int8 on one is refused; the model-wide int8-static preset writes it float (left_float)."""
    for op in ("LSTM", "GRU"):
        why = combo_reason(op, parse_combo("int8/int8/-/0", False))
        assert why is not None and op in why
        assert preset_reason("int8-static", op, False) is not None
        assert preset_reason("int8-dynamic", op, False) is None
        assert left_float(op, parse_combo("int8/int8/-/0", False))
        assert not left_float(op, parse_combo("fp32/fp32/-/0", False))


def test_a_model_wide_preset_leaves_float_what_its_tool_leaves_float() -> None:
    """ORT's dynamic quantization takes Conv and MatMul weights (a Gemm the exporter splits first): a ConvTranspose
    (a text detector's upsampling head) made the whole int8-dynamic option unexportable; the preset now writes it float,
    pruned as asked, and a per-op int8-dynamic on it is still refused."""
    dyn, pruned = parse_combo("fp32/fp32/int8/0"), parse_combo("fp32/fp32/int8/50")
    assert left_float("ConvTranspose", dyn) and combo_reason("ConvTranspose", dyn) is not None
    assert as_written(pruned) == parse_combo("fp32/fp32/fp32/50")
    assert not any(left_float(op, dyn) for op in ("Conv", "FusedConv", "MatMul", "Gemm", "ConvInteger"))
    assert not left_float("ConvTranspose", parse_combo("int8/int8/int8/0"))  # QDQ has a ConvTranspose
    assert not left_float("ConvTranspose", parse_combo("fp32/fp32/int4/0"))  # int4 keeps other ops float itself


@pytest.mark.parametrize("op,reduction,perm,matmul,kept", [
    ("Transpose", "", [1, 0, 2], True, True),  # torch/crnn48's and the transformer encoder's: ORT segfaulted
    ("Transpose", "", [1, 2, 0], True, True),  # batch moved, last axis second to last (transA and transBatchA)
    ("Transpose", "", [1, 2, 0, 3], True, True),
    ("Transpose", "", [1, 0, 2], False, False),  # no MatMul reads it: no fusion
    ("Transpose", "", [0, 2, 1], True, False),  # a plain transA fold: loads in fp16
    ("Transpose", "", [1, 0, 2, 3], True, False),  # batch axes out of order: ORT does not fold it
    ("Transpose", "", [2, 0, 1], True, False),  # last axis first: no fold
    ("Transpose", "", [1, 0], True, False),
    ("ScatterND", "add", [], False, True), ("ScatterND", "max", [], False, True),
    ("ScatterND", "none", [], False, False), ("ScatterND", "", [], False, False),
    ("ScatterElements", "mul", [], False, True), ("ScatterElements", "max", [], False, False),
])
def test_fp16_keeps_fp32_what_onnx_runtime_cannot_take_in_fp16(op: str, reduction: str, perm: list[int],
                                                                 matmul: bool, kept: bool) -> None:
    """Probed on onnxruntime 1.32 with one-node models (compiler/optimize/onnx_rules.py: fp16_kept)."""
    from compiler.optimize.onnx_rules import FP16_KEPT, fp16_kept, rule_op

    assert fp16_kept(op, reduction, perm, matmul) is kept
    rop = rule_op(op, reduction, perm, matmul)
    assert rop == (op + FP16_KEPT if kept else op)
    fp16, fp32 = parse_combo("fp16/fp16/-/0", False), parse_combo("fp32/fp32/-/0", False)
    # the fp16 preset writes it fp32 (left_float), an fp16 override is refused in one sentence, fp32 is written
    assert left_float(rop, fp16) is kept and not left_float(rop, fp32)
    why = combo_reason(rop, fp16)
    assert (why is not None and "fp32" in why and "\n" not in why) if kept else why is None
    assert combo_reason(rop, fp32) is None
