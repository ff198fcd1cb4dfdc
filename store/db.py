"""Engine and session handling for the metadata database (SQLite or PostgreSQL, by URL)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import NullPool
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


class SchemaOutOfDate(RuntimeError):
    """The database is not at the newest migration; the message says what to run."""


def _ensure_sqlite_dir(url: str) -> None:
    path = url.split("sqlite:///", 1)[-1] if url.startswith("sqlite") else ""
    if path and path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)


SQLITE_BUSY_TIMEOUT_S = 30


def make_engine(url: str, pooled: bool = True) -> Engine:
    """`pooled=False` opens a connection per session (NullPool): for a thread in a process that forks
    Celery pool children, which must not inherit open database connections."""
    extra: dict[str, Any] = {} if pooled else {"poolclass": NullPool}
    if url.startswith("sqlite"):
        _ensure_sqlite_dir(url)
        # Web threads and the embedded worker thread share the file. WAL lets readers run beside the one
        # writer; the busy timeout makes a writer wait for the lock instead of failing ("database is
        # locked"), and writers keep their transactions short (results are blobs, written before).
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S},
                               **extra)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
            cur.execute("PRAGMA synchronous=NORMAL")  # durable at each checkpoint; WAL keeps it consistent
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True, **extra)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """Commit on success, roll back on error, always close."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def alembic_config(url: str):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    from alembic import command

    _ensure_sqlite_dir(url)
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    from alembic import command

    command.downgrade(alembic_config(url), revision)


def check_at_head(engine: Engine) -> None:
    """Refuse to run on a schema older (or newer) than this code's migrations."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config(str(engine.url)))
    heads = set(script.get_heads())
    with engine.connect() as conn:
        current = set(MigrationContext.configure(conn).get_current_heads())
    if current != heads:
        where = engine.url.render_as_string(hide_password=True)
        now = ", ".join(sorted(current)) or "empty"
        raise SchemaOutOfDate(
            f"The database at {where} is at revision {now}, this version of Edgescope needs "
            f"{', '.join(sorted(heads))}. Run: edgescope db upgrade"
        )
