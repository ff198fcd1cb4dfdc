"""A model's stored results as the API reads them: the ready model, its artifact rows and their versions, and
the documents decoded from blobs once per process (shared by the results, diffs, planning, exports and analyses
blueprints)."""

from __future__ import annotations

import gzip
import re
import zlib
from functools import lru_cache
from typing import Any

from flask import request
from sqlalchemy import select

from store.blobs import BlobStore
from store.models import Artifact, Model
from store.packed import PackIndex

from ..access import model_for
from ..auth import current_user
from .common import services
from .errors import ApiError


def ready_model(s: Any, model_id: str) -> Model:
    m, _ = model_for(s, model_id, current_user())
    job = m.job
    if job is None or job.status != "ready":
        if job is not None and job.status == "failed":
            raise ApiError(409, "failed", f"The analysis failed: {job.error}")
        where = f" (stage {job.stage}, {job.progress}%)" if job else ""
        raise ApiError(409, "not_ready", f"The model is still being analysed{where}; try again when its "
                                         f"status is 'ready'.")
    return m


def requested_target(m: Model) -> str:
    """The `target` query argument, or the model's first target; 404 for one it was not analysed for."""
    t = request.args.get("target") or (m.targets[0] if m.targets else "")
    if t not in m.targets:
        raise ApiError(404, "unknown_target", f"This model was not analysed for target '{t}'; "
                                              f"its targets: {', '.join(m.targets)}.")
    return t


def find_artifact(s: Any, model_id: str, kind: str, target: str = "") -> Artifact | None:
    return s.scalar(select(Artifact).where(Artifact.model_id == model_id, Artifact.kind == kind,
                                           Artifact.target == target))


def require_artifact(s: Any, model_id: str, kind: str, target: str = "") -> Artifact:
    a = find_artifact(s, model_id, kind, target)
    if a is None:
        raise ApiError(404, "no_result", f"No stored '{kind}' result for this model"
                                         f"{' and target ' + target if target else ''}.")
    return a


def replaced_error() -> ApiError:
    # The previous analysis' blobs are deleted once a re-analysis is ready; a read that looked its key up
    # just before that finds it gone.
    return ApiError(409, "results_replaced", "The model was re-analysed while this was read; load it again.")


def version_of(a: Artifact) -> str:
    """Changes whenever the stored document does: a re-analysis writes keys of its own job (store/keys.py) and
    stamps the row again (results stored before keys were per job share their key across re-analyses)."""
    return f"{a.key}@{a.created_at.isoformat() if a.created_at else ''}"


@lru_cache(maxsize=8)
def json_blob(blobs: BlobStore, key: str, version: str) -> Any:
    """A stored gzipped JSON document; `version` (version_of) keys the cache, so a re-analysis is read afresh."""
    import json

    return json.loads(gzip.decompress(blobs.get_bytes(key)))


@lru_cache(maxsize=8)
def columns_of(blobs: BlobStore, key: str, version: str) -> bytes:
    import json

    from compiler.graph_view import graph_columns

    doc = json.loads(gzip.decompress(blobs.get_bytes(key)))
    return json.dumps(graph_columns(doc), separators=(",", ":")).encode()


@lru_cache(maxsize=64)
def op_index(blobs: BlobStore, key: str, version: str) -> tuple[dict[str, int], PackIndex]:
    """Op id -> record number, and what reading a record of the per-op option pack needs (store.packed: format 2
    keeps the parts ops share in this document; format 1, stored before, only offsets)."""
    # Keyed by the artifact's version, not only its key (results stored before keys were per job share a key
    # across re-analyses).
    import json

    doc = json.loads(gzip.decompress(blobs.get_bytes(key)))
    return {op: i for i, op in enumerate(doc["ops"])}, PackIndex.of(doc)


def op_index_for(s: Any, m: Model, target: str) -> dict[str, int]:
    """Op id -> position in the option tables of `target` (the ops a state may override)."""
    a = require_artifact(s, m.id, "op_options_index", target)
    return op_index(services().blobs, a.key, version_of(a))[0]


# Option tables stored under schema 1 (op 0 carried the per-inference time) are read as schema 2
# (simulator/table_schema.py): every document of a table passes through these, so no reader past them, the
# browser included, knows the old layout.
_SCHEMA_HEAD = re.compile(rb'\{"schema":(\d+)[,}]')


@lru_cache(maxsize=256)
def table_charge(blobs: BlobStore, options_key: str, version: str) -> float | None:
    """`simulator.table_schema.old_charge` of a stored option table: None for schema 2, known from the first bytes
    of its blob (the sweep writes `schema` first) without parsing the table."""
    from simulator.table_schema import SCHEMA, old_charge

    try:
        head = zlib.decompressobj(31).decompress(blobs.get_range(options_key, 0, 1024), 32)
    except zlib.error:
        head = b""
    m = _SCHEMA_HEAD.match(head)
    if m and int(m.group(1)) >= SCHEMA:
        return None
    return old_charge(json_blob(blobs, options_key, version))


def charge_of(s: Any, model_id: str, target: str) -> float | None:
    """table_charge of a model's option table for `target`."""
    a = require_artifact(s, model_id, "options", target)
    return table_charge(services().blobs, a.key, version_of(a))


@lru_cache(maxsize=8)
def option_table(blobs: BlobStore, key: str, version: str) -> Any:
    """A stored bulk option table, as schema 2."""
    from simulator.table_schema import upgrade_bulk

    doc = json_blob(blobs, key, version)
    return doc if table_charge(blobs, key, version) is None else upgrade_bulk(doc)


@lru_cache(maxsize=8)
def upgraded_ops(blobs: BlobStore, key: str, version: str, charge: float | None) -> Any:
    """A stored ops document (GET /ops) of a table whose charge is `charge`, as schema 2."""
    from simulator.table_schema import upgrade_ops_doc

    return upgrade_ops_doc(json_blob(blobs, key, version), charge)


def op_record(blobs: BlobStore, pack_key: str, pack: PackIndex, i: int, charge: float | None) -> dict[str, Any]:
    """Per-op option record i, as schema 2."""
    from simulator.table_schema import upgrade_op_record

    from store.packed import read_record

    rec = read_record(blobs, pack_key, pack, i)
    return rec if charge is None else upgrade_op_record(rec, i, charge)
