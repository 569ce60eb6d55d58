"""The dashboard as the controller serves it: the page and its assets from the wheel (nothing from
elsewhere), and the event stream that makes it live. (What a browser then shows is tested with a
real browser: issue 18.)"""

from __future__ import annotations

import json
import re
import threading

import httpx
import pytest

from tests.conftest import Cluster, wait_until

pytestmark = pytest.mark.e2e


def test_page_and_assets_are_served_and_self_contained(cluster: Cluster):
    page = httpx.get(cluster.url + "/", timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["referrer-policy"] == "no-referrer"  # a ?token= address leaks to no other site
    assert "default-src 'self'" in page.headers["content-security-policy"]
    refs = [r for r in re.findall(r'(?:src|href)="([^"#]+)"', page.text) if not r.startswith("data:")]
    lists = [r for r in refs if r.startswith("/api/v1/")]  # preloaded: the lists every page starts from
    assert sorted(r.split("?")[0] for r in lists) == ["/api/v1/jobs", "/api/v1/nodes", "/api/v1/partitions"]
    refs = [r for r in refs if r not in lists]
    assert sorted(refs) == ["/ui/app.js", "/ui/style.css"]
    # and the worker app.js starts (it holds the event stream open)
    refs += re.findall(r'new Worker\("([^"]+)"\)', httpx.get(cluster.url + "/ui/app.js", timeout=30).text)
    assert refs[2:] == ["/ui/events.js"]
    for ref in refs:
        r = httpx.get(cluster.url + ref, timeout=30)
        assert r.status_code == 200 and len(r.content) > 500, ref
        text = r.text.replace('"http://www.w3.org/2000/svg"', "")  # (a namespace's name, nothing loaded)
        assert not re.search(r"https?://|//cdn", text), f"{ref} loads something from elsewhere"
    # the job list as the page asks for it: only the fields named, and the look it was read after
    held = cluster.sbatch("-H", "--wrap", "true")
    r = httpx.get(cluster.url + lists[0].replace("&amp;", "&"), timeout=30)
    assert r.status_code == 200 and re.fullmatch(r"[0-9a-f]{16}", r.headers["x-slurmlet-look"])
    fields = re.search(r"fields=([a-z_,]+)", lists[0]).group(1).split(",")
    jobs = r.json()["jobs"]
    assert held in [j["job_id"] for j in jobs] and all(list(j) == fields for j in jobs)
    cluster.api("POST", "/api/v1/jobs/cancel", {"ids": [held]})
    assert httpx.get(cluster.url + "/ui/slurm.conf", timeout=30).status_code == 404
    assert httpx.get(cluster.url + "/ui/..%2Fslurm.conf", timeout=30).status_code == 404


def test_event_stream_tells_of_a_job_starting_and_ending(cluster: Cluster):
    events: list[str] = []
    stop = threading.Event()

    def listen() -> None:
        try:
            with httpx.stream("GET", cluster.url + "/api/v1/events", timeout=httpx.Timeout(30, read=60)) as r:
                kinds.append(r.headers["content-type"])
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        events.append(line[7:])
                    elif line.startswith("data: "):
                        sent.append(json.loads(line[6:])["at"])  # the controller's clock when it told
                    if stop.is_set():
                        return
        except httpx.HTTPError:  # the cluster stopped under it (after the test)
            pass
    kinds: list[str] = []
    sent: list[float] = []
    t = threading.Thread(target=listen, daemon=True)
    t.start()
    wait_until(lambda: events, 30, 0.05, "the stream's first event")
    assert kinds[0].startswith("text/event-stream")
    jid = cluster.sbatch("--wrap", "sleep 5")  # well beyond the stream's look-again interval (1.5 s at most)
    job = cluster.wait_state(jid, "COMPLETED", timeout=60)
    started = cluster.job(jid)["start_time"]
    # told of its start (while it ran) and of its end (at or after it)
    wait_until(lambda: any(started <= t < job["end_time"] for t in sent), 30, 0.05, "an event while it ran")
    wait_until(lambda: any(t >= job["end_time"] for t in sent), 30, 0.05, "an event once it had ended")
    assert set(events) == {"change"}
    stop.set()


def test_output_of_a_job_as_the_page_follows_it(cluster: Cluster):
    """The job page's output: nothing before the job starts, then read from the offset the last read
    ended at; a device or FIFO at the output's name is never read."""
    import base64
    held = cluster.sbatch("-H", "--wrap", "true")
    got = cluster.api("GET", f"/api/v1/jobs/{held}/output", signed=True)
    assert (got["data"], got["error"]) == ("", "the job has not started")
    cluster.api("POST", "/api/v1/jobs/cancel", {"ids": [held]})
    jid = cluster.sbatch("--wrap", "printf 'héllo\\nwörld\\n'")
    cluster.wait_state(jid, "COMPLETED", timeout=60)
    first = cluster.api("GET", f"/api/v1/jobs/{jid}/output?offset=0&limit=3", signed=True)
    rest = cluster.api("GET", f"/api/v1/jobs/{jid}/output?offset={first['offset'] + 3}", signed=True)
    assert (first["offset"], rest["offset"], rest["size"]) == (0, 3, len("héllo\nwörld\n".encode()))
    assert (base64.b64decode(first["data"]) + base64.b64decode(rest["data"])).decode() == "héllo\nwörld\n"
    dev = cluster.sbatch("-o", "/dev/null", "--wrap", "echo gone")
    cluster.wait_state(dev, "COMPLETED", timeout=60)
    got = cluster.api("GET", f"/api/v1/jobs/{dev}/output", signed=True)
    assert got["data"] == "" and got["error"] == "/dev/null: not a regular file"
    # the output's name turned into a FIFO (answered at once, not read), or a link into /proc (whose
    # files say more to root, who reads what the user opened): nothing is read
    for kind, make in (("fifo", "mkfifo {out}"), ("proc", "ln -s /proc/1/stat {out}")):
        out, ready = cluster.workdir / f"{kind}.out", cluster.workdir / f"{kind}.ready"
        jid = cluster.sbatch("-o", str(out), "--wrap",
                             f"rm -f {out}; {make.format(out=out)}; touch {ready}; sleep 300")
        wait_until(ready.exists, 60, what=f"the {kind}")
        got = cluster.api("GET", f"/api/v1/jobs/{jid}/output", signed=True)
        assert got["data"] == "" and got["error"].endswith(
            "not a regular file" if kind == "fifo" else "not an output file (a kernel file system)"), got
        cluster.api("POST", "/api/v1/jobs/cancel", {"ids": [jid]})


def _refused_syncs(cluster: Cluster) -> int:
    """The agents' syncs the controller has refused so far (4xx answers on the sync route, /metrics)."""
    text = httpx.get(f"{cluster.url}/metrics", timeout=30).text
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
               if line.startswith("slurmlet_http_requests_total{") and 'route="/api/v1/nodes/{name}/sync"' in line
               and re.search(r'code="4[0-9][0-9]"', line))


