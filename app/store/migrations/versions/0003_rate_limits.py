"""Hourly counters for share quotas, and an index to find idle visitor sessions.

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


def upgrade() -> None:
    op.create_table(
        "rate_limit",
        sa.Column("key", sa.String(80), primary_key=True),
        sa.Column("window_start", sa.BigInteger(), primary_key=True),
        sa.Column("hits", sa.Integer(), nullable=False, server_default="0"),
    )
    op.create_index("ix_visitor_session_last_seen", "visitor_session", ["last_seen"])


def downgrade() -> None:
    op.drop_index("ix_visitor_session_last_seen", table_name="visitor_session")
    op.drop_table("rate_limit")
