"""Accounts, CSRF, tokens, rate limiting, sharing lists and analyses (save, conflict, fork, lineage),
each on SQLite and on PostgreSQL."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from edgescope.config import Settings
from store.db import session_scope
from store.models import Job, User
from tests.conftest import FAST_PROFILE, fresh_postgres_db, migrate, sign_up, token_client

PASSWORD = "correct horse battery"


@pytest.fixture(params=["sqlite", "postgres"])
def app(request, tmp_path: Path, calibration_dir: Path) -> Iterator:  # type: ignore[no-untyped-def,type-arg]
    from server.app import create_app

    with contextlib.ExitStack() as stack:
        extra = {"database_url": stack.enter_context(fresh_postgres_db(migrated=True))} if request.param == "postgres" else {}
        # FAST_PROFILE: the tests below need a ready model, not a precise profile of it.
        settings = Settings.from_env(env=FAST_PROFILE, data_dir=tmp_path / "data", calibration_dir=calibration_dir,
                                     **extra)
        migrate(settings.database_url)
        app = create_app(settings)
        yield app
        app.extensions["edgescope"].engine.dispose()


def test_signup_hashes_password_and_first_user_is_admin(app) -> None:  # type: ignore[no-untyped-def]
    first = sign_up(app.test_client(), "Ada@Example.com")
    second = sign_up(app.test_client(), "bob@example.com")
    assert first["user"]["email"] == "ada@example.com" and first["user"]["is_admin"] is True
    assert second["user"]["is_admin"] is False
    with session_scope(app.extensions["edgescope"].sessions) as s:
        h = s.scalar(select(User.password_hash).where(User.email == "ada@example.com"))
    assert h.startswith("$argon2") and PASSWORD not in h
    c = app.test_client()
    r = c.post("/api/auth/signup", json={"email": "ada@example.com", "password": PASSWORD})
    assert r.status_code == 409
    r = c.post("/api/auth/signup", json={"email": "eve@example.com", "password": "short"})
    assert r.status_code == 400 and "at least" in r.get_json()["error"]
    r = c.post("/api/auth/signup", data={"email": "eve@example.com", "password": PASSWORD})
    assert r.status_code == 415  # form posts (what a cross-site form sends) are refused


def test_signup_can_be_closed(tmp_path: Path, calibration_dir: Path) -> None:
    from server.app import create_app

    settings = Settings.from_env(env={"EDGESCOPE_ALLOW_SIGNUP": "false"}, data_dir=tmp_path, calibration_dir=calibration_dir)
    migrate(settings.database_url)
    r = create_app(settings).test_client().post("/api/auth/signup", json={"email": "a@b.co", "password": PASSWORD})
    assert r.status_code == 403 and "edgescope users create" in r.get_json()["error"]


def test_session_cookie_csrf_and_logout(app) -> None:  # type: ignore[no-untyped-def]
    c = app.test_client()
    csrf = sign_up(c, "ada@example.com")["csrf_token"]
    cookie = c.get_cookie("edgescope_session")
    assert cookie is not None and cookie.http_only and cookie.same_site == "Lax"
    assert c.get("/api/auth/me").get_json()["csrf_token"] == csrf
    # A state change on the cookie without the CSRF header is refused, with a wrong one too.
    assert c.post("/api/groups", json={"name": "t"}).status_code == 403
    assert c.post("/api/groups", json={"name": "t"}, headers={"X-CSRF-Token": "guess"}).status_code == 403
    assert c.post("/api/groups", json={"name": "t"}, headers={"X-CSRF-Token": csrf}).status_code == 201
    assert c.post("/api/auth/logout", headers={"X-CSRF-Token": csrf}).status_code == 204
    assert c.get("/api/auth/me").status_code == 401
    # The old cookie value is dead on the server too, not just deleted in this browser.
    c.set_cookie("edgescope_session", cookie.value)
    assert c.get("/api/auth/me").status_code == 401


def test_revoked_token_stops_working(app) -> None:  # type: ignore[no-untyped-def]
    c = app.test_client()
    csrf = sign_up(c, "ada@example.com")["csrf_token"]
    tok = c.post("/api/tokens", json={"name": "ci"}, headers={"X-CSRF-Token": csrf}).get_json()
    bearer = {"Authorization": f"Bearer {tok['token']}"}
    assert c.get("/api/auth/me", headers=bearer).status_code == 200
    listed = c.get("/api/tokens").get_json()["tokens"]
    assert [t["prefix"] for t in listed] == [tok["token"][:10]] and "token" not in listed[0]
    assert c.delete(f"/api/tokens/{tok['id']}", headers={"X-CSRF-Token": csrf}).status_code == 204
    r = c.get("/api/models", headers=bearer)
    assert r.status_code == 401 and "revoked" in r.get_json()["error"]


def test_login_is_rate_limited(app) -> None:  # type: ignore[no-untyped-def]
    sign_up(app.test_client(), "ada@example.com")
    c = app.test_client()
    for _ in range(5):
        assert c.post("/api/auth/login", json={"email": "ada@example.com", "password": "wrong!"}).status_code == 401
    r = c.post("/api/auth/login", json={"email": "ada@example.com", "password": PASSWORD})
    assert r.status_code == 429  # even the right password waits out the window
    r = c.post("/api/auth/login", json={"email": "bob@example.com", "password": "wrong!"})
    assert r.status_code == 401  # other accounts are not locked by it


def _authed(app, email: str):  # type: ignore[no-untyped-def]
    c = app.test_client()
    csrf = sign_up(c, email)["csrf_token"]
    c.environ_base["HTTP_X_CSRF_TOKEN"] = csrf
    return c


def _ready_model(app, client, zoo) -> str:  # type: ignore[no-untyped-def]
    from worker.jobs import run_job

    with open(zoo.path("tiny_cnn"), "rb") as f:
        r = client.post("/api/models", data={"file": (f, "t.onnx"), "targets": '["ort-cpu/host"]'},
                        content_type="multipart/form-data")
    assert r.status_code == 201, r.get_json()
    mid = r.get_json()["id"]
    services = app.extensions["edgescope"]
    with session_scope(services.sessions) as s:
        job_id = s.scalar(select(Job.id).where(Job.model_id == mid))
    assert run_job(services, job_id) == "ready"
    return mid


def test_sharing_lists_and_link(app, zoo) -> None:  # type: ignore[no-untyped-def]
    a, b, c = _authed(app, "a@example.com"), _authed(app, "b@example.com"), _authed(app, "c@example.com")
    mid = _ready_model(app, a, zoo)
    assert [m["id"] for m in a.get("/api/models").get_json()["models"]] == [mid]
    assert b.get("/api/models?scope=shared").get_json()["models"] == []
    assert a.post(f"/api/models/{mid}/shares", json={"email": "b@example.com", "role": "viewer"}).status_code == 201
    shared = b.get("/api/models?scope=shared").get_json()["models"]
    assert [m["id"] for m in shared] == [mid] and shared[0]["your_role"] == "viewer"
    assert b.get(f"/api/models/{mid}").get_json()["your_role"] == "viewer"
    assert b.get("/api/models").get_json()["models"] == []  # "mine" stays mine
    assert c.get(f"/api/models/{mid}").status_code == 404
    assert a.put(f"/api/models/{mid}/link", json={"enabled": True}).status_code == 200
    assert c.get(f"/api/models/{mid}/ops").status_code == 200
    assert c.post(f"/api/models/{mid}/shares", json={"email": "c@example.com"}).status_code == 403
    assert a.put(f"/api/models/{mid}/link", json={"enabled": False}).status_code == 200
    assert c.get(f"/api/models/{mid}").status_code == 404
    r = a.post(f"/api/models/{mid}/shares", json={"email": "nobody@example.com"})
    assert r.status_code == 404 and "sign up" in r.get_json()["error"]


def test_analyses_save_conflict_fork_lineage(app, zoo) -> None:  # type: ignore[no-untyped-def]
    a, b = _authed(app, "a@example.com"), _authed(app, "b@example.com")
    mid = _ready_model(app, a, zoo)
    a.post(f"/api/models/{mid}/shares", json={"email": "b@example.com", "role": "viewer"})
    op = a.get(f"/api/models/{mid}/ops").get_json()["ops"][0]["id"]
    state = {"target": "ort-cpu/host", "model_wide": "int8-static", "overrides": {op: "fp32/fp32/fp16/0"}}
    r = a.post(f"/api/models/{mid}/analyses", json={"name": "int8 convs", "state": state, "notes": "first try"})
    assert r.status_code == 201, r.get_json()
    an = r.get_json()
    assert an["state"] == state and an["url"] == f"/m/{mid}/a/{an['id']}" and an["version"] == 1

    # B sees it read-only, cannot save over it, forks it and saves the fork.
    seen = b.get(f"/api/models/{mid}/analyses/{an['id']}").get_json()
    assert seen["state"] == state and seen["can_edit"] is False
    r = b.put(f"/api/models/{mid}/analyses/{an['id']}", json={"version": 1, "name": "mine now"})
    assert r.status_code == 403 and "fork" in r.get_json()["error"]
    fork = b.post(f"/api/models/{mid}/analyses/{an['id']}/fork", json={"name": "b's try"}).get_json()
    assert fork["parent_id"] == an["id"] and fork["state"] == state and fork["owner"]["email"] == "b@example.com"
    r = b.put(f"/api/models/{mid}/analyses/{fork['id']}",
              json={"version": 1, "state": {**state, "model_wide": "fp16"}})
    assert r.status_code == 200 and r.get_json()["version"] == 2

    # Two saves of the same version: the second is refused, not silently lost.
    assert a.put(f"/api/models/{mid}/analyses/{an['id']}", json={"version": 1, "notes": "v2"}).status_code == 200
    r = a.put(f"/api/models/{mid}/analyses/{an['id']}", json={"version": 1, "notes": "stale"})
    assert r.status_code == 409
    assert a.get(f"/api/models/{mid}/analyses/{an['id']}").get_json()["notes"] == "v2"

    lineage = a.get(f"/api/models/{mid}/analyses/{an['id']}/lineage").get_json()
    assert lineage["parents"] == [] and [f["id"] for f in lineage["analysis"]["forks"]] == [fork["id"]]
    up = a.get(f"/api/models/{mid}/analyses/{fork['id']}/lineage").get_json()
    assert [p["id"] for p in up["parents"]] == [an["id"]]
    names = {x["name"] for x in a.get(f"/api/models/{mid}/analyses").get_json()["analyses"]}
    assert names == {"int8 convs", "b's try"}


BAD_STATES = [
    ({"model_wide": "int9"}, "int9"),
    ({"target": "coreml/apple-a17"}, "not one of this model's"),
    ({"overrides": {"no-such-op": "fp32/fp32/fp32/0"}}, "No op"),
    ({"overrides": {"x": "fp32/int4/fp32/0"}}, "not an activation format"),
    ("not an object", "must be an object"),
]


def test_bad_analysis_state(app, zoo) -> None:  # type: ignore[no-untyped-def]
    a = _authed(app, "a@example.com")
    mid = _ready_model(app, a, zoo)
    for state, message in BAD_STATES:
        r = a.post(f"/api/models/{mid}/analyses", json={"name": "x", "state": state})
        assert r.status_code == 400 and message in r.get_json()["error"], (state, r.get_json())
    assert a.get(f"/api/models/{mid}/analyses").get_json()["analyses"] == []


def test_group_admins_promote_and_demote_and_the_last_admin_stays(app) -> None:  # type: ignore[no-untyped-def]
    a, b = token_client(app, "a@example.com"), token_client(app, "b@example.com")
    gid = a.post("/api/groups", json={"name": "team"}).get_json()["id"]
    members = a.post(f"/api/groups/{gid}/members", json={"email": "b@example.com"}).get_json()["members"]
    ids = {m["email"]: m["id"] for m in members}
    # A plain member may not change roles; an admin may.
    assert b.patch(f"/api/groups/{gid}/members/{ids['b@example.com']}", json={"role": "admin"}).status_code == 403
    r = a.patch(f"/api/groups/{gid}/members/{ids['b@example.com']}", json={"role": "owner"})
    assert r.status_code == 400 and "member, admin" in r.get_json()["error"]
    r = a.patch(f"/api/groups/{gid}/members/{ids['b@example.com']}", json={"role": "admin"})
    assert r.status_code == 200
    assert {m["email"]: m["role"] for m in r.get_json()["members"]} == {"a@example.com": "admin", "b@example.com": "admin"}
    # The new admin can now demote the first; then b is the last admin and can neither step down nor leave.
    assert b.patch(f"/api/groups/{gid}/members/{ids['a@example.com']}", json={"role": "member"}).status_code == 200
    r = b.patch(f"/api/groups/{gid}/members/{ids['b@example.com']}", json={"role": "member"})
    assert r.status_code == 409 and "last admin" in r.get_json()["error"]
    assert b.delete(f"/api/groups/{gid}/members/{ids['b@example.com']}").status_code == 409
    assert a.post(f"/api/groups/{gid}/members", json={"email": "a@example.com"}).status_code == 403
    assert b.delete(f"/api/groups/{gid}/members/{ids['a@example.com']}").status_code == 204
    assert [m["email"] for m in b.get(f"/api/groups/{gid}").get_json()["members"]] == ["b@example.com"]
