"""Run one analysis job against the database and blob store.

Claims the job row, runs `pipeline.analyze` with progress written to the row, stores every
result, then marks the job ready. Any failure marks it failed with a message for the user;
results become visible only when the job is ready, so nothing half-stored is shown.
"""

from __future__ import annotations

import gzip
import json
import logging
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import or_, select, update

from store import keys
from store.blobs import local_copy
from store.db import session_scope
from store.models import Artifact, Job, Model
from store.packed import pack
from store.services import Services

from . import pipeline, results

log = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


def claim(services: Services, job_id: str, redelivered: bool = False) -> bool:
    """Atomically move a queued job to running. False if it is gone, done, or someone else has it."""
    allowed = ["queued", "running"] if redelivered else ["queued"]
    with session_scope(services.sessions) as s:
        res = s.execute(
            update(Job).where(Job.id == job_id, Job.status.in_(allowed))
            .values(status="running", started_at=_now(), attempts=Job.attempts + 1, error=None,
                    progress=0, stage=pipeline.STAGES[0],
                    stages=[{"name": n, "status": "pending", "seconds": None} for n in pipeline.STAGES])
        )
        return res.rowcount == 1


class _Progress:
    """Writes stage and percent to the job row, at most every 0.5 s within a stage."""

    def __init__(self, services: Services, job_id: str) -> None:
        self.services, self.job_id = services, job_id
        self.last: tuple[str, int] = ("", -1)
        self.last_t = 0.0

    def __call__(self, stage: str, frac: float) -> None:
        done_before = sum(pipeline.STAGE_WEIGHT[s] for s in pipeline.STAGES[: pipeline.STAGES.index(stage)])
        pct = int(done_before + pipeline.STAGE_WEIGHT[stage] * min(max(frac, 0.0), 1.0))
        now = time.monotonic()
        if (stage, pct) == self.last or (stage == self.last[0] and 0 < frac < 1 and now - self.last_t < 0.5):
            return
        self.last, self.last_t = (stage, pct), now
        with session_scope(self.services.sessions) as s:
            job = s.get(Job, self.job_id)
            if job is None:
                return
            stages = [dict(st) for st in job.stages]
            for st in stages:
                if st["name"] == stage:
                    st["status"] = "done" if frac >= 1 else "running"
            job.stages, job.stage, job.progress = stages, stage, pct

    def record_seconds(self, seconds: dict[str, float]) -> None:
        with session_scope(self.services.sessions) as s:
            job = s.get(Job, self.job_id)
            if job is not None:
                job.stages = [dict(st, seconds=round(seconds.get(st["name"], st["seconds"] or 0.0), 4))
                              for st in job.stages]


def fail(services: Services, job_id: str, message: str) -> None:
    with session_scope(services.sessions) as s:
        job = s.get(Job, job_id)
        if job is None:
            return
        job.status, job.error, job.finished_at = "failed", message, _now()
        job.stages = [dict(st, status="failed") if st["status"] == "running" else st for st in job.stages]


def _options(services: Services, model: Model) -> pipeline.AnalysisOptions:
    st = services.settings
    return pipeline.AnalysisOptions(
        targets=tuple(model.targets or st.default_targets), format=model.format,
        input_shapes=dict(model.input_shapes or {}), input_values=dict(model.input_values or {}),
        runs=st.profile_runs, warmup=st.profile_warmup, threads=st.profile_threads,
        timeout_s=st.profile_timeout_s, memory_limit_bytes=st.profile_memory_bytes,
        calibration_path=st.calibration_path,
    )


def _put_json(services: Services, s: Any, model_id: str, kind: str, target: str, doc: Any) -> None:
    # Stored gzipped: the server sends it as is to clients that accept gzip (all browsers).
    key = keys.result(model_id, kind, target, "json.gz")
    raw = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()
    size = services.blobs.put_bytes(key, gzip.compress(raw, compresslevel=6, mtime=0))
    _put_artifact(s, model_id, kind, target, key, size)


