"""Sharing a model (with users by e-mail, with groups, by link) and managing groups."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify
from flask.typing import ResponseReturnValue
from sqlalchemy import select

from store.db import session_scope
from store.models import Group, GroupMember, Share, User

from ..access import model_for
from ..auth import current_user, require_user
from .common import iso, json_body, services
from .errors import ApiError

bp = Blueprint("sharing", __name__, url_prefix="/api")

ROLES = ("viewer", "editor")
GROUP_ROLES = ("member", "admin")


def share_json(sh: Share) -> dict[str, Any]:
    who: dict[str, Any]
    if sh.user is not None:
        who = {"kind": "user", "id": sh.user.id, "email": sh.user.email, "name": sh.user.name}
    else:
        who = {"kind": "group", "id": sh.group.id, "name": sh.group.name}  # type: ignore[union-attr]
    return {"id": sh.id, "role": sh.role, "with": who, "created_at": iso(sh.created_at)}


@bp.get("/models/<model_id>/shares")
def list_shares(model_id: str) -> ResponseReturnValue:
    with session_scope(services().sessions) as s:
        m, role = model_for(s, model_id, current_user())
        return jsonify(link_sharing=m.link_sharing, your_role=role,
                       owner={"id": m.owner.id, "email": m.owner.email, "name": m.owner.name} if m.owner else None,
                       shares=[share_json(sh) for sh in m.shares])


@bp.post("/models/<model_id>/shares")
def add_share(model_id: str) -> ResponseReturnValue:
    data = json_body()
    role = data.get("role", "viewer")
    if role not in ROLES:
        raise ApiError(400, "bad_role", f"role must be one of {', '.join(ROLES)}.")
    with session_scope(services().sessions) as s:
        m, _ = model_for(s, model_id, current_user(), at_least="owner")
        if data.get("email"):
            u = s.scalar(select(User).where(User.email == str(data["email"]).strip().lower()))
            if u is None:
                raise ApiError(404, "no_user", f"No account with e-mail {data['email']}; they must sign up first.")
            if u.id == m.owner_id:
                raise ApiError(400, "owner", "The owner has every right already.")
            sh = s.scalar(select(Share).where(Share.model_id == m.id, Share.user_id == u.id))
            sh = sh or Share(model_id=m.id, user_id=u.id, role=role)
        elif data.get("group_id"):
            grp = s.get(Group, str(data["group_id"]))
            if grp is None or not _is_member(s, grp.id, current_user().id):  # type: ignore[union-attr]
                raise ApiError(404, "no_group", "No such group among yours.")
            sh = s.scalar(select(Share).where(Share.model_id == m.id, Share.group_id == grp.id))
            sh = sh or Share(model_id=m.id, group_id=grp.id, role=role)
        else:
            raise ApiError(400, "bad_field", "Name whom to share with: 'email' or 'group_id'.")
        sh.role = role
        s.add(sh)
        s.flush()
        s.refresh(sh)
        return jsonify(share_json(sh)), 201


@bp.delete("/models/<model_id>/shares/<share_id>")
def revoke_share(model_id: str, share_id: str) -> ResponseReturnValue:
    with session_scope(services().sessions) as s:
        m, _ = model_for(s, model_id, current_user(), at_least="owner")
        sh = s.get(Share, share_id)
        if sh is None or sh.model_id != m.id:
            raise ApiError(404, "not_found", "No such share on this model.")
        s.delete(sh)
    return "", 204


@bp.put("/models/<model_id>/link")
def set_link_sharing(model_id: str) -> ResponseReturnValue:
    enabled = json_body().get("enabled")
    if not isinstance(enabled, bool):
        raise ApiError(400, "bad_field", "'enabled' must be true or false.")
    with session_scope(services().sessions) as s:
        m, _ = model_for(s, model_id, current_user(), at_least="owner")
        m.link_sharing = enabled
        return jsonify(link_sharing=enabled)


# -- groups ---------------------------------------------------------------------------------------
def _is_member(s: Any, group_id: str, user_id: str, admin: bool = False) -> bool:
    q = select(GroupMember).where(GroupMember.group_id == group_id, GroupMember.user_id == user_id)
    if admin:
        q = q.where(GroupMember.role == "admin")
    return s.scalar(q) is not None


def group_json(grp: Group) -> dict[str, Any]:
    return {"id": grp.id, "name": grp.name,
            "members": [{"id": gm.user.id, "email": gm.user.email, "name": gm.user.name, "role": gm.role}
                        for gm in grp.members]}


def _group_for(s: Any, group_id: str, admin: bool = False) -> Group:
    user = require_user()
    grp = s.get(Group, group_id)
    if grp is None or not _is_member(s, group_id, user.id):
        raise ApiError(404, "not_found", "No such group among yours.")
    if admin and not _is_member(s, group_id, user.id, admin=True):
        raise ApiError(403, "forbidden", "Only the group's admins may change its members.")
    return grp


@bp.get("/groups")
def list_groups() -> ResponseReturnValue:
    user = require_user()
    with session_scope(services().sessions) as s:
        mine = select(GroupMember.group_id).where(GroupMember.user_id == user.id)
        return jsonify(groups=[group_json(g) for g in s.scalars(select(Group).where(Group.id.in_(mine)))])


@bp.post("/groups")
def create_group() -> ResponseReturnValue:
    user = require_user()
    name = json_body().get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise ApiError(400, "bad_field", "'name' must be a non-empty string of at most 200 characters.")
    with session_scope(services().sessions) as s:
        grp = Group(name=name.strip(), created_by=user.id)
        grp.members.append(GroupMember(user_id=user.id, role="admin"))
        s.add(grp)
        s.flush()
        return jsonify(group_json(grp)), 201


@bp.get("/groups/<group_id>")
def read_group(group_id: str) -> ResponseReturnValue:
    with session_scope(services().sessions) as s:
        return jsonify(group_json(_group_for(s, group_id)))


@bp.post("/groups/<group_id>/members")
def add_member(group_id: str) -> ResponseReturnValue:
    email = str(json_body().get("email", "")).strip().lower()
    with session_scope(services().sessions) as s:
        grp = _group_for(s, group_id, admin=True)
        u = s.scalar(select(User).where(User.email == email))
        if u is None:
            raise ApiError(404, "no_user", f"No account with e-mail {email}; they must sign up first.")
        if not _is_member(s, grp.id, u.id):
            grp.members.append(GroupMember(user_id=u.id, role="member"))
        s.flush()
        s.refresh(grp)
        return jsonify(group_json(grp)), 201


def _membership(s: Any, grp: Group, user_id: str) -> GroupMember:
    gm = s.scalar(select(GroupMember).where(GroupMember.group_id == grp.id, GroupMember.user_id == user_id))
    if gm is None:
        raise ApiError(404, "not_found", "No such member.")
    return gm


def _keep_an_admin(s: Any, gm: GroupMember) -> None:
    """A group without admins could never change its members again, so the last admin stays."""
    if gm.role != "admin":
        return
    admins = s.scalars(select(GroupMember).where(GroupMember.group_id == gm.group_id, GroupMember.role == "admin"))
    if len(list(admins)) <= 1:
        raise ApiError(409, "last_admin", "This is the group's last admin; make another member admin first.")


@bp.patch("/groups/<group_id>/members/<user_id>")
def change_member_role(group_id: str, user_id: str) -> ResponseReturnValue:
    role = json_body().get("role")
    if role not in GROUP_ROLES:
        raise ApiError(400, "bad_field", f"'role' must be one of {', '.join(GROUP_ROLES)}.")
    with session_scope(services().sessions) as s:
        grp = _group_for(s, group_id, admin=True)
        gm = _membership(s, grp, user_id)
        if role != gm.role:
            _keep_an_admin(s, gm)
            gm.role = role
        s.flush()
        s.refresh(grp)
        return jsonify(group_json(grp))


@bp.delete("/groups/<group_id>/members/<user_id>")
def remove_member(group_id: str, user_id: str) -> ResponseReturnValue:
    with session_scope(services().sessions) as s:
        grp = _group_for(s, group_id, admin=True)
        gm = _membership(s, grp, user_id)
        _keep_an_admin(s, gm)
        s.delete(gm)
    return "", 204
