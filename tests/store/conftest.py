"""A JobStore on each database backend, for the store tests."""

from __future__ import annotations

import pytest

from slurmlet.controller.config import ClusterConfig
from slurmlet.controller.store.engine import make_engine
from slurmlet.controller.store.jobs import JobStore
from tests.conftest import store_url

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.pg)]


def store_fixture(conf: ClusterConfig, defaults: bool = False):  # a pytest fixture
    """A fixture giving a fresh JobStore with `conf` on SQLite and on PostgreSQL (`defaults`: with
    the accounting database's root account, user and normal QOS)."""
    @pytest.fixture(params=BACKENDS)
    def store(request, tmp_path):
        s = JobStore(make_engine(store_url(request.param, tmp_path)), conf)
        if defaults:
            s.accounts.ensure_defaults(0.0)
        yield s
        s.engine.dispose()
    return store
