"""Walkthrough progress per visitor, and the owner session of each saved scenario.

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
        "progress",
        sa.Column(
            "session_id", sa.String(64), sa.ForeignKey("visitor_session.id"), primary_key=True
        ),
        sa.Column("walkthrough", sa.String(200), primary_key=True),
        sa.Column("step", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("title", sa.String(200), nullable=False, server_default=""),
        sa.Column("url", sa.String(400), nullable=False, server_default=""),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    with op.batch_alter_table("scenario") as batch:
        batch.add_column(sa.Column("session_id", sa.String(64), nullable=True))
        batch.create_index("ix_scenario_session_id", ["session_id"])


def downgrade() -> None:
    with op.batch_alter_table("scenario") as batch:
        batch.drop_index("ix_scenario_session_id")
        batch.drop_column("session_id")
    op.drop_table("progress")
