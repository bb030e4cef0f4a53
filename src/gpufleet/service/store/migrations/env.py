"""Alembic's environment: run on the connection the store hands over (no URL of its own)."""

from __future__ import annotations

from alembic import context

from gpufleet.service.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
