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


class _Writer:
    """Stores one job's result documents under keys of that job (`keys.result(..., job_id=...)`), one
    artifact row per (model, kind, target). Rows of the previous analysis that this one does not rewrite
    are dropped, and `replaced` lists the previous blobs, deleted once the new results are visible."""

    def __init__(self, services: Services, s: Any, model_id: str, job_id: str) -> None:
        self.services, self.s, self.model_id, self.job_id = services, s, model_id, job_id
        self.old = {(a.kind, a.target): a for a in s.scalars(select(Artifact).where(Artifact.model_id == model_id))}
        self.written: set[tuple[str, str]] = set()
        self.replaced: list[str] = []

    def key(self, kind: str, target: str, ext: str) -> str:
        return keys.result(self.model_id, kind, target, ext, job_id=self.job_id)

    def json(self, kind: str, target: str, doc: Any) -> None:
        # Stored gzipped: the server sends it as is to clients that accept gzip (all browsers).
        key = self.key(kind, target, "json.gz")
        raw = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()
        self.artifact(kind, target, key, self.services.blobs.put_bytes(key, gzip.compress(raw, compresslevel=6, mtime=0)))

    def artifact(self, kind: str, target: str, key: str, size: int) -> None:
        self.written.add((kind, target))
        row = self.old.get((kind, target))
        if row is None:
            row = Artifact(model_id=self.model_id, kind=kind, target=target, key=key, size_bytes=size)
            self.s.add(row)
            self.old[(kind, target)] = row
            return
        if row.key != key:
            self.replaced.append(row.key)
        row.key, row.size_bytes, row.created_at = key, size, _now()

    def drop_unwritten(self) -> None:
        for where, row in self.old.items():
            if where not in self.written:
                self.replaced.append(row.key)
                self.s.delete(row)


def store_results(services: Services, model_id: str, result: pipeline.AnalysisResult,
                  job_id: str = "") -> tuple[dict[str, Any], list[str]]:
    """Store every result document; returns (summary, blob keys of the previous analysis to delete)."""
    with session_scope(services.sessions) as s:
        w = _Writer(services, s, model_id, job_id)
        source_view = results.graph_view(result.source, "source")
        w.json("graph", "", source_view)
        w.json("graph_columns", "", results.graph_columns(source_view))
        w.json("source_ir", "", result.source.to_json())
        for r in result.targets:
            t = r.target
            view = results.graph_view(r.compiled, "compiled")
            w.json("graph", t, view)
            w.json("graph_columns", t, results.graph_columns(view))
            w.json("compiled_ir", t, r.compiled.to_json())
            w.json("ops", t, results.ops_table(r, result.source))
            w.json("options", t, r.sweep.bulk)
            blob, offsets = pack(r.sweep.per_op)
            key = w.key("op_options", t, "pack")
            w.artifact("op_options", t, key, services.blobs.put_bytes(key, blob))
            w.json("op_options_index", t, {"ops": r.sweep.bulk["ops"], "offsets": offsets})
            if r.profile:
                w.json("profile", t, r.profile.to_json())
            if r.compiled_model_path is not None:
                key = w.key("compiled_model", t, "onnx")
                w.artifact("compiled_model", t, key, services.blobs.put_file(key, r.compiled_model_path))
        w.drop_unwritten()
        replaced = list(w.replaced)
    return results.summary(result), replaced


def _delete_blobs(services: Services, blob_keys: list[str]) -> None:
    """The previous analysis' blobs, once no row points to them (best effort: a leftover costs only space)."""
    for key in blob_keys:
        try:
            services.blobs.delete(key)
        except Exception:  # noqa: BLE001
            log.warning("could not delete replaced result blob %s", key, exc_info=True)


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
            summary, replaced = store_results(services, model_id, result, job_id)
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
    _delete_blobs(services, replaced)
    return "ready"


def requeue_interrupted(services: Services) -> list[str]:
    """Jobs left queued or running by a process that died; the caller enqueues them again."""
    with session_scope(services.sessions) as s:
        ids = list(s.scalars(select(Job.id).where(or_(Job.status == "queued", Job.status == "running"))))
        s.execute(update(Job).where(Job.id.in_(ids)).values(status="queued"))
    return ids
