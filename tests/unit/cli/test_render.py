"""Byte-for-byte checks of the cli.render_* modules against the real Slurm 22.05 outputs recorded in
/work/shared/reference/slurm-formats.md (the "anchor" reference cluster: node[1-4], 8 CPUs,
32000 MB, gpu:8 each; partitions debug (default) and high)."""

from __future__ import annotations

import calendar
import os
import time

import pytest

from slurmlet.cli import render_sacct, render_scontrol, render_sinfo
from slurmlet.common import fmt as F
from slurmlet.common import grammar, render_squeue, slurmtime

ANCHOR = "$ANCHOR"
WD = f"{ANCHOR}/var/formats-run"


@pytest.fixture(autouse=True, scope="module")
def _utc():
    """The reference times are UTC: render in UTC."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


def T(hms: str) -> float:
    """Epoch of 2026-12-02T<hms> UTC."""
    h, m, s = (int(x) for x in hms.split(":"))
    return float(calendar.timegm((2026, 12, 2, h, m, s)))


def text(lines: list[str]) -> str:
    """Lines as printed (each followed by a newline)."""
    return "".join(line + "\n" for line in lines)


def job(job_id: int, name: str, state: str, **kw) -> dict:
    """A JobPublic dict with the reference cluster's defaults."""
    d = {
        "job_id": job_id, "array_job_id": None, "array_task_id": None, "name": name,
        "user": "root", "uid": 0, "gid": 0, "group": "root", "account": "root", "qos": "normal",
        "partition": "debug", "state": state, "reason": "None", "priority": 20140, "nice": 0,
        "submit_time": T("10:43:07"), "eligible_time": T("10:43:07"), "start_time": None,
        "end_time": None, "time_limit": None, "nodes": "", "node_list": [], "batch_host": None,
        "num_nodes": 1, "num_cpus": 1, "num_tasks": 1, "cpus_per_task": 1, "ntasks_per_node": None,
        "mem_per_node": None, "mem_per_cpu": 1000, "gpus_per_node": 0, "tres_per_node": None,
        "gpu_ids": {}, "exit_code": 0, "exit_signal": 0, "derived_exit_code": 0,
        "derived_exit_signal": 0, "workdir": WD, "submit_dir": WD,
        "stdout": f"{WD}/slurm-{job_id}.out", "stderr": f"{WD}/slurm-{job_id}.out",
        "stdin": "/dev/null", "comment": None, "dependency": None, "command": None,
        "requeue": True, "restarts": 0, "batch": True, "steps": [], "cluster": "anchor",
    }
    d.update(kw)
    return d


def gpu(n: int) -> dict:
    """Fields of a job asking --gres=gpu:n."""
    return {"gpus_per_node": n, "tres_per_node": f"gres:gpu:{n}"}


def running(node: str, start: str = "10:43:07", cpus: int = 1, **kw) -> dict:
    """Fields of a running job on one node."""
    d = {"start_time": T(start), "nodes": node, "node_list": [node], "batch_host": node,
         "num_cpus": cpus, "num_tasks": cpus, "stdout": "/dev/null", "stderr": "/dev/null"}
    d.update(kw)
    return d


def array_tasks(array_id: int, ids: list[int], name: str, first_job_id: int, **kw) -> list[dict]:
    """Pending tasks of one array; the first task carries the array's own job id."""
    out = []
    for n, tid in enumerate(ids):
        jid = array_id if n == 0 else first_job_id + n
        out.append(job(jid, name, "PENDING", array_job_id=array_id, array_task_id=tid,
                       reason="Priority", **kw))
    return out


def queue_jobs() -> list[dict]:
    """The 'Queue with running + pending jobs' section, in the order slurmctld returned them."""
    return [
        job(7889, "too_big", "PENDING", reason="PartitionNodeLimit", priority=21000, num_nodes=10,
            num_cpus=10, num_tasks=10),
        job(7888, "dep_never", "PENDING", reason="DependencyNeverSatisfied", eligible_time=None),
        job(7887, "dep_ok", "PENDING", reason="Dependency", eligible_time=None,
            dependency="afterok:7879(unfulfilled)"),
        *array_tasks(7886, [1, 3, 5, 7, 9], "arr_throttled", 7950, array_max_tasks=2, **gpu(1)),
        *array_tasks(7885, [0, 1, 2, 3], "arr", 7960, **gpu(4)),
        job(7884, "wants_gpu2", "PENDING", reason="Priority", time_limit=10, **gpu(2)),
        job(7883, "wants_gpu", "PENDING", reason="Resources", **gpu(8)),
        job(7890, "niced", "PENDING", reason="Priority", priority=20040, nice=100, **gpu(1)),
        job(7876, "wrap", "PENDING", reason="JobHeldUser", priority=0, submit_time=T("10:43:01"),
            eligible_time=T("10:43:01")),
        job(7882, "blocker4", "RUNNING", priority=20156, **running("node1", cpus=2), **gpu(8)),
        job(7879, "blocker1", "RUNNING", **running("node2"), **gpu(8)),
        job(7880, "blocker2", "RUNNING", **running("node3"), **gpu(8)),
        job(7881, "blocker3", "RUNNING", **running("node4"), **gpu(8)),
        job(7865, "tmo", "RUNNING", time_limit=1, submit_time=T("10:43:01"),
            eligible_time=T("10:43:01"), **running("node1", start="10:43:01")),
    ]


# --------------------------------------------------------------------------- squeue

SQUEUE_DEFAULT = """\
             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
              7889     debug  too_big     root PD       0:00     10 (PartitionNodeLimit)
              7888     debug dep_neve     root PD       0:00      1 (DependencyNeverSatisfied)
              7887     debug   dep_ok     root PD       0:00      1 (Dependency)
7886_[1,3,5,7,9%2]     debug arr_thro     root PD       0:00      1 (Priority)
        7885_[0-3]     debug      arr     root PD       0:00      1 (Priority)
              7884     debug wants_gp     root PD       0:00      1 (Priority)
              7883     debug wants_gp     root PD       0:00      1 (Resources)
              7890     debug    niced     root PD       0:00      1 (Priority)
              7876     debug     wrap     root PD       0:00      1 (JobHeldUser)
              7882     debug blocker4     root  R       0:04      1 node1
              7879     debug blocker1     root  R       0:04      1 node2
              7880     debug blocker2     root  R       0:04      1 node3
              7881     debug blocker3     root  R       0:04      1 node4
              7865     debug      tmo     root  R       0:10      1 node1
"""

SQUEUE_LONG = """\
Wed Dec 02 10:43:11 2026
             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES NODELIST(REASON)
              7889     debug  too_big     root  PENDING       0:00 UNLIMITED     10 (PartitionNodeLimit)
              7888     debug dep_neve     root  PENDING       0:00 UNLIMITED      1 (DependencyNeverSatisfied)
              7887     debug   dep_ok     root  PENDING       0:00 UNLIMITED      1 (Dependency)
7886_[1,3,5,7,9%2]     debug arr_thro     root  PENDING       0:00 UNLIMITED      1 (Priority)
        7885_[0-3]     debug      arr     root  PENDING       0:00 UNLIMITED      1 (Priority)
              7884     debug wants_gp     root  PENDING       0:00     10:00      1 (Priority)
              7883     debug wants_gp     root  PENDING       0:00 UNLIMITED      1 (Resources)
              7890     debug    niced     root  PENDING       0:00 UNLIMITED      1 (Priority)
              7876     debug     wrap     root  PENDING       0:00 UNLIMITED      1 (JobHeldUser)
              7882     debug blocker4     root  RUNNING       0:04 UNLIMITED      1 node1
              7879     debug blocker1     root  RUNNING       0:04 UNLIMITED      1 node2
              7880     debug blocker2     root  RUNNING       0:04 UNLIMITED      1 node3
              7881     debug blocker3     root  RUNNING       0:04 UNLIMITED      1 node4
              7865     debug      tmo     root  RUNNING       0:10      1:00      1 node1
"""

