"""Every API endpoint x every role -> the expected status, on SQLite and on PostgreSQL.

Roles: owner, editor (user share), viewer (user share), group member (group share), link holder
(link sharing on), link off (link turned on then off), revoked (share removed), other signed-in
user, anonymous. A route the app serves that is not in ENDPOINTS fails the test.
"""

from __future__ import annotations

import io
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from edgescope.config import Settings
from store.db import session_scope
from store.models import Analysis, ApiToken, Artifact, Export, GroupMember, Job, Model, Share
from tests.conftest import FAST_PROFILE, fresh_postgres_db, migrate, sign_up

ROLES = ("owner", "editor", "viewer", "member", "link_on", "link_off", "revoked", "other", "anonymous")
ACCESS = {"owner": "owner", "editor": "editor", "viewer": "viewer", "member": "viewer", "link_on": "viewer"}
RANK = {"public": 0, "user": 1, "viewer": 2, "editor": 3, "owner": 4}


@dataclass
class World:
    app: Any
    tokens: dict[str, str]  # role -> API token
    users: dict[str, str]  # role -> user id
    ready: dict[str, str]  # "main" | "linked" -> id of a ready model
    group_id: str
    model_bytes: bytes

    def model_for(self, role: str) -> str:
        return self.ready["linked" if role == "link_on" else "main"]

    def client(self, role: str):  # type: ignore[no-untyped-def]
        c = self.app.test_client()
        if role != "anonymous":
            c.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {self.tokens[role]}"
        return c

    def throwaway_model(self, role: str) -> str:
        """A fresh model shared exactly like the one `role` would use, for destructive calls."""
        services = self.app.extensions["edgescope"]
        src_id = self.model_for(role)
        with session_scope(services.sessions) as s:
            src = s.get(Model, src_id)
            m = Model(name="throwaway", filename="m.onnx", format="onnx", size_bytes=1, sha256="0",
                      targets=src.targets, owner_id=src.owner_id, link_sharing=src.link_sharing)
            m.jobs.append(Job(status="failed", error="test"))
            s.add(m)
            s.flush()
            for sh in src.shares:
                s.add(Share(model_id=m.id, user_id=sh.user_id, group_id=sh.group_id, role=sh.role))
            return m.id


def _build_world(settings: Settings, tmp: Path, zoo) -> World:  # type: ignore[no-untyped-def]
    from server.app import create_app
    from worker.jobs import run_job

    migrate(settings.database_url)
    app = create_app(settings)
    services = app.extensions["edgescope"]
    tokens, users = {}, {}
    for role in (*ROLES[:-1], "spare"):
        c = app.test_client()
        body = sign_up(c, f"{role}@example.com")
        users[role] = body["user"]["id"]
        tokens[role] = c.post("/api/tokens", json={"name": "t"}, headers={"X-CSRF-Token": body["csrf_token"]}
                              ).get_json()["token"]
    owner = app.test_client()
    owner.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {tokens['owner']}"
    group_id = owner.post("/api/groups", json={"name": "team"}).get_json()["id"]
    assert owner.post(f"/api/groups/{group_id}/members", json={"email": "member@example.com"}).status_code == 201

    with open(zoo.path("tiny_cnn"), "rb") as f:
        r = owner.post("/api/models", data={"file": (f, "tiny.onnx"), "targets": '["ort-cpu/host"]'},
                       content_type="multipart/form-data")
    main = r.get_json()["id"]
    with session_scope(services.sessions) as s:
        job_id = s.scalar(select(Job.id).where(Job.model_id == main))
    # The worker's own code path, run here synchronously: real artifacts for the result endpoints.
    assert run_job(services, job_id) == "ready"

    for email, role in (("editor@example.com", "editor"), ("viewer@example.com", "viewer"),
                        ("revoked@example.com", "viewer")):
        assert owner.post(f"/api/models/{main}/shares", json={"email": email, "role": role}).status_code == 201
    assert owner.post(f"/api/models/{main}/shares", json={"group_id": group_id, "role": "viewer"}).status_code == 201
    shares = owner.get(f"/api/models/{main}/shares").get_json()["shares"]
    revoked = next(sh["id"] for sh in shares if sh["with"].get("email") == "revoked@example.com")
    assert owner.delete(f"/api/models/{main}/shares/{revoked}").status_code == 204
    assert owner.put(f"/api/models/{main}/link", json={"enabled": True}).status_code == 200
    assert owner.put(f"/api/models/{main}/link", json={"enabled": False}).status_code == 200

    # A second ready model with link sharing on; it shares the first one's stored results.
    with session_scope(services.sessions) as s:
        src = s.get(Model, main)
        linked = Model(name="linked", filename=src.filename, format="onnx", size_bytes=src.size_bytes,
                       sha256=src.sha256, targets=src.targets, owner_id=src.owner_id, link_sharing=True,
                       summary=src.summary)
        linked.jobs.append(Job(status="ready", stage="done", progress=100, stages=src.job.stages))
        s.add(linked)
        s.flush()
        for a in src.artifacts:
            s.add(Artifact(model_id=linked.id, kind=a.kind, target=a.target, key=a.key, size_bytes=a.size_bytes))
        linked_id = linked.id
    services.blobs.put_bytes(f"models/{linked_id}/upload/{src.filename}", zoo.path("tiny_cnn").read_bytes())
    return World(app, tokens, users, {"main": main, "linked": linked_id}, group_id, zoo.path("tiny_cnn").read_bytes())


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(request, tmp_path_factory, calibration_dir, zoo) -> Iterator[World]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp(f"perm-{request.param}")
    with contextlib.ExitStack() as stack:
        extra = {}
        if request.param == "postgres":
            extra["database_url"] = stack.enter_context(fresh_postgres_db(migrated=True))
        settings = Settings.from_env(env=FAST_PROFILE, data_dir=tmp / "data", calibration_dir=calibration_dir, **extra)
        world = _build_world(settings, tmp, zoo)
        yield world
        world.app.extensions["edgescope"].engine.dispose()


