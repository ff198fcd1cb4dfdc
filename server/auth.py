"""Who is asking: a browser session (cookie) or a personal API token (Bearer), and CSRF checks.

Session cookies hold a random token whose hash is a row in `web_sessions`, so signing out ends
the session on the server too. A cookie-authenticated request that changes state must echo the
session's CSRF token in `X-CSRF-Token`; token-authenticated requests carry no ambient
credentials and need none. Unauthenticated state changes (sign-up, sign-in) accept JSON only,
which a cross-site form cannot send.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from flask import g, request
from sqlalchemy import select

from store.db import session_scope
from store.models import ApiToken, User, WebSession

from .api.common import services
from .api.errors import ApiError

COOKIE = "edgescope_session"
SESSION_DAYS = 14
LAST_USED_RESOLUTION = timedelta(minutes=1)  # how precisely a token's last use is recorded
TOKEN_PREFIX = "es_"
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}
# Endpoints that take a password: JSON only, so no cross-site form can post to them.
CREDENTIAL_ENDPOINTS = {"/api/auth/signup", "/api/auth/login", "/api/auth/token"}


@dataclass(frozen=True)
class Principal:
    id: str
    email: str
    name: str
    is_admin: bool
    via: str  # "session" | "token"
    csrf_token: str | None = None


def sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(dt: datetime) -> datetime:
    # SQLite hands back naive datetimes; they were written in UTC.
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _from_token(raw: str) -> Principal:
    with session_scope(services().sessions) as s:
        tok = s.scalar(select(ApiToken).where(ApiToken.token_hash == sha256(raw)))
        if tok is None or tok.revoked_at is not None:
            raise ApiError(401, "bad_token", "The API token is unknown or revoked; create a new one with "
                                             "`edgescope login`.")
        # At most one write a minute per token: a write per request would queue every reader behind
        # SQLite's single writer (and a worker's heartbeat behind them).
        if tok.last_used_at is None or _aware(tok.last_used_at) < _now() - LAST_USED_RESOLUTION:
            tok.last_used_at = _now()
        u = tok.user
        return Principal(u.id, u.email, u.name, u.is_admin, "token")


def _from_cookie(raw: str) -> Principal | None:
    with session_scope(services().sessions) as s:
        ws = s.get(WebSession, sha256(raw))
        if ws is None or _aware(ws.expires_at) < _now():
            return None
        u = ws.user
        return Principal(u.id, u.email, u.name, u.is_admin, "session", ws.csrf_token)


def current_user() -> Principal | None:
    return g.get("user")


def require_user() -> Principal:
    user = current_user()
    if user is None:
        raise ApiError(401, "sign_in_required", "Sign in first (or send an API token as 'Authorization: Bearer ...').")
    return user


def authenticate() -> None:
    """before_request: resolve the caller and enforce CSRF on cookie-authenticated state changes."""
    g.user = None
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        g.user = _from_token(header.removeprefix("Bearer ").strip())
        return
    raw = request.cookies.get(COOKIE)
    if raw:
        g.user = _from_cookie(raw)
    if request.method in UNSAFE and request.path.startswith("/api/"):
        if g.user is not None:
            sent = request.headers.get("X-CSRF-Token", "")
            if not hmac.compare_digest(sent, g.user.csrf_token or ""):
                raise ApiError(403, "csrf", "Missing or wrong X-CSRF-Token header (GET /api/auth/me gives it).")
        elif request.path in CREDENTIAL_ENDPOINTS and not request.is_json:
            raise ApiError(415, "json_required", "Send this request as JSON (Content-Type: application/json).")


def start_session(user: User) -> tuple[str, WebSession]:
    raw = secrets.token_urlsafe(32)
    ws = WebSession(token_hash=sha256(raw), user_id=user.id, csrf_token=secrets.token_urlsafe(24),
                    expires_at=_now() + timedelta(days=SESSION_DAYS))
    return raw, ws


def new_api_token() -> tuple[str, str]:
    """-> (token shown once to the user, its hash to store)."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(30)
    return raw, sha256(raw)