SQUEUE_H_IT = """\
7889 PENDING
7888 PENDING
7887 PENDING
7886_[1,3,5,7,9%2] PENDING
7885_[0-3] PENDING
7884 PENDING
7883 PENDING
7890 PENDING
7876 PENDING
7882 RUNNING
7879 RUNNING
7880 RUNNING
7881 RUNNING
7865 RUNNING
"""

SQUEUE_WIDE = """\
     JOBID      STATE               REASON   PRIORITY  NODES           START_TIME          SUBMIT_TIME
      7889    PENDING   PartitionNodeLimit      21000     10                  N/A  2026-12-02T10:43:07
      7888    PENDING DependencyNeverSatis      20140      1                  N/A  2026-12-02T10:43:07
      7887    PENDING           Dependency      20140      1                  N/A  2026-12-02T10:43:07
7886_[1,3,    PENDING             Priority      20140      1                  N/A  2026-12-02T10:43:07
7885_[0-3]    PENDING             Priority      20140      1                  N/A  2026-12-02T10:43:07
      7884    PENDING             Priority      20140      1                  N/A  2026-12-02T10:43:07
      7883    PENDING            Resources      20140      1                  N/A  2026-12-02T10:43:07
      7890    PENDING             Priority      20040      1                  N/A  2026-12-02T10:43:07
      7876    PENDING          JobHeldUser          0      1                  N/A  2026-12-02T10:43:01
      7882    RUNNING                 None      20156      1  2026-12-02T10:43:07  2026-12-02T10:43:07
      7879    RUNNING                 None      20140      1  2026-12-02T10:43:07  2026-12-02T10:43:07
      7880    RUNNING                 None      20140      1  2026-12-02T10:43:07  2026-12-02T10:43:07
      7881    RUNNING                 None      20140      1  2026-12-02T10:43:07  2026-12-02T10:43:07
      7865    RUNNING                 None      20140      1  2026-12-02T10:43:01  2026-12-02T10:43:01
"""

SQUEUE_O_LONG = """\
JOBID               NAME                STATE               REASON              NODES               NODELIST            TRES_PER_NODE       
7889                too_big             PENDING             PartitionNodeLimit  10                                      N/A                 
7888                dep_never           PENDING             DependencyNeverSatis1                                       N/A                 
7887                dep_ok              PENDING             Dependency          1                                       N/A                 
7886                arr_throttled       PENDING             Priority            1                                       gres:gpu:1          
7885                arr                 PENDING             Priority            1                                       gres:gpu:4          
7884                wants_gpu2          PENDING             Priority            1                                       gres:gpu:2          
7883                wants_gpu           PENDING             Resources           1                                       gres:gpu:8          
7890                niced               PENDING             Priority            1                                       gres:gpu:1          
7876                wrap                PENDING             JobHeldUser         1                                       N/A                 
7882                blocker4            RUNNING             None                1                   node1               gres:gpu:8          
7879                blocker1            RUNNING             None                1                   node2               gres:gpu:8          
7880                blocker2            RUNNING             None                1                   node3               gres:gpu:8          
7881                blocker3            RUNNING             None                1                   node4               gres:gpu:8          
7865                tmo                 RUNNING             None                1                   node1               N/A                 
"""

SQUEUE_O_WIDTHS = """\
JOBID     STATE       REASON                        
7889      PENDING     PartitionNodeLimit            
7888      PENDING     DependencyNeverSatisfied      
7887      PENDING     Dependency                    
7886      PENDING     Priority                      
7885      PENDING     Priority                      
7884      PENDING     Priority                      
7883      PENDING     Resources                     
7890      PENDING     Priority                      
7876      PENDING     JobHeldUser                   
7882      RUNNING     None                          
7879      RUNNING     None                          
7880      RUNNING     None                          
7881      RUNNING     None                          
7865      RUNNING     None                          
"""

NOW_Q = T("10:43:11")


def test_squeue_default():
    assert text(render_squeue.squeue_lines(queue_jobs(), now=NOW_Q)) == SQUEUE_DEFAULT


def test_squeue_long():
    assert text(render_squeue.squeue_lines(queue_jobs(), long=True, now=NOW_Q)) == SQUEUE_LONG


def test_squeue_noheader_format():
    assert text(render_squeue.squeue_lines(queue_jobs(), fmt="%i %T", noheader=True, now=NOW_Q)) == SQUEUE_H_IT


def test_squeue_widths_truncate():
    got = render_squeue.squeue_lines(queue_jobs(), fmt="%.10i %.10T %.20r %.10Q %.6D %.20S %.20V", now=NOW_Q)
    assert text(got) == SQUEUE_WIDE


def test_squeue_long_format_default_width():
    got = render_squeue.squeue_lines(queue_jobs(), long_fmt="JobID,Name,State,Reason,NumNodes,NodeList,tres-per-node",
                         now=NOW_Q)
    assert text(got) == SQUEUE_O_LONG


def test_squeue_long_format_widths():
    got = render_squeue.squeue_lines(queue_jobs(), long_fmt="JobID:10,State:12,Reason:30", now=NOW_Q)
    assert text(got) == SQUEUE_O_WIDTHS


def test_squeue_pipe_format():
    got = render_squeue.squeue_lines(queue_jobs(), fmt="%i|%T|%r|%j|%P|%D|%N|%M|%l", noheader=True, now=NOW_Q)
    assert got[0] == "7889|PENDING|PartitionNodeLimit|too_big|debug|10||0:00|UNLIMITED"
    assert got[3] == "7886_[1,3,5,7,9%2]|PENDING|Priority|arr_throttled|debug|1||0:00|UNLIMITED"
    assert got[5] == "7884|PENDING|Priority|wants_gpu2|debug|1||0:00|10:00"
    assert got[-1] == "7865|RUNNING|None|tmo|debug|1|node1|0:10|1:00"


def test_squeue_array_letters():
    got = render_squeue.squeue_lines(queue_jobs(), fmt="%A %a %F %K %i %T", noheader=True, now=NOW_Q)
    assert got[:5] == [
        "7889 root 7889 N/A 7889 PENDING",
        "7888 root 7888 N/A 7888 PENDING",
        "7887 root 7887 N/A 7887 PENDING",
        "7886 root 7886 1,3,5,7,9%2 7886_[1,3,5,7,9%2] PENDING",
        "7885 root 7885 0-3 7885_[0-3] PENDING",
    ]


def test_squeue_unrolled_arrays():
    got = render_squeue.squeue_lines(queue_jobs(), noheader=True, array_collapse=False, now=NOW_Q)
    ids = [line.split()[0] for line in got]
    assert ids[3:12] == ["7886_1", "7886_3", "7886_5", "7886_7", "7886_9",
                         "7885_0", "7885_1", "7885_2", "7885_3"]
    assert got[3] == "            7886_1     debug arr_thro     root PD       0:00      1 (Priority)"


def test_squeue_running_resources():
    jobs = [j for j in queue_jobs() if j["state"] == "RUNNING"]
    got = render_squeue.squeue_lines(jobs, fmt="%i %b %C %m %S", noheader=True, now=NOW_Q)
    assert got == [
        "7882 gres:gpu:8 2 1000M 2026-12-02T10:43:07",
        "7879 gres:gpu:8 1 1000M 2026-12-02T10:43:07",
        "7880 gres:gpu:8 1 1000M 2026-12-02T10:43:07",
        "7881 gres:gpu:8 1 1000M 2026-12-02T10:43:07",
        "7865 N/A 1 1000M 2026-12-02T10:43:01",
    ]


