"""Live classes: the class, its event stream, its questions and the students' answers.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "live_class",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("code", sa.String(12), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("student_secret", sa.String(64), nullable=False),
        sa.Column("explainer", sa.String(40), nullable=False),
        sa.Column("params_json", sa.Text(), nullable=False),
        sa.Column("page_path", sa.String(400), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("seq", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("joined", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("client_key", sa.String(80), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("active_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_live_class_client_key", "live_class", ["client_key"])
    op.create_table(
        "class_event",
        sa.Column("class_id", sa.String(32), primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("data_json", sa.Text(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
    )
    op.create_table(
        "class_question",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("class_id", sa.String(32), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("answer_step", sa.Integer(), nullable=False),
        sa.Column("prompt_json", sa.Text(), nullable=False),
        sa.Column("choices_json", sa.Text(), nullable=False),
        sa.Column("explanation_json", sa.Text(), nullable=False),
        sa.Column("correct", sa.Integer(), nullable=False),
        sa.Column("revealed", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_class_question_class_id", "class_question", ["class_id"])
    op.create_table(
        "class_answer",
        sa.Column("question_id", sa.String(32), primary_key=True),
        sa.Column("student", sa.String(32), primary_key=True),
        sa.Column("choice", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("class_answer")
    op.drop_index("ix_class_question_class_id", table_name="class_question")
    op.drop_table("class_question")
    op.drop_table("class_event")
    op.drop_index("ix_live_class_client_key", table_name="live_class")
    op.drop_table("live_class")
