"""Statements made once, their values bound at each execution: what every node sync runs (building
a SQLAlchemy statement, and its cache key, cost several times what SQLite takes to run it)."""

from __future__ import annotations

import functools

from sqlalchemy import bindparam, update
from sqlalchemy.sql.dml import Update

from .tables import jobs as J
from .tables import nodes as N


@functools.cache
def job_update(keys: tuple[str, ...], active: bool = False) -> Update:
    """UPDATE jobs SET each of `keys` WHERE id = :_job_id (AND active, with `active`); execute it with
    {"_job_id": id, **values} (the values' keys, sorted, are `keys`: see set_job)."""
    q = update(J).where(J.c.id == bindparam("_job_id"))
    if active:
        q = q.where(J.c.active.is_(True))
    return q.values({k: bindparam(k) for k in keys})


@functools.cache
def node_update(keys: tuple[str, ...]) -> Update:
    """UPDATE nodes SET each of `keys` WHERE name = :_node_name."""
    return update(N).where(N.c.name == bindparam("_node_name")).values({k: bindparam(k) for k in keys})


def set_job(c, job_id: int, values: dict, active: bool = False):  # noqa: ANN001, ANN201 - a connection, a result
    """UPDATE the job's row (only while it is active, with `active`) with `values`."""
    return c.execute(job_update(tuple(sorted(values)), active), {"_job_id": job_id, **values})


def set_node(c, name: str, values: dict):  # noqa: ANN001, ANN201 - a connection, a result
    """UPDATE the node's row with `values`."""
    return c.execute(node_update(tuple(sorted(values))), {"_node_name": name, **values})