def test_squeue_terminal_failed_shows_reason():
    j = job(7893, "fail_exit3", "FAILED", reason="NonZeroExitCode", exit_code=3,
            start_time=T("10:43:16"), end_time=T("10:43:16"), nodes="node1")
    assert render_squeue.squeue_lines([j], now=T("10:43:20"))[1] == \
        "              7893     debug fail_exi     root  F       0:00      1 (NonZeroExitCode)"


def test_squeue_sort_states_alphabetically():
    jobs = [job(1, "a", "RUNNING", **running("node1")), job(2, "b", "PENDING"),
            job(3, "c", "COMPLETED", start_time=T("10:00:00"), end_time=T("10:01:00")),
            job(4, "d", "CANCELLED"), job(5, "e", "FAILED")]
    got = render_squeue.squeue_lines(jobs, fmt="%i %T", noheader=True, now=NOW_Q)
    assert got == ["4 CANCELLED", "3 COMPLETED", "5 FAILED", "2 PENDING", "1 RUNNING"]


def many_kinds() -> list[dict]:
    """The queue above and a job of every other kind: finished, failed, timed out, suspended, with
    memory per node, with every optional field set."""
    return queue_jobs() + [
        job(9001, "done", "COMPLETED", end_time=T("10:43:10"), **running("node1")),
        job(9002, "failed", "FAILED", exit_code=3, derived_exit_code=2, end_time=T("10:43:10"),
            reason="NonZeroExitCode", **running("node2")),
        job(9003, "tmo", "TIMEOUT", end_time=T("10:43:10"), time_limit=1, **running("node2")),
        job(9004, "mem", "RUNNING", mem_per_node=2000, mem_per_cpu=None, **running("node1"), **gpu(2)),
        job(9005, "susp", "SUSPENDED", suspended_secs=5, pre_sus_time=2, **running("node1")),
        job(9006, "cg", "COMPLETING", **running("node1")),
        job(9007, "every", "PENDING", expected_start=T("10:50:00"), sched_nodes="node1", reason="Resources",
            accrue_time=T("10:43:07"), last_sched_eval=T("10:43:09"), features="a", reservation="r", wckey="w",
            licenses="l", exc_nodes="node2", req_nodes="node1", nodes_max=2, min_cpus_node=2, exclusive=True,
            tres_per_job="gres:gpu:1", billing=3, alloc_memory=1, alloc_node="x", alloc_sid=1, submit_host="h",
            comment="c", command="/bin/x", array_max_tasks=None),
        job(9008, "nomem", "PENDING", mem_per_cpu=None, mem_per_node=None, eligible_time=None),
    ]


def test_squeue_asks_for_the_keys_its_columns_and_sorts_read():
    """squeue asks the controller for job_keys() only, and of those only the ones set: a job cut
    down so renders exactly as the whole job, for every -o letter, -O name, -S letter, -l and --start."""
    jobs = many_kinds()
    cases = [{"fmt": "%" + c} for c in render_squeue.SQUEUE_FIELDS]
    cases += [{"long_fmt": n} for n in render_squeue.squeue_long_table()]
    cases += [{"fmt": "%i", "sort": s + c} for c in render_squeue.SQUEUE_FIELDS for s in ("", "-")]
    cases += [{}, {"long": True}, {"start": True}, {"fmt": "%.18i %.9P %.8j %R", "sort": "u,-M,V"}]
    for kw in cases:
        keys = render_squeue.job_keys(**kw)
        assert keys is not None and len(keys) < 40, kw
        cut = [{k: j[k] for k in keys if j.get(k) is not None} for j in jobs]  # as the controller sends them
        # (fields=..., nulls=false: only those of the keys that are set)
        for collapse in (True, False):
            full = render_squeue.squeue_lines(jobs, now=NOW_Q, array_collapse=collapse, **kw)
            assert render_squeue.squeue_lines(cut, now=NOW_Q, array_collapse=collapse, **kw) == full, kw
    assert render_squeue.job_keys(fmt="%i %Ü") is None and render_squeue.job_keys(long_fmt="nosuch") is None


def test_squeue_empty_and_header_only():
    assert render_squeue.squeue_lines([], fmt="%i %T %r", now=NOW_Q) == ["JOBID STATE REASON"]
    assert render_squeue.squeue_lines([], noheader=True, now=NOW_Q) == []


def test_squeue_invalid_long_field():
    with pytest.raises(ValueError):
        render_squeue.squeue_lines([], long_fmt="JobID,Bogus", now=NOW_Q)


def _views() -> list[dict]:
    """squeue views of every kind: each -o letter and -O name alone, sorts by each letter (the clock's
    too), -h, -r, -l, --start."""
    views = [{"fmt": "%" + c} for c in render_squeue.SQUEUE_FIELDS]
    views += [{"long_fmt": n} for n in render_squeue.squeue_long_table()]
    views += [{"fmt": "%i %M", "sort": s + c} for c in "iMtpPV" for s in ("", "-")]
    views += [{}, {"long": True}, {"start": True}, {"noheader": True}, {"array_collapse": False},
              {"fmt": "%.18i %.9P %.8j %R", "sort": "u,-M,V", "noheader": True}]
    return views


def test_kept_squeue_text_is_squeue_lines_as_the_clock_and_the_jobs_change():
    """The controller's kept rendering (render_squeue.Kept) gives what squeue_lines gives, for every
    view, over a sequence of lists: the same list again at a later time (running jobs' TIME moves on,
    a sort by TIME may reorder), some jobs replaced by changed copies, jobs gone, jobs added."""
    import random
    rnd = random.Random(7)
    kept = render_squeue.Kept()
    for view in _views():
        jobs = many_kinds()
        now = NOW_Q
        for step in range(6):
            if step in (2, 4):  # changed copies of some jobs (as Queries.listed gives them), one gone, one new
                jobs = [dict(j, state="RUNNING", start_time=now - rnd.randrange(1, 900), nodes="node9")
                        if rnd.random() < 0.2 and j["state"] == "PENDING" else j for j in jobs[1:]]
                jobs.append(job(9100 + step, "new", "PENDING", reason="Priority"))
            kw = dict(view)
            collapse = kw.pop("array_collapse", True)
            want = text(render_squeue.squeue_lines(jobs, now=now, array_collapse=collapse, **kw))
            assert kept.text(jobs, now, array_collapse=collapse, **kw) == want, (view, step)
            now += rnd.choice((0.2, 1.0, 61.0, 3601.0))


def test_kept_squeue_text_keeps_what_does_not_read_the_clock():
    """An unchanged list of pending jobs is not rendered again (the same text object), one with a
    running job is, with its TIME at the new time."""
    kept = render_squeue.Kept()
    pending = [j for j in queue_jobs() if j["state"] == "PENDING"]
    first = kept.text(pending, NOW_Q)
    assert kept.text(pending, NOW_Q + 100) is first
    everything = queue_jobs()
    a = kept.text(everything, NOW_Q)
    b = kept.text(everything, NOW_Q + 60)
    assert a != b and b == text(render_squeue.squeue_lines(everything, now=NOW_Q + 60))


