"""Run one analysis job against the database and blob store.

Claims the job row under a lease (`worker/lease.py`, renewed by a heartbeat while it runs), runs
`pipeline.analyze` in the job's own temp folder with progress written to the row, writes every result
blob, then in one short transaction records the artifacts and marks the job ready. Any failure marks it
failed with a message for the user; results become visible only when the job is ready, so nothing
half-stored is shown. A run whose lease was taken over stops without writing.
"""

from __future__ import annotations

import gzip
import json
import logging
import time
import traceback
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from compiler.graph_view import graph_columns, graph_view
from compiler.heap import fewer_collections
from compiler.sandbox import scratch_in
from simulator.solver.table_bytes import table_bytes
from simulator.sweep import METRICS, PerOpTable
from store import keys
from store.blobs import local_copy
from store.db import session_scope
from store.models import Artifact, Job, Model
from store.packed import OpCells, pack_table
from store.services import Services

from . import lease, pipeline, results, scratch
from .messages import public_message

log = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


def claim(services: Services, job_id: str) -> str | None:
    """Atomically take the job: queued, or running under an expired lease with tries left. Returns the
    lease token, or None if the job is gone, done, or held by a live worker."""
    st, t = services.settings, lease.now()
    token = lease.new_token()
    with session_scope(services.sessions) as s:
        res = s.execute(
            update(Job).where(Job.id == job_id, lease.claimable(st.job_max_attempts, t))
            .values(status="running", started_at=t, attempts=Job.attempts + 1, error=None,
                    progress=0, stage=pipeline.STAGES[0], lease_token=token, worker=lease.worker_name(),
                    lease_expires_at=t + timedelta(seconds=st.job_lease_s),
                    stages=[{"name": n, "status": "pending", "seconds": None} for n in pipeline.STAGES])
        )
        return token if res.rowcount == 1 else None


def _mine(job_id: str, token: str):  # type: ignore[no-untyped-def]
    return (Job.id == job_id, Job.lease_token == token, Job.status == "running")


class _Progress:
    """Writes stage and percent to the job row (while the lease is ours), at most every 0.5 s within a stage."""

    def __init__(self, services: Services, job_id: str, token: str, beat: lease.Heartbeat) -> None:
        self.services, self.job_id, self.token, self.beat = services, job_id, token, beat
        self.last: tuple[str, int] = ("", -1)
        self.last_t = 0.0

    def __call__(self, stage: str, frac: float) -> None:
        self.beat.check()  # taken over: stop here rather than compete with the new holder
        done_before = sum(pipeline.STAGE_WEIGHT[s] for s in pipeline.STAGES[: pipeline.STAGES.index(stage)])
        pct = int(done_before + pipeline.STAGE_WEIGHT[stage] * min(max(frac, 0.0), 1.0))
        now = time.monotonic()
        if (stage, pct) == self.last or (stage == self.last[0] and 0 < frac < 1 and now - self.last_t < 0.5):
            return
        self.last, self.last_t = (stage, pct), now
        self._update(lambda st: dict(st, status="done" if frac >= 1 else "running") if st["name"] == stage else st,
                     stage=stage, progress=pct)

    def _update(self, each_stage, **values: Any) -> None:  # type: ignore[no-untyped-def]
        with session_scope(self.services.sessions) as s:
            job = s.scalar(select(Job).where(*_mine(self.job_id, self.token)))
            if job is None:
                return
            job.stages = [each_stage(dict(st)) for st in job.stages]
            for k, v in values.items():
                setattr(job, k, v)

    def record_seconds(self, seconds: dict[str, float]) -> None:
        self._update(lambda st: dict(st, seconds=round(seconds.get(st["name"], st["seconds"] or 0.0), 4)))

    def calibrating(self, running: bool, seconds: float | None = None) -> None:
        """Show calibration as a stage of its own while this job waits for it (once per machine)."""
        entry = {"name": "calibrate", "status": "running" if running else "done",
                 "seconds": None if seconds is None else round(seconds, 4), "note": CALIBRATING_NOTE}
        with session_scope(self.services.sessions) as s:
            job = s.scalar(select(Job).where(*_mine(self.job_id, self.token)))
            if job is not None:
                job.stages = [entry] + [st for st in job.stages if st["name"] != "calibrate"]
                if running:
                    job.stage = "calibrate"


