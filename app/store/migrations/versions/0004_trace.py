"""Content-addressed trace store shared by every app worker and restart.

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
        "trace",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("explainer", sa.String(40), nullable=False),
        sa.Column("sim_version", sa.String(40), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("trace")
