"""The first schema: jobs, tokens, audit, node_state, quota, meta.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(256), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("tenant", sa.String(256), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("gpus", sa.Integer, nullable=False),
        sa.Column("body", sa.JSON, nullable=False),
        sa.Column("submit_time", sa.Float, nullable=False),
        sa.Column("start_time", sa.Float),
        sa.Column("end_time", sa.Float),
        sa.Column("idempotency_key", sa.String(256), unique=True),
        sa.Column("body_hash", sa.String(64), nullable=False),
        sa.Column("submitted_by", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_jobs_state", "jobs", ["state"])
    op.create_index("ix_jobs_tenant", "jobs", ["tenant"])
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("secret_hash", sa.Text, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("tenant", sa.String(256)),
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float),
        sa.Column("revoked_at", sa.Float),
    )
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("actor", sa.String(64), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("target", sa.String(512), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("before", sa.JSON),
        sa.Column("after", sa.JSON),
    )
    op.create_index("ix_audit_at", "audit", ["at"])
    op.create_table(
        "node_state",
        sa.Column("node", sa.String(256), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("at", sa.Float, nullable=False),
    )
    op.create_table(
        "quota",
        sa.Column("tenant", sa.String(256), primary_key=True),
        sa.Column("flavor", sa.String(64), primary_key=True),
        sa.Column("nominal", sa.Integer, nullable=False),
        sa.Column("borrowing_limit", sa.Integer),
        sa.Column("lending_limit", sa.Integer),
    )
    op.create_table(
        "meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )


def downgrade() -> None:
    for t in ("meta", "quota", "node_state", "audit", "tokens"):
        op.drop_table(t)
    op.drop_index("ix_jobs_tenant", "jobs")
    op.drop_index("ix_jobs_state", "jobs")
    op.drop_table("jobs")
