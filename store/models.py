"""Tables of the metadata database. Large results live in the blob store; rows point to them."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
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
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

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
