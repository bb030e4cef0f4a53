"""Idempotency keys are per tenant: unique on (tenant, idempotency_key), no longer on the key
alone (one tenant's key found another tenant's job, and its id in the 422).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

#: SQLite keeps 0001's constraint unnamed; batch mode reflects it under this name so it can be
#: dropped (PostgreSQL named it itself, e.g. jobs_idempotency_key_key: the inspector says).
CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def _key_constraint(columns: list[str], default: str) -> str:
    found = [u["name"] for u in sa.inspect(op.get_bind()).get_unique_constraints("jobs")
             if u["column_names"] == columns]
    return found[0] or default if found else default


def upgrade() -> None:
    old = _key_constraint(["idempotency_key"], "uq_jobs_idempotency_key")
    with op.batch_alter_table("jobs", naming_convention=CONVENTION) as b:
        b.drop_constraint(old, type_="unique")
        b.create_unique_constraint("uq_jobs_tenant_key", ["tenant", "idempotency_key"])


def downgrade() -> None:
    with op.batch_alter_table("jobs", naming_convention=CONVENTION) as b:
        b.drop_constraint("uq_jobs_tenant_key", type_="unique")
        b.create_unique_constraint("uq_jobs_idempotency_key", ["idempotency_key"])
