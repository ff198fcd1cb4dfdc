"""Export rows timed in more than one pass (benchmarks/export_rows.py `measure --again`): each file keeps its pass of
least fast CPU time, the upload's baseline likewise, every pass's figure recorded; exports.py's report reads the kept
figures and the first pass's beside them. Rows are built here: nothing is timed."""

from __future__ import annotations

from typing import Any

from benchmarks.export_rows import BASELINE, MEASURED, first_pass, merge_pass
from benchmarks.exports import fast_errors, first_fast_pass, pass_spread


def _row(option: str, fast: float | None, base: float, tag: str, model: str = "tv/a",
         status: str = "exported") -> dict[str, Any]:
    return {"id": model, "exporter": "ts", "option": option, "status": status, "size": 100,
            "measured_ms": fast, "measured_cpu_ms": fast, "fast_cpu_ms": fast, "timed_at": tag,
            "baseline_ms": base, "baseline_cpu_ms": base, "baseline_fast_cpu_ms": base, "baseline_timed_at": tag,
            "baseline_profile": {"tag": tag}, "predicted_ms": 0.0}


def test_each_file_keeps_its_faster_pass_and_every_figure() -> None:
    first = [_row("int8-static", 8.0, 10.0, "h1"), _row("fp16", 9.0, 10.0, "h1")]
    second = [_row("int8-static", 6.0, 11.0, "h2"), _row("fp16", 9.5, 11.0, "h2")]
    rows = merge_pass(first, second)
    i8, f16 = rows
    # the int8 file's second pass was faster: its measured fields come from it; fp16's first pass stays
    assert i8["fast_cpu_ms"] == 6.0 and i8["timed_at"] == "h2" and i8["fast_cpu_ms_passes"] == [8.0, 6.0]
    assert f16["fast_cpu_ms"] == 9.0 and f16["timed_at"] == "h1" and f16["fast_cpu_ms_passes"] == [9.0, 9.5]
    # the upload's baseline is the model's, kept by its own figure (the first pass's here), with its profile
    for r in rows:
        assert r["baseline_fast_cpu_ms"] == 10.0 and r["baseline_profile"] == {"tag": "h1"}
        assert r["baseline_fast_cpu_ms_passes"] == [10.0, 11.0]
    third = [_row("int8-static", 7.0, 9.0, "h3"), _row("fp16", 8.0, 9.0, "h3")]
    rows = merge_pass(rows, third)
    assert rows[0]["fast_cpu_ms"] == 6.0 and rows[0]["fast_cpu_ms_passes"] == [8.0, 6.0, 7.0]
    assert all(r["baseline_profile"] == {"tag": "h3"} and r["baseline_fast_cpu_ms"] == 9.0 for r in rows)
    assert rows[1]["timed_at"] == "h3"
    assert first[0]["fast_cpu_ms"] == 8.0 and "fast_cpu_ms_passes" not in first[0]  # the inputs stay as they were


def test_a_pass_that_did_not_time_a_file_leaves_it_and_new_files_are_added() -> None:
    rows = merge_pass([_row("int8-static", 8.0, 10.0, "h1")],
                      [_row("int8-static", None, 12.0, "h2"), _row("fp16", 9.0, 12.0, "h2"),
                       _row("fp32", 5.0, 5.0, "h2", model="tv/b")])
    i8 = rows[0]
    assert i8["fast_cpu_ms"] == 8.0 and i8["timed_at"] == "h1" and "fast_cpu_ms_passes" not in i8
    assert [(r["id"], r["option"]) for r in rows] == [("tv/a", "int8-static"), ("tv/a", "fp16"), ("tv/b", "fp32")]
    failed = merge_pass([_row("int8-static", None, 10.0, "h1", status="failed")],
                        [_row("int8-static", 7.0, 10.0, "h2")])
    assert failed[0]["status"] == "exported" and failed[0]["fast_cpu_ms"] == 7.0


def test_the_fields_a_pass_replaces_are_disjoint_and_name_the_figures() -> None:
    assert not set(MEASURED) & set(BASELINE)
    assert "fast_cpu_ms" in MEASURED and "baseline_profile" in BASELINE and "baseline_fast_cpu_ms" in BASELINE


def test_the_report_reads_the_kept_pass_and_the_first_beside_it() -> None:
    rows = merge_pass([_row("int8-static", 8.0, 10.0, "h1")], [_row("int8-static", 6.0, 10.0, "h2")])
    rows = [{**r, "predicted_unmeasured_ms": 6.3, "predicted_change": 0.63, "predicted_ms": 6.3} for r in rows]
    errs = fast_errors(rows)
    (_, rules), = errs["rules"]
    (_, change), = errs["change"]
    (_, dialog), = errs["dialog"]
    assert round(rules, 1) == 5.0 and round(change, 1) == 5.0 and round(dialog, 1) == 5.0
    (_, first), = fast_errors(first_fast_pass(rows))["rules"]
    assert round(first, 2) == -21.25  # 6.3 against the first pass's 8.0
    assert pass_spread(rows) == [8.0 / 6.0]
    small = [{**rows[0], "fast_cpu_ms": 0.5}]  # under MIN_MS: not counted
    assert fast_errors(small) == {"rules": [], "change": [], "dialog": []}


def test_a_first_pass_over_some_models_keeps_the_other_models_rows() -> None:
    earlier = [{"id": "a", "option": "fp32"}, {"id": "b", "option": "fp32"}]
    new = [{"id": "b", "option": "fp32", "fast_cpu_ms": 2.0}]
    assert first_pass(earlier, ["b"], new) == [{"id": "a", "option": "fp32"}, new[0]]
    # without --only the pass timed every model: nothing earlier is kept
    assert first_pass(earlier, None, new) == new
