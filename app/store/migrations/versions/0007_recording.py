"""Recordings and captures users upload (``/recordings``, ``/r/{id}``).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "recording",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("title", sa.String(200), nullable=False, server_default=""),
        sa.Column("session_id", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("original", sa.LargeBinary(), nullable=False),
        sa.Column("parsed", sa.LargeBinary(), nullable=False),
    )
    op.create_index("ix_recording_session_id", "recording", ["session_id"])
    op.create_index("ix_recording_created_at", "recording", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_recording_created_at", table_name="recording")
    op.drop_index("ix_recording_session_id", table_name="recording")
    op.drop_table("recording")
