"""LiteRT exports of files as real packages ship them (corpus.wheels; issue 14): a model with IF bodies whose
tensors repeat the main graph's names (openWakeWord's hey_jarvis) and a fully int8 model (microWakeWord's). Each
option the table offers exports and runs; those the exporter cannot write are marked and refused in one sentence."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from compiler.errors import ModelRunError
from compiler.optimize.litert_export import export_tflite
from tests import modelzoo


def _fc_then_if(path: Path) -> Path:
    """x -> FULLY_CONNECTED -> IF(then: y + y, else: y); the bodies name their tensors 'arg0' as the main graph's
    input is named (ai-edge-quantizer needs one name per tensor across the model)."""
    from compiler.frontends.tflite_writer import TfliteWriter

    rng = np.random.default_rng(0)
    w = TfliteWriter(description="edgescope test")
    x = w.tensor("arg0", [1, 32])
    h = w.tensor("fc/out", [1, 64])
    w.op("FULLY_CONNECTED", [x, w.const("fc/w", rng.standard_normal((64, 32)).astype(np.float32) * 0.1),
                             w.const("fc/b", np.zeros(64, np.float32))], [h], w.options("FullyConnectedOptions"))
    cond = w.const("cond", np.ones(1, np.bool_))

    def then(b: TfliteWriter) -> tuple[list[int], list[int]]:
        xi, yi = b.tensor("arg0", [1, 64]), b.tensor("then/y", [1, 64])
        b.op("ADD", [xi, xi], [yi], b.options("AddOptions"))
        return [xi], [yi]

    def other(b: TfliteWriter) -> tuple[list[int], list[int]]:
        xi = b.tensor("arg0", [1, 64])
        return [xi], [xi]

    y = w.tensor("if/out", [1, 64])
    t, e = w.subgraph("then", then), w.subgraph("else", other)
    w.op("IF", [cond, h], [y], w.options("IfOptions", thenSubgraphIndex=t, elseSubgraphIndex=e))
    return w.save(path, [x], [y])


def _table(path: Path) -> dict[str, str | None]:
    """{preset: None if the option table marks it exportable, else its reason}."""
    from simulator.model import compile_for
    from simulator.sweep import sweep

    with tempfile.TemporaryDirectory() as d:
        source, compiled, _ = compile_for(path, "litert-cpu/host", d)
        bulk = sweep(compiled, "litert-cpu/host", source=source).bulk
    return {p["name"]: (None if ok else why) for p, ok, why in
            zip(bulk["presets"], bulk["exportable"], bulk["export_reasons"])}


@pytest.mark.parametrize("option", ["fp32", "fp16", "int8-dynamic", "int4-weights"])
def test_repeated_tensor_names_across_bodies_are_made_unique(tmp_path: Path, option: str) -> None:
    src = _fc_then_if(tmp_path / "if.tflite")
    # ai-edge-quantizer refused every option: "Tensor name arg0 is not unique in the model"
    res = export_tflite(src, tmp_path / f"{option}.tflite", option)
    assert res.size_bytes > 0 and any("made unique" in n for n in res.notes)


def test_int8_static_of_a_model_with_bodies_is_marked_and_refused(tmp_path: Path) -> None:
    src = _fc_then_if(tmp_path / "if.tflite")
    marks = _table(src)
    assert marks["int8-dynamic"] is None and "IF / WHILE bodies" in (marks["int8-static"] or "")
    with pytest.raises(ModelRunError, match="IF / WHILE bodies"):
        export_tflite(src, tmp_path / "s.tflite", "int8-static")


def test_fully_int8_model_takes_int8_static_only(tmp_path: Path) -> None:
    int8 = export_tflite(modelzoo.tflite_cnn(tmp_path / "cnn.tflite"), tmp_path / "int8.tflite", "int8-static").path
    marks = _table(int8)
    assert marks["int8-static"] is None
    for option in ("fp32", "fp16", "int8-dynamic", "int4-weights"):
        # fp32 / int8-dynamic / int4 wrote the int8 file against a float prediction; fp16 one LiteRT refused
        assert "fully int8" in (marks[option] or ""), option
        with pytest.raises(ModelRunError, match="fully int8"):
            export_tflite(int8, tmp_path / f"{option}.tflite", option)
        assert not (tmp_path / f"{option}.tflite").exists()
    assert export_tflite(int8, tmp_path / "again.tflite", "int8-static").size_bytes == int8.stat().st_size


def _reshape_then_wide_fc(path: Path) -> Path:
    """testkit's shape arithmetic (x [-1, 16] reshaped to [batch, 4, 4] by SHAPE -> STRIDED_SLICE -> PACK) before a
    FULLY_CONNECTED of 160k weights (320 KB in fp16): over the 256 KB from which ai-edge-quantizer stores constants after the
    flatbuffer (BirdNET's spectrogram front end and its 25 MB of weights)."""
    from testkit.tflite_builder import TfliteWriter, computed_reshape

    w = TfliteWriter()
    x = w.tensor("x", [1, 16], signature=[-1, 16])
    r = computed_reshape(w, x)
    y = w.tensor("y", [4, 40000], signature=[-1, 40000])
    wide = np.random.default_rng(0).standard_normal((40000, 4)).astype(np.float32)
    w.op("FULLY_CONNECTED", [r, w.const("fc/w", wide), -1], [y], w.options("FullyConnectedOptions"))
    return w.save(path, [x], [y])


def test_shapes_of_a_file_ai_edge_quantizer_wrote_resolve_as_the_sources(tmp_path: Path) -> None:
    # It stores every constant after the flatbuffer: read as empty, the shape arithmetic's constants were unknown, so
    # BirdNET's fp16 export left 302 of 456 tasks with unknown work (predicted 2.9 ms against 33.9 measured)
    from compiler.backends import litert_shapes
    from compiler.frontends.tflite import tensor_names
    src = _reshape_then_wide_fc(tmp_path / "wide.tflite")
    fp16 = export_tflite(src, tmp_path / "fp16.tflite", "fp16", input_shapes={"x": [3, 16]}).path
    buf = fp16.read_bytes()
    got = litert_shapes.resolve(buf, [[3, 16]])
    assert got[tensor_names(buf).index("y")][0] == [12, 40000]


def test_no_file_is_left_where_a_failed_export_goes(tmp_path: Path) -> None:
    # The fp16 export of microWakeWord's int8 model was written, refused by LiteRT at the check, and stayed where the
    # export goes; the benchmark's next run took it as its source (a file there before the export goes too)
    int8 = export_tflite(modelzoo.tflite_cnn(tmp_path / "cnn.tflite"), tmp_path / "int8.tflite", "int8-static").path
    out = tmp_path / "out.tflite"
    out.write_bytes(b"stale")
    with pytest.raises(ModelRunError, match="fully int8"):
        export_tflite(int8, out, "fp16")
    assert not out.exists()