# -- the matrix ------------------------------------------------------------------------------------
Call = Callable[[World, str], tuple[str, dict[str, Any]]]  # (world, role) -> (path, request kwargs)


def _m(suffix: str = "") -> Call:
    return lambda w, role: (f"/api/models/{w.model_for(role)}{suffix}", {})


def _analysis(suffix: str = "", edit: bool = False) -> Call:
    """An analysis owned by the model's owner, made fresh for each call."""
    def call(w: World, role: str) -> tuple[str, dict[str, Any]]:
        mid = w.model_for(role)
        services = w.app.extensions["edgescope"]
        with session_scope(services.sessions) as s:
            a = Analysis(model_id=mid, owner_id=w.users["owner"], name="owner's", state={"target": "ort-cpu/host",
                         "model_wide": "fp32", "overrides": {}})
            s.add(a)
            s.flush()
            aid, version = a.id, a.version
        body = {"json": {"version": version, "name": "renamed"}} if edit else {}
        return f"/api/models/{mid}/analyses/{aid}{suffix}", body
    return call


def _op_options(w: World, role: str) -> tuple[str, dict[str, Any]]:
    services = w.app.extensions["edgescope"]
    with session_scope(services.sessions) as s:
        key = s.scalar(select(Artifact.key).where(Artifact.model_id == w.ready["main"], Artifact.kind == "ops"))
    import gzip
    import json

    op = json.loads(gzip.decompress(services.blobs.get_bytes(key)))["ops"][0]["id"]
    return f"/api/models/{w.model_for(role)}/ops/{op}/options", {}


def _throwaway(suffix: str = "", **kw: Any) -> Call:
    return lambda w, role: (f"/api/models/{w.throwaway_model(role)}{suffix}", dict(kw))


def _share_to_revoke(w: World, role: str) -> tuple[str, dict[str, Any]]:
    mid = w.throwaway_model(role)
    services = w.app.extensions["edgescope"]
    with session_scope(services.sessions) as s:
        sid = s.scalar(select(Share.id).where(Share.model_id == mid))
    return f"/api/models/{mid}/shares/{sid}", {}


def _owner_token(w: World, role: str) -> tuple[str, dict[str, Any]]:
    from server.auth import new_api_token

    raw, digest = new_api_token()
    with session_scope(w.app.extensions["edgescope"].sessions) as s:
        t = ApiToken(user_id=w.users["owner"], name="spare", token_hash=digest, prefix=raw[:10])
        s.add(t)
        s.flush()
        return f"/api/tokens/{t.id}", {}


def _spare_member(w: World, role: str) -> tuple[str, dict[str, Any]]:
    # "spare" has no role in the matrix, so its group membership changes no one's access.
    spare = w.users["spare"]
    with session_scope(w.app.extensions["edgescope"].sessions) as s:
        if s.scalar(select(GroupMember).where(GroupMember.group_id == w.group_id, GroupMember.user_id == spare)) is None:
            s.add(GroupMember(group_id=w.group_id, user_id=spare, role="member"))
    return f"/api/groups/{w.group_id}/members/{spare}", {}


