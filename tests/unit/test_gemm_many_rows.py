"""The fp32 SGEMM's rate (`gemm.fp32`, the median of its cases' fits) is set by cases of a ViT's many rows on weights
the cache keeps (simulator/calibration_bench.py MANY_ROWS), not by the few-row cases whose time is part weight
streaming: those fitted a rate 3-5% faster per MAC than 128-785 rows run on a Zen 4 (session 64)."""

from __future__ import annotations

import re

from simulator.calibration_bench import CASES, MANY_ROWS


def _fp32_gemm_rows() -> dict[str, int]:
    out = {}
    for c in CASES:
        m = re.fullmatch(r"gemm-(\d+)x(\d+)", c.name)
        if c.kind == "gemm" and ("fp32", "fp32") in c.variants and m:
            out[c.name] = int(m.group(1))
    return out


def test_most_fp32_gemm_cases_have_many_rows() -> None:
    rows = _fp32_gemm_rows()
    many = [n for n, m in rows.items() if m >= 128]
    assert len(many) > len(rows) / 2, rows  # the median of the per-case fits is then a many-row case's
    assert {f"gemm-{m}x{k}" for m, k in MANY_ROWS} <= set(rows)


def test_the_many_row_cases_keep_their_weights_and_activations_near_the_core() -> None:
    for m, k in MANY_ROWS:
        assert m >= 128 and k % 1024 != 0  # not an aliased K (gemm.fp32.alias has its own cases)
        assert 4 * k * k <= 1 << 20  # each weight fits a 1 MiB L2: the time is the arithmetic
        assert 4 * m * k <= 1 << 20  # ... and each activation
        assert 4 * m * (min(k, 256) + min(k, 128)) <= 1 << 19  # A's and C's share of one MLAS step: half the L2