def test_squeue_renders_local_times_only_where_the_cli_says():
    """The CLI has the controller render a view unless it prints a local time (the controller's zone
    may not be the user's): the columns whose text changes with the time zone are exactly those
    cli/squeue.py names."""
    from slurmlet.cli import squeue
    jobs = many_kinds()

    def render(**kw) -> list[str]:
        return render_squeue.squeue_lines(jobs, now=NOW_Q, noheader=True, **kw)
    letters, names = set(), set()
    for zone in ("Asia/Tokyo", "America/Denver"):
        for c in render_squeue.SQUEUE_FIELDS:
            utc = render(fmt="%" + c)
            os.environ["TZ"] = zone
            time.tzset()
            try:
                if render(fmt="%" + c) != utc:
                    letters.add(c)
            finally:
                os.environ["TZ"] = "UTC"
                time.tzset()
        for n in render_squeue.squeue_long_table():
            utc = render(long_fmt=n)
            os.environ["TZ"] = zone
            time.tzset()
            try:
                if render(long_fmt=n) != utc:
                    names.add(n)
            finally:
                os.environ["TZ"] = "UTC"
                time.tzset()
    assert letters == squeue.LOCAL_TIME_LETTERS
    assert {render_squeue._SQUEUE_LONG_ALIASES.get(n, n) for n in squeue.LOCAL_TIME_NAMES} >= \
        {render_squeue._SQUEUE_LONG_ALIASES.get(n, n) for n in names} and names <= squeue.LOCAL_TIME_NAMES
    assert squeue.local_times("%.18i %.20V", None) and squeue.local_times("%i %e", None)
    assert not squeue.local_times("%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", None)
    assert squeue.local_times(None, "JobID:10,SubmitTime:.20") and not squeue.local_times(None, "JobID,State")


# --------------------------------------------------------------------------- sinfo

def node(name: str, state: str, cpus_alloc: int = 0, **kw) -> dict:
    """A NodePublic dict of the reference cluster."""
    d = {"name": name, "addr": "10.250.0.1" + name[-1], "hostname": name, "state": state,
         "reason": None, "cpus": 8, "cpus_alloc": cpus_alloc, "real_memory": 32000,
         "alloc_memory": 1000 * cpus_alloc, "free_memory": None, "gpus": 8, "gpus_alloc": 0,
         "gres": "gpu:8", "gpu_type": None, "partitions": ["debug", "high"], "arch": "x86_64",
         "os": None, "version": "22.05.8", "cpu_load": None, "boot_time": None,
         "slurmd_start_time": None, "last_busy": None, "weight": 1}
    d.update(kw)
    return d


def partitions() -> list[dict]:
    """The debug (default) and high partitions."""
    base = {"nodes": "node[1-4]", "node_names": ["node1", "node2", "node3", "node4"],
            "state": "UP", "max_time": None, "default_time": None, "priority_job_factor": 1,
            "preempt_mode": "REQUEUE", "grace_time": 0, "max_nodes": None, "min_nodes": 0,
            "total_cpus": 32, "total_nodes": 4, "total_memory": 128000, "total_gpus": 32}
    return [dict(base, name="debug", default=True, priority_tier=1),
            dict(base, name="high", default=False, priority_tier=10)]


def nodes_comp() -> list[dict]:
    """node1 completing a job (1 CPU still allocated), node[2-4] idle."""
    return [node("node1", "MIXED+COMPLETING", 1)] + [node(f"node{i}", "IDLE") for i in (2, 3, 4)]


def nodes_mixed() -> list[dict]:
    """node[1-4] all mixed."""
    return [node("node1", "MIXED", 1)] + [node(f"node{i}", "MIXED", 1) for i in (2, 3, 4)]


NOW_S = T("10:43:01")


def test_sinfo_default():
    assert text(render_sinfo.sinfo_lines(nodes_comp(), partitions(), now=NOW_S)) == """\
PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
debug*       up   infinite      1   comp node1
debug*       up   infinite      3   idle node[2-4]
high         up   infinite      1   comp node1
high         up   infinite      3   idle node[2-4]
"""


def test_sinfo_default_all_mixed():
    assert text(render_sinfo.sinfo_lines(nodes_mixed(), partitions(), now=NOW_S)) == """\
PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
debug*       up   infinite      4    mix node[1-4]
high         up   infinite      4    mix node[1-4]
"""


def test_sinfo_node_oriented():
    ns = [node("node1", "MIXED", 1)] + [node(f"node{i}", "IDLE") for i in (2, 3, 4)]
    assert text(render_sinfo.sinfo_lines(ns, partitions(), node_oriented=True, now=NOW_S)) == """\
NODELIST   NODES PARTITION STATE 
node1          1    debug* mix   
node1          1      high mix   
node2          1    debug* idle  
node2          1      high idle  
node3          1    debug* idle  
node3          1      high idle  
node4          1    debug* idle  
node4          1      high idle  
"""


def test_sinfo_node_oriented_long():
    ns = [node("node1", "MIXED", 1)] + [node(f"node{i}", "IDLE") for i in (2, 3, 4)]
    got = render_sinfo.sinfo_lines(ns, partitions(), node_oriented=True, long=True, now=NOW_S)
    assert text(got) == """\
Wed Dec 02 10:43:01 2026
NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON              
node1          1    debug*       mixed 8       1:8:1  32000        0      1   (null) none                
node1          1      high       mixed 8       1:8:1  32000        0      1   (null) none                
node2          1    debug*        idle 8       1:8:1  32000        0      1   (null) none                
node2          1      high        idle 8       1:8:1  32000        0      1   (null) none                
node3          1    debug*        idle 8       1:8:1  32000        0      1   (null) none                
node3          1      high        idle 8       1:8:1  32000        0      1   (null) none                
node4          1    debug*        idle 8       1:8:1  32000        0      1   (null) none                
node4          1      high        idle 8       1:8:1  32000        0      1   (null) none                
"""


def test_sinfo_summarize():
    assert text(render_sinfo.sinfo_lines(nodes_comp(), partitions(), summarize=True, now=NOW_S)) == """\
PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST
debug*       up   infinite          1/3/0/4 node[1-4]
high         up   infinite          1/3/0/4 node[1-4]
"""


def test_sinfo_node_format():
    got = render_sinfo.sinfo_lines(nodes_comp(), partitions(), node_oriented=True, noheader=True,
                        fmt="%N %t %C %G %m %P", now=NOW_S)
    assert text(got) == """\
node1 comp 1/7/0/8 gpu:8 32000 debug*
node1 comp 1/7/0/8 gpu:8 32000 high
node2 idle 0/8/0/8 gpu:8 32000 debug*
node2 idle 0/8/0/8 gpu:8 32000 high
node3 idle 0/8/0/8 gpu:8 32000 debug*
node3 idle 0/8/0/8 gpu:8 32000 high
node4 idle 0/8/0/8 gpu:8 32000 debug*
node4 idle 0/8/0/8 gpu:8 32000 high
"""
    ns = [node("node1", "MIXED", 3)] + [node(f"node{i}", "MIXED", 1) for i in (2, 3, 4)]
    got = render_sinfo.sinfo_lines(ns, partitions(), node_oriented=True, noheader=True,
                        fmt="%N %t %C %G %m %P", now=NOW_S)
    assert got[:3] == ["node1 mix 3/5/0/8 gpu:8 32000 debug*", "node1 mix 3/5/0/8 gpu:8 32000 high",
                       "node2 mix 1/7/0/8 gpu:8 32000 debug*"]


def test_sinfo_partition_format():
    got = render_sinfo.sinfo_lines(nodes_comp(), partitions(), fmt="%P %a %l %D %t %N %G", now=NOW_S)
    assert text(got) == """\
PARTITION AVAIL TIMELIMIT NODES STATE NODELIST GRES
debug* up infinite 1 comp node1 gpu:8
debug* up infinite 3 idle node[2-4] gpu:8
high up infinite 1 comp node1 gpu:8
high up infinite 3 idle node[2-4] gpu:8
"""


def test_sinfo_reasons():
    assert text(render_sinfo.sinfo_lines(nodes_comp(), partitions(), reasons=True, now=NOW_S)) == \
        "REASON               USER      TIMESTAMP           NODELIST\n"
    ns = nodes_comp()
    ns[2] = node("node3", "DRAINED", reason="maint", reason_time=T("10:00:00"), reason_user="root")
    ns[3] = node("node4", "DRAINED", reason="maint", reason_time=T("10:00:00"), reason_user="root")
    got = render_sinfo.sinfo_lines(ns, partitions(), reasons=True, now=NOW_S)
    assert got[1] == "maint                root      2026-12-02T10:00:00 node[3-4]"
    assert len(got) == 2


