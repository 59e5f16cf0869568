"""Initial schema: visitor sessions and shared scenarios.

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
        "visitor_session",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_seen", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "scenario",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("explainer", sa.String(40), nullable=False, index=True),
        sa.Column("params_json", sa.Text(), nullable=False),
        sa.Column("sim_version", sa.String(40), nullable=False),
        sa.Column("title", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("forked_from", sa.String(32), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("scenario")
    op.drop_table("visitor_session")
