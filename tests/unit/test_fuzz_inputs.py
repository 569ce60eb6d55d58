"""Property tests: sbatch/srun options, #SBATCH directives and workload YAML from hypothesis never
crash their parsers. A bad input is refused with the parser's own error (OptError, which the CLI
prints and exits non-zero with; ValueError from `air`'s loader; InvalidRequest naming the field on
the controller), never anything else (a traceback, or a 500 from the API)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmlet.cli import getopt, opts
from slurmlet.common.grammar import OptError
from slurmlet.controller import workload as wl
from slurmlet.controller.api.schemas import JobSubmit
from slurmlet.controller.errors import InvalidRequest

NOW = 1_800_000_000.0
SCRIPT = "#!/bin/sh\ntrue\n"
FAST = settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))

_SB = getopt.table("sbatch")
_SR = getopt.table("srun")
#: values that reach the option parsers' interesting branches, plus any text
VALUES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "0", "-1", "1", "4294967296", "99999999999999999999", "1-2", "2-1", "1:00", "1-00:00:00",
                     "now+1hour", "UNLIMITED", "gpu:h100:2", "gpu:0", "1G", "1T", "10%", "0-3%2", "afterok:1",
                     "B:USR1@60", "node[1-3]", "ALL,X=1", "NONE", "%j.out", "/", "exclusive", "none"]),
    st.integers(-10, 10**12).map(str))


def _options(table: getopt.Table) -> st.SearchStrategy[list[str]]:
    longs = [name for name, _, _ in table.longs]
    one = st.one_of(
        st.sampled_from(longs).map(lambda n: f"--{n}"),
        st.tuples(st.sampled_from(longs), VALUES).map(lambda t: f"--{t[0]}={t[1]}"),
        st.sampled_from(sorted(table.shorts)).map(lambda c: f"-{c}"),
        st.tuples(st.sampled_from(sorted(table.shorts)), VALUES).map(lambda t: f"-{t[0]}{t[1]}"),
        VALUES, st.text(max_size=8).map(lambda s: "--" + s))
    return st.lists(one, max_size=8)


def _read(path: str) -> str:
    if path.endswith("/job.sh"):
        return SCRIPT
    raise FileNotFoundError(path)


def _sbatch(argv: list[str], script: str | None = None, env: dict | None = None) -> None:
    try:
        res = opts.parse_sbatch(argv, env=env or {"PATH": "/usr/bin"}, cwd="/work", stdin_text=script or SCRIPT,
                                read_file=_read, user="root", uid=0, gid=0, group="root", host="h", now=NOW)
    except OptError as e:
        assert e.lines and all(isinstance(x, str) for x in e.lines) and isinstance(e.code, int) and e.code
        return
    if res["submit"] is not None:  # what the controller will take (or refuse with a 422)
        assert isinstance(res["submit"]["script"], str)


@FAST
@given(_options(_SB))
def test_sbatch_command_lines_never_crash(argv: list[str]) -> None:
    _sbatch(argv)


@FAST
@given(_options(_SB), st.sampled_from([[], ["job.sh"], ["job.sh", "arg"], ["missing.sh"]]))
def test_sbatch_command_lines_with_a_script_never_crash(argv: list[str], tail: list[str]) -> None:
    _sbatch(argv + tail)


@FAST
@given(st.lists(st.one_of(_options(_SB).map(" ".join), st.text(max_size=30)), max_size=6),
       st.sampled_from(["#SBATCH ", "#SBATCH", "#SBATCH\t", "# SBATCH "]))
def test_sbatch_directive_lines_never_crash(lines: list[str], prefix: str) -> None:
    script = "#!/bin/bash\n" + "".join(f"{prefix}{line.replace(chr(0), '')}\n" for line in lines) + "true\n"
    _sbatch([], script)


@FAST
@given(st.dictionaries(st.sampled_from(["SBATCH_TIMELIMIT", "SBATCH_PARTITION", "SBATCH_EXPORT", "SBATCH_GRES",
                                        "SBATCH_MEM_PER_NODE", "SBATCH_EXCLUSIVE", "SBATCH_ARRAY_INX",
                                        "SBATCH_OPEN_MODE", "SBATCH_SIGNAL", "SLURM_EXIT_ERROR", "SBATCH_NO_KILL"]),
                       VALUES, max_size=4))
def test_sbatch_environment_never_crashes(env: dict[str, str]) -> None:
    _sbatch([], env={"PATH": "/usr/bin", **env})


@FAST
@given(_options(_SR), st.lists(st.text(max_size=6), max_size=2))
def test_srun_command_lines_never_crash(argv: list[str], command: list[str]) -> None:
    try:
        opts.parse_srun(argv + command, env={}, cwd="/work")
    except OptError as e:
        assert e.lines and e.code


# ---------------------------------------------------------------- workload YAML
ANY = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) |
                   st.text(max_size=20),
                   lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
                   max_leaves=10)
GOOD = {"experiment_name": "x", "compute": {"num_accelerators": 2, "accelerator_type": "GPU_2xH100"},
        "command": "python train.py"}
#: a valid workload with fields replaced, removed or added, each by any value
FIELDS = ["experiment_name", "compute", "command", "environment", "code_source", "env_variables", "secrets",
          "timeout_minutes", "max_retries", "extra"]
NEAR = st.builds(lambda changes, drop: {**{k: v for k, v in GOOD.items() if k not in drop}, **changes},
                 st.dictionaries(st.sampled_from(FIELDS), ANY | st.dictionaries(
                     st.sampled_from(["num_accelerators", "accelerator_type", "version", "dependencies",
                                      "root_path", "A", "HF_TOKEN", "1x"]), ANY, max_size=3), max_size=3),
                 st.sets(st.sampled_from(list(GOOD)), max_size=1))
ACCEL = st.from_regex(r"\AGPU_[0-9]{1,3}x[A-Za-z0-9_.-]{1,80}\Z")


def _workload(doc: object) -> None:
    """What the controller does with a workload: a field error, or a job it accepts."""
    try:
        w = wl.parse(doc)
    except InvalidRequest as e:
        assert e.error.startswith(("invalid workload: ", "workload: ")), e.error
        return
    body = wl.job_body(w, cwd="/w", user="u", uid=1, gid=1, group="g", host="h")
    JobSubmit.model_validate(body)  # a ValidationError here would be a 500 from POST /api/v1/runs
    assert wl.sbatch_preview(body).startswith("#!/bin/bash\n")


@FAST
@given(NEAR)
def test_workload_documents_never_crash(doc: dict) -> None:
    _workload(doc)


@FAST
@given(ACCEL, st.integers(1, 10**6), st.text(min_size=1, max_size=300))
def test_valid_looking_workloads_make_valid_jobs(accel: str, n: int, name: str) -> None:
    _workload({**GOOD, "experiment_name": name, "compute": {"num_accelerators": n, "accelerator_type": accel}})


YAML_TEXT = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
    st.lists(st.tuples(st.sampled_from(FIELDS + ["compute.num_accelerators"]),
                       st.sampled_from(["1", "x", "[1, 2]", "{a: 1}", "!!python/object:os.system x", "*a", "&a 1",
                                        "'GPU_2xH100'", "null", "2.5", "- 1", "|\n  two\n  lines", ":", "\t"])),
             max_size=6).map(lambda kv: "".join(f"{k}: {v}\n" for k, v in kv)))


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(YAML_TEXT, st.lists(st.text(max_size=20), max_size=3))
def test_workload_yaml_files_never_crash(tmp_path_factory: pytest.TempPathFactory, text: str,
                                          overrides: list[str]) -> None:
    from slurmlet.cli.air import load_workload
    path = Path(tmp_path_factory.getbasetemp()) / "w.yaml"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    try:
        doc = load_workload(str(path), overrides)
    except ValueError as e:  # air prints it and exits 1
        assert str(e)
        return
    assert isinstance(doc, dict)
    _workload(doc)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(st.sampled_from(["user", "uid", "gid", "group", "cwd", "host", "code", "dry_run"]),
                       ANY, max_size=4))
def test_air_run_request_fields_are_4xx(tmp_path_factory: pytest.TempPathFactory, extra: dict) -> None:
    """POST /api/v1/runs with a valid workload and any values in its other fields: never a 500."""
    from slurmlet.controller.app import create_app
    from slurmlet.controller.config import parse_slurm_conf
    from slurmlet.controller.runtime import Settings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    global _CLIENT
    if _CLIENT is None:
        db = Path(tmp_path_factory.mktemp("air")) / "db.sqlite"
        conf = parse_slurm_conf("NodeName=n1 CPUs=4 RealMemory=1000 Gres=gpu:H100:2\nPartitionName=p Nodes=ALL Default=YES\n")
        _CLIENT = TestClient(create_app(Settings(db_url=f"sqlite:///{db}", config=conf)))
        _CLIENT.__enter__()
    r = _CLIENT.post("/api/v1/runs", json={"workload": GOOD, "dry_run": True, **extra})
    assert r.status_code < 500, (extra, r.text)


_CLIENT = None


@pytest.fixture(scope="module", autouse=True)
def _close_client():
    yield
    if _CLIENT is not None:
        _CLIENT.__exit__(None, None, None)
