"""Budget solver and result downloads of a ready model: POST /solve, GET /ops.csv, GET /model-explorer."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from flask import Blueprint, Response, request
from flask.typing import ResponseReturnValue

from compiler.vocabulary.options import OptionError
from simulator.table_schema import old_charge, upgrade_bulk, upgrade_op_record, upgrade_ops_doc
from store.blobs import BlobNotFound, BlobStore
from store.db import session_scope
from store.packed import PackIndex

from .. import interop
from .common import json_body, services
from .errors import ApiError
from .stored import (charge_of, find_artifact, op_index, op_record, option_table, ready_model, replaced_error,
                     require_artifact, requested_target, upgraded_ops, version_of)

bp = Blueprint("planning", __name__, url_prefix="/api/models/<model_id>")


class _PackedRows(Mapping[str, Mapping[str, Any]]):
    """The per-op option records of one target, read from the stored pack on demand (the totals rule reads
    only the overridden ops')."""

    def __init__(self, blob: bytes, ops: list[str], pack: PackIndex, charge: float | None):
        self._blob, self._ops, self._pack, self._charge = blob, ops, pack, charge
        self._index = {o: i for i, o in enumerate(ops)}

    def record(self, i: int) -> dict[str, Any]:
        a, b = self._pack.offsets[i], self._pack.offsets[i + 1]
        return upgrade_op_record(self._pack.decode(self._blob[a:b]), i, self._charge)

    def __getitem__(self, op: str) -> Mapping[str, Any]:
        return self.record(self._index[op])

    def __iter__(self) -> Iterator[str]:
        return iter(self._ops)

    def __len__(self) -> int:
        return len(self._ops)


@lru_cache(maxsize=4)
def _table(blobs: BlobStore, options_key: str, pack_key: str, index_key: str, version: str,
           solver_key: str | None) -> Any:
    """The solver's arrays for one stored option table, read once per analysis (keyed by its version): from the
    solver table the worker stored beside it, or built from the per-op records for analyses stored before it."""
    from simulator.solver import prepare
    from simulator.solver.table_bytes import table_from_bytes

    if solver_key is not None:
        return table_from_bytes(blobs.get_bytes(solver_key))  # upgrades a table of schema 1 itself
    stored = json.loads(gzip.decompress(blobs.get_bytes(options_key)))
    bulk = upgrade_bulk(stored)
    index = json.loads(gzip.decompress(blobs.get_bytes(index_key)))
    rows = _PackedRows(blobs.get_bytes(pack_key), index["ops"], PackIndex.of(index), old_charge(stored))
    table = prepare(bulk, [rows.record(i) for i in range(len(rows))])
    table.per_op = rows  # keep the compact pack, not 10k parsed records, for the totals of proposals
    return table


def _number(body: Mapping[str, Any], key: str) -> float | None:
    v = body.get(key)
    if v is None or v == "":
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ApiError(400, "bad_budget", f"budget.{key} must be a number, not {v!r}.")
    return float(v)


@bp.post("/solve")
def solve(model_id: str) -> ResponseReturnValue:
    """Proposals of per-op changes that meet a budget (docs/api.md, simulator/solver/)."""
    from simulator.solver import Budget, solution_json
    from simulator.solver import solve as run

    body = json_body()
    b = body.get("budget")
    if not isinstance(b, dict):
        raise ApiError(400, "bad_budget", "Send budget: {latency_ms | fps, peak_memory_bytes, size_bytes, "
                                          "memory_power_mw}, at least one of them.")
    overrides = body.get("overrides") or {}
    keep = body.get("keep_float") or []
    if not isinstance(overrides, dict) or not all(isinstance(v, str) for v in overrides.values()):
        raise ApiError(400, "bad_state", "overrides must be an object {task id: combo}.")
    if not isinstance(keep, list) or not all(isinstance(v, str) for v in keep):
        raise ApiError(400, "bad_state", "keep_float must be a list of task ids.")
    model_wide = body.get("model_wide") or "fp32"
    svc = services()
    with session_scope(svc.sessions) as s:
        m = ready_model(s, model_id)
        t = body.get("target") or requested_target(m)
        if t not in m.targets:
            raise ApiError(404, "unknown_target", f"This model was not analysed for target '{t}'; "
                                                  f"its targets: {', '.join(m.targets)}.")
        oa = require_artifact(s, model_id, "options", t)
        keys = (oa.key, require_artifact(s, model_id, "op_options", t).key,
                require_artifact(s, model_id, "op_options_index", t).key)
        version = version_of(oa)
        sa = find_artifact(s, model_id, "solver_table", t)
        solver_key = sa.key if sa is not None else None
    t0 = time.perf_counter()
    try:
        table = _table(svc.blobs, *keys, version, solver_key)
        budget = Budget.of(latency_ms=_number(b, "latency_ms"), fps=_number(b, "fps"),
                           peak_memory_bytes=_number(b, "peak_memory_bytes"), size_bytes=_number(b, "size_bytes"),
                           memory_power_mw=_number(b, "memory_power_mw"))
        sol = run(table, model_wide, overrides, budget, keep)
    except BlobNotFound:
        raise replaced_error() from None
    except OptionError as e:
        raise ApiError(400, "bad_budget", str(e)) from None
    return {"target": t, **solution_json(sol), "seconds": time.perf_counter() - t0}


def _docs(model_id: str, kinds: tuple[str, ...]) -> tuple[str, list[Any]]:
    """The ops document of the requested target (as schema 2: server/api/stored.py) and other stored documents."""
    svc = services()
    with session_scope(svc.sessions) as s:
        m = ready_model(s, model_id)
        t = requested_target(m)
        arts = [require_artifact(s, model_id, k, t if k == "ops" else "") for k in kinds]
        keys = [a.key for a in arts]
        try:
            charge = charge_of(s, model_id, t)
        except BlobNotFound:
            raise replaced_error() from None
    try:
        docs = [json.loads(gzip.decompress(svc.blobs.get_bytes(k))) for k in keys]
    except BlobNotFound:
        raise replaced_error() from None
    return t, [upgrade_ops_doc(d, charge) if k == "ops" else d for k, d in zip(kinds, docs)]


def _attachment(body: str, mimetype: str, filename: str) -> Response:
    resp = Response(body, mimetype=mimetype)
    resp.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return resp


def _slug(target: str) -> str:
    return target.replace("/", "-")


@bp.get("/ops.csv")
def ops_csv(model_id: str) -> ResponseReturnValue:
    """The op table of one target as CSV: unoptimized (the columns of GET /ops), or under a state: a saved
    analysis' (`analysis=<id>`) or the page's (`model_wide=<preset>&overrides=<JSON {op: combo}>`). Lines
    starting with "# " first say which."""
    from simulator.totals import evaluate

    from .csv_state import csv_header, state_rows

    svc = services()
    with session_scope(svc.sessions) as s:
        m = ready_model(s, model_id)
        what, state = _csv_state(s, m)
        t = state["target"] if state else requested_target(m)
        oa, ops_a = require_artifact(s, model_id, "options", t), require_artifact(s, model_id, "ops", t)
        ia = require_artifact(s, model_id, "op_options_index", t)
        pack_key = require_artifact(s, model_id, "op_options", t).key
        name = m.name
        try:
            charge = charge_of(s, model_id, t)
        except BlobNotFound:
            raise replaced_error() from None
    try:
        ops = upgraded_ops(svc.blobs, ops_a.key, version_of(ops_a), charge)
        bulk = option_table(svc.blobs, oa.key, version_of(oa))
        index, pack = op_index(svc.blobs, ia.key, version_of(ia))
        state = state or {"target": t, "model_wide": bulk["base"]["preset"], "overrides": {}}
        per_op = {op: op_record(svc.blobs, pack_key, pack, index[op], charge) for op in state["overrides"]
                  if op in index}
        ev = evaluate(bulk, per_op, state["model_wide"], state["overrides"])
    except BlobNotFound:
        raise replaced_error() from None
    except OptionError as e:  # a saved state the current results no longer offer (the model was re-analysed)
        raise ApiError(409, "stale_state", str(e)) from None
    header = csv_header(name, model_id, t, what, state, ops, bulk, ev)
    rows = state_rows(bulk, ev) if what != "unoptimized" else None
    return _attachment(interop.ops_csv(ops, header, rows), "text/csv", f"{model_id}-{_slug(t)}-ops.csv")


def _csv_state(s: Any, m: Any) -> tuple[str, dict[str, Any] | None]:
    """(what the CSV holds, its state): a saved analysis', the page's (not saved), or none (unoptimized)."""
    from .analyses import analysis_of, validate_state

    aid = request.args.get("analysis")
    if aid:
        a = analysis_of(s, m, aid)
        return f'analysis "{a.name}" ({a.id})', dict(a.state)
    if "model_wide" not in request.args and "overrides" not in request.args:
        return "unoptimized", None
    try:
        overrides = json.loads(request.args.get("overrides") or "{}")
    except ValueError:
        raise ApiError(400, "bad_state", "overrides must be a JSON object {task id: combo}.") from None
    state = validate_state(s, m, {"target": requested_target(m), "model_wide": request.args.get("model_wide"),
                                  "overrides": overrides})
    return "the page's state (not saved)", state


@bp.get("/model-explorer")
def model_explorer(model_id: str) -> ResponseReturnValue:
    """One metric of one target as Model Explorer node data, keyed by the ids Model Explorer gives the nodes
    of the uploaded file."""
    metric = request.args.get("metric", "latency_ms")
    if metric not in interop.NODE_DATA_METRICS:
        raise ApiError(400, "bad_metric", f"metric must be one of {', '.join(interop.NODE_DATA_METRICS)}.")
    t, (ops, src) = _docs(model_id, ("ops", "source_ir"))
    try:
        data = interop.model_explorer_node_data(ops, src, metric)
    except interop.NodeDataError as e:
        raise ApiError(400, "unsupported_format", str(e)) from None
    return _attachment(json.dumps(data), "application/json", f"{model_id}-{_slug(t)}-{metric}.node-data.json")
