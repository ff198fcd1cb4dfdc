"""Tables of the metadata database. Large results live in the blob store; rows point to them."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    # 96 random bits: the shareable URL is not guessable.
    return secrets.token_urlsafe(12)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Model(Base):
    __tablename__ = "models"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(255))
    filename: Mapped[str] = mapped_column(String(255))
    format: Mapped[str] = mapped_column(String(32))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    input_shapes: Mapped[dict[str, Any]] = mapped_column(default=dict)
    input_values: Mapped[dict[str, Any]] = mapped_column(default=dict)
    targets: Mapped[list[Any]] = mapped_column(default=list)
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # NULL only for models uploaded before accounts existed (see server/access.py).
    owner_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=True,
                                                 index=True)
    # Anyone signed in who has the link may view.
    link_sharing: Mapped[bool] = mapped_column(Boolean, default=False)

    owner: Mapped[User | None] = relationship()
    shares: Mapped[list[Share]] = relationship(back_populates="model", cascade="all, delete-orphan")
    analyses: Mapped[list[Analysis]] = relationship(back_populates="model", cascade="all, delete-orphan")
    jobs: Mapped[list[Job]] = relationship(
        back_populates="model", cascade="all, delete-orphan", order_by="Job.created_at"
    )
    artifacts: Mapped[list[Artifact]] = relationship(back_populates="model", cascade="all, delete-orphan")

    @property
    def job(self) -> Job | None:
        """The newest analysis job; its state is the model's state."""
        return self.jobs[-1] if self.jobs else None


class Job(Base):
    """One run of the analysis pipeline. The API reports this row, not Celery's result backend."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    model_id: Mapped[str] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued|running|ready|failed
    stage: Mapped[str] = mapped_column(String(16), default="parse")
    progress: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # [{"name": "parse", "status": "done", "seconds": 0.1}, ...]
    stages: Mapped[list[Any]] = mapped_column(default=list)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # The input plan it ran with (compiler.input_plan.InputPlan.to_json per input), written once the model
    # is parsed, so a failed analysis still says which shapes and values it tried.
    inputs: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # The lease of the worker running the job (worker/lease.py): a random token, renewed by a heartbeat.
    # A running job whose lease expired lost its worker; the reconciler re-queues or fails it.
    lease_token: Mapped[str | None] = mapped_column(String(32), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True, index=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)  # host:pid holding the lease
    # When the job was last sent to the broker (the reconciler re-sends queued jobs the broker lost).
    enqueued_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True, default=utcnow)

    model: Mapped[Model] = relationship(back_populates="jobs")


class Artifact(Base):
    """A stored result of one stage: (model, kind, target) -> blob key."""

    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("model_id", "kind", "target"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    model_id: Mapped[str] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(String(64), default="")
    key: Mapped[str] = mapped_column(String(512))
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    model: Mapped[Model] = relationship(back_populates="artifacts")


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    email: Mapped[str] = mapped_column(String(320), unique=True)  # stored lower-cased
    name: Mapped[str] = mapped_column(String(200))
    password_hash: Mapped[str] = mapped_column(String(255))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WebSession(Base):
    """A signed-in browser. The cookie holds a random token; only its hash is stored."""

    __tablename__ = "web_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    user: Mapped[User] = relationship()


class ApiToken(Base):
    """A personal token for the CLI and scripts (Authorization: Bearer ...). Only its hash is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))  # first characters, to recognise a token in a list
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    user: Mapped[User] = relationship()


class LoginAttempt(Base):
    """Recent sign-in attempts, for rate limiting across every web process."""

    __tablename__ = "login_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(320), index=True)
    ip: Mapped[str] = mapped_column(String(64), index=True)
    success: Mapped[bool] = mapped_column(Boolean)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


class RateCounter(Base):
    """A fixed-window counter (sign-in failures per e-mail or address, uploads per user), updated with one
    conditional UPDATE so parallel requests cannot overshoot the limit (server/limits.py)."""

    __tablename__ = "rate_counters"

    key: Mapped[str] = mapped_column(String(400), primary_key=True)  # "login-email:x", "upload:<user id>"
    window_start: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    count: Mapped[int] = mapped_column(Integer, default=0)
    amount: Mapped[int] = mapped_column(BigInteger, default=0)  # bytes, where the limit counts them


class Group(Base):
    __tablename__ = "groups"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200))
    created_by: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    members: Mapped[list[GroupMember]] = relationship(back_populates="group", cascade="all, delete-orphan")


class GroupMember(Base):
    __tablename__ = "group_members"
    __table_args__ = (UniqueConstraint("group_id", "user_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    group_id: Mapped[str] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16), default="member")  # member | admin

    group: Mapped[Group] = relationship(back_populates="members")
    user: Mapped[User] = relationship()


class Share(Base):
    """A model shared with one user or one group, as viewer or editor."""

    __tablename__ = "shares"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    model_id: Mapped[str] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=True)
    group_id: Mapped[str | None] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), nullable=True)
    role: Mapped[str] = mapped_column(String(16))  # viewer | editor
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    model: Mapped[Model] = relationship(back_populates="shares")
    user: Mapped[User | None] = relationship()
    group: Mapped[Group | None] = relationship()


class LinkVisit(Base):
    """A signed-in user opened a model through its shared link: it is listed under their "Shared with me" for as
    long as link sharing stays on."""

    __tablename__ = "link_visits"

    model_id: Mapped[str] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True)
    first_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Analysis(Base):
    """A named optimization state of a model: target, model-wide option, per-op overrides, notes."""

    __tablename__ = "analyses"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    model_id: Mapped[str] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("analyses.id", ondelete="SET NULL"), nullable=True,
                                                  index=True)
    name: Mapped[str] = mapped_column(String(200))
    state: Mapped[dict[str, Any]] = mapped_column(default=dict)
    notes: Mapped[str] = mapped_column(Text, default="")
    # Bumped on every save; a save that names an older version is refused (concurrent edit).
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    model: Mapped[Model] = relationship(back_populates="analyses")
    owner: Mapped[User] = relationship()


class Export(Base):
    """An optimized model file built from an optimization state, with its prediction beside what was measured."""

    __tablename__ = "exports"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    model_id: Mapped[str] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    requested_by: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    # the saved analysis it was exported from (listed on it); null for an unsaved state or a deleted analysis
    analysis_id: Mapped[str | None] = mapped_column(ForeignKey("analyses.id", ondelete="SET NULL"), nullable=True)
    state: Mapped[dict[str, Any]] = mapped_column(default=dict)  # target, model_wide, overrides
    status: Mapped[str] = mapped_column(String(16), default="queued")  # queued|running|ready|failed
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    filename: Mapped[str | None] = mapped_column(String(255), nullable=True)
    size_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # {"latency_ms", "size_bytes", "peak_memory_bytes", "memory_power_mw", "label"}
    predicted: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # {"latency_ms", "latency_p90_ms", "peak_memory_bytes", "size_bytes", "label"}; null where no runtime here
    measured: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    notes: Mapped[list[Any]] = mapped_column(default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