def _put_artifact(s: Any, model_id: str, kind: str, target: str, key: str, size: int) -> None:
    # Re-running a stage overwrites its own output: one row per (model, kind, target).
    row = s.scalar(select(Artifact).where(Artifact.model_id == model_id, Artifact.kind == kind,
                                          Artifact.target == target))
    if row is None:
        s.add(Artifact(model_id=model_id, kind=kind, target=target, key=key, size_bytes=size))
    else:
        row.key, row.size_bytes, row.created_at = key, size, _now()


def store_results(services: Services, model_id: str, result: pipeline.AnalysisResult) -> dict[str, Any]:
    with session_scope(services.sessions) as s:
        source_view = results.graph_view(result.source, "source")
        _put_json(services, s, model_id, "graph", "", source_view)
        _put_json(services, s, model_id, "graph_columns", "", results.graph_columns(source_view))
        _put_json(services, s, model_id, "source_ir", "", result.source.to_json())
        for r in result.targets:
            t = r.target
            view = results.graph_view(r.compiled, "compiled")
            _put_json(services, s, model_id, "graph", t, view)
            _put_json(services, s, model_id, "graph_columns", t, results.graph_columns(view))
            _put_json(services, s, model_id, "compiled_ir", t, r.compiled.to_json())
            _put_json(services, s, model_id, "ops", t, results.ops_table(r, result.source))
            _put_json(services, s, model_id, "options", t, r.sweep.bulk)
            blob, offsets = pack(r.sweep.per_op)
            key = keys.result(model_id, "op_options", t, "pack")
            _put_artifact(s, model_id, "op_options", t, key, services.blobs.put_bytes(key, blob))
            _put_json(services, s, model_id, "op_options_index", t,
                      {"ops": r.sweep.bulk["ops"], "offsets": offsets})
            if r.profile:
                _put_json(services, s, model_id, "profile", t, r.profile.to_json())
            if r.compiled_model_path is not None:
                key = keys.result(model_id, "compiled_model", t, "onnx")
                _put_artifact(s, model_id, "compiled_model", t, key,
                              services.blobs.put_file(key, r.compiled_model_path))
    return results.summary(result)


def run_job(services: Services, job_id: str, redelivered: bool = False) -> str:
    """Run the job to the end. Returns its final status (or 'skipped' if not claimed)."""
    if not claim(services, job_id, redelivered):
        return "skipped"
    progress = _Progress(services, job_id)
    with session_scope(services.sessions) as s:
        job = s.get(Job, job_id)
        model = s.get(Model, job.model_id) if job else None
        if job is None or model is None:
            return "skipped"
        model_id, upload_key, filename = model.id, keys.upload(model.id, model.filename), model.filename
        opts = _options(services, model)
    try:
        with tempfile.TemporaryDirectory(prefix="edgescope-job-") as d, \
                local_copy(services.blobs, upload_key, suffix=Path(filename).suffix) as src:
            result = pipeline.analyze(src, Path(d), opts, progress)
            progress("store", 0.0)
            t0 = time.perf_counter()
            summary = store_results(services, model_id, result)
            result.stage_seconds["store"] = time.perf_counter() - t0
    except pipeline.user_errors() as e:
        fail(services, job_id, str(e))
        return "failed"
    except Exception as e:  # noqa: BLE001 - the job must end failed, never stuck in running
        log.error("job %s failed:\n%s", job_id, traceback.format_exc())
        fail(services, job_id, f"Internal error while analysing the model ({type(e).__name__}: {e}). "
                                "The failure was logged.")
        return "failed"
    progress.record_seconds(result.stage_seconds)
    with session_scope(services.sessions) as s:
        model = s.get(Model, model_id)
        job = s.get(Job, job_id)
        if model is None or job is None:  # deleted while running
            return "skipped"
        model.summary = summary
        job.status, job.stage, job.progress, job.finished_at = "ready", "done", 100, _now()
        job.stages = [dict(st, status="done") for st in job.stages]
    return "ready"


def requeue_interrupted(services: Services) -> list[str]:
    """Jobs left queued or running by a process that died; the caller enqueues them again."""
    with session_scope(services.sessions) as s:
        ids = list(s.scalars(select(Job.id).where(or_(Job.status == "queued", Job.status == "running"))))
        s.execute(update(Job).where(Job.id.in_(ids)).values(status="queued"))
    return ids