def test_a_large_output_is_paged_through_while_the_job_runs(cluster: Cluster):
    """10 MB of output (any bytes) read while the job runs, as the page reads it: from where the last
    read ended, a piece at a time; no piece is larger than PIECE, even asked for more, and no sync of
    the node is refused meanwhile (an answer too large for its sync would be)."""
    import base64
    import os

    from slurmlet.common.wire import PIECE
    data = os.urandom(10 * 10**6)
    src, out, ready = (cluster.workdir / f"large.{x}" for x in ("bin", "out", "ready"))
    src.write_bytes(data)
    refused = _refused_syncs(cluster)
    jid = cluster.sbatch("-o", str(out), "--wrap", f"cat {src}; touch {ready}; sleep 300")
    wait_until(ready.exists, 60, what="the job's output")
    first = cluster.api("GET", f"/api/v1/jobs/{jid}/output?offset=-1", signed=True)  # the page's first read
    assert first["error"] is None and (first["offset"], first["size"]) == (len(data) - PIECE, len(data))
    assert base64.b64decode(first["data"]) == data[-PIECE:]
    got = bytearray()
    while len(got) < len(data):  # the page's next reads: from where the last one ended
        r = cluster.api("GET", f"/api/v1/jobs/{jid}/output?offset={len(got)}", signed=True)
        piece = base64.b64decode(r["data"])
        assert r["error"] is None and r["offset"] == len(got) and r["size"] == len(data), r["error"]
        assert len(piece) == min(PIECE, len(data) - len(got))
        got += piece
    assert bytes(got) == data
    more = cluster.api("GET", f"/api/v1/jobs/{jid}/output?offset=0&limit={4 * PIECE}", signed=True)
    assert base64.b64decode(more["data"]) == data[:PIECE]
    assert cluster.job(jid)["state"] == "RUNNING"
    assert _refused_syncs(cluster) == refused
    cluster.api("POST", "/api/v1/jobs/cancel", {"ids": [jid]})
