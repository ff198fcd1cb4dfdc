"""job leases (heartbeat, reconciler) and atomic rate counters

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 10:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lease_token', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('worker', sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column('enqueued_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index(batch_op.f('ix_jobs_lease_expires_at'), ['lease_expires_at'], unique=False)
    op.create_table('rate_counters',
    sa.Column('key', sa.String(length=400), nullable=False),
    sa.Column('window_start', sa.DateTime(timezone=True), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('amount', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )


def downgrade() -> None:
    op.drop_table('rate_counters')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_jobs_lease_expires_at'))
        batch_op.drop_column('enqueued_at')
        batch_op.drop_column('worker')
        batch_op.drop_column('lease_expires_at')
        batch_op.drop_column('lease_token')
