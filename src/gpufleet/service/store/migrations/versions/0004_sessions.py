"""Dashboard sessions: the cookie carries a random id, the store its SHA-256, the token id it
stands for and its expiry (the cookie no longer holds the API token itself).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("token_id", sa.String(32), nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_index("ix_sessions_token_id", "sessions", ["token_id"])


def downgrade() -> None:
    op.drop_index("ix_sessions_token_id", "sessions")
    op.drop_table("sessions")
