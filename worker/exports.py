"""Build an optimized model file for a saved state and measure it where this machine can run it."""

from __future__ import annotations

import logging
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import update

from compiler.profile import ProfileSettings
from compiler.sandbox import scratch_in
from store import keys
from store.blobs import local_copy
from store.db import session_scope
from store.models import Export, Model
from store.services import Services

from . import pipeline, scratch
from .messages import public_message
from .results import measured_latency

log = logging.getLogger(__name__)


def fail(services: Services, export_id: str, message: str) -> None:
    with session_scope(services.sessions) as s:
        e = s.get(Export, export_id)
        if e is not None:
            e.status, e.error, e.finished_at = "failed", public_message(message), datetime.now(UTC)


def export_filename(upload_name: str, model_wide: str, kind: str) -> str:
    """`model-int8-dynamic.tflite`: the upload's stem (without `.mlpackage.zip`) and the option."""
    from compiler.optimize.export import EXTENSIONS

    stem = upload_name.removesuffix(".zip").removesuffix(".mlpackage")
    return f"{Path(stem).stem}-{model_wide}{EXTENSIONS[kind]}"


def run_export(services: Services, export_id: str) -> str:
    from compiler.backends import for_target
    from compiler.input_plan import stored_inputs
    from compiler.optimize.export import RUNTIMES, exporter, measure_export
    from simulator.predict import optimize_model

    with session_scope(services.sessions) as s:
        claimed = s.execute(update(Export).where(Export.id == export_id, Export.status == "queued")
                            .values(status="running")).rowcount
        e = s.get(Export, export_id)
        if not claimed or e is None:
            return "skipped"
        m = s.get(Model, e.model_id)
        state, model_id, filename, shapes = dict(e.state), m.id, m.filename, dict(m.input_shapes or {})
        values, fmt = dict(m.input_values or {}), m.format
    st = services.settings
    try:
        kind = exporter(state["target"], fmt)
        # One temp folder per export (removed at the end, or swept after a crash); sandboxes write inside it.
        with scratch.scratch_folder(st, "export", export_id) as d, scratch_in(d), \
                local_copy(services.blobs, keys.upload(model_id, filename), suffix=Path(filename).suffix, dir=d) as src:
            out = Path(d) / export_filename(filename, state["model_wide"], kind)
            res = optimize_model(src, out, state["target"], state["model_wide"], state["overrides"], Path(d),
                                 st.calibration_path, input_shapes=shapes, input_values=values)
            # On disk: the file, or for Core ML the package inside the zip (what the simulator predicts).
            measured = {"size_bytes": res["size_bytes"], "latency_ms": None,
                        "label": f"measured: file size only; {RUNTIMES[kind]} does not run on this server"}
            backend = for_target(state["target"])
            if backend.measures:
                # The exported file is untrusted too: measured in the sandbox like any upload, at the inputs its
                # prediction was made at (the plan: the user's shapes plus the dims the model set, e.g. a traced
                # sequence length of 20 where the default 128 cannot run).
                plan = stored_inputs(res["prediction"].get("inputs")) if res["prediction"].get("inputs") else {
                    "input_shapes": shapes, "input_values": values}
                # Held against the calibration's speed probe as an analysis' profile is (the profiling child marks
                # it: compiler.profile.measure_rounds): a file timed while the CPU ran at another speed than the rates
                # were measured at is re-timed while cheap, else marked noisy. The prediction above made the
                # calibration current, so its figure is known here.
                reference = pipeline.host_speed_reference(state["target"], st.calibration_path)
                p = measure_export(out, state["target"], kind, Path(d), ProfileSettings(
                    warmup=st.profile_warmup, runs=st.profile_runs, threads=st.profile_threads,
                    timeout_s=st.profile_timeout_s, memory_limit_bytes=st.profile_memory_bytes,
                    speed_reference_gflops=reference, remeasure_pause_s=st.profile_remeasure_pause_ms / 1000,
                    fast_rounds=st.profile_fast_rounds, **plan))
                measured = {**measured_latency(p), "peak_memory_bytes": p.peak_memory_bytes,
                            "size_bytes": res["size_bytes"], "noise": p.noise}
            size = services.blobs.put_file(keys.export(model_id, export_id, out.name), out)
    except pipeline.user_errors() as err:
        fail(services, export_id, str(err))
        return "failed"
    except Exception as err:  # noqa: BLE001 - the export must end failed, never stuck running
        log.error("export %s failed:\n%s", export_id, traceback.format_exc())
        fail(services, export_id, f"Internal error while exporting ({type(err).__name__}: {err}).")
        return "failed"
    with session_scope(services.sessions) as s:
        e = s.get(Export, export_id)
        if e is None:
            return "skipped"
        e.status, e.finished_at, e.filename, e.size_bytes = "ready", datetime.now(UTC), out.name, size
        # The page's figures for the state (server.api.exports.page_totals, set when queued) are what it predicts;
        # the exporter's own prediction stands in only where the stored tables could not evaluate the state.
        e.predicted = {**res["predicted"], **e.predicted} if e.predicted else res["predicted"]
        e.measured, e.notes = measured, res["notes"]
    return "ready"

