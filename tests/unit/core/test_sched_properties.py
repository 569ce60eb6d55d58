"""Property tests of a full cycle (main pass, preemption, backfill) on random clusters with running jobs."""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from slurmlet.controller.core.alloc import Free, fit
from slurmlet.controller.core.model import (
    Node,
    NodeAlloc,
    Partition,
    PendingJob,
    Request,
    RunningJob,
    SchedConfig,
    Snapshot,
)
from slurmlet.controller.core.plan import plan

NOW = 10_000.0

requests = st.builds(
    Request,
    nodes_min=st.integers(1, 2),
    ntasks_per_node=st.one_of(st.none(), st.integers(1, 3)),
    cpus_per_task=st.integers(1, 2),
    mem_per_node=st.one_of(st.none(), st.integers(1, 2000)),
    gpus_per_node=st.one_of(st.none(), st.integers(0, 2)),
    exclusive=st.booleans(),
)


@st.composite
def scenarios(draw, preempt: bool = True, partitions: bool = True, force: bool = False):
    """A random cluster with running jobs and a queue. `force`: a full cluster of preemptable
    low-tier jobs and a queue of high-tier jobs, so that preemption happens."""
    specs = [(f"n{i}", draw(st.integers(1, 6)), draw(st.sampled_from([2000, 4000])), draw(st.integers(0, 3)))
             for i in range(1, draw(st.integers(1, 4)) + 1)]
    names = tuple(n for n, *_ in specs)
    mode = draw(st.sampled_from(["CANCEL", "REQUEUE", "SUSPEND"] if force else ["OFF", "CANCEL", "REQUEUE", "SUSPEND"]))
    parts = (Partition("low", names, priority_tier=1, preempt_mode=mode),
             Partition("high", names, priority_tier=2)) if partitions else (Partition("low", names),)
    pnames = [p.name for p in parts]
    free = [Free(n, c, m, list(range(g)), c, m, g, True) for n, c, m, g in specs]
    run: list[RunningJob] = []
    for i, req in enumerate(draw(st.lists(requests, min_size=6 if force else 0, max_size=8 if force else 5))):
        allocs = fit(req, [f for f in free if f.cpus > 0], 0)
        if allocs is None:
            continue
        by = {f.name: f for f in free}
        suspended = mode == "SUSPEND" and draw(st.booleans())
        for a in allocs:
            f = by[a.node]
            f.take(a, req.exclusive)
            if suspended:  # a suspended job keeps only its memory
                f.cpus += a.cpus if not req.exclusive else f.total_cpus
                f.gpu_ids = sorted(set(f.gpu_ids) | set(a.gpu_ids)) if not req.exclusive else list(range(f.total_gpus))
        end = draw(st.one_of(st.none(), st.integers(-60, 7200)))
        run.append(RunningJob(job_id=100 + i, partition="low" if force else draw(st.sampled_from(pnames)),
                              allocs=allocs,
                              start_time=NOW - draw(st.sampled_from([3600, 0, 1200])),
                              end_time=None if end is None else NOW + end, priority=draw(st.integers(1, 100)),
                              requeue=draw(st.booleans()), suspended=suspended,
                              preempting=not suspended and draw(st.booleans()) and draw(st.booleans())))
    nodes = []
    for n, c, m, g in specs:
        f = next(x for x in free if x.name == n)
        held = [a for r in run for a in r.allocs if a.node == n]
        nodes.append(Node(n, c, m, g, cpus_used=c - f.cpus, memory_used=sum(a.memory for a in held),
                          gpus_used=tuple(i for i in range(g) if i not in f.gpu_ids)))
    jobs = [PendingJob(job_id=i + 1, partition="high" if force else draw(st.sampled_from(pnames)), request=req,
                       priority=draw(st.integers(1, 100)), submit_time=float(draw(st.integers(0, 50))),
                       time_limit=draw(st.one_of(st.none(), st.integers(1, 180))))
            for i, req in enumerate(draw(st.lists(requests, min_size=1, max_size=8)))]
    cfg = SchedConfig(backfill=draw(st.booleans()), bf_easy=draw(st.booleans()), bf_resolution=draw(
        st.sampled_from([1, 60])), preempt=force or preempt and draw(st.booleans()),
        preempt_exempt_time=draw(st.sampled_from([0, 600])))
    return Snapshot(now=NOW, nodes=tuple(nodes), partitions=parts, pending=tuple(jobs), running=tuple(run),
                    config=cfg)