def test_sinfo_states_and_empty_partition():
    ns = [node("node1", "DOWN*", reason="Not responding"), node("node2", "DRAINING", 2),
          node("node3", "ALLOCATED", 8), node("node4", "IDLE")]
    parts = partitions()[:1] + [dict(partitions()[1], name="empty", nodes="", node_names=[])]
    got = render_sinfo.sinfo_lines(ns, parts, fmt="%P %t %T %F %C %N", now=NOW_S)
    assert got == [
        "PARTITION STATE STATE NODES(A/I/O/T) CPUS(A/I/O/T) NODELIST",
        "debug* down* down* 0/0/1/1 0/0/8/8 node1",
        "debug* drng draining 0/0/1/1 2/0/6/8 node2",
        "debug* alloc allocated 1/0/0/1 8/0/0/8 node3",
        "debug* idle idle 0/1/0/1 0/8/0/8 node4",
        "empty n/a n/a 0/0/0/0 0/0/0/0 ",
    ]
    # without a partition column, nodes of several partitions are listed once
    got = render_sinfo.sinfo_lines(nodes_mixed(), partitions(), fmt="%D %t %N", now=NOW_S)
    assert got == ["NODES STATE NODELIST", "4 mix node[1-4]"]


# --------------------------------------------------------------------------- scontrol show node / partition

def test_scontrol_show_node():
    n = node("node1", "MIXED", 1, addr="10.250.0.11", cpu_load=5.18, free_memory=23595,
             os="Linux 6.18.44-fc-v857 #1 SMP PREEMPT_DYNAMIC @0", boot_time=T("09:08:07"),
             slurmd_start_time=T("09:50:19"), last_busy=T("10:38:28"))
    assert render_scontrol.scontrol_show_node(n) == """\
NodeName=node1 Arch=x86_64 CoresPerSocket=8 
   CPUAlloc=1 CPUEfctv=8 CPUTot=8 CPULoad=5.18
   AvailableFeatures=(null)
   ActiveFeatures=(null)
   Gres=gpu:8
   NodeAddr=10.250.0.11 NodeHostName=node1 Version=22.05.8
   OS=Linux 6.18.44-fc-v857 #1 SMP PREEMPT_DYNAMIC @0 
   RealMemory=32000 AllocMem=1000 FreeMem=23595 Sockets=1 Boards=1
   State=MIXED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=debug,high 
   BootTime=2026-12-02T09:08:07 SlurmdStartTime=2026-12-02T09:50:19
   LastBusyTime=2026-12-02T10:38:28
   CfgTRES=cpu=8,mem=32000M,billing=8,gres/gpu=8
   AllocTRES=cpu=1,mem=1000M
   CapWatts=n/a
   CurrentWatts=0 AveWatts=0
   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s

"""
    n.update(cpus_alloc=3, alloc_memory=3000, gpus_alloc=8)
    out = render_scontrol.scontrol_show_node(n)
    assert "   AllocTRES=cpu=3,mem=3000M,gres/gpu=8\n" in out
    assert "   CPUAlloc=3 CPUEfctv=8 CPUTot=8 CPULoad=5.18\n" in out


def test_scontrol_show_node_drained_with_reason():
    n = node("node2", "DRAINED", reason="maint", reason_time=T("10:00:00"), reason_user="root")
    out = render_scontrol.scontrol_show_node(n)
    assert "   State=IDLE+DRAIN ThreadsPerCore=1" in out
    assert out.endswith("ExtSensorsTemp=n/s\n   Reason=maint [root@2026-12-02T10:00:00]\n\n")


def test_scontrol_show_partition():
    out = "".join(render_scontrol.scontrol_show_partition(p) for p in partitions())
    assert out == """\
PartitionName=debug
   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL
   AllocNodes=ALL Default=YES QoS=N/A
   DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO
   MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED
   Nodes=node[1-4]
   PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO
   OverTimeLimit=NONE PreemptMode=REQUEUE
   State=UP TotalCPUs=32 TotalNodes=4 SelectTypeParameters=NONE
   JobDefaults=(null)
   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED
   TRES=cpu=32,mem=125G,node=4,billing=32,gres/gpu=32

PartitionName=high
   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL
   AllocNodes=ALL Default=NO QoS=N/A
   DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO
   MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED
   Nodes=node[1-4]
   PriorityJobFactor=1 PriorityTier=10 RootOnly=NO ReqResv=NO OverSubscribe=NO
   OverTimeLimit=NONE PreemptMode=REQUEUE
   State=UP TotalCPUs=32 TotalNodes=4 SelectTypeParameters=NONE
   JobDefaults=(null)
   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED
   TRES=cpu=32,mem=125G,node=4,billing=32,gres/gpu=32

"""


def test_scontrol_show_partition_one_liner():
    out = render_scontrol.scontrol_show_partition(partitions()[0], one_liner=True)
    assert out.startswith("PartitionName=debug AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL")
    assert out.endswith(" TRES=cpu=32,mem=125G,node=4,billing=32,gres/gpu=32\n")


# --------------------------------------------------------------------------- scontrol show job

SHOW_7879 = f"""\
JobId=7879 JobName=blocker1
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=20140 Nice=0 Account=root QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:05 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-12-02T10:43:07 EligibleTime=2026-12-02T10:43:07
   AccrueTime=2026-12-02T10:43:07
   StartTime=2026-12-02T10:43:07 EndTime=Unknown Deadline=N/A
   PreemptEligibleTime=2026-12-02T10:43:07 PreemptTime=None
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T10:43:07 Scheduler=Main
   Partition=debug AllocNode:Sid=localhost:2604
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=node2
   BatchHost=node2
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=1000M,node=1,billing=1,gres/gpu=8
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir={WD}
   StdErr=/dev/null
   StdIn=/dev/null
   StdOut=/dev/null
   Power=
   TresPerNode=gres:gpu:8
   

"""

SHOW_7882_D = f"""\
JobId=7882 JobName=blocker4
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=20156 Nice=0 Account=root QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   DerivedExitCode=0:0
   RunTime=00:00:05 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-12-02T10:43:07 EligibleTime=2026-12-02T10:43:07
   AccrueTime=2026-12-02T10:43:07
   StartTime=2026-12-02T10:43:07 EndTime=Unknown Deadline=N/A
   PreemptEligibleTime=2026-12-02T10:43:07 PreemptTime=None
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T10:43:07 Scheduler=Main
   Partition=debug AllocNode:Sid=localhost:2604
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=node1
   BatchHost=node1
   NumNodes=1 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=2,mem=2000M,node=1,billing=2,gres/gpu=8
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   JOB_GRES=gpu:8
     Nodes=node1 CPU_IDs=1-2 Mem=2000 GRES=gpu:8(IDX:0-7)
   MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir={WD}
   StdErr=/dev/null
   StdIn=/dev/null
   StdOut=/dev/null
   Power=
   TresPerNode=gres:gpu:8
   

"""

SHOW_7887 = f"""\
JobId=7887 JobName=dep_ok
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=20140 Nice=0 Account=root QOS=normal
   JobState=PENDING Reason=Dependency Dependency=afterok:7879(unfulfilled)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-12-02T10:43:07 EligibleTime=Unknown
   AccrueTime=Unknown
   StartTime=Unknown EndTime=Unknown Deadline=N/A
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T10:43:07 Scheduler=Main
   Partition=debug AllocNode:Sid=localhost:2604
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=1000M,node=1,billing=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir={WD}
   StdErr={WD}/slurm-7887.out
   StdIn=/dev/null
   StdOut={WD}/slurm-7887.out
   Power=
   

"""

