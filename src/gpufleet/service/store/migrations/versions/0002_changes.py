"""The change log (``changes``) the scheduler leader reads; where a running job runs; how often a
job was evicted and the work that cost.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "changes",
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("target", sa.String(512), nullable=False),
        sa.Column("data", sa.JSON),
    )
    with op.batch_alter_table("jobs") as b:
        b.add_column(sa.Column("placement", sa.JSON))
        b.add_column(sa.Column("starts", sa.Integer, nullable=False, server_default="0"))
        b.add_column(sa.Column("preemptions", sa.Integer, nullable=False, server_default="0"))
        b.add_column(sa.Column("requeues", sa.Integer, nullable=False, server_default="0"))
        b.add_column(sa.Column("lost_gpu_s", sa.Float, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as b:
        for c in ("lost_gpu_s", "requeues", "preemptions"):
            b.drop_column(c)
        b.drop_column("starts")
        b.drop_column("placement")
    op.drop_table("changes")