def _used_after(snap: Snapshot, p) -> dict[str, list]:
    """CPUs, memory and GPU ids each node holds once the plan is carried out."""
    suspended_now = {x.victim for x in p.preemptions if x.mode == "SUSPEND"}
    resumed = set(p.resumes)
    excl = {n.name: n.cpus for n in snap.nodes}
    use = {n.name: [0, 0, []] for n in snap.nodes}
    for r in snap.running:
        stopped = (r.suspended and r.job_id not in resumed) or r.job_id in suspended_now
        for a in r.allocs:
            use[a.node][1] += a.memory
            if not stopped:
                use[a.node][0] += a.cpus
                use[a.node][2].extend(a.gpu_ids)
    for s in p.starts:
        for a in s.allocs:
            use[a.node][0] += a.cpus
            use[a.node][1] += a.memory
            use[a.node][2].extend(a.gpu_ids)
    assert all(u[0] <= excl[n] for n, u in use.items())
    return use


@settings(max_examples=300, deadline=None)
@given(snap=st.one_of(scenarios(), scenarios(force=True)), seed=st.integers(0, 10_000))
def test_cycle_never_oversubscribes_is_order_free_and_preempts_only_lower_tiers(snap, seed):
    p = plan(snap)
    nodes = {n.name: n for n in snap.nodes}
    for name, (cpus, mem, gpus) in _used_after(snap, p).items():
        n = nodes[name]
        assert cpus <= n.cpus, f"{name}: {cpus} CPUs of {n.cpus}"
        assert mem <= n.memory, f"{name}: {mem} MB of {n.memory}"
        assert len(gpus) == len(set(gpus)) and all(0 <= g < n.gpus for g in gpus), f"{name}: GPUs {gpus}"
    jobs = {j.job_id: j for j in snap.pending}
    parts = {x.name: x for x in snap.partitions}
    for s in p.starts:
        j = jobs[s.job_id]
        assert len(set(s.node_names)) == len(s.node_names) >= j.request.nodes_min
        assert set(s.node_names) <= set(parts[j.partition].nodes)
        assert all(a.cpus >= a.tasks * j.request.cpus_per_task for a in s.allocs)
    started = {s.job_id for s in p.starts}
    assert started.isdisjoint(p.reasons) and set(p.reasons) | started == set(jobs)
    assert started.isdisjoint(p.start_times)
    run = {r.job_id: r for r in snap.running}
    for x in p.preemptions:
        v, pre = run[x.victim], jobs[x.preemptor]
        assert parts[v.partition].priority_tier < parts[pre.partition].priority_tier
        assert parts[v.partition].preempt_mode != "OFF" and snap.config.preempt
        assert snap.now - v.start_time >= snap.config.preempt_exempt_time
        assert not v.suspended and not v.preempting
    # shuffled input, same plan
    rnd = random.Random(seed)
    shuffled = [list(snap.nodes), list(snap.partitions), list(snap.pending), list(snap.running)]
    for xs in shuffled:
        rnd.shuffle(xs)
    q = plan(replace(snap, nodes=tuple(shuffled[0]), partitions=tuple(shuffled[1]), pending=tuple(shuffled[2]),
                     running=tuple(shuffled[3])))
    assert (q.starts, q.reasons, q.preemptions, q.resumes, q.start_times, q.backfilled) == \
        (p.starts, p.reasons, p.preemptions, p.resumes, p.start_times, p.backfilled)


