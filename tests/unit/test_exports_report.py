"""benchmarks/exports.py reads an export's measurement as the analysis reads its own (simulator.measured.own_whole_ms):
after a busy analysis the prediction is set against CPU time, so the export's wall time, which waited for the CPU,
is not what it is checked against."""

from __future__ import annotations

from benchmarks.exports import _cpu_predicted, _lat_err, _measured

BUSY = {"predicted_ms": 4.0, "baseline_ms": 10.0, "baseline_cpu_ms": 4.0, "baseline_cpu_time": True,
        "measured_ms": 9.0, "measured_cpu_ms": 4.1, "measured_own_ms": 4.1}


def test_a_busy_export_is_checked_against_its_own_time() -> None:
    assert _measured(BUSY) == 4.1
    assert abs(_lat_err(BUSY)) < 3  # against the wall time: -56%
    # Rows written before the field: the wall time.
    old = {k: v for k, v in BUSY.items() if k != "measured_own_ms"}
    assert _lat_err(old) < -50


def test_a_cpu_time_prediction_is_not_rescaled_again() -> None:
    assert _cpu_predicted(BUSY) == 4.0
    quiet = {**BUSY, "baseline_cpu_time": False, "baseline_ms": 5.0}
    assert _cpu_predicted(quiet) == 4.0 * 4.0 / 5.0


def test_export_ops_matches_qlinearconv_by_its_token_name() -> None:
    from benchmarks.export_ops import matched_task

    task_of = {"/m/features/features.0/Conv": 3, "/m/classifier/Gemm": 7}
    assert matched_task("/m/features/features.0/Conv_token_1", "QLinearConv", [], task_of) == 3
    assert matched_task("x", "FusedGemm", ["/m/classifier/Gemm"], task_of) == 7  # source nodes first
    # an added conversion stays unmatched (listed by op type), and so does a name no task carries
    assert matched_task("/m/features/features.0/Conv_token_2", "QuantizeLinear", [], task_of) is None
    assert matched_task("/m/other/Conv_token_9", "QLinearConv", [], task_of) is None


def test_export_ops_matches_a_kernel_by_its_own_name_before_its_source_nodes() -> None:
    """A static int8 file's QLinearSigmoid after a QLinearConv: the provenance walk gives it the Conv (which has no
    source node of its own) among its source nodes; its own name says which task it is."""
    from benchmarks.export_ops import matched_task

    task_of = {"/b/Conv": 3, "/b/Sigmoid": 4, "/b/Mul": 4}
    assert matched_task("/b/Sigmoid", "QLinearSigmoid", ["/b/Conv_DequantizeLinear", "/b/Conv", "/b/Sigmoid"],
                        task_of) == 4
    # an added conversion named after a source node still goes by its source nodes (none here: unmatched)
    assert matched_task("/b/Conv", "QuantizeLinear", [], task_of) is None
