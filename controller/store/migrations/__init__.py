"""Alembic migrations of slurmlet's schema (controller/store/tables.py).

`controller.store.migrate` runs them: at every start (`make_engine`) and from `slurmlet db upgrade`.
A new database is made whole from tables.py and stamped at HEAD; an older one is upgraded to HEAD.

Changing tables.py therefore takes a revision in versions/ too (tests/store/test_migrations.py fails
until the migrated schema equals tables.py again). To start one from the differences:

    from sqlalchemy import create_engine
    from alembic import command
    from slurmlet.controller.store import migrate
    eng = create_engine("sqlite:////tmp/scratch.db")       # a scratch database
    with eng.begin() as conn:
        command.upgrade(migrate.alembic_config(conn), "head")
        command.revision(migrate.alembic_config(conn), "what changed", autogenerate=True, rev_id="0012")

then review the file, keep revision ids in sequence, and set HEAD below to the new id.
"""

#: the newest revision: what a database made from tables.py is stamped with (a test checks that it
#: is the head of versions/)
HEAD = "0019"