def _order(snap: Snapshot) -> list[PendingJob]:
    return sorted(snap.pending, key=lambda j: (-j.priority, j.submit_time, j.job_id))


@settings(max_examples=300, deadline=None)
@given(snap=scenarios(preempt=False, partitions=False))
def test_backfill_never_delays_the_first_reservation(snap):
    check_first_reservation(snap)


def check_first_reservation(snap: Snapshot) -> None:
    """Whatever backfill starts, the first job with a reservation can start at its expected time.

    Replays the future independently of the time map: at the expected start, every running or
    newly started job whose time limit is over is gone, and the job must fit in what is left.
    """
    snap = replace(snap, config=replace(snap.config, backfill=True))
    p = plan(snap)
    first = next((j for j in _order(snap) if j.job_id in p.start_times), None)
    if first is None:
        return
    t0 = p.start_times[first.job_id]
    ahead = [j for j in _order(snap) if j is not first and (-j.priority, j.submit_time, j.job_id) <
             (-first.priority, first.submit_time, first.job_id)]
    assert all(j.job_id not in p.start_times for j in ahead)
    jobs = {j.job_id: j for j in snap.pending}
    suspended = {r.job_id for r in snap.running if r.suspended}
    holders = [(r.allocs, r.end_time if not r.preempting else snap.now) for r in snap.running
               if r.job_id not in suspended]
    holders += [(s.allocs, None if jobs[s.job_id].time_limit is None else snap.now + jobs[s.job_id].time_limit * 60)
                for s in p.starts]
    left = [allocs for allocs, end in holders if end is None or end > t0]
    nodes = []
    for n in snap.nodes:
        mine = [a for allocs in left for a in allocs if a.node == n.name]
        mem_susp = sum(a.memory for r in snap.running if r.job_id in suspended for a in r.allocs if a.node == n.name)
        nodes.append(replace(n, cpus_used=sum(a.cpus for a in mine), memory_used=sum(a.memory for a in mine) + mem_susp,
                             gpus_used=tuple(g for a in mine for g in a.gpu_ids), exclusive_used=False))
    future = Snapshot(now=t0, nodes=tuple(nodes), partitions=snap.partitions, pending=(first,),
                      config=SchedConfig(backfill=False))
    assert [s.job_id for s in plan(future).starts] == [first.job_id], f"job {first.job_id} cannot start at {t0}"


@st.composite
def whole_node_scenarios(draw):
    """Alike nodes, every job taking whole nodes: backfill plans with node counts."""
    cpus = draw(st.sampled_from([1, 4]))
    names = tuple(f"n{i}" for i in range(1, draw(st.integers(1, 8)) + 1))
    whole = st.builds(Request, nodes_min=st.integers(1, 4), ntasks_per_node=st.just(cpus))
    free = list(names)
    run = []
    for i in range(draw(st.integers(0, 6))):
        k = draw(st.integers(1, 3))
        if k > len(free):
            break
        took, free = free[:k], free[k:]
        end = draw(st.one_of(st.none(), st.integers(-60, 7200)))
        run.append(RunningJob(100 + i, "p", tuple(NodeAlloc(n, cpus, 0, (), cpus) for n in took),
                              start_time=NOW - 60, end_time=None if end is None else NOW + end,
                              preempting=draw(st.booleans()) and draw(st.booleans())))
    busy = {a.node for r in run for a in r.allocs}
    nodes = tuple(Node(n, cpus, 1000, 0, cpus_used=cpus if n in busy else 0) for n in names)
    jobs = [PendingJob(i + 1, "p", req, priority=draw(st.integers(1, 5)), submit_time=float(i),
                       time_limit=draw(st.one_of(st.none(), st.integers(1, 180))))
            for i, req in enumerate(draw(st.lists(whole, min_size=1, max_size=10)))]
    cfg = SchedConfig(bf_easy=draw(st.booleans()), bf_resolution=draw(st.sampled_from([1, 60])))
    return Snapshot(now=NOW, nodes=nodes, partitions=(Partition("p", names),), pending=tuple(jobs),
                    running=tuple(run), config=cfg)