# 3 min at load 8 on a 2-vCPU Zen 4 (2026-12-04), 4 at load 7.6: minutes, not seconds, on small machines
CALIBRATING_NOTE = ("Calibrating this machine, once (a few minutes, longer on a busy machine): timing kernels for "
                    "the host cost model.")


def _store_plan(services: Services, job_id: str, token: str, plans: dict[str, Any]) -> None:
    """The input plan, on the job row as soon as it is made (a failed analysis still shows what it tried)."""
    with session_scope(services.sessions) as s:
        job = s.scalar(select(Job).where(*_mine(job_id, token)))
        if job is not None:
            job.inputs = [p.to_json() for p in plans.values()]


def fail(services: Services, job_id: str, message: str, token: str | None = None) -> None:
    """Mark the job failed with a message for the user (cleaned of paths and stack text)."""
    with session_scope(services.sessions) as s:
        job = s.get(Job, job_id)
        if job is None or (token is not None and job.lease_token != token):
            return
        job.status, job.error, job.finished_at = "failed", public_message(message), _now()
        job.lease_token = job.lease_expires_at = None
        job.stages = [dict(st, status="failed") if st["status"] == "running" else st for st in job.stages]


def _options(services: Services, model: Model) -> pipeline.AnalysisOptions:
    st = services.settings
    return pipeline.AnalysisOptions(
        targets=tuple(model.targets or st.default_targets), format=model.format,
        input_shapes=dict(model.input_shapes or {}), input_values=dict(model.input_values or {}),
        runs=st.profile_runs, warmup=st.profile_warmup, threads=st.profile_threads,
        timeout_s=st.profile_timeout_s, memory_limit_bytes=st.profile_memory_bytes,
        calibration_path=st.calibration_path, check_exports=st.export_check,
        remeasure_pause_s=st.profile_remeasure_pause_ms / 1000, fast_rounds=st.profile_fast_rounds,
    )


_Stored = tuple[str, str, str, int]  # (kind, target, blob key, size)
# The stored documents of a 50,000-node analysis (140 MB of JSON) gzip in 0.6-0.7 s of CPU to 5.97 MB at level 5,
# 1.1-1.2 s to 5.63 MB at level 6, 0.3 s to 7.95 MB at level 1.
GZIP_LEVEL = 5


def store_blobs(services: Services, model_id: str, job_id: str, result: pipeline.AnalysisResult,
                tables: dict[str, dict[str, Any]] | None = None) -> list[_Stored]:
    """Write every result document to the blob store, under keys of this job (`keys.result(..., job_id=...)`:
    a stored key never changes content, so caches keyed by blob key cannot serve old results). No database
    transaction is open meanwhile, so a large analysis (tens of MB of JSON) never holds SQLite's write lock
    while readers wait; `record_artifacts` then points the rows at them in one short transaction. `tables`, when
    given, gets each target's `work_unknown` (what the summary needs of the ops table, not the table itself)."""
    with fewer_collections():
        return _store_blobs(services, model_id, job_id, result, tables)


