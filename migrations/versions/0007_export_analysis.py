"""exports: the saved analysis an export was made from

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 07:25:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('exports', schema=None) as batch_op:
        batch_op.add_column(sa.Column('analysis_id', sa.String(length=32), nullable=True))
        batch_op.create_foreign_key('fk_exports_analysis_id_analyses', 'analyses', ['analysis_id'], ['id'],
                                    ondelete='SET NULL')


def downgrade() -> None:
    with op.batch_alter_table('exports', schema=None) as batch_op:
        batch_op.drop_constraint('fk_exports_analysis_id_analyses', type_='foreignkey')
        batch_op.drop_column('analysis_id')
