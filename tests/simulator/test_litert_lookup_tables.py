"""A TFLite EMBEDDING_LOOKUP's constant table is a weight ai-edge-quantizer quantizes (simulator.litert_paths.
lookup_path, Work.lookup_table): sized as each LiteRT option writes it (fp16 behind a DEQUANTIZE, int8 with a scale per
row under dynamic int8, int4 per row, float32 under static int8), and run as the written file runs it (TFLite's hybrid
lookup under dynamic int8, a float copy of the rows otherwise). Before, the table stayed float32 under every option
but static int8, where it was sized int8: a Llama-style LM's int8-dynamic file predicted 22.4 MB, written 10.3."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from compiler.frontends.tflite_writer import TfliteWriter
from simulator.profiles import load_profile

VOCAB, DIM, IDS, OUT = 2000, 64, 32, 16
TABLE = "embed/table"


def _lm(path: Path, tied: bool = False) -> Path:
    """ids [IDS] -> EMBEDDING_LOOKUP of a [VOCAB, DIM] table -> FULLY_CONNECTED to OUT (or, tied, back to VOCAB
    through the table itself, a language model's output layer sharing its word embedding)."""
    w = TfliteWriter(description="lookup")
    ids = w.tensor("ids", [IDS], "int32")
    rng = np.random.default_rng(0)
    table = w.const(TABLE, rng.standard_normal((VOCAB, DIM)).astype(np.float32))
    emb = w.tensor("emb", [IDS, DIM])
    w.op("EMBEDDING_LOOKUP", [ids, table], [emb])
    head = table if tied else w.const("head/w", rng.standard_normal((OUT, DIM)).astype(np.float32))
    y = w.tensor("y", [IDS, VOCAB if tied else OUT])
    w.op("FULLY_CONNECTED", [emb, head, -1], [y], w.options("FullyConnectedOptions"))
    return w.save(path, [ids], [y])


def _bulk(path: Path) -> tuple[dict, int]:  # type: ignore[type-arg]
    from simulator.sweep import sweep

    g = tflite.load(path)
    bulk = sweep(g, "litert-cpu/host", hardware=load_profile("host-cpu", "litert-cpu")).bulk
    return bulk, bulk["ops"].index(next(n.id for n in g.nodes if n.op_type == "EMBEDDING_LOOKUP"))


def _cell(bulk: dict, metric: str, i: int, preset: str) -> float:  # type: ignore[type-arg]
    return float(bulk["metrics"][metric][i][[p["name"] for p in bulk["presets"]].index(preset)])


def test_the_table_is_sized_as_each_option_writes_it(tmp_path: Path) -> None:
    bulk, i = _bulk(_lm(tmp_path / "lm.tflite"))
    n = VOCAB * DIM
    per_row = VOCAB * 12 + 48  # a float32 scale and an int64 zero point per row, and the table's record
    dequant = 75 + len(TABLE) + len("_dequant")  # the DEQUANTIZE and its float32 tensor's record
    expect = {"fp32": 4 * n, "fp16": 2 * n + dequant, "int8-dynamic": n + per_row,
              "int4-weights": n / 2 + per_row + dequant, "int8-static": 4 * n}
    for preset, b in expect.items():
        assert _cell(bulk, "weight_bytes", i, preset) == pytest.approx(b), preset


def test_dynamic_int8_runs_the_hybrid_lookup_and_the_others_copy_float_rows(tmp_path: Path) -> None:
    """Dynamic int8: TFLite's hybrid kernel dequantizes every element it copies (`layout.hybrid.out` each); an int4
    table is dequantized once at prepare, so the lookup costs what fp32's does (fp16's too, but for the cast of the
    graph's input every LiteRT fp16 task reading one is charged); it reads rows, never the table (no GEMM)."""
    bulk, i = _bulk(_lm(tmp_path / "lm.tflite"))
    hw = load_profile("host-cpu", "litert-cpu")
    per_element = hw.units[0].kind_overhead_s["layout.hybrid.out"]
    ms = {p: _cell(bulk, "latency_ms", i, p) for p in ("fp32", "fp16", "int4-weights", "int8-dynamic")}
    assert ms["int4-weights"] == pytest.approx(ms["fp32"])
    assert ms["int8-dynamic"] - ms["fp32"] == pytest.approx(IDS * DIM * per_element * 1e3, rel=0.05)
    assert ms["fp32"] < 0.01


def test_static_int8_leaves_the_lookup_float_and_its_options_are_the_kernels(tmp_path: Path) -> None:
    bulk, i = _bulk(_lm(tmp_path / "lm.tflite"))
    p = [x["name"] for x in bulk["presets"]].index("int8-static")
    assert bulk["supported"][i][p] is False  # ran float: the asked int8 fell back
    assert bulk["combos"][i][[x["name"] for x in bulk["presets"]].index("int8-dynamic")] == "fp32/fp32/int8/0"


def test_a_tied_output_layer_gets_its_own_int8_copy_under_static_int8(tmp_path: Path) -> None:
    """The table, stored once, is the output layer's kernel too: int8 once under dynamic int8, float32 plus the
    layer's own int8 copy under static int8."""
    bulk, i = _bulk(_lm(tmp_path / "tied.tflite", tied=True))
    fc = i + 1
    n = VOCAB * DIM
    assert _cell(bulk, "weight_bytes", fc, "int8-dynamic") == 0.0
    assert _cell(bulk, "weight_bytes", i, "int8-dynamic") == pytest.approx(n + VOCAB * 12 + 48)
    assert _cell(bulk, "weight_bytes", i, "int8-static") == pytest.approx(4 * n)
    assert _cell(bulk, "weight_bytes", fc, "int8-static") >= n + VOCAB * 12


@pytest.mark.parametrize("option", ["fp16", "int8-dynamic", "int8-static", "int4-weights"])
def test_the_written_file_is_the_size_predicted(tmp_path: Path, calibration_dir: Path, option: str) -> None:
    from ai_edge_litert import schema_py_generated as schema

    from simulator.predict import optimize_model

    src = _lm(tmp_path / "lm.tflite")
    (tmp_path / "w").mkdir()
    r = optimize_model(src, tmp_path / f"lm-{option}.tflite", "litert-cpu/host", option, {}, tmp_path / "w",
                       calibration_dir / "host-cpu.json")
    assert abs(r["predicted"]["size_bytes"] / r["size_bytes"] - 1) < 0.02, (r["predicted"]["size_bytes"], r["size_bytes"])
    m = schema.ModelT.InitFromObj(schema.Model.GetRootAs(Path(r["path"]).read_bytes(), 0))
    sg = m.subgraphs[0]
    lookup = next(op for op in sg.operators if m.operatorCodes[op.opcodeIndex].builtinCode
                  == schema.BuiltinOperator.EMBEDDING_LOOKUP)
    stored = sg.tensors[lookup.inputs[1]]
    if option == "int8-dynamic":  # read int8 by the lookup itself, a scale per row
        assert stored.type == schema.TensorType.INT8 and len(stored.quantization.scale) == VOCAB
    elif option == "int8-static":
        buf = m.buffers[stored.buffer]  # stored in the flatbuffer or after it (offset, size)
        assert stored.type == schema.TensorType.FLOAT32 and (buf.data is not None or buf.size > 0)