def _store_blobs(services: Services, model_id: str, job_id: str, result: pipeline.AnalysisResult,
                 tables: dict[str, dict[str, Any]] | None) -> list[_Stored]:
    out: list[_Stored] = []

    def key(kind: str, target: str, ext: str) -> str:
        return keys.result(model_id, kind, target, ext, job_id=job_id)

    def put_json(kind: str, target: str, doc: Any) -> None:
        # Stored gzipped: the server sends it as is to clients that accept gzip (all browsers).
        k = key(kind, target, "json.gz")
        raw = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()
        out.append((kind, target, k, services.blobs.put_bytes(k, gzip.compress(raw, compresslevel=GZIP_LEVEL,
                                                                               mtime=0))))

    source_view = graph_view(result.source, "source")
    put_json("graph", "", source_view)
    put_json("graph_columns", "", graph_columns(source_view))
    put_json("source_ir", "", result.source.to_json())
    for r in result.targets:
        t = r.target
        view = graph_view(r.compiled, "compiled")
        put_json("graph", t, view)
        put_json("graph_columns", t, graph_columns(view))
        put_json("compiled_ir", t, r.compiled.to_json())
        table = results.ops_table(r, result.source)
        put_json("ops", t, table)
        if tables is not None:
            tables[t] = {"work_unknown": table["work_unknown"]}
        del table
        put_json("options", t, r.sweep.bulk)
        blob, index = _pack_per_op(r.sweep.per_op, r.sweep.bulk["ops"])
        out.append(("op_options", t, key("op_options", t, "pack"),
                    services.blobs.put_bytes(key("op_options", t, "pack"), blob)))
        del blob
        put_json("op_options_index", t, index)
        # The budget solver's arrays, so a solve reads one blob instead of parsing every per-op record.
        k = key("solver_table", t, "npz.z")
        out.append(("solver_table", t, k, services.blobs.put_bytes(k, table_bytes(r.sweep.bulk, r.sweep.per_op))))
        if r.profile:
            put_json("profile", t, r.profile.to_json())
        if r.compiled_model_path is not None:
            k = key("compiled_model", t, "onnx")
            out.append(("compiled_model", t, k, services.blobs.put_file(k, r.compiled_model_path)))
    return out


def _pack_per_op(per_op: PerOpTable, ops: list[str]) -> tuple[bytes, dict[str, Any]]:
    """The per-op option tables in the compact layout (store.packed.pack_table): shared parts once, cells as
    float64, never a Python dict or float per cell."""
    classes, of = per_op.classes()

    def cells() -> Iterator[OpCells]:
        for i, k in enumerate(of):
            metrics, notes, exportable = per_op.cells(i)
            yield OpCells(ops[i], k, metrics, notes, exportable)

    return pack_table(classes, METRICS, cells())


def record_artifacts(s: Any, model_id: str, stored: list[_Stored]) -> list[str]:
    """One artifact row per (model, kind, target), pointing at this analysis' blobs; rows of the previous
    analysis that this one did not rewrite are dropped. Returns the previous blobs, deleted once the new
    results are visible."""
    old = {(a.kind, a.target): a for a in s.scalars(select(Artifact).where(Artifact.model_id == model_id))}
    replaced: list[str] = []
    for kind, target, key, size in stored:
        row = old.pop((kind, target), None)
        if row is None:
            s.add(Artifact(model_id=model_id, kind=kind, target=target, key=key, size_bytes=size))
            continue
        if row.key != key:
            replaced.append(row.key)
        row.key, row.size_bytes, row.created_at = key, size, _now()
    for row in old.values():
        replaced.append(row.key)
        s.delete(row)
    return replaced


def _delete_blobs(services: Services, blob_keys: list[str]) -> None:
    """The previous analysis' blobs, once no row points to them (best effort: a leftover costs only space)."""
    for key in blob_keys:
        try:
            services.blobs.delete(key)
        except Exception:  # noqa: BLE001
            log.warning("could not delete replaced result blob %s", key, exc_info=True)


def _calibrate_if_needed(services: Services, opts: pipeline.AnalysisOptions, progress: _Progress) -> None:
    from compiler.vocabulary.targets import get_target
    from simulator.calibration import is_cached, load_or_calibrate

    path = opts.calibration_path
    try:
        host = path is not None and any(get_target(t).profile == "host-cpu" for t in opts.targets)
    except Exception:  # noqa: BLE001 - an unknown target fails in the pipeline with its own message
        return
    if not host or is_cached(path):
        return
    progress.calibrating(True)
    t0 = time.perf_counter()
    load_or_calibrate(path)  # waits for the start-up calibration if that one is still running
    seconds = time.perf_counter() - t0
    log.info("calibrated the host for job %s in %.1f s", progress.job_id, seconds)
    progress.calibrating(False, seconds)


