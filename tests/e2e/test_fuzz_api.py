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

from tests.conftest import Cluster, serve, signed, wait_until

pytestmark = pytest.mark.e2e
schemathesis = pytest.importorskip("schemathesis")

FUZZ_EXAMPLES = int(os.environ.get("SLURMLET_FUZZ_EXAMPLES", "20"))
#: query and body fields that make the controller wait (long-polls): capped so the run stays short
WAITS = ("wait",)


@pytest.fixture(scope="module")
def fuzz_cluster(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(Cluster(tmp_path_factory.mktemp("fuzz"), nodes=1))


def _cred(c: Cluster):
    """A requests auth (schemathesis calls with requests) signing each request as this process's user."""
    from slurmlet.common import cred
    key = cred.read_key(str(c.key_file))

    def sign(r):
        body = r.body or b""
        body = body.encode() if isinstance(body, str) else body
        r.headers[cred.HEADER] = cred.sign(key, *cred.current_user(), cred.bind(r.method, r.path_url, body))
        return r
    return sign


def _no_waits(case) -> None:
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
            def one(case) -> None:
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


#: what a hostile client puts in a string: a NUL, a lone surrogate (valid JSON as "\ud800"), an
#: environment-style `=`, a name over every length limit, a path out of anywhere, bidi control
HOSTILE_TEXT = ["a\x00b", "\ud800", "K=V", "x" * 70_000, "../../../etc/shadow", "\u202e\u0000"]
#: and in place of any value: nesting past every parser's depth, numbers past every column's range
HOSTILE_VALUES = [*HOSTILE_TEXT, 10**30, -(10**30), 1e308, [[[[[[[[[[[[["deep"]]]]]]]]]]]]],
                  {"k\x00": "v", "=": ["\ud800"]}]
#: bodies that are not what they claim: 100,000 levels of nesting, a surrogate pair split, no UTF-8
RAW_BODIES = [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000, b'"\\ud800"',
              b'{"script": "\\u0000", "environment": {"\\ud800": "x"}}', b"\xff\xfe\x00", b"1e999999"]


def _body_fields(spec: dict, op: dict) -> list[str]:
    """The top-level fields of an operation's JSON body schema (empty when it reads its body by hand)."""
    schema = (op.get("requestBody") or {}).get("content", {}).get("application/json", {}).get("schema") or {}
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return list(schema.get("properties") or {}) or list(FIELDS)


def test_hostile_values_on_every_route_get_4xx_and_every_daemon_stays_up(fuzz_cluster: Cluster) -> None:
    """Every operation of the API, as root (past authentication), with each hostile value in every
    path parameter, every query parameter and every body field, then with bodies that are no
    proper JSON: never a 5xx, no daemon dies or logs a traceback, and the node still runs a job."""
    import json
    from urllib.parse import quote

    import httpx

    from slurmlet.common import cred
    c = fuzz_cluster
    key = cred.read_key(str(c.key_file))
    auth = signed(key, 0, "root")
    spec = httpx.get(f"{c.url}/openapi.json", timeout=30).json()
    failures: list[str] = []
    sent = 0

    def send(h: httpx.Client, method: str, url: str, body: bytes | None, what: str) -> None:
        nonlocal sent
        try:
            r = h.request(method, url, content=body, headers={"content-type": "application/json"})
        except httpx.TransportError as e:
            failures.append(f"{e!r} {method} {url[:80]} {what}")
            return
        sent += 1
        if r.status_code >= 500:
            failures.append(f"{r.status_code} {method} {url[:80]} {what}: {r.text[:200]}")

    with httpx.Client(base_url=c.url, auth=auth, timeout=60) as h:
        for path, ops in spec["paths"].items():
            for method, op in ops.items():
                params = op.get("parameters") or []
                for v in HOSTILE_VALUES:
                    text = (v if isinstance(v, str) else json.dumps(v))[:2000]  # httpx sends URLs of at most 64 KiB
                    quoted = quote(text.encode("utf-8", "surrogatepass"), safe="")  # a lone surrogate as its bytes
                    url = path
                    for p in params:
                        if p["in"] == "path":
                            url = url.replace("{" + p["name"] + "}", quoted)
                    query = "&".join(f"{p['name']}={quoted}" for p in params
                                     if p["in"] == "query" and p["name"] not in WAITS)
                    body = None
                    if method in ("post", "put", "patch"):
                        body = json.dumps({f: v for f in _body_fields(spec, op)}).encode()
                    send(h, method.upper(), url + ("?" + query if query else ""), body, f"value={text[:40]!r}")
                if method in ("post", "put", "patch"):
                    url = path
                    for p in params:
                        if p["in"] == "path":
                            url = url.replace("{" + p["name"] + "}", "1")
                    for raw in RAW_BODIES:
                        send(h, method.upper(), url, raw, f"body={raw[:40]!r}")
    assert sent > 300
    assert not failures, "\n".join(failures[:20])
    assert not c.crashed(), c.crashed()
    # whatever the requests changed (a node drained, jobs held), the cluster still works afterwards
    c.run(["scancel", "--user", "root"])
    c.run(["scontrol", "update", "nodename=node1", "state=resume"])
    wait_until(lambda: c.idle_nodes() == {"node1"}, 60, what="node1 idle again")
    r = c.run(["sbatch", "--wait", "-o", "/dev/null", "--wrap", "true"], timeout=120)
    assert r.returncode == 0, r.stderr
    assert not c.crashed(), c.crashed()
