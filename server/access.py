"""Who may see and change a model: one function every endpoint goes through.

Roles, strongest first: owner > editor > viewer. A user's role on a model is the strongest of:
owning it; a share with the user; a share with a group the user is in; link sharing (viewer, any
signed-in user with the link). Without any role the model does not exist for that user (404, so
ids do not leak); with too weak a role the answer is 403.
Models uploaded before accounts existed have no owner; every signed-in user may view them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import selectinload

from store.models import GroupMember, LinkVisit, Model, Share

from .api.errors import ApiError
from .auth import Principal

RANK = {"viewer": 1, "editor": 2, "owner": 3}


def role_on(s: Any, user: Principal, m: Model) -> str | None:
    if m.owner_id == user.id:
        return "owner"
    best = "viewer" if (m.link_sharing or m.owner_id is None) else None
    group_ids = select(GroupMember.group_id).where(GroupMember.user_id == user.id)
    shares = s.scalars(select(Share.role).where(
        Share.model_id == m.id, or_(Share.user_id == user.id, Share.group_id.in_(group_ids))))
    for r in shares:
        if best is None or RANK[r] > RANK[best]:
            best = r
    return best


def model_for(s: Any, model_id: str, user: Principal | None, at_least: str = "viewer") -> tuple[Model, str]:
    """The model and the caller's role on it, or 401 (anonymous, whether or not the model exists),
    404 (no access, as if it did not exist) or 403 (too weak a role)."""
    if user is None:
        raise ApiError(401, "sign_in_required", "Sign in to see models.")
    m = s.scalar(select(Model).options(selectinload(Model.jobs)).where(Model.id == model_id))
    role = role_on(s, user, m) if m is not None else None
    if role is None:
        raise ApiError(404, "not_found", f"No model with id '{model_id}' that you can see.")
    if RANK[role] < RANK[at_least]:
        raise ApiError(403, "forbidden", f"You are a {role} of this model; this needs {at_least} rights.")
    return m, role


def record_link_visit(s: Any, user: Principal, m: Model) -> None:
    """Remember that `user` opened someone else's link-shared model, for their "Shared with me" list."""
    if not m.link_sharing or m.owner_id is None or m.owner_id == user.id:
        return
    if s.get(LinkVisit, (m.id, user.id)) is None:
        s.add(LinkVisit(model_id=m.id, user_id=user.id))


def visible_models_query(user: Principal, scope: str) -> Any:
    """`mine`: models I own. `shared`: models shared with me or my groups, and link-shared models I opened through
    their link (while link sharing is on)."""
    if scope == "mine":
        return select(Model).where(Model.owner_id == user.id)
    group_ids = select(GroupMember.group_id).where(GroupMember.user_id == user.id)
    shared_ids = select(Share.model_id).where(or_(Share.user_id == user.id, Share.group_id.in_(group_ids)))
    visited_ids = select(LinkVisit.model_id).where(LinkVisit.user_id == user.id)
    return select(Model).where(or_(Model.id.in_(shared_ids), and_(Model.link_sharing.is_(True), Model.id.in_(visited_ids))),
                               or_(Model.owner_id.is_(None), Model.owner_id != user.id))
