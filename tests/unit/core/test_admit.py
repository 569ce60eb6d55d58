"""The admission policy (controller/core/admit.py), on trees built in memory: Slurm's refusals and
what a submission gets, and the submit limits as a property."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from slurmlet.controller.core.admit import ERR_ACCOUNT, ERR_POLICY, ERR_QOS, Submission, admit, needs_counts
from slurmlet.controller.core.assoc import Assoc, Qos, Tree


def qos(name: str, **limits) -> Qos:
    flags = limits.pop("flags", [])
    return Qos(id=1, name=name, description="", priority=0, preempt=[], preempt_mode="cluster",
               preempt_exempt_time=None, grace_time=0, flags=flags, usage_factor=1.0, limits=limits)


def tree(user_limits: dict | None = None, account_limits: dict | None = None, qos_list: list[Qos] | None = None,
         allowed: list[str] | None = None) -> Tree:
    return Tree(clusters=["c"],
                accounts={"root": SimpleNamespace(parent=None), "team": SimpleNamespace(parent="root")},
                users={"alice": SimpleNamespace(default_account="team")},
                assocs=[Assoc(1, "root", "", "", 1, None, None, None, {}),
                        Assoc(2, "team", "", "", 1, None, allowed, None, account_limits or {}),
                        Assoc(3, "team", "alice", "", 1, None, None, None, user_limits or {})],
                qos={q.name: q for q in (qos_list or [qos("normal")])})


def sub(**kw) -> Submission:
    base = dict(user="alice", account=None, partition="debug", qos=None, enforce=frozenset(), time_limit=None,
                tres={"cpu": 1, "mem": 100, "node": 1}, bill=1.0)
    return Submission(**{**base, **kw})


def test_without_enforcement_an_unknown_user_is_let_through():
    v = admit(sub(user="bob"), tree(), {})
    assert v.accepted and (v.account, v.qos, v.time_limit) == ("bob", "normal", None)


def test_the_default_account_and_qos():
    v = admit(sub(enforce=frozenset({"associations"})), tree(), {})
    assert (v.account, v.qos) == ("team", "normal")


def test_refusals_with_slurms_messages():
    assoc = frozenset({"associations"})
    assert admit(sub(user="bob", enforce=assoc), tree(), {}).error == ERR_ACCOUNT
    assert admit(sub(account="other", enforce=assoc), tree(), {}).error == ERR_ACCOUNT
    assert admit(sub(qos="high", enforce=assoc), tree(), {}).error == ERR_QOS  # no such QOS
    t = tree(qos_list=[qos("normal"), qos("high")], allowed=["normal"])
    assert admit(sub(qos="high", enforce=frozenset({"qos"})), t, {}).error == ERR_QOS  # not allowed to team
    assert admit(sub(qos="high"), t, {}).accepted  # nothing enforced


def test_max_wall_is_the_time_limit_of_a_job_without_one():
    t = tree(account_limits={"MaxWall": 60})
    assert admit(sub(enforce=frozenset({"limits"})), t, {}).time_limit == 60
    assert admit(sub(enforce=frozenset({"limits"}), time_limit=10), t, {}).time_limit == 10
    assert admit(sub(), t, {}).time_limit is None  # limits not enforced


def test_deny_on_limit_refuses_a_job_past_a_per_job_limit():
    t = tree(qos_list=[qos("normal", flags=["DenyOnLimit"], MaxTRESPerJob={"cpu": 2})])
    v = admit(sub(enforce=frozenset({"limits"}), tres={"cpu": 4, "mem": 100, "node": 1}), t, {})
    assert (v.error, v.pre) == (ERR_POLICY, ("QOSMaxCpuPerJobLimit",))
    assert admit(sub(enforce=frozenset({"limits"})), t, {}).accepted


@given(cap=st.integers(0, 10), have=st.integers(0, 10), others=st.integers(0, 10), n=st.integers(1, 5),
       where=st.sampled_from(["qos_user", "qos_group", "assoc", "account_group"]))
def test_a_submit_limit_refuses_exactly_when_the_jobs_would_pass_it(cap, have, others, n, where):
    limits = {"qos_user": ({}, {}, {"MaxSubmitJobsPerUser": cap}), "qos_group": ({}, {}, {"GrpSubmitJobs": cap}),
              "assoc": ({"MaxSubmitJobs": cap}, {}, {}), "account_group": ({}, {"GrpSubmitJobs": cap}, {})}[where]
    t = tree(user_limits=limits[0], account_limits=limits[1], qos_list=[qos("normal", **limits[2])])
    assert needs_counts(t)
    # alice's active jobs, and another user's in the same account and QOS (counted by group limits only)
    active = {("team", "alice", "normal"): have, ("team", "bob", "normal"): others}
    counted = have + (others if where in ("qos_group", "account_group") else 0)
    v = admit(sub(enforce=frozenset({"limits"}), n_jobs=n), t, active)
    assert v.accepted == (counted + n <= cap)
    if not v.accepted:
        assert v.error == ERR_POLICY and len(v.pre) == 1
