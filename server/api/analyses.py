"""Saved analyses: named optimization states of a model, with forks and lineage.

Anyone who can view a model may save analyses of it (their own). Only an analysis's owner may
change it; everybody else forks. Every save names the version it edits, so two concurrent saves
of one analysis cannot overwrite each other: the second gets 409 and keeps its text to retry.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, jsonify, request
from flask.typing import ResponseReturnValue
from sqlalchemy import select, update

from compiler.vocabulary.options import OptionError, parse_combo, parse_preset
from store.db import session_scope
from store.models import Analysis, Model

from ..access import model_for
from ..auth import current_user
from .common import iso, json_body, services
from .errors import ApiError
from .stored import op_index_for

bp = Blueprint("analyses", __name__, url_prefix="/api/models/<model_id>/analyses")

MAX_OVERRIDES = 100_000
MAX_NOTES = 20_000


def analysis_json(a: Analysis, *, can_edit: bool) -> dict[str, Any]:
    return {"id": a.id, "model_id": a.model_id, "name": a.name, "state": a.state, "notes": a.notes,
            "version": a.version, "parent_id": a.parent_id,
            "owner": {"id": a.owner.id, "name": a.owner.name, "email": a.owner.email},
            "created_at": iso(a.created_at), "updated_at": iso(a.updated_at), "can_edit": can_edit,
            "url": f"/m/{a.model_id}/a/{a.id}"}


def validate_state(s: Any, m: Model, state: Any) -> dict[str, Any]:
    """The optimization state as stored: target, model_wide preset, overrides {op id: combo}."""
    if not isinstance(state, dict):
        raise ApiError(400, "bad_state", "'state' must be an object with target, model_wide and overrides.")
    target = state.get("target") or (m.targets[0] if m.targets else "")
    if target not in m.targets:
        raise ApiError(400, "bad_state", f"target '{target}' is not one of this model's: {', '.join(m.targets)}.")
    model_wide = state.get("model_wide") or "fp32"
    overrides = state.get("overrides") or {}
    if not isinstance(model_wide, str) or not isinstance(overrides, dict) or len(overrides) > MAX_OVERRIDES:
        raise ApiError(400, "bad_state", "model_wide must be a preset name and overrides an object {op id: combo}.")
    try:
        parse_preset(model_wide)
        for op, combo in overrides.items():
            if not isinstance(combo, str):
                raise OptionError(f"the override of {op!r} must be a combo string like int8/int8/int8/0")
            try:
                parse_combo(combo, has_kernel=True)
            except OptionError:
                parse_combo(combo, has_kernel=False)
    except OptionError as e:
        raise ApiError(400, "bad_option", str(e)) from None
    if overrides:
        known = op_index_for(s, m, target)
        unknown = [op for op in overrides if op not in known]
        if unknown:
            raise ApiError(400, "unknown_op", f"No op {unknown[0]!r} in this model's graph for {target}.")
    return {"target": target, "model_wide": model_wide, "overrides": overrides}


def _fields(data: dict[str, Any]) -> tuple[str | None, str | None]:
    name, notes = data.get("name"), data.get("notes")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 200):
        raise ApiError(400, "bad_field", "'name' must be a non-empty string of at most 200 characters.")
    if notes is not None and (not isinstance(notes, str) or len(notes) > MAX_NOTES):
        raise ApiError(400, "bad_field", f"'notes' must be a string of at most {MAX_NOTES} characters.")
    return (name.strip() if name else None), notes


def analysis_of(s: Any, m: Model, analysis_id: str) -> Analysis:
    """An analysis of `m` (whose access the caller checked), else 404."""
    a = s.get(Analysis, analysis_id)
    if a is None or a.model_id != m.id:
        raise ApiError(404, "not_found", "No such analysis of this model.")
    return a


@bp.get("")
def list_analyses(model_id: str) -> ResponseReturnValue:
    user = current_user()
    with session_scope(services().sessions) as s:
        m, _ = model_for(s, model_id, user)
        rows = s.scalars(select(Analysis).where(Analysis.model_id == m.id).order_by(Analysis.created_at))
        return jsonify(analyses=[analysis_json(a, can_edit=a.owner_id == user.id) for a in rows])  # type: ignore[union-attr]


@bp.post("")
def create_analysis(model_id: str) -> ResponseReturnValue:
    user = current_user()
    data = json_body()
    with session_scope(services().sessions) as s:
        m, _ = model_for(s, model_id, user)
        name, notes = _fields(data)
        if name is None:
            raise ApiError(400, "bad_field", "Give the analysis a 'name'.")
        a = Analysis(model_id=m.id, owner_id=user.id, name=name, notes=notes or "",  # type: ignore[union-attr]
                     state=validate_state(s, m, data.get("state", {})))
        s.add(a)
        s.flush()
        s.refresh(a)
        return jsonify(analysis_json(a, can_edit=True)), 201


@bp.get("/<analysis_id>")
def read_analysis(model_id: str, analysis_id: str) -> ResponseReturnValue:
    user = current_user()
    with session_scope(services().sessions) as s:
        m, _ = model_for(s, model_id, user)
        a = analysis_of(s, m, analysis_id)
        return jsonify(analysis_json(a, can_edit=a.owner_id == user.id))  # type: ignore[union-attr]


@bp.put("/<analysis_id>")
def save_analysis(model_id: str, analysis_id: str) -> ResponseReturnValue:
    user = current_user()
    data = json_body()
    version = data.get("version")
    if not isinstance(version, int):
        raise ApiError(400, "bad_field", "Send the 'version' you edited, so concurrent saves are detected.")
    with session_scope(services().sessions) as s:
        m, _ = model_for(s, model_id, user)
        a = analysis_of(s, m, analysis_id)
        if a.owner_id != user.id:  # type: ignore[union-attr]
            raise ApiError(403, "not_yours", "This analysis is someone else's; fork it to make your own copy.")
        name, notes = _fields(data)
        values: dict[str, Any] = {"version": version + 1, "updated_at": datetime.now(UTC)}
        if name is not None:
            values["name"] = name
        if notes is not None:
            values["notes"] = notes
        if "state" in data:
            values["state"] = validate_state(s, m, data["state"])
        # Compare-and-set on the version: of two saves of version N, exactly one wins.
        res = s.execute(update(Analysis).where(Analysis.id == a.id, Analysis.version == version).values(**values))
        if res.rowcount != 1:
            raise ApiError(409, "conflict", "This analysis was saved by someone else since you opened it; "
                                            "reload it (your changes are still on your screen) or fork it.")
        s.flush()
        s.refresh(a)
        return jsonify(analysis_json(a, can_edit=True))


@bp.post("/<analysis_id>/fork")
def fork_analysis(model_id: str, analysis_id: str) -> ResponseReturnValue:
    user = current_user()
    data = request.get_json(silent=True) or {}
    with session_scope(services().sessions) as s:
        m, _ = model_for(s, model_id, user)
        parent = analysis_of(s, m, analysis_id)
        name, notes = _fields(data if isinstance(data, dict) else {})
        state = validate_state(s, m, data["state"]) if isinstance(data, dict) and "state" in data else parent.state
        a = Analysis(model_id=m.id, owner_id=user.id, parent_id=parent.id,  # type: ignore[union-attr]
                     name=name or f"{parent.name} (fork)", notes=parent.notes if notes is None else notes,
                     state=state)
        s.add(a)
        s.flush()
        s.refresh(a)
        return jsonify(analysis_json(a, can_edit=True)), 201


@bp.delete("/<analysis_id>")
def delete_analysis(model_id: str, analysis_id: str) -> ResponseReturnValue:
    user = current_user()
    with session_scope(services().sessions) as s:
        m, role = model_for(s, model_id, user)
        a = analysis_of(s, m, analysis_id)
        if a.owner_id != user.id and role != "owner":  # type: ignore[union-attr]
            raise ApiError(403, "not_yours", "Only its author or the model's owner may delete an analysis.")
        s.delete(a)
    return "", 204


@bp.get("/<analysis_id>/lineage")
def lineage(model_id: str, analysis_id: str) -> ResponseReturnValue:
    """Its parent chain (nearest first) and every fork below it, as a tree."""
    user = current_user()
    with session_scope(services().sessions) as s:
        m, _ = model_for(s, model_id, user)
        a = analysis_of(s, m, analysis_id)
        all_rows = {x.id: x for x in s.scalars(select(Analysis).where(Analysis.model_id == m.id))}
        uid = user.id  # type: ignore[union-attr]
        parents, p = [], a.parent_id
        while p and p in all_rows and len(parents) < 1000:
            parents.append(analysis_json(all_rows[p], can_edit=all_rows[p].owner_id == uid))
            p = all_rows[p].parent_id
        children: dict[str, list[Analysis]] = {}
        for x in all_rows.values():
            if x.parent_id:
                children.setdefault(x.parent_id, []).append(x)

        def tree(x: Analysis, depth: int = 0) -> dict[str, Any]:
            kids = sorted(children.get(x.id, []), key=lambda k: k.created_at) if depth < 100 else []
            return {**analysis_json(x, can_edit=x.owner_id == uid), "forks": [tree(k, depth + 1) for k in kids]}

        return jsonify(parents=parents, analysis=tree(a))
