"""link visits: models opened through a shared link appear under "Shared with me"

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 16:10:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('link_visits',
    sa.Column('model_id', sa.String(length=32), nullable=False),
    sa.Column('user_id', sa.String(length=32), nullable=False),
    sa.Column('first_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['model_id'], ['models.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('model_id', 'user_id')
    )
    with op.batch_alter_table('link_visits', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_link_visits_user_id'), ['user_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('link_visits', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_link_visits_user_id'))

    op.drop_table('link_visits')