@settings(max_examples=300, deadline=None)
@given(snap=whole_node_scenarios())
def test_whole_node_backfill_counts_nodes_and_keeps_the_first_reservation(snap):
    from slurmlet.controller.core import backfill
    from slurmlet.controller.core.cycle import Cycle
    from slurmlet.controller.core.mainpass import main_pass
    from slurmlet.controller.core.memo import Memo
    from slurmlet.controller.core.order import queue
    jobs = [j for j in snap.pending]
    cyc = Cycle(snap, Memo())
    main_pass(cyc, queue(cyc))
    assert backfill._count_mode(cyc, jobs, backfill._holders(cyc)) is not None  # this generator exercises the count map
    check_first_reservation(snap)
    p = plan(snap)
    used = _used_after(snap, p)
    assert all(cpus <= n.cpus for n in snap.nodes for cpus in [used[n.name][0]])


def _same_starts(snap: Snapshot) -> tuple:
    """`plan(snap, only_starts=True)` against the full cycle: the same starts, in the same order
    and on the same nodes, and all else it promises; its start times are the full cycle's, for
    the jobs it reached. Returns both plans."""
    full, short = plan(snap), plan(snap, only_starts=True)
    assert short.starts == full.starts
    assert short.backfilled == full.backfilled
    assert short.preemptions == full.preemptions and short.resumes == full.resumes
    assert short.priorities == full.priorities
    assert all(full.start_times[j] == t for j, t in short.start_times.items())
    assert short.bf_tested <= full.bf_tested
    return full, short


@settings(max_examples=300, deadline=None)
@given(snap=st.one_of(scenarios(), scenarios(force=True), whole_node_scenarios()))
def test_only_starts_gives_the_starts_of_the_full_cycle(snap):
    _same_starts(snap)


@settings(max_examples=100, deadline=None)
@given(snaps=st.lists(st.one_of(scenarios(), scenarios(force=True), whole_node_scenarios()), min_size=2, max_size=4))
def test_a_memo_kept_across_cycles_gives_the_plans_of_fresh_ones(snaps):
    """One `Memo` through a sequence of snapshots (each planned twice, as a loop that replans the
    same snapshot does) gives every cycle the plan it has without one."""
    from slurmlet.controller.core.memo import Memo
    memo = Memo()
    for snap in snaps + snaps[::-1]:
        assert plan(snap, memo=memo) == plan(snap)
        assert plan(snap, memo=memo) == plan(snap)


