"""`squeue --json` and `sinfo --json` print Slurm 22.05's documents (tests/data/slurm-2205-json.md): each
job and node object has the reference's keys, with the same JSON types and nesting, and the values a user
reads are the job's and the node's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import BIN, Cluster, serve, wait_until

pytestmark = pytest.mark.e2e

DATA = Path(__file__).parent.parent / "data" / "slurm-2205-json.md"


def _reference() -> tuple[dict[int, dict], list[dict]]:
    """The reference's job objects by job id (the json-* jobs and the heterogeneous job's components) and
    its nodes, read from the verbatim blocks of the capture."""
    text = DATA.read_text()
    jobs: dict[int, dict] = {}
    decoder = json.JSONDecoder()
    squeue_part, sinfo_part = text.split("## sinfo --json")
    at = squeue_part.find("\n    {\n")
    while at >= 0:
        obj, _end = decoder.raw_decode(squeue_part, at + 5)
        jobs[obj["job_id"]] = obj
        at = squeue_part.find("\n    {\n", at + 1)
    block = sinfo_part.split("```json\n", 1)[1].split("\n```", 1)[0]
    return jobs, json.loads(block)["nodes"]


REF_JOBS, REF_NODES = _reference()
#: the reference's jobs (tests/data/slurm-2205-json.md) by what they are
RUNNING, PENDING, DONE, ARRAY_REST, ARRAY_TASK, OPTS = 16, 17, 18, 19, 20, 66


def _kind(v: object) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null",
            list: "array", dict: "object"}[type(v)]


def same_shape(ref: object, got: object, path: str = "") -> list[str]:
    """Where `got` differs from `ref` in keys, JSON types or nesting (an object whose keys are numbers,
    sockets' and cores' indices, is compared by the shape of its values)."""
    if _kind(ref) != _kind(got):
        return [f"{path}: {_kind(got)} where 22.05 has {_kind(ref)}"]
    if isinstance(ref, dict) and isinstance(got, dict):
        if ref and all(k.isdigit() for k in ref):
            if not got or not all(k.isdigit() for k in got):
                return [f"{path}: keys {sorted(got)} where 22.05 has indices"]
            return same_shape(next(iter(ref.values())), next(iter(got.values())), path + ".N")
        if set(ref) == set(got) and list(ref) != list(got):
            return [f"{path}: keys in the order {list(got)} where 22.05 has {list(ref)}"]
        out = [f"{path}.{k}: missing" for k in ref if k not in got]
        out += [f"{path}.{k}: not in 22.05's" for k in got if k not in ref]
        for k in ref:
            if k in got:
                out += same_shape(ref[k], got[k], f"{path}.{k}")
        return out
    if isinstance(ref, list) and isinstance(got, list) and ref and got:
        return [d for x in got for d in same_shape(ref[0], x, path + "[]")]
    return []


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """Two of the reference's nodes (8 CPUs, GPUs, DefMemPerCPU=1000)."""
    yield from serve(Cluster(tmp_path_factory.mktemp("cluster"), cpus=8, memory=32000, gpus=8,
                             extra_conf="DefMemPerCPU=1000\n"))


def _squeue_json(c: Cluster, *args: str) -> tuple[str, dict]:
    r = c.run([str(BIN / "squeue"), "--json", *args])
    assert r.returncode == 0, r.stderr
    return r.stdout, json.loads(r.stdout)


