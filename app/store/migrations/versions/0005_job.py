"""Long runs (jobs) visible to every app worker: state, progress, last interest, cancel request.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("explainer", sa.String(40), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False, server_default="0"),
        sa.Column("expected_s", sa.Float(), nullable=False, server_default="0"),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("seen_at", sa.Float(), nullable=False),
        sa.Column("cancel", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("error", sa.String(300), nullable=False, server_default=""),
    )


def downgrade() -> None:
    op.drop_table("job")
