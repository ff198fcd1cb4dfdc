"""Sign up, sign in (rate-limited), sign out, who am I, and personal API tokens."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from flask import Blueprint, jsonify, make_response, request
from flask.typing import ResponseReturnValue
from sqlalchemy import delete, func, select

from store.db import session_scope
from store.models import ApiToken, LoginAttempt, User, WebSession

from ..limits import Limit, give_back, take
from ..auth import COOKIE, SESSION_DAYS, new_api_token, require_user, sha256, start_session
from .common import iso, json_body, services
from .errors import ApiError

bp = Blueprint("auth", __name__, url_prefix="/api")

HASHER = PasswordHasher()
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
MIN_PASSWORD = 10
# Failed sign-ins allowed per window, per e-mail address and per client address.
WINDOW = timedelta(minutes=15)
MAX_FAILS_PER_EMAIL = 5
MAX_FAILS_PER_IP = 30


def _text(data: dict[str, Any], key: str, max_len: int = 200, required: bool = True) -> str:
    v = data.get(key, "")
    if not isinstance(v, str) or (required and not v.strip()) or len(v) > max_len:
        raise ApiError(400, "bad_field", f"'{key}' must be a non-empty string of at most {max_len} characters.")
    return v.strip()


def user_json(u: User) -> dict[str, Any]:
    return {"id": u.id, "email": u.email, "name": u.name, "is_admin": u.is_admin}


def create_user(s: Any, email: str, password: str, name: str) -> User:
    email = email.strip().lower()
    if not EMAIL.match(email):
        raise ApiError(400, "bad_email", f"'{email}' is not an e-mail address.")
    if len(password) < MIN_PASSWORD:
        raise ApiError(400, "weak_password", f"Use a password of at least {MIN_PASSWORD} characters.")
    if s.scalar(select(User).where(User.email == email)) is not None:
        raise ApiError(409, "email_taken", "An account with this e-mail address exists; sign in instead.")
    first = s.scalar(select(func.count()).select_from(User)) == 0
    u = User(email=email, name=name or email.split("@")[0], password_hash=HASHER.hash(password), is_admin=first)
    s.add(u)
    s.flush()
    return u


def _with_session(body: dict[str, Any], user: User, s: Any, status: int) -> ResponseReturnValue:
    raw, ws = start_session(user)
    s.add(ws)
    resp = make_response(jsonify({**body, "csrf_token": ws.csrf_token}), status)
    resp.set_cookie(COOKIE, raw, max_age=SESSION_DAYS * 86400, httponly=True, samesite="Lax",
                    secure=services().settings.secure_cookies, path="/")
    return resp


@bp.post("/auth/signup")
def signup() -> ResponseReturnValue:
    if not services().settings.allow_signup:
        raise ApiError(403, "signup_closed", "Sign-up is closed on this server; ask an admin for an account "
                                             "(edgescope users create).")
    data = json_body()
    with session_scope(services().sessions) as s:
        u = create_user(s, _text(data, "email", 320), _text(data, "password", 1000), _text(data, "name", 200, False))
        return _with_session({"user": user_json(u)}, u, s, 201)


def _client_ip() -> str:
    return (request.remote_addr or "unknown")[:64]


def check_password(s: Any, email: str, password: str) -> User:
    """The user, or 401; too many recent failures for this e-mail or address give 429.

    Each attempt first reserves a slot in both counters (server/limits.py, atomic), so parallel guesses
    cannot all pass the check before any failure is recorded; a successful sign-in returns its slots."""
    email, ip, now = email.strip().lower(), _client_ip(), datetime.now(UTC)
    sessions = services().sessions
    by_email = Limit(f"login-email:{email}", MAX_FAILS_PER_EMAIL, WINDOW)
    by_ip = Limit(f"login-ip:{ip}", MAX_FAILS_PER_IP, WINDOW)
    if not take(sessions, by_email):
        raise ApiError(429, "rate_limited", f"Too many failed sign-ins; wait {WINDOW.seconds // 60} minutes.")
    if not take(sessions, by_ip):
        give_back(sessions, by_email.key)
        raise ApiError(429, "rate_limited", f"Too many failed sign-ins; wait {WINDOW.seconds // 60} minutes.")
    u = s.scalar(select(User).where(User.email == email))
    ok = False
    try:
        # Verify against a real hash even for unknown e-mails, so timing does not tell them apart.
        ok = HASHER.verify(u.password_hash if u else _DUMMY_HASH, password) and u is not None
    except (VerificationError, InvalidHashError):
        ok = False
    if ok:  # before this session writes: on SQLite the counters' own sessions would wait for its lock
        give_back(sessions, by_email.key)
        give_back(sessions, by_ip.key)
    s.add(LoginAttempt(email=email, ip=ip, success=ok, at=now))  # the record of attempts; limits use the counters
    s.execute(delete(LoginAttempt).where(LoginAttempt.at < now - WINDOW * 4))  # keep the table small
    if not ok:
        s.commit()  # the record stays even though this request fails
        raise ApiError(401, "bad_credentials", "Wrong e-mail or password.")
    return u  # type: ignore[return-value]


_DUMMY_HASH = HASHER.hash("not the password of anyone")


@bp.post("/auth/login")
def login() -> ResponseReturnValue:
    data = json_body()
    with session_scope(services().sessions) as s:
        u = check_password(s, _text(data, "email", 320), _text(data, "password", 1000))
        return _with_session({"user": user_json(u)}, u, s, 200)


@bp.post("/auth/logout")
def logout() -> ResponseReturnValue:
    raw = request.cookies.get(COOKIE)
    if raw:
        with session_scope(services().sessions) as s:
            s.execute(delete(WebSession).where(WebSession.token_hash == sha256(raw)))
    resp = make_response("", 204)
    resp.delete_cookie(COOKIE, path="/")
    return resp


@bp.get("/auth/me")
def me() -> ResponseReturnValue:
    user = require_user()
    with session_scope(services().sessions) as s:
        u = s.get(User, user.id)
        return jsonify(user=user_json(u), csrf_token=user.csrf_token,
                       allow_signup=services().settings.allow_signup)


@bp.post("/auth/token")
def token_with_password() -> ResponseReturnValue:
    """For `edgescope login`: e-mail + password -> a new personal API token (shown once)."""
    data = json_body()
    with session_scope(services().sessions) as s:
        u = check_password(s, _text(data, "email", 320), _text(data, "password", 1000))
        return jsonify(_create_token(s, u.id, _text(data, "name", 200, False) or "edgescope CLI")), 201


def _create_token(s: Any, user_id: str, name: str) -> dict[str, Any]:
    raw, digest = new_api_token()
    tok = ApiToken(user_id=user_id, name=name, token_hash=digest, prefix=raw[:10])
    s.add(tok)
    s.flush()
    return {**token_json(tok), "token": raw}


def token_json(t: ApiToken) -> dict[str, Any]:
    return {"id": t.id, "name": t.name, "prefix": t.prefix, "created_at": iso(t.created_at),
            "last_used_at": iso(t.last_used_at), "revoked": t.revoked_at is not None}


@bp.get("/tokens")
def list_tokens() -> ResponseReturnValue:
    user = require_user()
    with session_scope(services().sessions) as s:
        rows = s.scalars(select(ApiToken).where(ApiToken.user_id == user.id).order_by(ApiToken.created_at))
        return jsonify(tokens=[token_json(t) for t in rows])


@bp.post("/tokens")
def create_token() -> ResponseReturnValue:
    user = require_user()
    data = json_body()
    with session_scope(services().sessions) as s:
        return jsonify(_create_token(s, user.id, _text(data, "name"))), 201


@bp.delete("/tokens/<token_id>")
def revoke_token(token_id: str) -> ResponseReturnValue:
    user = require_user()
    with session_scope(services().sessions) as s:
        t = s.get(ApiToken, token_id)
        if t is None or t.user_id != user.id:
            raise ApiError(404, "not_found", "No such token.")
        t.revoked_at = datetime.now(UTC)
    return "", 204