def _export(suffix: str = "") -> Call:
    """A ready export of the role's model, requested by the owner, with its file stored."""
    def call(w: World, role: str) -> tuple[str, dict[str, Any]]:
        from store import keys

        mid = w.model_for(role)
        services = w.app.extensions["edgescope"]
        with session_scope(services.sessions) as s:
            e = Export(model_id=mid, requested_by=w.users["owner"], status="ready", filename="m-int8.onnx",
                       size_bytes=4, state={"target": "ort-cpu/host", "model_wide": "int8-dynamic", "overrides": {}})
            s.add(e)
            s.flush()
            eid = e.id
        services.blobs.put_bytes(keys.result(mid, f"export-{eid}", "", "onnx"), b"onnx")
        return f"/api/models/{mid}/exports/{eid}{suffix}", {}
    return call


def _upload(w: World, role: str) -> tuple[str, dict[str, Any]]:
    data = {"file": (io.BytesIO(w.model_bytes), "m.onnx"), "targets": '["ort-cpu/host"]'}
    return "/api/models", {"data": data, "content_type": "multipart/form-data"}


_fresh = iter(range(10**6))
PASSWORD = "correct horse battery"

# (method, rule) -> (level, call, success status). Levels: who may succeed (see RANK and ACCESS).
ENDPOINTS: dict[tuple[str, str], tuple[str, Call, int]] = {
    ("GET", "/api/openapi.json"): ("public", lambda w, r: ("/api/openapi.json", {}), 200),
    ("POST", "/api/auth/signup"): ("public", lambda w, r: ("/api/auth/signup", {"json": {
        "email": f"new{next(_fresh)}@example.com", "password": PASSWORD}}), 201),
    ("POST", "/api/auth/login"): ("public", lambda w, r: ("/api/auth/login", {"json": {
        "email": "owner@example.com", "password": PASSWORD}}), 200),
    ("POST", "/api/auth/token"): ("public", lambda w, r: ("/api/auth/token", {"json": {
        "email": "owner@example.com", "password": PASSWORD}}), 201),
    ("POST", "/api/auth/logout"): ("public", lambda w, r: ("/api/auth/logout", {}), 204),
    ("GET", "/api/auth/me"): ("user", lambda w, r: ("/api/auth/me", {}), 200),
    ("GET", "/api/tokens"): ("user", lambda w, r: ("/api/tokens", {}), 200),
    ("POST", "/api/tokens"): ("user", lambda w, r: ("/api/tokens", {"json": {"name": "x"}}), 201),
    ("DELETE", "/api/tokens/<token_id>"): ("token_owner", _owner_token, 204),
    ("GET", "/api/groups"): ("user", lambda w, r: ("/api/groups", {}), 200),
    ("POST", "/api/groups"): ("user", lambda w, r: ("/api/groups", {"json": {"name": "g"}}), 201),
    ("GET", "/api/groups/<group_id>"): ("group_member", lambda w, r: (f"/api/groups/{w.group_id}", {}), 200),
    ("POST", "/api/groups/<group_id>/members"): ("group_admin", lambda w, r: (
        f"/api/groups/{w.group_id}/members", {"json": {"email": "spare@example.com"}}), 201),
    ("PATCH", "/api/groups/<group_id>/members/<user_id>"): ("group_admin", lambda w, r: (
        _spare_member(w, r)[0], {"json": {"role": "member"}}), 200),
    ("DELETE", "/api/groups/<group_id>/members/<user_id>"): ("group_admin", _spare_member, 204),
    ("GET", "/api/models"): ("user", lambda w, r: ("/api/models", {}), 200),
    ("POST", "/api/models"): ("user", _upload, 201),
    ("GET", "/api/models/<model_id>"): ("viewer", _m(), 200),
    ("DELETE", "/api/models/<model_id>"): ("owner", _throwaway(), 204),
    ("POST", "/api/models/<model_id>/reanalyze"): ("editor", _throwaway("/reanalyze"), 202),
    ("GET", "/api/models/<model_id>/ops"): ("viewer", _m("/ops"), 200),
    ("GET", "/api/models/<model_id>/graph"): ("viewer", _m("/graph"), 200),
    ("GET", "/api/models/<model_id>/options"): ("viewer", _m("/options"), 200),
    ("GET", "/api/models/<model_id>/ops/<opid:op_id>/options"): ("viewer", _op_options, 200),
    ("GET", "/api/models/<model_id>/download"): ("viewer", _m("/download"), 200),
    ("POST", "/api/models/<model_id>/solve"): ("viewer", lambda w, r: (
        f"/api/models/{w.model_for(r)}/solve", {"json": {"budget": {"fps": 1}}}), 200),
    ("GET", "/api/models/<model_id>/ops.csv"): ("viewer", _m("/ops.csv"), 200),
    ("GET", "/api/models/<model_id>/model-explorer"): ("viewer", _m("/model-explorer"), 200),
    ("GET", "/api/models/<model_id>/shares"): ("viewer", _m("/shares"), 200),
    ("POST", "/api/models/<model_id>/shares"): ("owner", _throwaway("/shares", json={
        "email": "other@example.com", "role": "viewer"}), 201),
    ("DELETE", "/api/models/<model_id>/shares/<share_id>"): ("owner", _share_to_revoke, 204),
    ("PUT", "/api/models/<model_id>/link"): ("owner", _throwaway("/link", json={"enabled": False}), 200),
    ("GET", "/api/models/<model_id>/analyses"): ("viewer", _m("/analyses"), 200),
    ("POST", "/api/models/<model_id>/analyses"): ("viewer", lambda w, r: (
        f"/api/models/{w.model_for(r)}/analyses", {"json": {"name": "mine", "state": {"model_wide": "fp16"}}}), 201),
    ("GET", "/api/models/<model_id>/analyses/<analysis_id>"): ("viewer", _analysis(), 200),
    ("PUT", "/api/models/<model_id>/analyses/<analysis_id>"): ("owner", _analysis(edit=True), 200),
    ("DELETE", "/api/models/<model_id>/analyses/<analysis_id>"): ("owner", _analysis(), 204),
    ("POST", "/api/models/<model_id>/analyses/<analysis_id>/fork"): ("viewer", _analysis("/fork"), 201),
    ("GET", "/api/models/<model_id>/analyses/<analysis_id>/lineage"): ("viewer", _analysis("/lineage"), 200),
    ("GET", "/api/models/<model_id>/analyses/<analysis_id>/diff"): ("viewer", _analysis("/diff"), 200),
    # the model against itself: the other model's access is the same as this one's
    ("GET", "/api/models/<model_id>/diff"): ("viewer", lambda w, r: (
        f"/api/models/{w.model_for(r)}/diff", {"query_string": {"other": w.model_for(r)}}), 200),
    ("GET", "/api/models/<model_id>/exports"): ("viewer", _m("/exports"), 200),
    ("GET", "/api/models/<model_id>/sources"): ("viewer", _m("/sources"), 200),
    # An ONNX model has no saved sources: a viewer is told so (404 no_source), others as for any model.
    ("GET", "/api/models/<model_id>/sources/<path:path>"): ("viewer", _m("/sources/model.py"), 404),
    ("POST", "/api/models/<model_id>/exports"): ("viewer", lambda w, r: (
        f"/api/models/{w.model_for(r)}/exports", {"json": {"state": {"model_wide": "fp16"}}}), 202),
    ("GET", "/api/models/<model_id>/exports/<export_id>"): ("viewer", _export(), 200),
    ("GET", "/api/models/<model_id>/exports/<export_id>/download"): ("viewer", _export("/download"), 200),
}