SHOW_7885_1 = f"""\
JobId=7885 ArrayJobId=7885 ArrayTaskId=1 JobName=arr
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=20140 Nice=0 Account=root QOS=normal
   JobState=PENDING Reason=Priority Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0
   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-12-02T10:43:07 EligibleTime=2026-12-02T10:43:07
   AccrueTime=2026-12-02T10:43:07
   StartTime=Unknown EndTime=Unknown Deadline=N/A
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T10:43:10 Scheduler=Main
   Partition=debug AllocNode:Sid=localhost:2604
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=1000M,node=1,billing=1,gres/gpu=4
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir={WD}
   StdErr={WD}/slurm-7885_1.out
   StdIn=/dev/null
   StdOut={WD}/slurm-7885_1.out
   Power=
   TresPerNode=gres:gpu:4
   

"""

SHOW_7893 = f"""\
JobId=7893 JobName=fail_exit3
   UserId=root(0) GroupId=root(0) MCS_label=N/A
   Priority=20140 Nice=0 Account=root QOS=normal
   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0
   RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A
   SubmitTime=2026-12-02T10:43:16 EligibleTime=2026-12-02T10:43:16
   AccrueTime=2026-12-02T10:43:16
   StartTime=2026-12-02T10:43:16 EndTime=2026-12-02T10:43:16 Deadline=N/A
   PreemptEligibleTime=2026-12-02T10:43:16 PreemptTime=None
   SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-02T10:43:16 Scheduler=Main
   Partition=debug AllocNode:Sid=localhost:2604
   ReqNodeList=(null) ExcNodeList=(null)
   NodeList=node1
   BatchHost=node1
   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   TRES=cpu=1,mem=1000M,node=1,billing=1
   Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*
   MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0
   Features=(null) DelayBoot=00:00:00
   OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null)
   Command=(null)
   WorkDir={WD}
   StdErr={WD}/fail-7893.out
   StdIn=/dev/null
   StdOut={WD}/fail-7893.out
   Power=
   

"""

SHOW_7884_O = (
    "JobId=7884 JobName=wants_gpu2 UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=20140 Nice=0 "
    "Account=root QOS=normal JobState=PENDING Reason=Priority Dependency=(null) Requeue=1 Restarts=0 "
    "BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=00:10:00 TimeMin=N/A "
    "SubmitTime=2026-12-02T10:43:07 EligibleTime=2026-12-02T10:43:07 AccrueTime=2026-12-02T10:43:07 "
    "StartTime=Unknown EndTime=Unknown Deadline=N/A SuspendTime=None SecsPreSuspend=0 "
    "LastSchedEval=2026-12-02T10:43:10 Scheduler=Main Partition=debug AllocNode:Sid=localhost:2604 "
    "ReqNodeList=(null) ExcNodeList=(null) NodeList= NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 "
    "ReqB:S:C:T=0:0:*:* TRES=cpu=1,mem=1000M,node=1,billing=1,gres/gpu=2 Socks/Node=* "
    "NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryCPU=1000M MinTmpDiskNode=0 "
    "Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) "
    f"Command=(null) WorkDir={WD} StdErr={WD}/slurm-7884.out StdIn=/dev/null "
    f"StdOut={WD}/slurm-7884.out Power= TresPerNode=gres:gpu:2 \n"
)

SID = {"alloc_node": "localhost", "alloc_sid": 2604}
NOW_J = T("10:43:12")


def test_scontrol_show_job_running():
    j = job(7879, "blocker1", "RUNNING", **running("node2"), **gpu(8), **SID)
    assert render_scontrol.scontrol_show_job(j, now=NOW_J) == SHOW_7879


def test_scontrol_show_job_details():
    j = job(7882, "blocker4", "RUNNING", priority=20156, **running("node1", cpus=2), **gpu(8), **SID,
            cpu_ids={"node1": "1-2"}, gpu_ids={"node1": list(range(8))})
    assert render_scontrol.scontrol_show_job(j, details=True, now=NOW_J) == SHOW_7882_D


def test_scontrol_show_job_pending_dependency():
    j = job(7887, "dep_ok", "PENDING", reason="Dependency", eligible_time=None,
            dependency="afterok:7879(unfulfilled)", **SID)
    assert render_scontrol.scontrol_show_job(j, now=NOW_J) == SHOW_7887


def test_scontrol_show_job_array_task():
    j = job(7885, "arr", "PENDING", reason="Priority", array_job_id=7885, array_task_id=1,
            last_sched_eval=T("10:43:10"), stdout=f"{WD}/slurm-7885_1.out",
            stderr=f"{WD}/slurm-7885_1.out", **gpu(4), **SID)
    assert render_scontrol.scontrol_show_job(j, now=NOW_J) == SHOW_7885_1


def test_scontrol_show_job_collapsed_array_head():
    j = job(7885, "arr", "PENDING", reason="Priority", array_job_id=7885, array_task_id=0,
            array_task_str="0-3", **SID)
    assert render_scontrol.scontrol_show_job(j, now=NOW_J).startswith("JobId=7885 ArrayJobId=7885 ArrayTaskId=0-3 JobName=arr\n")


def test_scontrol_show_job_failed():
    j = job(7893, "fail_exit3", "FAILED", reason="NonZeroExitCode", exit_code=3,
            submit_time=T("10:43:16"), eligible_time=T("10:43:16"),
            **running("node1", start="10:43:16"), end_time=T("10:43:16"), **SID)
    j.update(stdout=f"{WD}/fail-7893.out", stderr=f"{WD}/fail-7893.out")
    assert render_scontrol.scontrol_show_job(j, now=T("10:43:20")) == SHOW_7893


def test_scontrol_show_job_one_liner():
    j = job(7884, "wants_gpu2", "PENDING", reason="Priority", time_limit=10,
            last_sched_eval=T("10:43:10"), **gpu(2), **SID)
    assert render_scontrol.scontrol_show_job(j, one_liner=True, now=NOW_J) == SHOW_7884_O


# --------------------------------------------------------------------------- sacct

def step(sid, name: str, state: str, nodes: str, cpus: int, start: str, end: str,
         exit_code: int = 0, exit_signal: int = 0, num_nodes: int = 1) -> dict:
    """A job step dict."""
    return {"step": sid, "name": name, "state": state, "exit_code": exit_code,
            "exit_signal": exit_signal, "start_time": T(start), "end_time": T(end),
            "nodes": nodes, "num_nodes": num_nodes, "num_cpus": cpus, "num_tasks": cpus}


def done(jid: int, name: str, state: str, nodes: str = "node1", cpus: int = 1, num_nodes: int = 1,
         steps: list | None = None, **kw) -> dict:
    """A finished job of the 'sacct' section (submitted, started and ended at 10:43:16)."""
    t = "10:43:16"
    if steps is None:
        steps = [step("batch", "batch", "COMPLETED", nodes.split(",")[0], cpus, t, t),
                 step("extern", "extern", "COMPLETED", nodes, cpus, t, t, num_nodes=num_nodes)]
    return job(jid, name, state, submit_time=T(t), eligible_time=T(t), start_time=T(t),
               end_time=T(t), nodes=nodes, num_nodes=num_nodes, num_cpus=cpus, num_tasks=cpus,
               batch_host=nodes, steps=steps, **kw)


