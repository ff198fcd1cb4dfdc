"""Atomic fixed-window counters in the database: sign-in failures per e-mail and per address, uploads per user.

`take` reserves one unit (and `amount`, e.g. bytes) with a single conditional UPDATE that only succeeds
while the window's totals stay within the limits. Both SQLite (one writer at a time) and PostgreSQL (row
lock, the WHERE re-checked after the wait) apply it atomically, so 20 parallel requests against a limit
of 5 get exactly 5 through, in every web process alike. A window opens with its first use and lasts
`window`; then the counter starts again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import case, insert, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from store.db import session_scope
from store.models import RateCounter


@dataclass(frozen=True)
class Limit:
    key: str
    max_count: int  # 0 = unlimited
    window: timedelta
    max_amount: int = 0  # 0 = unlimited


def _now() -> datetime:
    return datetime.now(UTC)


def take(sessions: sessionmaker[Session], limit: Limit, amount: int = 0) -> bool:
    """Reserve one unit and `amount`; False (nothing reserved) when that would pass a limit."""
    count_cap = limit.max_count or 2**62
    amount_cap = limit.max_amount or 2**62
    if amount > amount_cap:
        return False
    for _ in range(3):  # a concurrent first insert of the same key makes us update instead
        now = _now()
        expired = RateCounter.window_start < now - limit.window
        with session_scope(sessions) as s:
            res = s.execute(
                update(RateCounter)
                .where(RateCounter.key == limit.key,
                       expired | ((RateCounter.count + 1 <= count_cap) & (RateCounter.amount + amount <= amount_cap)))
                .values(count=case((expired, 1), else_=RateCounter.count + 1),
                        amount=case((expired, amount), else_=RateCounter.amount + amount),
                        window_start=case((expired, now), else_=RateCounter.window_start)))
            if res.rowcount == 1:
                return True
            if s.get(RateCounter, limit.key) is not None:
                return False
        try:
            with session_scope(sessions) as s:
                s.execute(insert(RateCounter).values(key=limit.key, window_start=now, count=1, amount=amount))
            return True
        except IntegrityError:
            continue
    return False


def give_back(sessions: sessionmaker[Session], key: str, amount: int = 0, count: int = 1) -> None:
    """Return (part of) a reservation that should not count: a sign-in that succeeded (`count=1`), bytes
    reserved but never received (`count=0`)."""
    with session_scope(sessions) as s:
        s.execute(update(RateCounter).where(RateCounter.key == key)
                  .values(count=case((RateCounter.count > count, RateCounter.count - count), else_=0),
                          amount=case((RateCounter.amount > amount, RateCounter.amount - amount), else_=0)))