def test_squeue_json_is_22_05s_document(cluster: Cluster):
    c, wd = cluster, str(cluster.workdir)
    run = c.sbatch("-J", "json-run", "-o", f"{wd}/run-%j.out", "--wrap", "sleep 300")
    pend = c.sbatch("-J", "json-pend", f"--dependency=afterok:{run}", "--wrap", "sleep 10")
    done = c.sbatch("-J", "json-done", "-o", f"{wd}/done-%j.out", "--wrap", "true")
    failed = c.sbatch("-J", "json-fail", "-o", "/dev/null", "--wrap", "exit 3")
    arr = c.sbatch("-J", "json-arr", "--array=0-3%2", "--wrap", "sleep 300")
    opts = c.sbatch("-J", "json-opts", "-N", "2", "-c", "2", "-t", "5", "--mem=2000", "--gres=gpu:2",
                    "-e", f"{wd}/err-%j.txt", "-o", f"{wd}/out-%x.txt", "--comment", "hello", "--wrap", "sleep 300")
    try:
        for job_id, state in ((run, "RUNNING"), (done, "COMPLETED"), (failed, "FAILED"), (opts, "RUNNING")):
            c.wait_state(job_id, state)

        def settled() -> dict | None:
            doc = _squeue_json(c)[1]
            by_name: dict[str, list[dict]] = {}
            for j in doc["jobs"]:
                by_name.setdefault(j["name"], []).append(j)
            arrays = by_name.get("json-arr", [])
            return doc if sorted(j["job_state"] for j in arrays) == ["PENDING", "RUNNING", "RUNNING"] else None
        doc = wait_until(settled, 30, what="two tasks of the array to run")
        raw, _ = _squeue_json(c)
        # the document as 22.05 writes it: its meta block, `/` as `\/`, no newline after the last brace
        assert list(doc) == ["meta", "errors", "jobs"] and doc["errors"] == []
        assert doc["meta"] == {"plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
                               "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"}}
        escaped = wd.replace("/", "\\/")
        assert f'"current_working_directory": "{escaped}"' in raw and raw.endswith("\n}")

        jobs = {j["job_id"]: j for j in doc["jobs"]}
        tasks = sorted((j for j in doc["jobs"] if j["name"] == "json-arr" and j["job_state"] == "RUNNING"),
                       key=lambda j: j["array_task_id"])
        rest = next(j for j in doc["jobs"] if j["name"] == "json-arr" and j["job_state"] == "PENDING")
        table = [(RUNNING, jobs[run]), (PENDING, jobs[pend]), (DONE, jobs[done]), (ARRAY_REST, rest),
                 (ARRAY_TASK, tasks[0]), (OPTS, jobs[opts])]
        for ref_id, got in table:
            assert same_shape(REF_JOBS[ref_id], got) == [], (ref_id, got)

        # what a user (a workflow tool's describe()) reads of each
        user = c.run(["id", "-un"]).stdout.strip()
        for got, job_id, state, name in ((jobs[run], run, "RUNNING", "json-run"),
                                         (jobs[pend], pend, "PENDING", "json-pend"),
                                         (jobs[done], done, "COMPLETED", "json-done"),
                                         (jobs[opts], opts, "RUNNING", "json-opts")):
            assert (got["job_id"], got["job_state"], got["name"], got["partition"], got["user_name"],
                    got["current_working_directory"]) == (job_id, state, name, "debug", user, wd)
            assert (got["het_job_id"], got["het_job_offset"], got["het_job_id_set"]) == (0, 0, "")
            assert (got["array_job_id"], got["array_task_id"], got["array_task_string"]) == (0, None, "")
        assert jobs[run]["standard_output"] == f"{wd}/run-%j.out" and jobs[run]["standard_error"] == ""
        assert jobs[pend]["standard_output"] == "" and jobs[pend]["state_reason"] == "Dependency"
        assert jobs[pend]["nodes"] == "" and "job_resources" not in jobs[pend]
        assert jobs[pend]["dependency"] == f"afterok:{run}(unfulfilled)"
        running = c.job(run)
        assert jobs[run]["nodes"] == running["nodes"] != ""
        assert jobs[run]["job_resources"]["nodes"] == running["nodes"]
        assert [n["nodename"] for n in jobs[run]["job_resources"]["allocated_nodes"]] == [running["nodes"]]
        assert jobs[run]["job_resources"]["allocated_nodes"][0]["memory_allocated"] == 1000
        assert jobs[run]["tres_alloc_str"] == "cpu=1,mem=1000M,node=1,billing=1"
        assert (jobs[done]["standard_output"], jobs[done]["exit_code"]) == (f"{wd}/done-%j.out", 0)
        # (the wait status: `exit 3` is 768)
        assert (jobs[failed]["job_state"], jobs[failed]["exit_code"], jobs[failed]["state_reason"]) == \
            ("FAILED", 768, "NonZeroExitCode")
        o = jobs[opts]
        assert (o["standard_output"], o["standard_error"]) == (f"{wd}/out-%x.txt", f"{wd}/err-%j.txt")
        assert (o["node_count"], o["cpus"], o["time_limit"], o["memory_per_node"], o["memory_per_cpu"],
                o["tres_per_node"], o["comment"]) == (2, 4, 5, 2000, None, "gres:gpu:2", "hello")
        assert [(n["nodename"], n["memory_allocated"], len(n["sockets"]["0"]["cores"]))
                for n in o["job_resources"]["allocated_nodes"]] == [("node1", 2000, 2), ("node2", 2000, 2)]
        assert o["job_resources"]["allocated_cores"] == 4 and o["job_resources"]["allocated_hosts"] == 2
        task_ids = {j["array_task_id"]: j["job_id"] for j in c.api("GET", f"/api/v1/jobs?ids={arr}")["jobs"]}
        assert [(t["job_id"], t["array_job_id"], t["array_task_id"], t["array_max_tasks"], t["array_task_string"])
                for t in tasks] == [(task_ids[0], arr, 0, 2, ""), (task_ids[1], arr, 1, 2, "")]
        assert (rest["array_job_id"], rest["array_task_id"], rest["array_task_string"], rest["array_max_tasks"],
                rest["state_reason"]) == (arr, None, "2-3%2", 2, "JobArrayTaskLimit")

        # squeue --json prints the jobs its filters name (22.05 prints every job whatever they say; a tool
        # that asks `squeue --json -j ID` for its job, as TorchX's describe does, gets that job alone)
        assert [j["job_id"] for j in _squeue_json(c, "-j", str(run))[1]["jobs"]] == [run]
        assert _squeue_json(c, "-j", str(run), "-u", "nobody")[1]["jobs"] == []
        assert [j["job_id"] for j in _squeue_json(c, "-t", "PD", "-u", "root")[1]["jobs"]] == \
            [j["job_id"] for j in doc["jobs"] if j["job_state"] == "PENDING"]
    finally:
        c.run([str(BIN / "scancel"), str(run), str(arr), str(opts), str(pend)])