def sacct_jobs() -> list[dict]:
    """Jobs 7893-7896 of the reference 'sacct' section."""
    t = "10:43:16"
    return [
        done(7893, "fail_exit3", "FAILED", reason="NonZeroExitCode", exit_code=3, steps=[
            step("batch", "batch", "FAILED", "node1", 1, t, t, exit_code=3),
            step("extern", "extern", "COMPLETED", "node1", 1, t, t)]),
        done(7894, "killed_sig9", "FAILED", reason="JobLaunchFailure", exit_signal=9, steps=[
            step("batch", "batch", "CANCELLED", "node1", 1, t, t, exit_signal=9),
            step("extern", "extern", "COMPLETED", "node1", 1, t, t)]),
        done(7895, "cancelled_running", "CANCELLED", cancelled_by=0, steps=[
            step("batch", "batch", "CANCELLED", "node1", 1, t, t, exit_signal=15),
            step("extern", "extern", "COMPLETED", "node1", 1, t, t)]),
        done(7896, "ok_steps", "COMPLETED", nodes="node[1-2]", cpus=2, num_nodes=2, steps=[
            step(0, "hostname", "COMPLETED", "node[1-2]", 2, t, t, num_nodes=2),
            step(1, "false", "FAILED", "node1", 1, t, t, exit_code=1),
            step("batch", "batch", "COMPLETED", "node1", 1, t, t),
            step("extern", "extern", "COMPLETED", "node[1-2]", 2, t, t, num_nodes=2)]),
    ]


NOW_A = T("10:43:30")


def test_sacct_default():
    assert text(render_sacct.sacct_lines(sacct_jobs(), now=NOW_A)) == """\
JobID           JobName  Partition    Account  AllocCPUS      State ExitCode 
------------ ---------- ---------- ---------- ---------- ---------- -------- 
7893         fail_exit3      debug       root          1     FAILED      3:0 
7893.batch        batch                  root          1     FAILED      3:0 
7893.extern      extern                  root          1  COMPLETED      0:0 
7894         killed_si+      debug       root          1     FAILED      0:9 
7894.batch        batch                  root          1  CANCELLED      0:9 
7894.extern      extern                  root          1  COMPLETED      0:0 
7895         cancelled+      debug       root          1 CANCELLED+      0:0 
7895.batch        batch                  root          1  CANCELLED     0:15 
7895.extern      extern                  root          1  COMPLETED      0:0 
7896           ok_steps      debug       root          2  COMPLETED      0:0 
7896.batch        batch                  root          1  COMPLETED      0:0 
7896.extern      extern                  root          2  COMPLETED      0:0 
7896.0         hostname                  root          2  COMPLETED      0:0 
7896.1            false                  root          1     FAILED      1:0 
"""


def test_sacct_parsable2_noheader():
    got = render_sacct.sacct_lines(sacct_jobs()[3:], fields="JobID,State,ExitCode,NodeList", parsable="P",
                        noheader=True, now=NOW_A)
    assert text(got) == """\
7896|COMPLETED|0:0|node[1-2]
7896.batch|COMPLETED|0:0|node1
7896.extern|COMPLETED|0:0|node[1-2]
7896.0|COMPLETED|0:0|node[1-2]
7896.1|FAILED|1:0|node1
"""
    got = render_sacct.sacct_lines(sacct_jobs()[:3], fields="JobID,State,ExitCode,NodeList", parsable="P",
                        noheader=True, now=NOW_A)
    assert got[6] == "7895|CANCELLED by 0|0:0|node1"


def test_sacct_parsable2_derived():
    got = render_sacct.sacct_lines(sacct_jobs()[:3], fields="JobID,JobName,State,ExitCode,DerivedExitCode",
                        parsable="P", now=NOW_A)
    assert text(got) == """\
JobID|JobName|State|ExitCode|DerivedExitCode
7893|fail_exit3|FAILED|3:0|0:0
7893.batch|batch|FAILED|3:0|
7893.extern|extern|COMPLETED|0:0|
7894|killed_sig9|FAILED|0:9|0:0
7894.batch|batch|CANCELLED|0:9|
7894.extern|extern|COMPLETED|0:0|
7895|cancelled_running|CANCELLED by 0|0:0|0:0
7895.batch|batch|CANCELLED|0:15|
7895.extern|extern|COMPLETED|0:0|
"""


def test_sacct_parsable_trailing():
    got = render_sacct.sacct_lines(sacct_jobs()[3:], fields="JobID,State", parsable="p", allocations_only=True,
                        now=NOW_A)
    assert got == ["JobID|State|", "7896|COMPLETED|"]


def test_sacct_format_widths():
    got = render_sacct.sacct_lines(sacct_jobs()[3:],
                        fields="JobID,JobName%-20,Partition,AllocCPUS,AllocTRES%40,Elapsed,State,ExitCode",
                        now=NOW_A)
    assert text(got) == """\
JobID        JobName               Partition  AllocCPUS                                AllocTRES    Elapsed      State ExitCode 
------------ -------------------- ---------- ---------- ---------------------------------------- ---------- ---------- -------- 
7896         ok_steps                  debug          2         billing=2,cpu=2,mem=2000M,node=2   00:00:00  COMPLETED      0:0 
7896.batch   batch                                    1                   cpu=1,mem=1000M,node=1   00:00:00  COMPLETED      0:0 
7896.extern  extern                                   2         billing=2,cpu=2,mem=2000M,node=2   00:00:00  COMPLETED      0:0 
7896.0       hostname                                 2                   cpu=2,mem=2000M,node=2   00:00:00  COMPLETED      0:0 
7896.1       false                                    1                   cpu=1,mem=1000M,node=1   00:00:00     FAILED      1:0 
"""


def test_sacct_times_and_limits():
    got = render_sacct.sacct_lines(sacct_jobs()[3:], parsable="P", noheader=True, allocations_only=True,
                        fields="JobID,Submit,Start,End,Elapsed,ElapsedRaw,Timelimit,TimelimitRaw",
                        now=NOW_A)
    assert got == ["7896|2026-12-02T10:43:16|2026-12-02T10:43:16|2026-12-02T10:43:16|00:00:00|0|"
                   "UNLIMITED|UNLIMITED"]
    tmo = job(7865, "tmo", "TIMEOUT", time_limit=1, start_time=T("10:43:01"), end_time=T("10:44:28"),
              nodes="node1", steps=[
                  {"step": "batch", "name": "batch", "state": "CANCELLED", "exit_code": 0, "exit_signal": 15,
                   "start_time": T("10:43:01"), "end_time": T("10:44:28"), "nodes": "node1",
                   "num_nodes": 1, "num_cpus": 1, "num_tasks": 1},
                  {"step": "extern", "name": "extern", "state": "COMPLETED", "exit_code": 0, "exit_signal": 0,
                   "start_time": T("10:43:01"), "end_time": T("10:44:28"), "nodes": "node1",
                   "num_nodes": 1, "num_cpus": 1, "num_tasks": 1}])
    got = render_sacct.sacct_lines([tmo], fields="JobID,State,ExitCode,Elapsed,Timelimit", parsable="P", now=NOW_A)
    assert text(got) == """\
JobID|State|ExitCode|Elapsed|Timelimit
7865|TIMEOUT|0:0|00:01:27|00:01:00
7865.batch|CANCELLED|0:15|00:01:27|
7865.extern|COMPLETED|0:0|00:01:27|
"""


def test_sacct_pending_and_running():
    pend = job(7931, "low1", "PENDING", reason="BeginTime", restarts=1)
    got = render_sacct.sacct_lines([pend], fields="JobID,State,ExitCode,Start,End,NodeList", parsable="P", now=NOW_A)
    assert got[1] == "7931|PENDING|0:0|Unknown|Unknown|None assigned"
    run = job(7865, "tmo", "RUNNING", **running("node1", start="10:43:01"))
    got = render_sacct.sacct_lines([run], fields="JobID,State,Reason,End,Elapsed", parsable="P", noheader=True,
                        allocations_only=True, now=T("10:43:11"))
    assert got == ["7865|RUNNING|None|Unknown|00:00:10"]


