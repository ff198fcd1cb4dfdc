"""The totals rule (docs/option-table.md, rules 1-6) on a table written by hand: three ops, two presets, figures
chosen so each rule's arithmetic can be followed on paper. The sweep's own tables are checked against the rule
in test_sweep.py; here the rule itself is pinned, independently of any cost figure."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.vocabulary.options import OptionError
from simulator.totals import totals

FP32_W, FP32_NW, INT8_W, INT8_NW = "fp32/fp32/fp32/0", "fp32/fp32/-/0", "int8/int8/int8/0", "int8/int8/-/0"


def table(units: list[list[str]] | None = None) -> dict[str, Any]:
    """a (weights) -> b (no weights) -> c (weights), 100 elements on each edge; presets fp32 (0) and int8 (1)."""
    bulk: dict[str, Any] = {
        "presets": [{"name": "fp32"}, {"name": "int8"}],
        "ops": ["a", "b", "c"],
        "metrics": {
            "latency_ms": [[1.0, 0.5], [0.25, 0.125], [2.0, 1.0]],
            "weight_bytes": [[400.0, 100.0], [0.0, 0.0], [800.0, 200.0]],
            "activation_bytes": [[1000.0, 250.0], [2000.0, 500.0], [1500.0, 375.0]],
            "dram_bytes": [[1e6, 5e5], [2e6, 1e6], [3e6, 1.5e6]],
        },
        "combos": [[FP32_W, INT8_W], [FP32_NW, INT8_NW], [FP32_W, INT8_W]],
        "edges": {"src": [0, 1], "dst": [1, 2], "elements": [100.0, 100.0]},
        "conversion": {"fixed_ms": 0.01, "ms_per_element": {"fp32>int8": 1e-4, "int8>fp32": 2e-4}},
        "constants": {"size_overhead_bytes": 50.0, "dram_pj_per_byte": 10.0},
        "crossing": None,
    }
    if units is not None:
        bulk.update(crossing={"fixed_s": 1e-4, "bytes_per_s": 1e8}, unit_names=["npu", "cpu"], units=units)
    return bulk


# b's per-op row: its two float combos (the rule only reads the row of an overridden op).
PER_OP = {"b": {"combos": [FP32_NW, INT8_NW], "latency_ms": [0.25, 0.125], "weight_bytes": [0.0, 0.0],
                "activation_bytes": [2000.0, 500.0], "dram_bytes": [2e6, 1e6], "unit": [1, 0]}}


def test_a_preset_alone_sums_its_columns() -> None:
    got = totals(table(), PER_OP, "fp32", {})
    assert got["latency_ms"] == 3.25  # rule 1: no edge changes format
    assert got["size_bytes"] == 1250.0  # rule 2: 400 + 800 + 50
    assert got["peak_memory_bytes"] == 3250.0  # rule 3: size + b's 2000
    assert got["memory_power_mw"] == pytest.approx(6e6 * 10 * 1e-9 / 3.25 * 1e3, rel=1e-12)  # rule 4
    assert got["fps"] == pytest.approx(1000 / 3.25, rel=1e-12)  # rule 5


def test_an_override_pays_a_conversion_on_each_edge_whose_formats_differ() -> None:
    got = totals(table(), PER_OP, "int8", {"b": FP32_NW})
    # a -> b: int8>fp32 = 0.01 + 100 * 2e-4; b -> c: fp32>int8 = 0.01 + 100 * 1e-4
    assert got["latency_ms"] == pytest.approx(0.5 + 0.25 + 1.0 + 0.03 + 0.02, rel=1e-12)
    assert got["size_bytes"] == 350.0 and got["peak_memory_bytes"] == 2350.0  # b's fp32 working set
    # each conversion reads one format and writes the other: 100 * (1 + 4) bytes, twice
    dram = 5e5 + 2e6 + 1.5e6 + 1000
    assert got["memory_power_mw"] == pytest.approx(dram * 10 * 1e-9 / got["latency_ms"] * 1e3, rel=1e-12)


def test_an_override_that_leaves_its_neighbours_unit_pays_two_crossings() -> None:
    bulk = table(units=[["cpu", "npu"], ["cpu", "npu"], ["cpu", "npu"]])
    got = totals(bulk, PER_OP, "int8", {"b": FP32_NW})  # b's fp32 combo runs on the cpu (unit index 1)
    # rule 6: a -> b moves a's int8 output (100 B) out and back in, b -> c b's fp32 output (400 B):
    # (1e-4 s + bytes / 1e8 B/s) * 1e3 each
    crossings = (1e-4 + 200 / 1e8) * 1e3 + (1e-4 + 800 / 1e8) * 1e3
    assert got["latency_ms"] == pytest.approx(1.8 + crossings, rel=1e-12)
    dram = 5e5 + 2e6 + 1.5e6 + 1000 + 200 + 800
    assert got["memory_power_mw"] == pytest.approx(dram * 10 * 1e-9 / got["latency_ms"] * 1e3, rel=1e-12)


def test_an_override_that_joins_its_consumers_unit_takes_back_the_crossing_the_bulk_row_paid() -> None:
    bulk = table(units=[["cpu", "npu"], ["cpu", "cpu"], ["cpu", "npu"]])  # under int8, b alone on the cpu
    got = totals(bulk, PER_OP, "int8", {"b": INT8_NW})  # the same combo, on the npu (unit index 0)
    # a -> b: b is overridden, its row paid nothing; b -> c: c's bulk row paid b's int8 output out and in
    assert got["latency_ms"] == pytest.approx(0.5 + 0.125 + 1.0 - (1e-4 + 200 / 1e8) * 1e3, rel=1e-12)
    assert totals(bulk, PER_OP, "int8", {})["latency_ms"] == 1.625  # without overrides: the columns alone


@pytest.mark.parametrize("model_wide,overrides,message", [
    ("int4", {}, "model-wide option 'int4' is not in this table; choose one of fp32, int8"),
    ("int8", {"z": INT8_NW}, "override names op 'z', which is not a task of this model"),
    ("int8", {"b": "fp16/fp16/-/0"}, "combo 'fp16/fp16/-/0' is not offered for op 'b'"),
])
def test_states_the_table_cannot_price_are_refused_by_name(model_wide: str, overrides: dict[str, str],
                                                            message: str) -> None:
    with pytest.raises(OptionError, match=message.replace("(", r"\(")):
        totals(table(), PER_OP, model_wide, overrides)


def test_a_malformed_combo_is_refused_with_the_parsers_reason() -> None:
    with pytest.raises(OptionError) as e:
        totals(table(), PER_OP, "int8", {"b": "int8/int8/int8/0"})  # a kernel format on an op without weights
    assert "is not offered" not in str(e.value)
