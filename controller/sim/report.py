"""Per-group figures of replays, side by side: the text report of `slurmlet simulate --sacct`.

Each replay (`SimResult`) is cut into groups of its jobs (all jobs, then per partition, account
and user, as the sacct records name them). Per group and replay:

* waits: mean, p50 and p95 (nearest rank) of start - arrival, seconds;
* mean bounded slowdown (tau 10 s, as `SimResult.summary`);
* utilization: the group's CPU-seconds / (the replay's machine CPUs x the replay's makespan), so
  the groups' figures add up to the machine's;
* backfilled: the share of the group's jobs the backfill pass started.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .engine import SimResult, bounded_slowdown

KEYS = ("partition", "account", "user_name")
LABEL = {"partition": "partition", "account": "account", "user_name": "user"}


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank q-th percentile (0 < q <= 100) of `values` (0 when empty)."""
    if not values:
        return 0.0
    s = sorted(values)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def figures(res: SimResult, key: str | None = None) -> dict[str, dict[str, float]]:
    """{group: {jobs, mean_wait_s, p50_wait_s, p95_wait_s, mean_bounded_slowdown, utilization,
    backfilled, preemptions}}; `key` None: one group, "all"."""
    rows: dict[str, list[int]] = {}
    for k, j in enumerate(res.jobs):
        rows.setdefault(getattr(j, key) or "(none)" if key else "all", []).append(k)
    first = min((j.submit for j in res.jobs), default=0)
    span = (max(res.end) - first) if res.jobs else 0
    cap = res.max_procs * span
    out: dict[str, dict[str, float]] = {}
    for group, ks in sorted(rows.items()):
        waits = [res.start[k] - res.jobs[k].submit for k in ks]
        n = len(ks)
        work = sum(res.work[k] for k in ks)
        out[group] = {
            "jobs": n,
            "mean_wait_s": round(sum(waits) / n, 3),
            "p50_wait_s": percentile(waits, 50),
            "p95_wait_s": percentile(waits, 95),
            "mean_bounded_slowdown": round(sum(bounded_slowdown(w, res.jobs[k].occupied)
                                               for w, k in zip(waits, ks)) / n, 4),
            "utilization": round(work / cap, 6) if cap > 0 else 0.0,
            "backfilled": round(sum(res.backfilled[k] for k in ks) / n, 6) if res.backfilled else 0.0,
            "preemptions": sum(res.preempted[k] for k in ks),
        }
    return out


def table(results: dict[str, SimResult]) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """{"all" | "partition" | "account" | "user": {group: {replay label: figures}}}."""
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for key in (None, *KEYS):
        by: dict[str, dict[str, dict[str, float]]] = {}
        for label, res in results.items():
            for group, f in figures(res, key).items():
                by.setdefault(group, {})[label] = f
        out[LABEL[key] if key else "all"] = by
    return out


#: (row name, figure, format) of the report, in its order (the text and the HTML page's)
ROWS = (("jobs", "jobs", "{:.0f}"), ("mean wait", "mean_wait_s", "{:.1f} s"), ("p50 wait", "p50_wait_s", "{:.0f} s"),
        ("p95 wait", "p95_wait_s", "{:.0f} s"), ("mean bounded slowdown", "mean_bounded_slowdown", "{:.2f}"),
        ("utilization", "utilization", "{:.2%}"), ("backfilled", "backfilled", "{:.1%}"),
        ("preemptions", "preemptions", "{:.0f}"))


def render(results: dict[str, SimResult]) -> str:
    """The groups' figures as text, one column per replay (in `results`' order)."""
    labels = list(results)
    w = 12
    lines: list[str] = []
    for kind, groups in table(results).items():
        for group, cols in groups.items():
            title = "all jobs" if kind == "all" else f"{kind} {group}"
            lines.append(f"{title:<26}" + "".join(f"{lb:>{w}}" for lb in labels))
            for name, field, fmt in ROWS:
                cells = [fmt.format(cols[lb][field]) if lb in cols else "-" for lb in labels]
                lines.append(f"  {name:<24}" + "".join(f"{c:>{w}}" for c in cells))
            lines.append("")
    return "\n".join(lines)