def test_sacct_array_ids():
    t = "10:43:20"
    tasks = [done(jid, "arr", "COMPLETED", array_job_id=7885, array_task_id=tid)
             for jid, tid in ((7891, 0), (7892, 2), (7885, 3))]
    got = render_sacct.sacct_lines(tasks, fields="JobID,JobIDRaw,State,ExitCode", parsable="P", allocations_only=True,
                        now=T(t))
    assert text(got) == """\
JobID|JobIDRaw|State|ExitCode
7885_0|7891|COMPLETED|0:0
7885_2|7892|COMPLETED|0:0
7885_3|7885|COMPLETED|0:0
"""
    got = render_sacct.sacct_lines(tasks[1:2], fields="JobID,JobIDRaw,State,ExitCode", parsable="P", noheader=True,
                        now=T(t))
    assert got == ["7885_2|7892|COMPLETED|0:0", "7885_2.batch|7892.batch|COMPLETED|0:0",
                   "7885_2.extern|7892.extern|COMPLETED|0:0"]
    got = render_sacct.sacct_lines(tasks[:1], now=T(t))
    assert got[4] == "7885_0.exte+     extern                  root          1  COMPLETED      0:0 "


def test_sacct_empty_and_invalid():
    assert render_sacct.sacct_lines([], now=NOW_A) == [
        "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode ",
        "------------ ---------- ---------- ---------- ---------- ---------- -------- ",
    ]
    assert render_sacct.sacct_lines([], fields="JobID,State", parsable="P", noheader=True, now=NOW_A) == []
    with pytest.raises(ValueError, match='^Invalid field requested: "Bogus"$'):
        render_sacct.sacct_lines([], fields="JobID,Bogus", now=NOW_A)


def test_sacct_case_insensitive_fields():
    got = render_sacct.sacct_lines(sacct_jobs()[3:], fields="jobid,STATE,nodelist", parsable="P",
                        allocations_only=True, now=NOW_A)
    assert got == ["JobID|State|NodeList", "7896|COMPLETED|node[1-2]"]


def test_sacct_long_list_job_row():
    got = render_sacct.sacct_lines(sacct_jobs()[3:], long=True, parsable="P", now=NOW_A)
    assert got[0].startswith("JobID|JobIDRaw|JobName|Partition|MaxVMSize|")
    assert got[1] == ("7896|7896|ok_steps|debug||||||||||||||||||2|00:00:00|COMPLETED|0:0||Unknown|Unknown|"
                      "Unknown|2000M|0|||||||||billing=2,cpu=2,mem=2000M,node=2|"
                      "billing=2,cpu=2,mem=2000M,node=2|||||||||||||")
    assert got[2] == ("7896.batch|7896.batch|batch||||||||||||||||||1|1|00:00:00|COMPLETED|0:0|0|0|0|0||0|"
                      "|||||||||cpu=1,mem=1000M,node=1|energy=0|||||||energy=0||||energy=0|energy=0")
    assert got[4] == ("7896.0|7896.0|hostname||||||||||||||||||2|2|00:00:00|COMPLETED|0:0|0|Unknown|Unknown|"
                      "Unknown||0||||||||||cpu=2,mem=2000M,node=2|energy=0|||||||energy=0||||energy=0|energy=0")
    assert got[5] == ("7896.1|7896.1|false||||||||||||||||||1|1|00:00:00|FAILED|1:0|0|Unknown|Unknown|"
                      "Unknown||0||||||||||cpu=1,mem=1000M,node=1|energy=0|||||||energy=0||||energy=0|energy=0")


# --------------------------------------------------------------------------- fmt helpers

def test_fmt_helpers():
    assert slurmtime.fmt_secs_short(4) == "0:04"
    assert slurmtime.fmt_secs_short(3723) == "1:02:03"
    assert slurmtime.fmt_secs_short(86400) == "1-00:00:00"
    assert slurmtime.fmt_secs_long(5) == "00:00:05"
    assert slurmtime.fmt_secs_long(86400) == "1-00:00:00"
    assert slurmtime.fmt_limit_short(None) == "UNLIMITED"
    assert slurmtime.fmt_limit_short(10) == "10:00"
    assert slurmtime.fmt_limit_short(60) == "1:00:00"
    assert slurmtime.fmt_limit_short(1440) == "1-00:00:00"
    assert slurmtime.fmt_mins_long(1) == "00:01:00"
    assert F.fmt_time(None) == "Unknown"
    assert F.fmt_time(None, "N/A") == "N/A"
    assert F.convert_num(128000) == "125G"
    assert F.convert_num(32000) == "32000M"
    assert F.convert_num(2048) == "2G"
    assert grammar.fmt_ranges([0, 2, 3]) == "0,2-3"
    assert F.fmt_cpu_time(0) == "00:00:00"
    assert F.fmt_cpu_time(1.5) == "00:01.500"
    assert [F.job_state_compact(s) for s in ("PENDING", "RUNNING", "COMPLETING", "COMPLETED", "CANCELLED",
                                             "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "SUSPENDED",
                                             "OUT_OF_MEMORY")] == \
        ["PD", "R", "CG", "CD", "CA", "F", "TO", "NF", "PR", "S", "OOM"]


def test_parse_formats():
    assert F.parse_format("%.18i %9P|x") == [F.Spec("i", 18, True, " "), F.Spec("P", 9, False, "|x")]
    assert F.parse_format("ab%i") == [F.Spec(None, 0, False, "ab"), F.Spec("i", 0, False, "")]
    assert F.parse_long_format("JobID:10,State,Reason:.30x") == [
        F.Spec("jobid", 10, False, ""), F.Spec("state", 20, False, ""), F.Spec("reason", 30, True, "x")]


def test_squeue_asks_the_controller_only_for_views_it_renders():
    """A view squeue sends to the controller is one the controller renders (render_squeue.view_bounded:
    the controller refuses larger ones, whose work and answer the jobs multiply); a larger one squeue
    renders itself."""
    import random

    from slurmlet.cli import squeue
    rnd = random.Random(3)
    pieces = ["%i", "%.18i", "%9999i", "%.1000j", "%999P", "%0001t", "%\u0663i", " ", "|", "x" * 50, "%M", ",",
              "jobid", "name:5000", "state:.999", "reason:.1000", "jobid:\u0663", "jobid:\u00b2", "%300i"]
    sorts = [None, "", "i", "-M,t,p", ",".join("MtpiPV" * 4), ",".join("Mt" * 8), "x" * 1100]
    for _ in range(3000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randrange(1, 90)))
        sort = rnd.choice(sorts)
        for fmt, long_fmt in ((text, None), (None, text), (text, ""), ("", text)):
            if not squeue.rendered_here(fmt, long_fmt, sort):
                assert render_squeue.view_bounded(fmt, long_fmt, sort), (fmt, long_fmt, sort)
    assert not render_squeue.view_bounded("%.5000i", None) and squeue.rendered_here("%.5000i", None, None)
    assert not render_squeue.view_bounded("%i" * 65, None) and squeue.rendered_here("%i" * 65, None, None)
    assert not render_squeue.view_bounded("%.5000i", "")  # (an empty -O is no -O: the -o is what renders)
    assert not render_squeue.view_bounded("%999i" * 5, None) and squeue.rendered_here("%999i" * 5, None, None)
    assert not render_squeue.view_bounded(None, "jobid:\u00b2")  # (does not parse: not rendered there)
    assert not render_squeue.view_bounded(None, None, ",".join("M" * 17)) and squeue.rendered_here(None, None, ",".join("M" * 17))
    assert render_squeue.view_bounded("%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", None)
    assert not squeue.rendered_here("%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", None, None)


def test_named_tasks_takes_any_token():
    """squeue -j's task filter (also the controller's `tasks`, anyone's to send): a token without `_`
    names no task and fails nothing."""
    jobs = queue_jobs()
    assert [j["job_id"] for j in render_squeue.named_tasks(jobs, ["x", "", "_", "7885__"])] == \
        [j["job_id"] for j in jobs if j["array_task_id"] is None or j["array_job_id"] == 7885]
    assert {(j["array_job_id"], j["array_task_id"]) for j in render_squeue.named_tasks(jobs, ["7886_3"])
            if j["array_task_id"] is not None} == {(7886, 3)}