def expected(level: str, role: str, success: int) -> int:
    if level == "public":
        return success
    if role == "anonymous":
        return 401
    if level == "user":
        return success
    if level == "token_owner":
        return success if role == "owner" else 404
    if level in ("group_member", "group_admin"):
        if role not in ("owner", "member"):
            return 404
        return success if role == "owner" or level == "group_member" else 403
    if role not in ACCESS:
        return 404  # no access: the model does not exist for them
    return success if RANK[ACCESS[role]] >= RANK[level] else 403


def test_matrix_covers_every_route(world: World) -> None:
    served = {(m, r.rule) for r in world.app.url_map.iter_rules() if r.rule.startswith("/api/")
              for m in r.methods - {"HEAD", "OPTIONS"}}
    assert served == set(ENDPOINTS), f"missing: {served - set(ENDPOINTS)}; stale: {set(ENDPOINTS) - served}"


@pytest.mark.parametrize("endpoint", sorted(ENDPOINTS), ids=lambda e: f"{e[0]} {e[1]}")
def test_endpoint_by_role(world: World, endpoint: tuple[str, str]) -> None:
    method, _ = endpoint
    level, call, success = ENDPOINTS[endpoint]
    got = {}
    for role in ROLES:
        path, kwargs = call(world, role)
        r = world.client(role).open(path, method=method, **kwargs)
        got[role] = r.status_code
    want = {role: expected(level, role, success) for role in ROLES}
    assert got == want


def test_graph_columns_by_role(world: World) -> None:
    """?format=columns is another form of GET /graph: the same access rule (viewer and up)."""
    got = {role: world.client(role).get(f"/api/models/{world.model_for(role)}/graph?format=columns").status_code
           for role in ROLES}
    assert got == {role: expected("viewer", role, 200) for role in ROLES}
