"""Model rows as the JSON documented in docs/api.md."""

from __future__ import annotations

from typing import Any

from flask import request
from sqlalchemy.orm import object_session

from store.models import Model

from .common import iso, services


def share_url(model_id: str) -> str:
    base = services().settings.public_url or request.host_url
    return f"{base.rstrip('/')}/m/{model_id}"


def model_json(m: Model, role: str | None = None) -> dict[str, Any]:
    job = m.job
    if job is not None and job.status == "ready" and m.summary is None and (s := object_session(m)) is not None:
        # Read skew under READ COMMITTED (Postgres): the model row was read before the worker's commit and its jobs
        # after it, so a ready job came with the summary the same commit wrote still unseen. Read it again.
        s.refresh(m, ["summary"])
    return {
        "id": m.id,
        "url": share_url(m.id),
        "name": m.name,
        "format": m.format,
        "size_bytes": m.size_bytes,
        "created_at": iso(m.created_at),
        "owner": {"id": m.owner.id, "name": m.owner.name} if m.owner else None,
        "your_role": role,
        "link_sharing": m.link_sharing,
        "status": job.status if job else "failed",
        "stage": job.stage if job else None,
        "progress": job.progress if job else 0,
        "error": job.error if job else "no analysis job exists for this model",
        "stages": job.stages if job else [],
        "attempts": job.attempts if job else 0,
        "targets": m.targets,
        "input_shapes": m.input_shapes,
        "input_values": m.input_values,
        # What the newest analysis ran with: every input's declared and concrete shape, fill and why.
        "inputs": job.inputs if job else None,
        "summary": m.summary if job and job.status == "ready" else None,
    }
