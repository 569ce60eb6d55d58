"""Fuzzing the controller's REST API on a real controller process: no generated request gets a 5xx.

schemathesis generates requests for every operation of the live /openapi.json (valid ones, then
ones that break the schema); the routes that read their JSON body themselves (air runs, code,
secrets, accounting) get arbitrary JSON from hypothesis. Requests carry the harness's credential
(root's, signed with the cluster key) so they reach the validation behind authentication.
The number of examples is bounded (FUZZ_EXAMPLES per operation and mode) to keep the run short.
"""

from __future__ import annotations

import os

import hypothesis.errors
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.conftest import Cluster, serve, signed

pytestmark = pytest.mark.e2e
schemathesis = pytest.importorskip("schemathesis")

FUZZ_EXAMPLES = int(os.environ.get("SLURMLET_FUZZ_EXAMPLES", "20"))
#: query and body fields that make the controller wait (long-polls): capped so the run stays short
WAITS = ("wait",)


@pytest.fixture(scope="module")
def fuzz_cluster(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("fuzz"), nodes=1))


def _cred(c: Cluster):  # noqa: ANN202
    """A requests auth (schemathesis calls with requests) signing each request as this process's user."""
    from slurmlet.common import cred
    key = cred.read_key(str(c.key_file))

    def sign(r):  # noqa: ANN001, ANN202
        body = r.body or b""
        body = body.encode() if isinstance(body, str) else body
        r.headers[cred.HEADER] = cred.sign(key, *cred.current_user(), cred.bind(r.method, r.path_url, body))
        return r
    return sign


def _no_waits(case) -> None:  # noqa: ANN001
    for part in (case.query, case.body):
        if isinstance(part, dict):
            for k in WAITS:
                if k in part:
                    part[k] = 0


def test_openapi_no_5xx(fuzz_cluster: Cluster) -> None:
    c = fuzz_cluster
    schema = schemathesis.openapi.from_url(f"{c.url}/openapi.json")
    failures: list[str] = []
    ops = [r.ok() for r in schema.get_all_operations()]
    assert len(ops) > 30, [op.label for op in ops]
    for op in ops:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            @given(case=op.as_strategy(generation_mode=mode))
            @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None, derandomize=True,
                      phases=[Phase.explicit, Phase.generate],
                      suppress_health_check=list(HealthCheck))
            def one(case) -> None:  # noqa: ANN001
                _no_waits(case)
                r = case.call(base_url=c.url, auth=_cred(c), timeout=15)
                if r.status_code >= 500:
                    failures.append(f"{r.status_code} {case.method} {case.formatted_path} query={case.query} "
                                    f"body={str(case.body)[:300]}: {r.text[:300]}")

            try:
                one()
            except (schemathesis.errors.SchemathesisError, hypothesis.errors.Unsatisfiable):
                pass  # an operation whose schema cannot produce a case in this mode (nothing to break)
    assert not failures, "\n".join(failures[:20])
    assert not c.crashed(), c.crashed()


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=20),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4),
                    max_leaves=12)
#: fields these routes read, so that generated objects often have them (with values of any type)
FIELDS = ("workload", "code", "user", "uid", "gid", "group", "cwd", "host", "dry_run", "data", "value",
          "name", "names", "account", "accounts", "parent", "users", "qos", "fairshare", "limits")
RAW_ROUTES = [("POST", "/api/v1/runs"), ("POST", "/api/v1/code"), ("PUT", "/api/v1/secrets/team/k")]


@pytest.mark.parametrize(("method", "path"), RAW_ROUTES)
def test_raw_json_routes_no_5xx(fuzz_cluster: Cluster, method: str, path: str) -> None:
    """Routes without a body model: any JSON, or bytes that are no JSON at all, is a 4xx."""
    import httpx

    from slurmlet.common import cred
    c = fuzz_cluster
    key = cred.read_key(str(c.key_file))
    docs = JSON | st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=6)
    bodies = docs.map(lambda d: httpx.Request("GET", "/", json=d).content) | st.binary(max_size=64)
    failures: list[str] = []

    @given(body=bodies)
    @settings(max_examples=4 * FUZZ_EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    def one(body: bytes) -> None:
        r = httpx.request(method, c.url + path, content=body, auth=signed(key, *cred.current_user()),
                          headers={"content-type": "application/json"}, timeout=15)
        if r.status_code >= 500:
            failures.append(f"{r.status_code} {method} {path} {body[:200]!r}: {r.text[:200]}")

    one()
    assert not failures, "\n".join(failures[:20])