def crowded_whole_node_snapshot(rnd: random.Random) -> Snapshot:
    """Single-CPU nodes, many running jobs and a long queue of wide and narrow jobs (as a trace
    replay hands the core): backfill reserves for many jobs before a narrow one may start."""
    procs = rnd.choice((8, 16, 32))
    names = tuple(f"n{i}" for i in range(1, procs + 1))
    free, run = list(names), []
    for i in range(rnd.randint(0, procs)):
        k = rnd.choice((1, 1, 2, 3, procs // 4))
        if k > len(free):
            continue
        took, free = free[:k], free[k:]
        end = rnd.choice((None, -5, 30, 60, 61, 600, 3600, 7200, 90000))
        run.append(RunningJob(100 + i, "p", tuple(NodeAlloc(n, 1, 0, (), 1) for n in took), start_time=NOW - 60,
                              end_time=None if end is None else NOW + end))
    busy = {a.node for r in run for a in r.allocs}
    nodes = tuple(Node(n, 1, 1000, 0, cpus_used=1 if n in busy else 0) for n in names)
    jobs = [PendingJob(i + 1, "p", Request(nodes_min=rnd.choice((1, 1, 2, 3, 4, procs // 2, procs))),
                       priority=rnd.randint(1, 5), submit_time=float(rnd.randint(0, 50)),
                       time_limit=rnd.choice((None, 0.5, 1, 1.5, 5, 10, 60, 120, 1440, 3000)))
            for i in range(rnd.randint(1, 80))]
    cfg = SchedConfig(bf_easy=rnd.random() < 0.2, bf_resolution=rnd.choice((1, 60)),
                      bf_max_job_test=rnd.choice((3, 10, 100)), bf_window=rnd.choice((60, 1440)))
    return Snapshot(now=NOW, nodes=nodes, partitions=(Partition("p", names),), pending=tuple(jobs),
                    running=tuple(run), config=cfg)


def test_only_starts_on_crowded_whole_node_snapshots():
    """Many reservations ahead of the jobs that backfill: the cut short cycle starts the same jobs,
    and it did cut (so this exercises the stop, not just the full loop)."""
    rnd = random.Random(11)
    cut = started_late = 0
    for _ in range(1500):
        snap = crowded_whole_node_snapshot(rnd)
        full, short = _same_starts(snap)
        cut += short.bf_tested < full.bf_tested
        started_late += bool(full.backfilled) and bool(full.start_times)  # backfill starts and reserves
    assert cut > 100 and started_late > 50


@settings(max_examples=300, deadline=None)
@given(free=st.integers(0, 12), res=st.sampled_from([1, 60]), window=st.sampled_from([0.0, 600.0, 86400.0]),
       releases=st.lists(st.tuples(st.floats(NOW - 100, NOW + 20000), st.integers(1, 4)), max_size=12),
       reservations=st.lists(st.tuples(st.one_of(st.integers(0, 9), st.floats(NOW, NOW + 30000)),
                                       st.one_of(st.none(), st.floats(-100, 9000)), st.integers(1, 5)), max_size=8))
def test_count_map_reserve_is_slots_and_counts(free, res, window, releases, reservations):
    """`CountMap.reserve` (its slot lookups inline) leaves the slots and counts that splitting the
    map with `_slot` and subtracting over [start, grid(start + seconds)) gives."""
    from slurmlet.controller.core.timemap import CountMap
    cm = CountMap(NOW, res, window, free, releases)
    ref = CountMap(NOW, res, window, free, releases)
    for at, secs, n in reservations:
        start = cm.times[min(at, len(cm.times) - 1)] if isinstance(at, int) else at
        cm.reserve(start, secs, n)
        i = ref._slot(start)
        if secs is None:
            j = len(ref.times)
        else:
            end = ref.grid(start + secs)
            j = len(ref.times) if end > ref.horizon else ref._slot(end)
        ref.cnt[i:j] = [c - n for c in ref.cnt[i:j]]
        assert (cm.times, cm.cnt) == (ref.times, ref.cnt)


def test_backfill_tests_the_jobs_a_walk_of_the_queue_finds():
    """`_to_test` after a main pass that labelled the queue's tail (`_waits`) gives the jobs a
    walk of the whole queue by reason gives, also with reasons the store set (any of them)."""
    from slurmlet.controller.core.backfill import _to_test
    from slurmlet.controller.core.cycle import Cycle
    from slurmlet.controller.core.mainpass import main_pass
    from slurmlet.controller.core.memo import Memo
    from slurmlet.controller.core.model import Reason
    from slurmlet.controller.core.order import queue
    rnd = random.Random(5)
    labelled = 0
    for _ in range(600):
        snap = crowded_whole_node_snapshot(rnd)
        jobs = tuple(replace(j, blocked_reason=rnd.choice((None, None, None, Reason.DEPENDENCY, Reason.PRIORITY,
                                                           Reason.RESOURCES)))
                     for j in snap.pending)
        snap = replace(snap, pending=jobs, config=replace(snap.config, bf_max_job_test=rnd.choice((-3, 0, 2, 10, 100))))
        cyc = Cycle(snap, Memo())
        items = queue(cyc)
        main_pass(cyc, items)
        got = _to_test(cyc, items)
        labelled += cyc.waiting is not None
        cyc.waiting = None
        assert got == _to_test(cyc, items)
    assert labelled > 100
