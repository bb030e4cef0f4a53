"""The service's store: SQLAlchemy 2 over SQLite (WAL, the default) or PostgreSQL (psycopg 3)."""

from gpufleet.service.store.db import Store, StoreError

__all__ = ["Store", "StoreError"]