def test_sinfo_json_is_22_05s_document(cluster: Cluster):
    c = cluster
    wait_until(lambda: c.idle_nodes() == set(c.node_names), 30, what="the nodes to be idle")
    job = c.sbatch("-J", "json-node", "-c", "3", "--gres=gpu:2", "-w", "node2", "--wrap", "sleep 300")
    try:
        c.wait_state(job, "RUNNING")
        r = c.run([str(BIN / "sinfo"), "--json", "-n", "node1", "-t", "idle"])
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert list(doc) == ["meta", "errors", "nodes"] and not r.stdout.endswith("\n")
        assert doc["meta"]["plugin"] == {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"}
        nodes = {n["name"]: n for n in doc["nodes"]}
        assert sorted(nodes) == ["node1", "node2"]  # (22.05's ignores -n and -t too)
        for n in nodes.values():
            assert same_shape(REF_NODES[1], n) == [], n
        idle, busy = nodes["node1"], nodes["node2"]
        assert (idle["state"], idle["state_flags"], idle["alloc_cpus"], idle["idle_cpus"], idle["gres_used"]) == \
            ("idle", [], 0, 8, "gpu:H100:0")
        assert (busy["state"], busy["alloc_cpus"], busy["idle_cpus"], busy["gres_used"], busy["alloc_memory"]) == \
            ("mixed", 3, 5, "gpu:H100:2", 3000)
        assert (busy["cpus"], busy["real_memory"], busy["gres"], busy["partitions"]) == \
            (8, 32000, "gpu:H100:8", ["debug", "short"])
        assert busy["tres"] == "cpu=8,mem=32000M,billing=8,gres/gpu=8"
        assert busy["tres_used"] == "cpu=3,mem=3000M,gres/gpu=2"
        c.run([str(BIN / "scontrol"), "update", "nodename=node1", "state=drain", "reason=fan"])
        drained = next(n for n in json.loads(c.run([str(BIN / "sinfo"), "--json"]).stdout)["nodes"]
                       if n["name"] == "node1")
        assert (drained["state"], drained["state_flags"], drained["reason"]) == ("idle", ["DRAIN"], "fan")
        assert isinstance(drained["reason_set_by_user"], str)
    finally:
        c.run([str(BIN / "scontrol"), "update", "nodename=node1", "state=resume"])
        c.run([str(BIN / "scancel"), str(job)])
