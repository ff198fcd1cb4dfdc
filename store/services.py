"""The handles every process needs to reach stored state, built once from Settings."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from edgescope.config import Settings

from .blobs import BlobStore, open_blob_store
from .db import make_engine, make_sessionmaker


@dataclass
class Services:
    settings: Settings
    pooled: bool = True  # False: a connection per session (see store.db.make_engine)

    @cached_property
    def engine(self) -> Engine:
        return make_engine(self.settings.database_url, self.pooled)

    @cached_property
    def sessions(self) -> sessionmaker[Session]:
        return make_sessionmaker(self.engine)

    @cached_property
    def blobs(self) -> BlobStore:
        return open_blob_store(self.settings.blob_url, self.settings.s3_endpoint_url)