def run_job(services: Services, job_id: str) -> str:
    """Run the job to the end. Returns its final status ('skipped' if not claimed, 'lost' if taken over)."""
    token = claim(services, job_id)
    if token is None:
        return "skipped"
    with session_scope(services.sessions) as s:
        job = s.get(Job, job_id)
        model = s.get(Model, job.model_id) if job else None
        if job is None or model is None:
            return "skipped"
        model_id, upload_key, filename = model.id, keys.upload(model.id, model.filename), model.filename
        opts = _options(services, model)
    with lease.Heartbeat(services, job_id, token) as beat, \
            scratch.scratch_folder(services.settings, "job", job_id) as folder, scratch_in(folder):
        return _run_claimed(services, job_id, token, beat, model_id, upload_key, filename, opts, folder)


def _run_claimed(services: Services, job_id: str, token: str, beat: lease.Heartbeat, model_id: str,
                 upload_key: str, filename: str, opts: pipeline.AnalysisOptions, folder: Path) -> str:
    progress = _Progress(services, job_id, token, beat)
    try:
        workdir = folder / "work"
        workdir.mkdir()
        with local_copy(services.blobs, upload_key, suffix=Path(filename).suffix, dir=folder) as src:
            _calibrate_if_needed(services, opts, progress)
            result = pipeline.analyze(src, workdir, opts, progress,
                                      on_plan=lambda plans: _store_plan(services, job_id, token, plans))
            progress("store", 0.0)
            t0 = time.perf_counter()
            tables: dict[str, dict[str, Any]] = {}
            stored = store_blobs(services, model_id, job_id, result, tables)
            summary = results.summary(result, tables)
            result.stage_seconds["store"] = time.perf_counter() - t0
    except lease.LeaseLost:
        log.warning("job %s: lease lost (another worker took it over); stopped", job_id)
        return "lost"
    except pipeline.user_errors() as e:
        fail(services, job_id, str(e), token)
        return "failed"
    except Exception as e:  # noqa: BLE001 - the job must end failed, never stuck in running
        log.error("job %s failed:\n%s", job_id, traceback.format_exc())
        fail(services, job_id, f"Internal error while analysing the model ({type(e).__name__}: {e}). "
                                "The failure was logged.", token)
        return "failed"
    progress.record_seconds(result.stage_seconds)
    # One short transaction makes the results visible and the job ready, only if the lease is still ours.
    with session_scope(services.sessions) as s:
        job = s.scalar(select(Job).where(*_mine(job_id, token)))
        model = s.get(Model, model_id)
        if model is None or job is None:  # deleted while running, or taken over
            return "skipped"
        replaced = record_artifacts(s, model_id, stored)
        model.summary = summary
        job.status, job.stage, job.progress, job.finished_at = "ready", "done", 100, _now()
        job.lease_token = job.lease_expires_at = None
        job.stages = [dict(st, status="done") for st in job.stages]
    _delete_blobs(services, replaced)
    return "ready"


def requeue_interrupted(services: Services) -> list[str]:
    """At start-up of the embedded server (the only worker of its database): jobs it left running died with
    it. They are queued again (or failed once out of tries) and, with the queued ones, returned to enqueue."""
    from .reconcile import gave_up_message

    st, t = services.settings, _now()
    with session_scope(services.sessions) as s:
        s.execute(update(Job).where(Job.status == "running", Job.attempts >= st.job_max_attempts)
                  .values(status="failed", error=gave_up_message(st.job_max_attempts), finished_at=t,
                          lease_token=None, lease_expires_at=None))
        s.execute(update(Job).where(Job.status == "running")
                  .values(status="queued", lease_token=None, lease_expires_at=None))
        ids = list(s.scalars(select(Job.id).where(Job.status == "queued")))
        s.execute(update(Job).where(Job.id.in_(ids)).values(enqueued_at=t))
    return ids
